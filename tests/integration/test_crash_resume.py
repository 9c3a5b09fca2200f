"""Crash-resume: the smoke refresh is killed (SIGKILL, whole process group) at seeded points covering every
stage, restarted, and must end with exactly the tables of an uninterrupted run — no duplicates, no orphans."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from t2ibench.store import Store
from tests.integration._workspace import kill_after, make_workspace, run, start

pytestmark = pytest.mark.slow

# (anchor in the refresh's log, longest random delay after it): together they land in every stage —
# Prefect start-up, prompts, generation, embedding, GenEval, FKEA shards and merge, Scendi, the store
# transaction, the second model, and the report
ANCHORS = [
    ("Starting temporary server", 3.0),
    ("Task run 'prompts", 1.5),
    ("Task run 'generate-tiny-a'", 0.5),
    ("Task run 'embed-tiny-a'", 0.5),
    ("Task run 'geneval-tiny-a'", 0.2),
    ("Task run 'fkea-shard-1'", 0.15),
    ("Task run 'diversity-tiny-a'", 0.15),
    ("Task run 'scendi-tiny-a'", 0.2),
    ("Task run 'store-tiny-a'", 1.5),
    ("Task run 'generate-tiny-b'", 0.5),
    ("Task run 'store-tiny-b'", 0.6),
]
CONTENT = {  # table: columns compared (run ids, timestamps and absolute paths differ between workspaces)
    "models": "model, model_hash, label, backend, model_id, sampling, smoke",
    "prompts": "*",
    "images": "model, model_hash, suite, prompt_index, sample, sha256, seed",
    "detections": "*",
    "verdicts": "*",
    "metrics": "model, model_hash, evaluator_hash, metric, params_key, alpha, sigma, rff_dim, n, seed, value, "
    "error_bound",
    "modes": "model, model_hash, evaluator_hash, source, mode_index, share, entropy_share, top, bottom",
    # content_hash covers results.jsonl, which names images by absolute path: it differs between workspaces
    "model_versions": "model, model_hash, evaluator_hash",
}


def tables(root: Path) -> dict[str, list[tuple]]:
    store = Store(root / "data" / "t2ibench.duckdb")
    out = {}
    for table, columns in CONTENT.items():
        rows = store.query(f"SELECT {columns} FROM {table}")[1]
        out[table] = sorted(tuple(round(v, 9) if isinstance(v, float) else v for v in r) for r in rows)
    return out


def leftovers(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for folder in ("data", "reports")
        for pattern in ("*.tmp", "*.partial")
        for p in (root / folder).rglob(pattern)
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory, model_cache):
    root = tmp_path_factory.mktemp("reference")
    config, env = make_workspace(root, model_cache)
    code, log = run(config, env)
    assert code == 0, log[-3000:]
    return tables(root)


def test_killed_refreshes_resume_to_the_same_tables(reference, tmp_path, model_cache):
    rng = np.random.default_rng(2026)
    report = []
    for trial, (anchor, longest) in enumerate(ANCHORS):
        root = tmp_path / f"trial{trial}"
        config, env = make_workspace(root, model_cache)
        delay = float(rng.uniform(0.0, longest))
        killed, log = kill_after(start(config, env), anchor, delay)
        assert killed, f"trial {trial}: the run ended before the kill ({anchor!r} + {delay:.2f} s)\n{log[-2000:]}"
        code, log = run(config, env)
        assert code == 0, f"trial {trial}: restart failed after a kill at {anchor!r} + {delay:.2f} s\n{log[-3000:]}"
        got = tables(root)
        for table, rows in reference.items():
            assert got[table] == rows, f"trial {trial} ({anchor!r} + {delay:.2f} s): table {table} differs"
        assert leftovers(root) == [], f"trial {trial}: orphaned partial files {leftovers(root)}"
        # the killed run is absent (killed before it was recorded), 'abandoned', or 'completed' when the kill
        # landed after its results were stored (while the report rendered); the restart's run is completed, and
        # nothing is left 'running'
        runs = [
            r["status"]
            for r in Store(root / "data" / "t2ibench.duckdb").rows("SELECT status FROM runs ORDER BY started_at")
        ]
        assert runs[-1] == "completed", runs
        assert runs[:-1] in ([], ["abandoned"], ["completed"]), runs
        html = (root / "reports" / "leaderboard.html").read_text()
        assert html.rstrip().endswith("</html>"), f"trial {trial}: truncated report"
        report.append(f"{anchor} + {delay:.2f} s")
    assert len(report) >= 10
