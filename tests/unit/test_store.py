import subprocess
import sys
import time

import pytest

from t2ibench.errors import InputError
from t2ibench.store import Store, StoreBusyError, _backfill_scores, run_lock


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "t.duckdb", timeout=2)
    s.initialise()
    return s


ROW = {"suite": "geneval", "prompt_index": 0, "task": "colors", "prompt": "a photo of a red car", "metadata": {"a": 1}}


def count(store, table):
    return store.query(f"SELECT count(*) FROM {table}")[1][0][0]


def test_upserts_are_idempotent(store):
    for _ in range(3):
        with store.write() as con:
            store.upsert(con, "prompts", [ROW, {**ROW, "prompt_index": 1}])
    assert count(store, "prompts") == 2
    with store.write() as con:
        store.upsert(con, "prompts", [{**ROW, "prompt": "changed"}])
    assert store.rows("SELECT prompt FROM prompts WHERE prompt_index = 0") == [{"prompt": "changed"}]


def test_replace_drops_stale_rows_of_the_scope_only(store):
    scope = {"model": "m", "model_hash": "h", "evaluator_hash": "e", "suite": "geneval"}
    det = {"prompt_index": 0, "sample": 0, "class": "cat", "x1": 0, "y1": 0, "x2": 1, "y2": 1, "score": 0.9}
    with store.write() as con:
        store.replace(con, "detections", scope, [{**det, "rank": 0}, {**det, "rank": 1}])
        store.replace(con, "detections", {**scope, "model": "other"}, [{**det, "rank": 0}])
    with store.write() as con:
        store.replace(con, "detections", scope, [{**det, "rank": 0}])
    assert count(store, "detections") == 2


def test_a_failed_write_leaves_nothing_half_written(store):
    def killed_mid_transaction():
        with store.write() as con:
            store.upsert(con, "prompts", [ROW])
            raise RuntimeError("killed mid-transaction")

    with pytest.raises(RuntimeError):
        killed_mid_transaction()
    assert count(store, "prompts") == 0
    with pytest.raises(InputError, match="unknown column"), store.write() as con:
        store.upsert(con, "prompts", [{**ROW, "nope": 1}])


def test_queries_are_read_only_unless_asked(store):
    insert = "INSERT INTO prompts (suite, prompt_index, task, prompt, metadata) VALUES ('s', 1, 't', 'p', '{}')"
    with pytest.raises(InputError, match="SQL error"):
        store.query(insert)
    store.query(insert, write=True)
    assert count(store, "prompts") == 1


def test_reading_a_store_that_does_not_exist(tmp_path):
    with pytest.raises(InputError, match="no results store yet"):
        Store(tmp_path / "none.duckdb").query("SELECT 1")


def test_a_writer_held_elsewhere_times_out_with_a_clear_message(store):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, time; c = duckdb.connect({str(store.path)!r}); print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        with pytest.raises(StoreBusyError, match="held by another process"):
            Store(store.path, timeout=1).query("SELECT 1")
        assert time.monotonic() - start < 10
    finally:
        holder.kill()
        holder.wait()
    assert Store(store.path).query("SELECT 1")[1] == [(1,)]  # usable again once released


