"""What a refresh changed, by paired tests over stored verdicts (t2ibench.comparisons), on a store with two planted
runs: a changed model's old → new difference equals the one computed by hand from its verdicts, its verdict and
Holm's adjustment are right, new / removed / unchanged models are listed as such, and only pairs measured under one
protocol are compared; `t2ibench diff` prints the same, and the report opens with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from t2ibench import comparisons
from t2ibench.benchmarks.geneval.suite import generate_suite
from t2ibench.metrics.paired import holm, paired_difference
from t2ibench.store import Store
from tests.unit.test_published_rows import paper_version

SUITE = generate_suite()
TASK = [r["tag"] for r in SUITE]


def verdicts(rng: np.random.Generator, accuracy: np.ndarray, per_prompt: int = 4) -> list[list[bool]]:
    """Per prompt, ``per_prompt`` image verdicts right with that prompt's probability."""
    return [list(rng.random(per_prompt) < p) for p in accuracy]


def write(store: Store, name: str, tag: str, version, images: list[list[bool]], run: str, minute: int) -> None:
    """Model ``name``'s version ``tag`` (its verdicts and Table-2 overall) recorded by run ``run``."""
    from t2ibench.benchmarks.geneval.metrics import table2_rows
    from t2ibench.hashing import to_plain

    key = {"model": name, "model_hash": f"{version.model_hash}-{tag}", "evaluator_hash": version.evaluator_hash}
    rows = [{**key, "suite": "geneval", "prompt_index": i, "sample": k, "task": TASK[i], "correct": bool(ok),
             "reason": "planted"} for i, oks in enumerate(images) for k, ok in enumerate(oks)]  # fmt: skip
    with store.write() as con:
        store.upsert(con, "models", [{"model": name, "model_hash": key["model_hash"], "label": name,
                                      "backend": version.model.generator.backend,
                                      "model_id": version.model.generator.model,
                                      "sampling": to_plain(version.model.generator), "smoke": False}])  # fmt: skip
        store.upsert(con, "evaluators", [{"evaluator_hash": version.evaluator_hash, "settings": version.protocol}])
        store.replace(con, "verdicts", key, rows)
        scores = table2_rows(((TASK[i], ok, i) for i, oks in enumerate(images) for ok in oks))
        store.replace(con, "geneval_scores", key, scores)
        times = {"started_at": f"2026-01-01 00:{minute:02d}:00", "finished_at": f"2026-01-01 00:{minute:02d}:30"}
        store.upsert(con, "runs", [{"run_id": run, "status": "completed", **times}])
        store.upsert(con, "run_models", [{"run_id": run, **key}])


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Run r1: a, b, d. Run r2: a changed (right on every image of 10 % more prompts: a real gain), b unchanged, c new
    (another protocol: 1 image per prompt), d not in it, e new (b's generator and protocol, its own images)."""
    rng = np.random.default_rng(0)
    store = Store(tmp_path_factory.mktemp("comparisons") / "t.duckdb")
    full, _ = paper_version()
    one, _ = paper_version(images_per_prompt=1)
    truth = rng.uniform(0.1, 0.9, len(SUITE))
    a1 = verdicts(rng, truth)
    a2 = [[True] * 4 if i % 10 == 3 else v for i, v in enumerate(a1)]
    b = verdicts(rng, truth)
    write(store, "a", "v1", full, a1, "r1", 1)
    write(store, "b", "v1", full, b, "r1", 1)
    write(store, "d", "v1", full, verdicts(rng, truth), "r1", 1)
    write(store, "a", "v2", full, a2, "r2", 2)
    write(store, "b", "v1", full, b, "r2", 2)
    write(store, "c", "v1", one, verdicts(rng, truth, 1), "r2", 2)
    write(store, "e", "v1", full, verdicts(rng, truth), "r2", 2)
    assert comparisons.record(store, level=0.95) == "r2"
    return store, a1, a2


def counts(images: list[list[bool]]) -> np.ndarray:
    return np.array([[sum(v), len(v)] for v in images], dtype=float)


def test_a_changed_model_is_compared_old_to_new_as_by_hand(two_runs):
    store, a1, a2 = two_runs
    rows = {r["model"]: r for r in store.rows("SELECT * FROM paired_comparisons WHERE kind = 'since'")}
    assert {m: r["status"] for m, r in rows.items()} == {
        "a": "changed", "b": "unchanged", "c": "new", "d": "not in this run", "e": "new"}  # fmt: skip
    a = rows["a"]
    by_hand = paired_difference(counts(a1), counts(a2), TASK, seed=0)
    assert (a["difference"], a["ci_low"], a["ci_high"], a["p_value"]) == pytest.approx(
        (by_hand.difference, by_hand.low, by_hand.high, by_hand.p_value)
    )

    # the difference is GenEval's overall (mean of task accuracies) of a2 minus a1's, computed independently
    def overall(images):
        per_task = {}
        for t, oks in zip(TASK, images, strict=True):
            per_task.setdefault(t, []).extend(oks)
        return sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)

    assert a["difference"] == pytest.approx(overall(a2) - overall(a1))
    assert a["p_adjusted"] == pytest.approx(holm([a["p_value"]])[0])  # the family: the one changed model
    assert a["flagged"] == "improvement"
    assert a["prompts"] == len(SUITE)
    assert rows["b"]["p_value"] is None
    assert rows["b"]["flagged"] is None


