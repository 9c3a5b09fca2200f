"""The store's named reads (t2ibench.store.queries) on the synthetic store of tests/unit/test_failure_patterns.py:
each runs, returns rows of the columns it names, in its order, and the paper tables render from them."""

from __future__ import annotations

import inspect
import json

import pytest

from t2ibench.benchmarks import SPINE
from t2ibench.benchmarks.geneval.metrics import TASKS
from t2ibench.errors import InputError
from t2ibench.report.paper import write_tables
from t2ibench.store import Store, queries
from t2ibench.store.schema import SPINE_SQL, STORED_BENCHMARKS
from tests.unit.test_failure_patterns import POLICIES, store  # noqa: F401  (the module-scoped synthetic store fixture)

FUNCTIONS = {
    name: f
    for name, f in vars(queries).items()
    if inspect.isfunction(f) and f.__module__ == queries.__name__ and not name.startswith("_")
}


def test_every_query_runs_and_is_documented_and_typed(store):  # noqa: F811
    models = set(POLICIES)
    for name, query in FUNCTIONS.items():
        doc = inspect.getdoc(query) or ""
        assert doc, f"queries.{name}: no docstring"
        assert "\n" not in doc, f"queries.{name}: a one-line docstring"
        assert inspect.signature(query).return_annotation != inspect.Signature.empty, name
        per_benchmark = "name" in inspect.signature(query).parameters  # one call per stored benchmark
        per_run = "run_id" in inspect.signature(query).parameters  # one call per stored run
        names = SPINE_SQL.queries if name == "spine_rows" else STORED_BENCHMARKS  # the spine's reads: each of them
        if per_run:  # of every stored run (and of every benchmark, the spine first, when it names one)
            runs = [run["run_id"] for run in queries.completed_runs(store)]
            benchmarks = [SPINE, *STORED_BENCHMARKS] if per_benchmark else [None]
            rows = [r for run in runs for b in benchmarks for r in query(store, run, *([b] if b else []))]
            assert rows, name
        else:
            rows = [r for b in names for r in query(store, b)] if per_benchmark else query(store)
        if name == "latest_run":
            continue
        assert isinstance(rows, list), name
        assert all(isinstance(r, dict) for r in rows), name
        assert {r["model"] for r in rows if "model" in r} <= models, name
    assert {r["model"] for r in queries.leaderboard(store)} == models
    assert {r["model"] for r in queries.failure_summary(store)} == models
    assert queries.spine_rows(store, "current_verdicts")
    assert queries.class_failures(store)
    assert queries.position_confusion(store)
    assert queries.agreement(store) == []  # none stored in this store
    assert queries.current_metrics(store) == []
    assert STORED_BENCHMARKS, "no stored benchmark: the per-benchmark reads went unchecked"
    with pytest.raises(InputError, match="unknown stored benchmark 'geneval'"):
        queries.benchmark_scores(store, "geneval")  # GenEval's tables are its own, not benchmark_scores
    with pytest.raises(InputError, match="unknown spine query 'task_interval'; did you mean 'task_intervals'"):
        queries.spine_rows(store, "task_interval")
    intervals = queries.spine_rows(store, "task_intervals")
    assert {(r["model"], r["task"]) for r in intervals} == {(m, t) for m in models for t in TASKS}
    assert all(r["ci_low"] <= r["ci_high"] and r["images"] > 0 for r in intervals)


def test_queries_keep_their_order(store):  # noqa: F811
    board = queries.leaderboard(store)
    overall = [r["overall"] for r in board]
    assert overall == sorted(overall, reverse=True)  # best first (ORDER BY o.overall DESC NULLS LAST, c.model)
    assert [r["model"] for r in queries.leaderboard_by_model(store)] == sorted(r["model"] for r in board)
    verdicts = [(r["model"], r["prompt_index"], r["sample"]) for r in queries.spine_rows(store, "current_verdicts")]
    assert verdicts == sorted(verdicts)
    classes = queries.class_failures(store)
    for model in POLICIES:
        rates = [r["missing_rate"] for r in classes if r["model"] == model]
        assert rates == sorted(rates, reverse=True)
    assert list(classes[0]) == ["model", "class", "requested", "missing_rate", "failure_rate"]


def test_latest_run_is_the_last_completed_one(store, tmp_path):  # noqa: F811
    run = queries.latest_run(store)
    assert run is not None
    assert run["run_id"] == f"r{len(POLICIES) - 1}"
    assert run["status"] == "completed"
    empty = Store(tmp_path / "empty.duckdb")
    empty.initialise()
    assert queries.latest_run(empty) is None


def test_paper_tables_render_from_the_queries(store, tmp_path):  # noqa: F811
    out = write_tables(store.path, tmp_path / "paper")
    assert out["models"] == len(POLICIES)
    table2 = (tmp_path / "paper" / "table2.md").read_text()
    assert all(f"| {m} |" in table2 for m in POLICIES)
    headline = json.loads((tmp_path / "paper" / "metrics.json").read_text())
    assert sorted(headline["models"]) == sorted(POLICIES)
    assert all(v["fkea_vendi_1"] is None for v in headline["models"].values())  # no metrics rows in this store