def test_run_lock_is_exclusive_and_names_the_holder(tmp_path):
    path = tmp_path / "t.duckdb"
    with run_lock(path, holder="refresh A"):
        code = (
            "from t2ibench.store import run_lock, StoreBusyError\n"
            f"try:\n  run_lock({str(path)!r}).__enter__()\n  print('got it')\n"
            "except StoreBusyError as e:\n  print(e)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
        assert "another refresh is running" in out
        assert "refresh A" in out
    with run_lock(path, wait=1):
        pass


def test_leaderboard_view_uses_the_latest_completed_run(store):
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    with store.write() as con:
        for run, status, when in (("r1", "completed", now - timedelta(hours=1)), ("r2", "failed", now)):
            store.upsert(con, "runs", [{"run_id": run, "status": status, "finished_at": when, "smoke": False}])
        store.upsert(con, "models", [{"model": "m", "model_hash": h, "label": "M"} for h in ("h1", "h2")])
        store.upsert(con, "run_models", [{"run_id": "r1", "model": "m", "model_hash": "h1", "evaluator_hash": "e"}])
        store.upsert(con, "run_models", [{"run_id": "r2", "model": "m", "model_hash": "h2", "evaluator_hash": "e"}])
        for i, (task, ok) in enumerate([("colors", True), ("colors", False), ("counting", True)]):
            store.upsert(
                con,
                "verdicts",
                [
                    {
                        "model": "m",
                        "model_hash": "h1",
                        "evaluator_hash": "e",
                        "suite": "g",
                        "prompt_index": i,
                        "sample": 0,
                        "task": task,
                        "correct": ok,
                    }
                ],
            )
        _backfill_scores(con)  # Table 2 of these verdicts, by the one function that computes it (as the pipeline)
    (row,) = store.rows("SELECT * FROM leaderboard")
    assert row["model_hash"] == "h1"  # the failed run's version is not current
    assert row["colors"] == 0.5
    assert row["counting"] == 1.0
    assert row["overall"] == pytest.approx(0.75)


def test_every_query_in_the_schema_doc_runs(store):
    """docs/schema.md's example queries are valid SQL against the real schema (they cannot drift)."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "schema.md").read_text()
    queries = re.findall(r"```sql\n(.*?)```", doc, flags=re.S)
    assert len(queries) >= 6
    for sql in queries:
        store.query(sql)  # raises InputError on a bad column, table or view


def test_schema_doc_lists_every_table_and_view():
    from pathlib import Path

    from t2ibench.store import TABLES, VIEWS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "schema.md").read_text()
    for name in [*TABLES, *VIEWS]:
        assert f"| `{name}` |" in doc, name


def test_alpha_infinity_round_trips_and_older_nulls_are_migrated(tmp_path):
    """α = ∞ is stored as the DOUBLE inf (it reads back as inf); a schema-8 store's NULL alpha (with 'inf' in its
    details) becomes inf on the first write, and the diversity view finds it either way."""
    import duckdb

    s = Store(tmp_path / "s.duckdb")
    version = {"model": "m", "model_hash": "h", "evaluator_hash": "e"}
    row = {**version, "metric": "fkea", "kernel": "gaussian", "sigma": 1.0, "rff_dim": 8, "n": 4, "seed": 0}
    s.upsert_rows(
        "metrics",
        [
            {**row, "params_key": "a", "alpha": float("inf"), "value": 1.5, "details": {"alpha": "inf"}},
            {**row, "params_key": "b", "alpha": 1.0, "value": 2.5, "details": {"alpha": 1.0},
             "ci_low": 2.0, "ci_high": 3.0, "ci_level": 0.95, "ci_method": "percentile bootstrap over prompts"},
        ],
    )  # fmt: skip
    stored = {r["params_key"]: r for r in s.rows("SELECT params_key, alpha, ci_low, ci_method FROM metrics")}
    assert stored["a"]["alpha"] == float("inf")
    assert (stored["b"]["ci_low"], stored["b"]["ci_method"]) == (2.0, "percentile bootstrap over prompts")
    # an older store wrote NULL for α = ∞
    con = duckdb.connect(str(s.path))
    con.execute("UPDATE metrics SET alpha = NULL WHERE params_key = 'a'")
    con.execute("UPDATE store_meta SET value = '8' WHERE key = 'schema_version'")
    con.close()
    s.initialise()
    assert s.rows("SELECT alpha FROM metrics WHERE params_key = 'a'")[0]["alpha"] == float("inf")


# -- stores t2ibench cannot verify are never written ------------------------------------------------------------


def raw(path, *statements):
    import duckdb

    con = duckdb.connect(str(path))
    for statement in statements:
        con.execute(statement)
    con.close()


from t2ibench.store import SCHEMA_VERSION  # noqa: E402  (beside the test that reads it)

NEWER = str(SCHEMA_VERSION + 1)  # the schema a newer t2ibench writes


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (NEWER, rf"written by schema {NEWER}; this t2ibench knows up to {SCHEMA_VERSION}: upgrade t2ibench"),
        ("999999", rf"written by schema 999999; this t2ibench knows up to {SCHEMA_VERSION}"),
        ("abc", r"store_meta's schema_version is 'abc', not a schema number"),
        ("-1", r"schema_version is '-1', not a schema number"),
    ],
)
def test_a_store_of_a_newer_or_garbled_schema_is_never_written(store, value, message):
    from t2ibench.store import StoreVersionError

    raw(store.path, f"UPDATE store_meta SET value = '{value}' WHERE key = 'schema_version'")
    before = store.path.read_bytes()
    for write in (
        store.initialise,
        lambda: store.upsert_rows("prompts", [ROW]),
        lambda: store.user_query("CREATE TABLE mine (x INT)", write=True),
        lambda: store.start_run({"run_id": "r"}),
    ):
        with pytest.raises(StoreVersionError, match=message):
            write()
    assert store.finish_run("r", "failed") is False
    assert store.path.read_bytes() == before, "nothing in the store may change"
    if value == NEWER:  # reading says why t2ibench's own SQL may not fit
        raw(store.path, "DROP VIEW leaderboard")
        with pytest.raises(InputError, match=rf"written by schema {NEWER}; this t2ibench knows up to {SCHEMA_VERSION}"):
            store.query("SELECT * FROM leaderboard")


def test_a_store_found_damaged_is_not_written_again_in_this_process(tmp_path):
    """finish_run after a run failed on a damaged store is a no-op (the damage stays the error shown), even where the
    damage is in a block the run row would not touch; a new file at that path is a new store."""
    import os

    from t2ibench.store import StoreDamagedError

    s = Store(tmp_path / "d.duckdb")
    with s.write() as con:
        con.execute("CREATE TABLE filler AS SELECT range AS a, md5(range::VARCHAR) AS b FROM range(200000)")
    s.start_run({"run_id": "r"})
    with open(s.path, "r+b") as fh:
        fh.seek(s.path.stat().st_size // 2)
        fh.write(os.urandom(8192))
    with pytest.raises(StoreDamagedError):
        s.query("SELECT sum(length(b)) FROM filler")
    before = s.path.read_bytes()
    assert s.finish_run("r", "failed", {"error": "damaged"}) is False
    assert Store(tmp_path / "." / "d.duckdb").finish_run("r", "failed") is False  # any spelling of that file
    with pytest.raises(StoreDamagedError, match="found damaged earlier in this process"):
        s.upsert_rows("prompts", [ROW])
    assert s.path.read_bytes() == before
    s.path.unlink()
    s.initialise()  # moved aside: a new store starts
    assert count(s, "prompts") == 0


def test_a_keyless_table_is_refused_naming_it_and_a_write_can_put_it_back(store):
    from t2ibench.store import StoreDamagedError

    raw(
        store.path, "CREATE TABLE p2 AS SELECT * FROM prompts", "DROP TABLE prompts", "ALTER TABLE p2 RENAME TO prompts"
    )
    with pytest.raises(StoreDamagedError, match=r"table prompts has lost its primary key \(suite, prompt_index\)"):
        store.upsert_rows("prompts", [ROW])
    with pytest.raises(InputError, match="table prompts has lost its primary key"):
        store.user_query("CREATE TABLE mine (x INT)", write=True)  # a --write that leaves it broken is refused too
    from t2ibench.store import TABLES

    columns, key = TABLES["prompts"]
    store.user_query(
        f"CREATE TABLE p3 ({columns}, PRIMARY KEY ({', '.join(key)})); INSERT INTO p3 BY NAME SELECT * FROM prompts; "
        "DROP TABLE prompts; ALTER TABLE p3 RENAME TO prompts",
        write=True,
    )
    store.upsert_rows("prompts", [ROW])  # put back: refreshes write again
    assert count(store, "prompts") == 1


def test_every_alias_of_a_store_is_one_store(tmp_path):
    """A symlink, './' or '..' spelling opens, logs and locks beside the one file; a second hard link is refused."""
    import os

    real = Store(tmp_path / "real.duckdb")
    real.initialise()
    os.symlink(real.path, tmp_path / "alias.duckdb")
    (tmp_path / "sub").mkdir()
    for spelling in (tmp_path / "alias.duckdb", tmp_path / "sub" / ".." / "." / "real.duckdb"):
        alias = Store(spelling)
        assert alias.file == real.path.resolve()
        alias.upsert_rows("prompts", [{**ROW, "prompt_index": len(str(spelling))}])
    assert not (tmp_path / "alias.duckdb.wal").exists()
    assert count(real, "prompts") == 2
    busy = pytest.raises(StoreBusyError, match="another refresh is running")
    with run_lock(tmp_path / "alias.duckdb"), busy, run_lock(real.path):
        pass
    os.link(real.path, tmp_path / "twin.duckdb")
    with pytest.raises(InputError, match="has 2 hard links"):
        real.upsert_rows("prompts", [ROW])
    assert count(real, "prompts") == 2  # reading is fine


def test_the_run_lock_never_writes_through_a_link(tmp_path):
    import os

    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    store = tmp_path / "s.duckdb"
    os.link(victim, f"{store}.lock")
    with pytest.raises(InputError, match=r"s\.duckdb\.lock: is a hard link to another file"), run_lock(store):
        pass
    os.unlink(f"{store}.lock")
    os.symlink(victim, f"{store}.lock")
    with pytest.raises(InputError, match=r"s\.duckdb\.lock: is a symbolic link"), run_lock(store):
        pass
    assert victim.read_text() == "keep\n"


def test_the_schema_is_checked_again_only_after_a_change_made_elsewhere(store, monkeypatch):
    """A write skips the schema check when the file is as this process's last write left it, and checks again after
    any other change — another connection's, at once (within one tick of the file clock, the file's size the same),
    or this process's own SQL through ``query(write=True)``."""
    from t2ibench.store import connection

    checks = []
    real = connection.ensure_schema
    monkeypatch.setattr(connection, "ensure_schema", lambda con, where: checks.append(where) or real(con, where))
    for n in range(3):
        store.upsert_rows("prompts", [{**ROW, "prompt_index": n}])
    assert checks == []  # the fixture's initialise checked it; nothing else wrote since
    for n in range(5):  # at once, every time: the view put back by the next write's check (~0.5 s each)
        raw(store.path, "DROP VIEW leaderboard")
        store.upsert_rows("prompts", [{**ROW, "prompt_index": 3 + n}])
        assert store.query("SELECT count(*) FROM leaderboard")[0]
    assert len(checks) == 5
    store.query("DROP VIEW leaderboard", write=True)
    store.upsert_rows("prompts", [ROW])
    assert len(checks) == 6  # the query's write found the file as left (no check); the write after it checked
    assert store.query("SELECT count(*) FROM leaderboard")[0]