def test_only_models_of_one_protocol_are_paired_and_each_pair_once(two_runs):
    store, _, _ = two_runs
    pairs = store.rows("SELECT model, other, status, flagged, p_adjusted FROM paired_comparisons WHERE kind = 'pair'")
    seen = {frozenset((p["model"], p["other"])) for p in pairs}
    # every current model (d's version of r1 stays current), but c: 1 image per prompt, another protocol
    assert seen == {frozenset((x, y)) for i, x in enumerate("abde") for y in "abde"[i + 1 :]}
    assert len(pairs) == 6
    tested = [p for p in pairs if p["p_adjusted"] is not None]
    assert len(tested) == 6
    separated = {frozenset((p["model"], p["other"])) for p in pairs if p["flagged"]}
    assert frozenset(("b", "e")) not in separated  # the same per-prompt accuracies: not separated
    board = {r["model"]: r["overall"] for r in store.rows("SELECT model, overall FROM leaderboard")}
    for p in pairs:
        assert board[p["model"]] >= board[p["other"]]  # the better first


def test_the_diff_command_prints_the_change_and_refuses_unknown_runs(two_runs, capsys):
    from t2ibench.cli import main

    store, _, _ = two_runs
    assert main(["diff", "--store", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# r2 against r1")  # the command names the runs
    assert "| a | changed | geneval |" in out
    assert "improvement ↑" in out
    assert "| b |" not in out  # unchanged: counted, not listed
    assert main(["diff", "--store", str(store.path), "r2", "r1"]) == 0  # reversed: a's change is a regression
    assert "regression ↓" in capsys.readouterr().out
    assert main(["diff", "--store", str(store.path), "r0"]) == 2
    assert "RUN_A r0: not a completed run of" in capsys.readouterr().err


def test_recording_again_writes_nothing(two_runs):
    from t2ibench.hashing import file_sha256

    store, _, _ = two_runs
    before = file_sha256(store.path)
    comparisons.record(store, level=0.95)
    assert file_sha256(store.path) == before


def test_the_report_opens_with_what_changed(two_runs, tmp_path):
    from t2ibench.report.leaderboard import render_reports

    store, _, _ = two_runs
    out = render_reports(store.path, tmp_path / "r")
    html = Path(out["html"]).read_text()
    since = html.split('id="since-last-refresh"')[1].split("</section>")[0]
    assert html.index('id="since-last-refresh"') < html.index('id="leaderboard"')
    assert "The latest run against the completed run before it" in since
    assert "r1" not in since  # run ids are bookkeeping: a refresh that changed nothing keeps the report
    assert "improvement ↑" in since
    assert "1 changed, 2 new, 1 not in this run, 1 unchanged; 1 flagged" in since
    md = Path(out["markdown"]).read_text()
    assert "## Since the last refresh" in md


def test_a_geneval_version_judged_with_other_thresholds_is_listed_not_compared(tmp_path):
    """The same images judged again with another verdict threshold: its score moved because the judge did, so "since"
    lists it as judged differently and neither compares nor flags it; a diversity-only change would still compare."""
    rng = np.random.default_rng(1)
    store = Store(tmp_path / "t.duckdb")
    full, _ = paper_version()
    geneval = yaml.safe_load((Path(__file__).parents[2] / "configs/geneval_paper.yaml").read_text())["evaluators"][
        "geneval"
    ]
    strict, _ = paper_version(evaluators={"geneval": {**geneval, "threshold": 0.5}})
    diversity = yaml.safe_load((Path(__file__).parents[2] / "configs/geneval_paper.yaml").read_text())["evaluators"][
        "diversity"
    ]
    wider, _ = paper_version(evaluators={"diversity": {**diversity, "rff_dim": 1000}})
    assert len({strict.evaluator_hash, wider.evaluator_hash, full.evaluator_hash}) == 3
    images = verdicts(rng, rng.uniform(0.1, 0.9, len(SUITE)))
    write(store, "f", "v1", full, images, "r1", 1)
    write(store, "g", "v1", full, images, "r1", 1)
    write(store, "f", "v1", strict, [[False] * len(v) for v in images], "r2", 2)  # far worse under the new judge
    write(store, "g", "v1", wider, [[True] * len(v) for v in images], "r2", 2)  # another diversity setting only
    rows = {r["model"]: r for r in comparisons.since(store, "r2", "r1", level=0.95)}
    assert rows["f"]["status"] == "changed, judged differently: not compared"
    assert (rows["f"]["p_value"], rows["f"]["flagged"], rows["f"]["difference"]) == (None, None, None)
    assert rows["g"]["status"] == "changed"  # the same GenEval judge: compared (and here a planted gain)
    assert rows["g"]["flagged"] == "improvement"
