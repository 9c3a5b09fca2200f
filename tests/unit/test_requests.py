"""One command line: the CLI parses, the workspace flows take one typed request (``t2ibench.requests``) as JSON.

The requests round-trip JSON with every field's type checked (a bad field is one line naming it); the CLI's
defaults are the requests' field defaults; each verb that runs a flow starts ``python -m flows.<module> JSON`` through
``run_child`` (its own process group, signals forwarded) with the request its options describe; a flow's program
refuses the old ``--option`` arguments in one line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from t2ibench.benchmarks.geneval.options_agreement import AgreementRequest
from t2ibench.cli import build_parser, main
from t2ibench.errors import InputError
from t2ibench.requests import (
    DigitsRequest,
    PaperTablesRequest,
    RefreshRequest,
    ScheduleRequest,
    read_request,
    request_main,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = [
    RefreshRequest(config="/w/configs/smoke.yaml", wait=600, dask=2, summary="/tmp/s.json", flow=True),
    PaperTablesRequest(config="configs/offline.yaml", out="data/paper/tables"),
    DigitsRequest(out="data/paper/digits", repeats=2),
    AgreementRequest(annotations=("a.csv", "b.csv"), metadata="m.jsonl", out="out", auto=("clip=r.jsonl",)),
    ScheduleRequest(config="c.yaml", cron="0 3 * * *"),
    ScheduleRequest(listing=True),
]


@pytest.mark.parametrize("request_", EXAMPLES, ids=lambda r: type(r).__name__)
def test_a_request_round_trips_json(request_):
    text = request_.to_json()
    assert json.loads(text)["request"] == type(request_).__name__
    assert type(request_).from_json(text) == request_
    assert read_request(type(request_), [text]) == request_


def test_a_request_is_read_from_a_file_too(tmp_path):
    path = tmp_path / "request.json"
    path.write_text(EXAMPLES[0].to_json())
    assert read_request(RefreshRequest, [str(path)]) == EXAMPLES[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"config": 1}', "RefreshRequest.config: expected a string, got 1"),
        ('{"config": "c", "wait": "soon"}', "RefreshRequest.wait: expected a number, got 'soon'"),
        ('{"config": "c", "wait": NaN}', "not JSON"),
        ('{"config": "c", "dask": true}', "RefreshRequest.dask: expected an integer, got True"),
        ('{"config": "c\\u0000"}', "RefreshRequest.config: a string with a NUL character"),
        ('{"config": "c", "dask": 0}', "RefreshRequest.dask: must be in [1, 1024]; got 0"),
        ('{"config": "c", "wait": -1}', "RefreshRequest.wait: must be in [0, 1000000000]; got -1.0"),
        ('{"config": "c", "wiat": 5}', "RefreshRequest.wiat: not a field; did you mean 'wait'?"),
        ("{}", "RefreshRequest.config: missing"),
        ("[1, 2]", "expected a JSON object of fields, got list"),
        ('{"request": "ScheduleRequest", "config": "c"}', "got a request for 'ScheduleRequest'"),
    ],
)
def test_a_bad_request_is_one_line_naming_the_field(text, message):
    with pytest.raises(InputError) as caught:
        RefreshRequest.from_json(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_list_fields_are_checked_item_by_item():
    with pytest.raises(InputError, match=r"AgreementRequest.annotations\[0\]: expected a string, got 1"):
        AgreementRequest.from_json('{"annotations": [1], "metadata": "m", "out": "o"}')
    with pytest.raises(InputError, match="at least one annotations file"):
        AgreementRequest(annotations=(), metadata="m", out="o")


def test_a_program_serving_two_requests_needs_the_kind():
    both = (PaperTablesRequest, DigitsRequest)
    assert read_request(both, [DigitsRequest(out="o").to_json()]) == DigitsRequest(out="o")
    with pytest.raises(InputError, match="must name its kind"):
        read_request(both, ['{"out": "o"}'])


def test_a_program_refuses_anything_but_one_request(capsys):
    seen: list[Any] = []
    assert request_main(RefreshRequest, seen.append, "leaderboard_refresh", ["--config", "c.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("leaderboard_refresh: error: expected one argument, a RefreshRequest as JSON")
    assert err.count("\n") == 1
    assert request_main(RefreshRequest, lambda r: 7, "leaderboard_refresh", ['{"config": "c"}']) == 7
    assert seen == []


def test_the_cli_defaults_are_the_requests_defaults():
    """Each default is written once, in the request: the options read it from the field."""
    parser = build_parser()
    digits = parser.parse_args(["paper", "digits", "--out", "o"])
    defaults = {f.name: f.default for f in dataclasses.fields(DigitsRequest) if f.name != "out"}
    assert {k: getattr(digits, k) for k in defaults} == defaults
    assert (defaults["n_per_condition"], defaults["repeats"], defaults["sigma_scale"]) == (170, 10, 0.4)
    diversity = parser.parse_args(["diversity", "--example", "digits"])
    assert (diversity.n_per_condition, diversity.sigma_scale) == (170, 0.4)
    agree = parser.parse_args(["agreement", "--annotations", "a.csv"])
    request = AgreementRequest(annotations=("a.csv",), metadata="m", out="o")
    assert (agree.folds, agree.seed_cv, agree.resamples, agree.ci_level, agree.seed_ci, agree.auto_label) == (
        request.folds,
        request.seed,
        request.resamples,
        request.ci_level,
        request.ci_seed,
        request.auto_label,
    )
    schedule = parser.parse_args(["schedule", "--list"])
    assert (schedule.pool, schedule.name) == (ScheduleRequest.pool, ScheduleRequest.name)
    assert parser.parse_args(["run", "--config", "c"]).wait == RefreshRequest.wait


@pytest.fixture
def started(monkeypatch):
    """What the CLI would start: (argv, cwd, program) of each run_child call; the child is not run."""
    calls: list[tuple[list[str], Path, str]] = []

    def fake(argv, *, cwd, env, program="", after_stop=None, **reporting):
        assert str(REPO) in env["PYTHONPATH"].split(os.pathsep)
        calls.append((list(argv), Path(cwd), program))
        return 0

    monkeypatch.setattr("t2ibench.signals.run_child", fake)
    return calls


def only_request(calls: list[tuple[list[str], Path, str]], module: str) -> dict[str, Any]:
    """The one child started: ``python -m module JSON``; its request as a dict."""
    ((argv, _cwd, _program),) = calls
    assert argv[:3] == [sys.executable, "-m", module]
    assert len(argv) == 4
    return json.loads(argv[3])


def test_t2ibench_run_starts_the_refresh_with_its_request(started, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the config's checkout, not the current folder, holds the flow
    config = REPO / "configs" / "smoke.yaml"
    summary = tmp_path / "s.json"
    argv = ["run", "--config", str(config), "--wait", "5", "--dask", "2", "--summary", "s.json", "--flow"]
    assert main(argv) == 0
    request = RefreshRequest.from_json(json.dumps(only_request(started, "flows.leaderboard_refresh")))
    assert request.begun is not None
    assert abs(time.time() - request.begun) < 60
    expected = RefreshRequest(config=str(config), wait=5.0, dask=2, summary=str(summary), flow=True)
    assert dataclasses.replace(request, begun=None) == expected
    assert started[0][1:] == (REPO, "t2ibench run")


def test_the_paper_verbs_start_the_paper_flow_where_they_are_run(started, monkeypatch):
    monkeypatch.chdir(REPO)  # as DVC runs them: relative paths keep their meaning in the flow
    assert main(["paper", "digits", "--params", "params.yaml:digits", "--out", "data/paper/digits"]) == 0
    request = only_request(started, "flows.paper_tables")
    assert request == json.loads(DigitsRequest(out="data/paper/digits").to_json())
    assert started[0][1] == REPO
    started.clear()
    assert main(["paper", "tables", "--params", "params.yaml:leaderboard", "--out", "data/paper/tables"]) == 0
    request = only_request(started, "flows.paper_tables")
    assert request == json.loads(PaperTablesRequest(config="configs/offline.yaml", out="data/paper/tables").to_json())


def test_paper_tables_refuses_another_data_folder_before_starting(started, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    argv = ["paper", "tables", "--config", "configs/offline.yaml", "--data", "data/elsewhere", "--out", "t"]
    assert main(argv) == 2
    assert "--data data/elsewhere: config configs/offline.yaml writes its data to" in capsys.readouterr().err
    assert started == []


def test_agreement_flow_starts_the_agreement_flow_with_every_option(started, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    # the inputs are read before the flow starts (tests/unit/test_agreement.py); here only the request is looked at
    monkeypatch.setattr("t2ibench.benchmarks.geneval.agreement.load_agreement_inputs", lambda *args, **kwargs: None)
    monkeypatch.setattr("t2ibench.benchmarks.geneval.commands.suite_records", lambda args: [])
    base = ["agreement", "--annotations", "a.csv", "b.csv", "--folds", "3", "--seed-cv", "7", "--resamples", "20"]
    assert main([*base, "--flow", "--out", "o"]) == 2  # the flow reads the suite from a file
    assert "--flow reads the suite from a file" in capsys.readouterr().err
    assert main([*base, "--flow", "--metadata", "m.jsonl"]) == 2
    assert "add --out DIR" in capsys.readouterr().err
    assert main([*base, "--flow", "--metadata", "m.jsonl", "--out", "o", "--store", "s.duckdb"]) == 0
    request = only_request(started, "flows.human_agreement")
    expected = AgreementRequest(
        annotations=("a.csv", "b.csv"), metadata="m.jsonl", out="o", store="s.duckdb", folds=3, seed=7, resamples=20
    )
    assert request == json.loads(expected.to_json())
    assert started[0][1] == REPO


def test_schedule_starts_the_schedule_program(started, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["schedule", "--config", "configs/smoke.yaml"]) == 2
    assert "--cron is required" in capsys.readouterr().err
    assert main(["schedule", "--config", "configs/smoke.yaml", "--cron", "0 3 * * *", "--pool", "p"]) == 0
    request = only_request(started, "flows.schedule")
    expected = ScheduleRequest(config=str(REPO / "configs" / "smoke.yaml"), cron="0 3 * * *", pool="p")
    assert request == json.loads(expected.to_json())
    started.clear()
    assert main(["schedule", "--list"]) == 0
    assert only_request(started, "flows.schedule") == json.loads(ScheduleRequest(listing=True).to_json())


@pytest.mark.slow
def test_a_flow_program_refuses_the_old_options(tmp_path):
    """``python -m flows.paper_tables digits --repeats 2`` (the old second command line) is refused in one line."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PREFECT_HOME=str(tmp_path / ".prefect"))
    proc = subprocess.run(
        [sys.executable, "-m", "flows.paper_tables", "digits", "--repeats", "2"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "paper_tables: error: expected one argument, a PaperTablesRequest or DigitsRequest as JSON (or a file "
        "holding it), got 3; run it through the t2ibench command"
    ]


def test_agreement_store_upserts_in_process_too(tmp_path, capsys):
    """`t2ibench agreement --store` (without --flow) stores what the flow's store task stores."""
    from t2ibench.store import Store
    from tests.conftest import GENEVAL_DATA

    if not GENEVAL_DATA.is_dir():
        pytest.skip("GenEval's released files are not available")
    csvs = [str(GENEVAL_DATA / f"annotations_{s}.csv") for s in ("clip", "sdv2")]
    metadata = str(GENEVAL_DATA / "evaluation_metadata.jsonl")
    store = tmp_path / "s.duckdb"
    argv = ["agreement", "--annotations", *csvs, "--metadata", metadata, "--resamples", "20", "--store", str(store)]
    assert main(argv) == 0
    assert f"stored 4000 annotations and the agreement statistics in {store}" in capsys.readouterr().err
    assert Store(store).rows("SELECT count(*) AS n FROM agreement")[0]["n"] > 0


def test_the_command_line_starts_without_the_numeric_core():
    """Importing the command line keeps numpy, scipy and the metrics package out (building the parser: below)."""
    import subprocess
    import sys

    code = "import sys, t2ibench.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy') "
    code += "or m.startswith('t2ibench.metrics')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_building_the_command_line_loads_no_scipy():
    """Every verb builds the whole parser (its options read defaults from the specs and metrics): none of that may
    load scipy (a quarter of a second on every `t2ibench sql`)."""
    import subprocess
    import sys

    code = "import sys, t2ibench.cli as c; c.build_parser(); print(sorted(m for m in sys.modules if m == 'scipy'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
