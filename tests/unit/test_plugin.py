"""A new benchmark is a package of its own plus one registry line: registering tests/unit/plugin_dpg (a package
outside t2ibench, its files the smallest a benchmark adds) is all it takes for the config, the store's views and
leaderboard, the report, the data releases, the run summary and the command line to carry it — no hub is edited.
Run in a fresh interpreter: the derived tables are made when their modules are imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, sys
import t2ibench.benchmarks as registry

registry.REGISTRY = {**registry.REGISTRY, "dpg": "tests.unit.plugin_dpg.benchmark:DPG"}  # the one line

from t2ibench.config import parse_config

config = parse_config({
    "name": "x",
    "benchmarks": {"geneval": {"per_task": 1, "limit_per_task": 1}, "dpg": {"per_category": 2}},
    "models": [{"name": "a"}],
    "evaluators": {"dpg": {"judge": {"model": "org/judge"}}},
}, source="c.yaml")
tiny = parse_config({
    "name": "x", "benchmarks": {"dpg": {}}, "models": [{"name": "a"}],
    "evaluators": {"dpg": {"judge": {"model": "tiny-random:0"}}},
})
out = {
    "names": config.benchmarks.names,
    "selection": config.benchmarks.selection("dpg").per_category,
    "judge": config.evaluators.of("dpg").judge.model,
    "hub": [k for k, _ in config.hub_sources()],
    "smoke": (config.smoke_evaluators, tiny.smoke_evaluators),
}
try:
    parse_config({"name": "x", "benchmarks": {"dpg": {"per_category": 0}}, "models": [{"name": "a"}]}, source="c.yaml")
except Exception as exc:
    out["range"] = str(exc)

from t2ibench.store import Store
from t2ibench.store.schema import VIEWS

store = Store(sys.argv[1])
with store.write():
    pass
out["views"] = sorted(v for v in VIEWS if v.startswith("dpg"))
out["leaderboard"] = [c for c in store.query("SELECT * FROM leaderboard")[0] if c.startswith("dpg")]

from t2ibench.datasets import RELEASES
from t2ibench.pipeline.summary import BENCHMARK_COLUMNS
from t2ibench.report.leaderboard import collect

out["releases"] = sorted(RELEASES)
out["summary"] = list(BENCHMARK_COLUMNS)
out["report"] = sorted(collect(store)["benchmarks"])

from t2ibench.cli import build_parser

parser = build_parser()
out["generate"] = parser.parse_args(["generate", "dpg", "--dpg-csv", "p.csv", "--out", "o"]).dpg_csv
out["evaluate"] = parser.parse_args(["evaluate", "dpg", "imgs", "--dpg-csv", "q.csv"]).dpg_csv
out["fetch"] = parser.parse_args(["data", "fetch", "dpg", "--out", "o"]).dataset
print(json.dumps(out))
"""


def test_a_registered_package_reaches_every_hub_without_an_edit(tmp_path):
    import json

    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "s.duckdb")], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["names"] == ["geneval", "dpg"]
    assert (got["selection"], got["judge"], got["smoke"]) == (2, "org/judge", [False, True])
    assert "evaluators.dpg.judge" in got["hub"]
    assert got["range"] == "c.yaml:benchmarks.dpg.per_category: must be in [1, 100]; got 0"
    assert got["views"] == ["dpg_current", "dpg_scores"]
    assert got["leaderboard"] == ["dpg_score", "dpg_score_ci_low", "dpg_score_ci_high", "dpg_prompts", "dpg_protocol",
                                  "dpg_judge"]  # fmt: skip
    assert "dpg" in got["releases"]
    assert "dpg" in got["summary"]
    assert got["report"] == ["dpg", "geneval2", "t2i_compbench"]
    assert (got["generate"], got["evaluate"], got["fetch"]) == ("p.csv", "q.csv", "dpg")
