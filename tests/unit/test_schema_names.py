"""One spelling per concept in the store's SQL (schema 9): `task` and `color`, never `tag` or `colour` in a view.

The old spellings stay in their tables as deprecated copies holding the same value, so queries written before keep
working; a store written before schema 9 gains the new columns filled from the old ones, and the renamed views'
old names are dropped. The expected numbers below are counted by hand from the hand-built rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from t2ibench.errors import InputError
from t2ibench.store import SCHEMA_VERSION, TABLES, Store

VERSION = {"model": "m", "model_hash": "h", "evaluator_hash": "e", "suite": "g"}
ATTR = {
    "tag": "color_attr",
    "include": [{"class": "car", "count": 1, "color": "red"}, {"class": "bench", "count": 1, "color": "blue"}],
    "prompt": "a photo of a red car and a blue bench",
}
COLOR = {
    "tag": "colors",
    "include": [{"class": "cup", "count": 1, "color": "green"}],
    "prompt": "a photo of a green cup",
}
COUNT = {"tag": "counting", "include": [{"class": "dog", "count": 3}], "prompt": "a photo of three dogs"}
PROMPTS = [ATTR, COLOR, COUNT]
# (prompt index, sample): (correct, [(class, colour), ...] kept detections in rank order per class)
IMAGES: dict[tuple[int, int], tuple[bool, list[tuple[str, str | None]]]] = {
    (0, 0): (True, [("car", "red"), ("bench", "blue")]),  # correct
    (0, 1): (False, [("car", "blue"), ("bench", "red")]),  # swap
    (0, 2): (False, [("car", "red"), ("bench", "red")]),  # leak
    (0, 3): (False, [("car", "red")]),  # object missing
    (1, 0): (True, [("cup", "green")]),
    (1, 1): (False, [("cup", "purple")]),
    (1, 2): (False, []),  # no cup
    (2, 0): (False, [("dog", None), ("dog", None)]),  # one dog short
    (2, 1): (True, [("dog", None), ("dog", None), ("dog", None)]),
}
# the new columns, spelt out here (not read from the code under test)
NEW_COLUMNS = {"prompts": "task", "verdicts": "task", "annotations": "task", "detections": "color"}
OLD_COLUMNS = {"prompts": "tag", "verdicts": "tag", "annotations": "tag", "detections": "colour"}
OLD_VIEWS = ("colour_attr_outcomes", "colour_attr_rates", "colour_confusion")


def old_spelling_rows() -> dict[str, list[dict[str, Any]]]:
    """Every row of the hand-built version, as a writer from before schema 9 gave it (``tag`` and ``colour``)."""
    rows: dict[str, list[dict[str, Any]]] = {"prompts": [], "verdicts": [], "detections": [], "annotations": []}
    for i, meta in enumerate(PROMPTS):
        rows["prompts"].append(
            {"suite": "g", "prompt_index": i, "tag": meta["tag"], "prompt": meta["prompt"], "metadata": meta}
        )
    for (i, sample), (correct, found) in IMAGES.items():
        key = {**VERSION, "prompt_index": i, "sample": sample}
        rows["verdicts"].append({**key, "tag": PROMPTS[i]["tag"], "correct": correct, "reason": ""})
        ranks: dict[str, int] = {}
        for cls, colour in found:
            rank = ranks[cls] = ranks.get(cls, -1) + 1
            box = {"x1": 10.0 + 100 * rank, "y1": 10.0, "x2": 90.0 + 100 * rank, "y2": 90.0, "score": 0.9}
            rows["detections"].append({**key, "class": cls, "rank": rank, **box, "colour": colour})
    for slot, ok in enumerate((True, False)):
        rows["annotations"].append(
            {"source": "s", "prompt_index": 1, "image_id": 0, "slot": slot, "tag": "colors", "human_correct": ok}
        )
    return rows


def write_old_spelling(store: Store) -> None:
    """The hand-built version written with the old column names only, and a completed run that makes it current."""
    with store.write() as con:
        for table, rows in old_spelling_rows().items():
            store.upsert(con, table, rows)
        store.upsert(con, "models", [{"model": "m", "model_hash": "h", "label": "M", "smoke": False}])
        store.upsert(con, "runs", [{"run_id": "r", "status": "completed", "finished_at": "2026-01-01 00:00:00"}])
        store.upsert(con, "run_models", [{"run_id": "r", "model": "m", "model_hash": "h", "evaluator_hash": "e"}])


def make_schema_8(path: Path) -> None:
    """Turn a store into one as schema 8 left it: no task/color columns, the colour_* view names, `tag` in views."""
    with duckdb.connect(str(path)) as con:
        for table, column in NEW_COLUMNS.items():
            con.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        for view in ("color_attr_outcomes", "color_attr_rates", "color_confusion", "failure_summary"):
            con.execute(f"DROP VIEW {view}")
        con.execute(
            "CREATE OR REPLACE VIEW geneval_images AS SELECT v.model, v.model_hash, v.evaluator_hash, v.suite, "
            "v.prompt_index, v.sample, v.tag, v.correct, v.reason, v.relation, p.prompt, p.metadata "
            "FROM verdicts v JOIN prompts p USING (suite, prompt_index)"
        )
        con.execute("CREATE VIEW colour_attr_outcomes AS SELECT model, colour AS found_colour FROM detections")
        con.execute(
            "CREATE VIEW colour_attr_rates AS SELECT model, count(*) AS images FROM colour_attr_outcomes GROUP BY ALL"
        )
        con.execute("CREATE VIEW colour_confusion AS SELECT tag AS requested FROM verdicts")
        con.execute(
            "CREATE VIEW failure_summary AS SELECT model, images AS colour_attr_missing_rate FROM colour_attr_rates"
        )
        con.execute("DELETE FROM geneval_scores")  # recomputed from the verdicts' task on the next write
        con.execute("UPDATE store_meta SET value = '8' WHERE key = 'schema_version'")
        names = {c[0] for c in con.execute("DESCRIBE verdicts").fetchall()}
        assert "tag" in names
        assert "task" not in names


def table_rows(store: Store, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
    return store.query(f"SELECT {', '.join(columns)} FROM {table} ORDER BY ALL")[1]


def view_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}


def check_numbers(store: Store) -> None:
    """The failure views and Table 2 of the hand-built version, counted by hand."""
    outcomes = store.rows("SELECT sample, outcome FROM color_attr_outcomes ORDER BY sample")
    assert [r["outcome"] for r in outcomes] == ["correct", "swap", "leak", "object missing"]
    (rates,) = store.rows("SELECT * FROM color_attr_rates")
    assert (rates["images"], rates["swap_rate"], rates["leakage_rate"], rates["object_missing_rate"]) == (
        4,
        0.25,
        0.25,
        0.25,
    )
    confusion = store.rows("SELECT requested, found, images, share FROM color_confusion ORDER BY found")
    assert [(r["requested"], r["found"], r["images"]) for r in confusion] == [
        ("green", "green", 1),
        ("green", "object missing", 1),
        ("green", "purple", 1),
    ]
    assert all(r["share"] == pytest.approx(1 / 3) for r in confusion)
    assert store.rows("SELECT delta FROM counting_outcomes ORDER BY delta") == [{"delta": -1}, {"delta": 0}]
    (summary,) = store.rows("SELECT * FROM failure_summary")
    assert (summary["swap_rate"], summary["color_attr_missing_rate"], summary["color_attr_accuracy"]) == (
        0.25,
        0.25,
        0.25,
    )
    found = store.rows(
        "SELECT task, requested_color, found_color FROM geneval_objects WHERE prompt_index = 1 AND sample = 1"
    )
    assert found == [{"task": "colors", "requested_color": "green", "found_color": "purple"}]


def test_rows_written_with_the_old_names_answer_in_the_new_views(tmp_path):
    store = Store(tmp_path / "t.duckdb")
    write_old_spelling(store)
    check_numbers(store)
    for table, new in NEW_COLUMNS.items():
        old = OLD_COLUMNS[table]
        assert store.rows(f"SELECT count(*) AS n FROM {table} WHERE {new} IS DISTINCT FROM {old}") == [{"n": 0}]


def test_a_schema_8_store_is_migrated_without_losing_or_duplicating_rows(tmp_path):
    store = Store(tmp_path / "old.duckdb")
    write_old_spelling(store)
    old_columns = {t: [c for c in _column_names(store, t) if c != NEW_COLUMNS[t]] for t in NEW_COLUMNS}
    before = {t: table_rows(store, t, cols) for t, cols in old_columns.items()}
    make_schema_8(store.path)
    assert store.rows("SELECT count(*) AS n FROM geneval_scores") == [{"n": 0}]

    store.initialise()  # opening it for writing migrates it

    assert store.rows("SELECT value FROM store_meta WHERE key = 'schema_version'") == [{"value": str(SCHEMA_VERSION)}]
    for table, cols in old_columns.items():
        assert table_rows(store, table, cols) == before[table], table  # nothing lost, nothing changed
        key = ", ".join(TABLES[table][1])
        assert store.rows(f"SELECT count(*) - count(DISTINCT ({key})) AS dup FROM {table}") == [{"dup": 0}]
        new, old = NEW_COLUMNS[table], OLD_COLUMNS[table]
        # backfilled: the new column holds the old one's value on every row (NULL only where the old one is)
        assert store.rows(f"SELECT count(*) AS n FROM {table} WHERE {new} IS DISTINCT FROM {old}") == [{"n": 0}], table
    assert store.rows("SELECT count(*) AS n FROM verdicts WHERE task IS NULL") == [{"n": 0}]
    assert store.rows("SELECT count(*) AS n FROM detections WHERE color IS NOT NULL") == [{"n": 9}]
    with store.read() as con:
        assert not view_names(con) & set(OLD_VIEWS)
        assert "tag" not in {c[0] for c in con.execute("DESCRIBE geneval_images").fetchall()}
    check_numbers(store)
    # Table 2, recomputed on opening from the verdicts' backfilled task
    tasks = {r["task"]: (r["correct"], r["images"]) for r in store.rows("SELECT * FROM geneval_tasks WHERE images > 0")}
    assert tasks == {"color_attr": (1, 4), "colors": (1, 3), "counting": (1, 2)}
    store.initialise()  # idempotent: a second open changes nothing
    for table, cols in old_columns.items():
        assert table_rows(store, table, cols) == before[table], table


def test_a_users_table_with_an_old_view_name_is_left_alone(tmp_path):
    store = Store(tmp_path / "t.duckdb")
    store.initialise()
    with duckdb.connect(str(store.path)) as con:
        con.execute("CREATE TABLE colour_confusion AS SELECT 1 AS mine")
        con.execute("UPDATE store_meta SET value = '8' WHERE key = 'schema_version'")
    store.initialise()
    assert store.rows("SELECT * FROM colour_confusion") == [{"mine": 1}]


def _column_names(store: Store, relation: str) -> list[str]:
    return [r[0] for r in store.query(f"DESCRIBE {relation}")[1]]


def test_no_view_of_a_fresh_store_says_tag_or_colour(tmp_path):
    store = Store(tmp_path / "t.duckdb")
    store.initialise()
    with store.read() as con:
        views = view_names(con)
    assert {"color_attr_outcomes", "color_attr_rates", "color_confusion", "failure_summary"} <= views
    for view in views:
        assert "colour" not in view, view
        assert view != "tag"
        columns = _column_names(store, view)
        assert not [c for c in columns if "colour" in c or c == "tag"], (view, columns)
    assert {"requested_color", "found_color", "task"} <= set(_column_names(store, "geneval_objects"))
    assert {"color_attr_missing_rate", "color_attr_accuracy"} <= set(_column_names(store, "failure_summary"))


def _key_row(store: Store, table: str, n: int) -> dict[str, Any]:
    """A row of ``table`` that gives only its key columns (``n`` makes it distinct)."""
    types = {r[0]: r[1] for r in store.query(f"DESCRIBE {table}")[1]}
    return {c: n if "INT" in types[c] else f"k{n}" for c in TABLES[table][1]}


def test_every_table_with_an_old_spelling_has_the_new_one_with_the_same_value(tmp_path):
    store = Store(tmp_path / "t.duckdb")
    store.initialise()
    pairs = {"tag": "task", "colour": "color"}
    found = []
    for table in TABLES:
        columns = set(_column_names(store, table))
        for old, new in pairs.items():
            if old not in columns:
                continue
            assert new in columns, f"{table} has {old} but not {new}"
            found.append(table)
            keys = [_key_row(store, table, n) for n in (1, 2, 3)]
            with store.write() as con:
                store.upsert(con, table, [{**keys[0], old: "x"}, {**keys[1], new: "y"}])  # one spelling each
            got = store.rows(f"SELECT {old} AS old, {new} AS new FROM {table} ORDER BY 1")
            assert got == [{"old": "x", "new": "x"}, {"old": "y", "new": "y"}], table
            with pytest.raises(InputError, match="disagree"), store.write() as con:
                store.upsert(con, table, [{**keys[2], old: "x", new: "y"}])
    assert sorted(found) == ["annotations", "detections", "prompts", "verdicts"]


def test_users_sql_cannot_drop_the_new_names_and_its_writes_fill_both_spellings(tmp_path):
    store = Store(tmp_path / "t.duckdb")
    store.initialise()
    for text in (
        "ALTER TABLE verdicts DROP COLUMN task",
        "ALTER TABLE verdicts DROP COLUMN tag",  # the deprecated copy is t2ibench's too
        "ALTER TABLE detections DROP COLUMN color",
        "DROP VIEW color_attr_outcomes",
        "DROP VIEW color_confusion",
    ):
        with pytest.raises(InputError, match="refused"):
            store.user_query(text, write=True)
    store.user_query(
        "INSERT INTO prompts (suite, prompt_index, tag, prompt) VALUES ('u', 0, 'colors', 'p')", write=True
    )
    store.user_query(
        "INSERT INTO prompts (suite, prompt_index, task, prompt) VALUES ('u', 1, 'counting', 'p')", write=True
    )
    # a user may keep an old view name for saved queries: an alias of their own survives later writes
    store.user_query("CREATE VIEW colour_confusion AS SELECT * FROM color_confusion", write=True)
    store.user_query("DELETE FROM prompts WHERE suite = 'none'", write=True)
    assert store.user_query("SELECT count(*) FROM colour_confusion").rows == [(0,)]
    assert store.rows("SELECT tag, task FROM prompts ORDER BY prompt_index") == [
        {"tag": "colors", "task": "colors"},
        {"tag": "counting", "task": "counting"},
    ]
