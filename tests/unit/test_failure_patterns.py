"""Failure-pattern views over hand-built detections: synthetic models whose every number is known in advance.

Each synthetic model draws boxes and colours by a rule (always swap the two colours, always put the first-named
object left, draw one object too many, ...). Its images are judged by the real verdict engine and stored through the
pipeline's own row conversion, so the views are tested on exactly the rows a refresh writes.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from t2ibench.benchmarks.geneval import report_failures as failures
from t2ibench.benchmarks.geneval.evaluate import ResultRow
from t2ibench.benchmarks.geneval.metrics import COLORS, RELATIONS, Detection, box_iou, evaluate_detections, table2_rows
from t2ibench.benchmarks.geneval.rows import result_rows
from t2ibench.benchmarks.geneval.suite import generate_suite
from t2ibench.cli import main
from t2ibench.errors import InputError
from t2ibench.store import Store

SUITE = list(enumerate(generate_suite()))
Obj = tuple[str, tuple[float, float, float, float], str | None]  # class, box, colour
Policy = Callable[[int, Mapping[str, Any]], list[Obj]]

# boxes in a 512 × 512 image
SPOT = {
    "left": (20.0, 200.0, 120.0, 300.0),
    "right": (380.0, 200.0, 480.0, 300.0),
    "top": (200.0, 20.0, 300.0, 120.0),
    "bottom": (200.0, 380.0, 300.0, 480.0),
    "centre": (200.0, 200.0, 300.0, 300.0),
}
PLACE = {
    "left of": ("left", "right"),
    "right of": ("right", "left"),
    "above": ("top", "bottom"),
    "below": ("bottom", "top"),
}
OPPOSITE = {"left of": "right of", "right of": "left of", "above": "below", "below": "above"}


def obeys(index: int, meta: Mapping[str, Any]) -> list[Obj]:
    """Draws exactly what the prompt asks for."""
    include = meta["include"]
    if meta["tag"] == "position":
        first, second = include[1], include[0]
        a, b = PLACE[first["position"][0]]
        return [(first["class"], SPOT[a], None), (second["class"], SPOT[b], None)]
    objects = []
    spots = itertools.cycle(SPOT.values())
    for clause in include:
        for k in range(clause["count"]):
            x1, y1, x2, y2 = next(spots)
            objects.append((clause["class"], (x1 + k, y1, x2 + k, y2), clause.get("color")))
    return objects


def swapper(index: int, meta: Mapping[str, Any]) -> list[Obj]:
    """Colour attribution with the two colours exchanged; everything else right."""
    if meta["tag"] != "color_attr":
        return obeys(index, meta)
    a, b = meta["include"]
    return [(a["class"], SPOT["left"], b["color"]), (b["class"], SPOT["right"], a["color"])]


def left_placer(index: int, meta: Mapping[str, Any]) -> list[Obj]:
    """Position prompts: the first-named object always left of the second, whatever was asked."""
    if meta["tag"] != "position":
        return obeys(index, meta)
    first, second = meta["include"][1], meta["include"][0]
    return [(first["class"], SPOT["left"], None), (second["class"], SPOT["right"], None)]


def mirror(index: int, meta: Mapping[str, Any]) -> list[Obj]:
    """Position prompts: always the opposite relation."""
    if meta["tag"] != "position":
        return obeys(index, meta)
    first, second = meta["include"][1], meta["include"][0]
    a, b = PLACE[OPPOSITE[first["position"][0]]]
    return [(first["class"], SPOT[a], None), (second["class"], SPOT[b], None)]


def one_too_many(index: int, meta: Mapping[str, Any]) -> list[Obj]:
    """Counting prompts: one object more than asked (index even) or one fewer (odd)."""
    if meta["tag"] != "counting":
        return obeys(index, meta)
    clause = meta["include"][0]
    n = clause["count"] + (1 if index % 2 == 0 else -1)
    return [(clause["class"], (10.0 * k, 10.0, 10.0 * k + 50, 60.0), None) for k in range(n)]


def drops_first(index: int, meta: Mapping[str, Any]) -> list[Obj]:
    """Two-object prompts: only the second-named object appears."""
    if meta["tag"] != "two_object":
        return obeys(index, meta)
    return [(meta["include"][1]["class"], SPOT["right"], None)]


def merger(index: int, meta: Mapping[str, Any]) -> list[Obj]:
    """Two-object prompts: one hybrid object, detected as both classes on (almost) the same box."""
    if meta["tag"] != "two_object":
        return obeys(index, meta)
    a, b = meta["include"]
    return [(a["class"], SPOT["centre"], None), (b["class"], (205.0, 205.0, 305.0, 305.0), None)]


COLOUR_CASES = ["correct", "swap", "leak", "absent", "miss", "object missing"]


def colour_cycler(index: int, meta: Mapping[str, Any]) -> list[Obj]:
    """Colour attribution: the i-th such prompt gets outcome COLOUR_CASES[i mod 6], by construction."""
    if meta["tag"] != "color_attr":
        return obeys(index, meta)
    a, b = meta["include"]
    ca, cb = a["color"], b["color"]
    other = next(c for c in COLORS if c not in (ca, cb))
    case = COLOUR_CASES[COLOUR_PROMPTS.index(index) % len(COLOUR_CASES)]
    colours = {
        "correct": (ca, cb),
        "swap": (cb, ca),
        "leak": (ca, ca),  # the first's colour leaks onto the second
        "absent": (ca, other),  # the second's colour is nowhere
        "miss": (other, other),
    }
    if case == "object missing":
        return [(a["class"], SPOT["left"], ca)]
    first, second = colours[case]
    return [(a["class"], SPOT["left"], first), (b["class"], SPOT["right"], second)]


COLOUR_PROMPTS = [i for i, r in SUITE if r["tag"] == "color_attr"]
POLICIES: dict[str, Policy] = {
    "obeys": obeys,
    "swapper": swapper,
    "left-placer": left_placer,
    "mirror": mirror,
    "one-too-many": one_too_many,
    "drops-first": drops_first,
    "merger": merger,
    "colour-cycler": colour_cycler,
}


def judge(index: int, meta: Mapping[str, Any], objects: list[Obj], sample: int = 0) -> ResultRow:
    """Judge hand-built detections with the real engine (the colour classifier answers from the policy)."""
    detections = [Detection(c, box, 0.95, ref=i) for i, (c, box, _) in enumerate(objects)]

    def colour_of(requests: list[tuple[str, int]], kept: Mapping[str, Any]) -> dict[tuple[str, int], str]:
        return {(c, i): objects[kept[c][i].ref][2] or "white" for c, i in requests}

    verdict = evaluate_detections(meta, detections, colour_of)
    return ResultRow(
        filename=f"out/{index:05d}/samples/{sample:05d}.png",
        tag=meta["tag"],
        prompt=meta["prompt"],
        correct=verdict.correct,
        reason=verdict.reason,
        metadata=meta,
        details={c: [[*d.box, d.score] for d in objs] for c, objs in verdict.kept.items()},
        colours=verdict.colours_json(),
        relation=verdict.relation,
    )


def write_model(store: Store, name: str, policy: Policy, run: int) -> None:
    results = [judge(i, r, policy(i, r)) for i, r in SUITE]
    verdicts, detections = result_rows(results, "geneval")
    version = {"model": name, "model_hash": f"h-{name}", "evaluator_hash": "e"}
    with store.write() as con:
        store.upsert(con, "models", [{"model": name, "model_hash": f"h-{name}", "label": name, "smoke": False}])
        store.upsert(
            con,
            "prompts",
            [
                {"suite": "geneval", "prompt_index": i, "task": r["tag"], "prompt": r["prompt"], "metadata": r}
                for i, r in SUITE
            ],
        )
        store.replace(con, "verdicts", {**version, "suite": "geneval"}, verdicts)
        store.replace(con, "detections", {**version, "suite": "geneval"}, detections)
        store.replace(
            con, "geneval_scores", version, table2_rows((r.tag, r.correct, r.prompt) for r in results)
        )  # as stored
        store.upsert(
            con,
            "runs",
            [
                {
                    "run_id": f"r{run}",
                    "status": "completed",
                    "started_at": f"2026-01-01 00:{run:02d}:00",
                    "finished_at": f"2026-01-01 00:{run:02d}:30",
                }
            ],
        )
        store.upsert(con, "run_models", [{"run_id": f"r{run}", **version}])


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("failures") / "t.duckdb")
    for run, (name, policy) in enumerate(POLICIES.items()):
        write_model(s, name, policy, run)
    return s


def summary(store: Store, model: str) -> dict[str, Any]:
    rows = store.rows("SELECT * FROM failure_summary WHERE model = ?", [model])
    assert len(rows) == 1
    return rows[0]


def by_tag(tag: str) -> list[Mapping[str, Any]]:
    return [r for _, r in SUITE if r["tag"] == tag]


def test_a_model_that_obeys_has_no_failures(store):
    s = summary(store, "obeys")
    assert store.rows("SELECT avg(correct::INTEGER) AS a FROM verdicts WHERE model = 'obeys'") == [{"a": 1.0}]
    for key in (
        "swap_rate",
        "leakage_rate",
        "miss_rate",
        "counting_under_rate",
        "counting_over_rate",
        "first_missing_rate",
        "second_missing_rate",
        "merge_rate",
    ):
        assert s[key] == 0.0, key
    # it puts the first object left exactly as often as asked
    assert s["first_left_rate"] == pytest.approx(s["requested_left_rate"])
    confusion = store.rows("SELECT requested, found, images FROM position_confusion WHERE model = 'obeys'")
    assert all(r["requested"] == r["found"] for r in confusion)


def test_always_swapping_colours_scores_swap_rate_one(store):
    s = summary(store, "swapper")
    assert (s["swap_rate"], s["leakage_rate"], s["miss_rate"], s["color_attr_accuracy"]) == (1.0, 0.0, 0.0, 0.0)


def test_always_placing_the_first_object_left_scores_one_against_the_requested_rate(store):
    s = summary(store, "left-placer")
    requested = [r["include"][1]["position"][0] for r in by_tag("position")]
    assert s["first_left_rate"] == 1.0
    assert s["requested_left_rate"] == pytest.approx(requested.count("left of") / len(requested))
    assert s["position_accuracy"] == pytest.approx(requested.count("left of") / len(requested))
    confusion = store.rows(
        "SELECT requested, found, images FROM position_confusion WHERE model = 'left-placer' ORDER BY requested"
    )
    assert confusion == [
        {"requested": rel, "found": "left of", "images": requested.count(rel)} for rel in sorted(set(requested))
    ]


def test_the_opposite_relation_fills_the_anti_diagonal(store):
    got = {
        (r["requested"], r["found"]): r["share"]
        for r in store.rows("SELECT * FROM position_confusion WHERE model = 'mirror'")
    }
    assert got == {(rel, OPPOSITE[rel]): 1.0 for rel in RELATIONS}
    assert summary(store, "mirror")["position_accuracy"] == 0.0


def test_counting_errors_are_the_drawn_offsets(store):
    rows = store.rows("SELECT requested, delta, images FROM counting_errors WHERE model = 'one-too-many'")
    expected = Counter()
    for i, r in SUITE:
        if r["tag"] == "counting":
            expected[(r["include"][0]["count"], 1 if i % 2 == 0 else -1)] += 1
    assert {(r["requested"], r["delta"]): r["images"] for r in rows} == dict(expected)
    s = summary(store, "one-too-many")
    n = sum(expected.values())
    over = sum(v for (_, d), v in expected.items() if d > 0)
    assert s["counting_over_rate"] == pytest.approx(over / n)
    assert s["counting_under_rate"] == pytest.approx(1 - over / n)
    assert s["counting_accuracy"] == 0.0


def test_which_object_goes_missing_and_merges(store):
    s = summary(store, "drops-first")
    assert (s["first_missing_rate"], s["second_missing_rate"], s["merge_rate"], s["two_object_accuracy"]) == (
        1.0,
        0.0,
        0.0,
        0.0,
    )
    m = summary(store, "merger")
    assert (m["merge_rate"], m["first_missing_rate"], m["two_object_accuracy"]) == (1.0, 0.0, 1.0)
    # GenEval credits a merged hybrid: the merge rate is what the accuracy hides


def test_each_colour_outcome_appears_exactly_as_often_as_drawn(store):
    got = dict(
        (r["outcome"], r["images"])
        for r in store.rows(
            "SELECT outcome, count(*) AS images FROM color_attr_outcomes WHERE model = 'colour-cycler' GROUP BY ALL"
        )
    )
    expected = Counter(COLOUR_CASES[k % len(COLOUR_CASES)] for k in range(len(COLOUR_PROMPTS)))
    assert got == dict(expected)
    s = store.rows("SELECT * FROM color_attr_rates WHERE model = 'colour-cycler'")[0]
    n = len(COLOUR_PROMPTS)
    assert s["swap_rate"] == pytest.approx(expected["swap"] / n)
    assert s["leakage_rate"] == pytest.approx((expected["leak"] + expected["absent"]) / n)
    assert s["miss_rate"] == pytest.approx(expected["miss"] / n)
    assert s["object_missing_rate"] == pytest.approx(expected["object missing"] / n)
    assert s["accuracy"] == pytest.approx(expected["correct"] / n)  # the engine agrees with the view on 'correct'


def test_the_sql_iou_is_genevals_box_iou(tmp_path):
    rng = np.random.default_rng(7)
    store = Store(tmp_path / "iou.duckdb")
    meta = {
        "tag": "two_object",
        "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1}],
        "prompt": "a photo of a cat and a dog",
    }
    boxes = []
    for _ in range(200):
        x, y = rng.uniform(0, 400, 2)
        a = (x, y, x + rng.uniform(1, 100), y + rng.uniform(1, 100))
        b = tuple(v + rng.uniform(-40, 40) for v in a)
        b = (b[0], b[1], max(b[2], b[0] + 1), max(b[3], b[1] + 1))
        boxes.append((a, b))
    results = [judge(0, meta, [("cat", a, None), ("dog", b, None)], sample=k) for k, (a, b) in enumerate(boxes)]
    verdicts, detections = result_rows(results, "s")
    version = {"model": "m", "model_hash": "h", "evaluator_hash": "e", "suite": "s"}
    with store.write() as con:
        store.upsert(
            con, "prompts", [{"suite": "s", "prompt_index": 0, "task": "two_object", "prompt": "p", "metadata": meta}]
        )
        store.replace(con, "verdicts", version, verdicts)
        store.replace(con, "detections", version, detections)
    got = {r["sample"]: r for r in store.rows("SELECT sample, iou, merged FROM two_object_outcomes")}
    for k, (a, b) in enumerate(boxes):
        assert got[k]["iou"] == pytest.approx(box_iou(a, b), abs=1e-12)
        assert got[k]["merged"] == (box_iou(a, b) >= 0.5)
    assert 0 < sum(r["merged"] for r in got.values()) < len(boxes)  # the sample covers both sides


def test_an_old_store_gains_the_new_columns_without_losing_rows(tmp_path):
    store = Store(tmp_path / "old.duckdb")
    write_model(store, "obeys", obeys, 0)
    before = store.rows("SELECT count(*) AS n FROM detections")
    with store.write() as con:  # make it look like a version-1 store
        con.execute("DROP VIEW IF EXISTS failure_summary")
        con.execute("ALTER TABLE detections DROP COLUMN colour")
        con.execute("ALTER TABLE detections DROP COLUMN color")
        con.execute("UPDATE store_meta SET value = '1' WHERE key = 'schema_version'")
    with store.read() as con:
        assert not {"colour", "color"} & {c[0] for c in con.execute("DESCRIBE detections").fetchall()}
    store.initialise()
    assert store.rows("SELECT count(*) AS n FROM detections") == before
    assert store.rows("SELECT count(*) AS n FROM detections WHERE color IS NOT NULL OR colour IS NOT NULL") == [
        {"n": 0}
    ]
    # colours unknown: colour outcomes are left out, not counted as misses
    assert store.rows("SELECT count(*) AS n FROM color_attr_rates") == [{"n": 0}]
    assert summary(store, "obeys")["first_left_rate"] is not None


def test_the_failures_verb_prints_the_headline(store, capsys):
    assert main(["failures", "--model", "swapper", "--store", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert "# Failure patterns: swapper" in out
    assert "swap 1.00" in out
    assert main(["failures", "--model", "swaper", "--store", str(store.path)]) == 2
    assert "did you mean 'swapper'" in capsys.readouterr().err


def test_unknown_models_are_named(store):
    with pytest.raises(InputError, match="no stored model 'nope'"):
        failures.collect(store, ["nope"])


def test_the_report_section_has_the_confusion_matrix_and_class_bars(store, tmp_path):
    from t2ibench.report.leaderboard import render_reports

    out = render_reports(store.path, tmp_path / "reports")
    text = (tmp_path / "reports" / "leaderboard.html").read_text()
    assert 'id="failure-patterns"' in text
    assert set(out["failure_plots"]) == set(POLICIES)
    for paths in out["failure_plots"].values():
        assert set(paths) == {"position", "classes"}
        for p in paths.values():
            assert (tmp_path / "reports" / p).stat().st_size > 1000
            assert p in text
    md = (tmp_path / "reports" / "leaderboard.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| swapper"))
    assert "1.00" in row


@pytest.mark.parametrize(
    "text",
    [
        "CREATE MACRO avg(x) AS 0.0",  # every rate in the failure views would read 0
        "CREATE MACRO json_extract_string(a, b) AS 'forged'",
        "CREATE TYPE json AS INTEGER",
    ],
)
def test_a_write_cannot_shadow_what_the_failure_views_call(store, text):
    """A user's macro or type named like DuckDB's own would silently change every failure view (and the next
    migration's columns): refused, rolled back; the views read as before."""
    before = summary(store, "swapper")
    with pytest.raises(InputError, match=r"refused: after the statements (macro|type) \w+ shadows DuckDB's"):
        store.user_query(text, write=True)
    assert summary(store, "swapper") == before
    assert store.rows("SELECT count(*) AS n FROM duckdb_functions() WHERE NOT internal") == [{"n": 0}]
