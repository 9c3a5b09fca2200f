"""The SQL surface (`t2ibench sql`, Store.user_query/user_export) is sealed: every escape is tried here.

docs/security.md states what the surface can and cannot do; each claim there has a test in this file.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from t2ibench.cli import main
from t2ibench.errors import InputError
from t2ibench.store import QueryStoppedError, Store, StoreDamagedError, check_user_sql

LONG_QUERY = "SELECT sum(a * b) FROM range(200000) t1(a), range(200000) t2(b)"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A store holding three prompts, made once: each test's store is a byte copy (no new store's schema per test)."""
    s = Store(tmp_path_factory.mktemp("template") / "store.duckdb", timeout=5)
    with s.write() as con:
        s.upsert(
            con, "prompts", [{"suite": "g", "prompt_index": i, "task": "colors", "prompt": f"p{i}"} for i in range(3)]
        )
    assert not Path(f"{s.path}.wal").exists()  # all of it in the file the copies are made of
    return s.path


@pytest.fixture
def store(tmp_path, template):
    shutil.copy(template, tmp_path / "store.duckdb")
    return Store(tmp_path / "store.duckdb", timeout=5)


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret.csv"
    path.write_text("password\nhunter2\n")
    return path


def sql(store: Store, *argv: str) -> int:
    return main(["sql", "--store", str(store.path), *argv])


def rows(store: Store) -> list[tuple]:
    return sorted(store.query("SELECT * FROM prompts")[1])


# -- files outside the store -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_csv('{secret}')",
        "SELECT * FROM '{secret}'",
        "SELECT * FROM read_text('{secret}')",
        "SELECT * FROM read_blob('{secret}')",
        "SELECT * FROM glob('{dir}/*')",
        "SELECT * FROM sniff_csv('{secret}')",
        "SELECT * FROM read_parquet('{dir}/*.parquet')",
        "SELECT * FROM read_json_auto('{secret}')",
    ],
)
def test_no_file_outside_the_store_can_be_read(store, secret, query, capsys):
    text = query.format(secret=secret, dir=secret.parent)
    with pytest.raises(InputError, match="file system operations are disabled"):
        store.user_query(text)
    assert sql(store, text) == 2
    err = capsys.readouterr().err
    assert "hunter2" not in err
    assert err.count("\n") == 1, "one line, no traceback"


@pytest.mark.parametrize(
    ("query", "refusal"),
    [
        ("COPY prompts TO '{out}'", "COPY is not allowed"),
        ("COPY (SELECT 1) TO '{out}' (FORMAT CSV)", "COPY is not allowed"),
        ("EXPORT DATABASE '{dir}/exported'", "EXPORT is not allowed"),
        ("COPY FROM DATABASE store TO other", "not allowed"),
    ],
)
def test_no_file_can_be_written(store, tmp_path, query, refusal):
    text = query.format(out=tmp_path / "leak.csv", dir=tmp_path)
    for write in (False, True):
        with pytest.raises(InputError, match=refusal):
            store.user_query(text, write=write)
    assert not (tmp_path / "leak.csv").exists()
    assert not (tmp_path / "exported").exists()


def test_the_sandbox_holds_even_without_the_statement_filter(store, tmp_path, secret):
    """Defence in depth: a statement that slipped past the type filter still meets the sealed connection."""
    with store.read() as con:
        for text in (
            f"COPY prompts TO '{tmp_path / 'leak.csv'}'",
            f"ATTACH '{tmp_path / 'other.duckdb'}' AS other",
            "INSTALL httpfs",
            "LOAD httpfs",
            f"SELECT * FROM read_text('{secret}')",
        ):
            with pytest.raises(duckdb.Error, match="disabled"):
                con.execute(text)
        for text in ("SET enable_external_access = true", "RESET enable_external_access", "SET threads = 1"):
            with pytest.raises(duckdb.Error, match="locked"):
                con.execute(text)
    assert not (tmp_path / "leak.csv").exists()
    assert not (tmp_path / "other.duckdb").exists()


def test_out_never_splices_the_query_into_a_copy(store, tmp_path):
    evil = tmp_path / "evil.csv"
    injection = f"SELECT 1) TO '{evil}' (FORMAT CSV); SELECT (1"
    with pytest.raises(InputError):
        store.user_export(injection, tmp_path / "rows.csv")
    assert not evil.exists()
    assert not (tmp_path / "rows.csv").exists()


def test_out_writes_csv_and_parquet_from_a_stream(store, tmp_path):
    assert store.user_export("SELECT suite, prompt_index FROM prompts ORDER BY 2", tmp_path / "o.csv") == 3
    assert (tmp_path / "o.csv").read_text().splitlines() == ["suite,prompt_index", "g,0", "g,1", "g,2"]
    assert store.user_export("SELECT * FROM prompts", tmp_path / "o.parquet") == 3
    reader = duckdb.connect()
    assert reader.execute(f"SELECT count(*) FROM '{tmp_path / 'o.parquet'}'").fetchone() == (3,)
    with pytest.raises(InputError, match=r"\.csv or \.parquet"):
        store.user_export("SELECT 1", tmp_path / "o.txt")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_sealed_connection_has_no_temporary_directory(store, secret):
    """DuckDB allows every file under its temporary directory (by default ``<store>.tmp``, checked by name): t2ibench
    gives it none, so links planted there, or in whatever folder the connection reports, read nothing."""
    for write in (False, True):
        settings = store.user_query(
            "SELECT current_setting('temp_directory'), current_setting('allowed_directories')", write=write
        ).rows
        assert settings == [("", [])]
    planted = []
    for folder in (Path(f"{store.path}.tmp"), store.path.parent / ".tmp"):
        folder.mkdir(exist_ok=True)
        os.link(secret, folder / "hard.csv")
        os.symlink(secret, folder / "soft.csv")
        planted += [folder / "hard.csv", folder / "soft.csv", folder / "*"]
    for path in planted:
        for text in (f"SELECT * FROM read_text('{path}')", f"SELECT * FROM glob('{path}')"):
            for write in (False, True):
                with pytest.raises(InputError, match="file system operations are disabled") as caught:
                    store.user_query(text, write=write)
                assert "hunter2" not in str(caught.value)
    assert not list(Path(f"{store.path}.tmp").glob("duckdb_temp*")), "nothing spilled there"


def test_a_read_only_query_reads_no_file_at_all(store):
    """Once the store is open, a read-only connection disables the local file system: not even the store file or
    its log (which DuckDB allows by name) can be read as bytes."""
    for suffix in ("", ".wal", ".wal.recovery", ".wal.checkpoint"):
        with pytest.raises(InputError, match="file system operations are disabled"):
            store.user_query(f"SELECT * FROM read_blob('{store.path}{suffix}')")
    assert store.user_query("SELECT count(*) FROM prompts").rows == [(3,)]  # the store itself reads as ever


@pytest.mark.parametrize("suffix", [".wal", ".wal.recovery", ".wal.checkpoint"])
@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_links_where_duckdb_keeps_the_log_are_refused(store, secret, suffix, link):
    """DuckDB allows ``<store>.wal*`` by name, for --write connections too: a link planted there is refused before
    the store is opened, read-only or not."""
    planted = Path(f"{store.path}{suffix}")
    (os.symlink if link == "symlink" else os.link)(secret, planted)
    for write in (False, True):
        with pytest.raises(InputError, match=rf"{planted.name}: is a (symbolic|hard) link") as caught:
            store.user_query(f"SELECT * FROM read_text('{planted}')", write=write)
        assert "hunter2" not in str(caught.value)
    planted.unlink()
    assert len(rows(store)) == 3


def test_a_log_link_planted_while_a_write_runs_refuses_the_write(store, secret):
    planted = Path(f"{store.path}.wal.recovery")
    sneaky = (
        "CREATE MACRO plant() AS 1; DELETE FROM prompts WHERE prompt_index = 0; SELECT count(*) FROM range(5000000)"
    )
    import threading

    def plant() -> None:
        time.sleep(0.05)
        os.symlink(secret, planted)

    thread = threading.Thread(target=plant)
    thread.start()
    try:
        with pytest.raises(InputError, match=r"refused: a file beside the store changed"):
            store.user_query(sneaky + " t1, range(100) t2", write=True)
    finally:
        thread.join()
        planted.unlink(missing_ok=True)
    assert len(rows(store)) == 3, "rolled back"


# -- other databases, extensions, settings ------------------------------------------------------------------------


@pytest.mark.parametrize("write", [False, True])
def test_no_database_can_be_attached(store, tmp_path, write):
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).execute("CREATE TABLE t AS SELECT 1 AS x").close()
    for text in (
        f"ATTACH '{other}' AS o",
        f"ATTACH '{other}' AS o (READ_WRITE)",
        f"ATTACH '{store.path}' AS again",  # the store itself under a second name
        "DETACH store",
    ):
        with pytest.raises(InputError, match="is not allowed"):
            store.user_query(text, write=write)
    assert duckdb.connect(str(other)).execute("SELECT count(*) FROM t").fetchone() == (1,)


@pytest.mark.parametrize(
    "text", ["INSTALL httpfs", "LOAD httpfs", "FORCE INSTALL httpfs FROM core_nightly", "LOAD '/tmp/evil.so'"]
)
def test_no_extension_can_be_installed_or_loaded(store, text):
    for write in (False, True):
        with pytest.raises(InputError, match="not allowed"):
            store.user_query(text, write=write)


@pytest.mark.parametrize(
    "text",
    [
        "SET enable_external_access = true",
        "SET lock_configuration = false",
        "RESET enable_external_access",
        "PRAGMA enable_external_access = true",
        "SET GLOBAL autoinstall_known_extensions = true",
        "SET memory_limit = '1TB'",
    ],
)
def test_locked_settings_cannot_be_changed(store, text):
    for write in (False, True):
        with pytest.raises(InputError, match=r"not allowed|locked"):
            store.user_query(text, write=write)
    assert store.user_query("SELECT current_setting('enable_external_access')").rows == [(False,)]


def test_statements_the_filter_cannot_name_are_refused(store):
    with pytest.raises(InputError, match="does not support"):
        store.user_query("UPDATE EXTENSIONS", write=True)
    with pytest.raises(InputError, match="PRAGMA statements"):
        store.user_query("PRAGMA database_size")
    assert store.user_query("SELECT count(*) FROM pragma_table_info('prompts')").rows == [(6,)]  # task, tag, ...


def test_transaction_control_is_refused(store):
    with pytest.raises(InputError, match=r"\(TRANSACTION\) is not allowed"):
        store.user_query("BEGIN; DELETE FROM prompts; COMMIT", write=True)
    assert len(rows(store)) == 3


# -- read-only and --write ------------------------------------------------------------------------------------


def test_read_only_unless_write(store):
    before = rows(store)
    for text in ("DELETE FROM prompts", "DROP TABLE prompts", "INSERT INTO prompts VALUES ('g', 9, 't', 'p', '{}')"):
        with pytest.raises(InputError, match="add --write"):
            store.user_query(text)
    with pytest.raises(InputError, match="statement 2 \\(DELETE\\)"):
        store.user_query("SELECT 1; DELETE FROM prompts")
    assert rows(store) == before
    store.user_query("DELETE FROM prompts WHERE prompt_index = 2", write=True)
    assert len(rows(store)) == 2


@pytest.mark.parametrize(
    "text",
    ["DROP VIEW leaderboard", "DROP TABLE modes", "ALTER TABLE verdicts DROP COLUMN reason", "DROP VIEW diversity_x"],
)
def test_write_cannot_remove_the_stores_own_schema(store, text):
    if text.endswith("diversity_x"):  # a user's own view may be dropped
        store.user_query("CREATE VIEW diversity_x AS SELECT 1 AS one", write=True)
        store.user_query(text, write=True)
        return
    with pytest.raises(InputError, match="refused: the statements would remove t2ibench's own"):
        store.user_query(text, write=True)
    assert store.user_query("SELECT count(*) FROM leaderboard").rows == [(0,)]


def test_a_replaced_view_is_restored(store):
    store.user_query("CREATE OR REPLACE VIEW geneval_overall AS SELECT 'm' AS model, 1.0 AS overall", write=True)
    assert store.user_query("SELECT count(*) FROM geneval_overall").rows == [(0,)], "t2ibench's view, not the user's"


def test_a_store_missing_a_view_heals_on_the_next_write(store):
    with duckdb.connect(str(store.path)) as con:  # e.g. a store damaged by an older version's --write
        con.execute("DROP VIEW leaderboard")
    with pytest.raises(InputError, match=r"store\.duckdb: SQL error: Catalog Error"):
        store.query("SELECT * FROM leaderboard")
    store.initialise()
    assert store.query("SELECT count(*) FROM leaderboard")[1] == [(0,)]


def test_a_failed_write_changes_nothing(store):
    with pytest.raises(InputError, match="SQL error"):
        store.user_query("DELETE FROM prompts; SELECT * FROM no_such_table", write=True)
    assert len(rows(store)) == 3


def test_write_on_a_missing_store_is_an_error_and_creates_nothing(tmp_path, capsys):
    path = tmp_path / "typo.duckdb"
    assert main(["sql", "--store", str(path), "--write", "CREATE TABLE t (x INT)"]) == 2
    assert "no such results store" in capsys.readouterr().err
    assert not path.exists()


@pytest.mark.parametrize("text", ["", "   \n\t", "-- just a comment", "/* block */ ;", ";;"])
def test_an_empty_query_is_a_clear_error(store, text):
    with pytest.raises(InputError, match="the query is empty"):
        check_user_sql(text, write=False)
    with pytest.raises(InputError, match="the query is empty"):
        store.user_query(text)


# -- time limit, interruption, streaming -----------------------------------------------------------------------


def test_a_long_query_is_stopped_and_the_store_released(store):
    start = time.monotonic()
    with pytest.raises(QueryStoppedError, match=r"stopped after 0\.5 s \(--timeout\)"):
        store.user_query(LONG_QUERY, time_limit=0.5)
    assert time.monotonic() - start < 10
    with store.write() as con:  # released: a writer gets the file at once
        store.upsert(con, "prompts", [{"suite": "g", "prompt_index": 7, "task": "colors", "prompt": "p7"}])


@pytest.mark.parametrize("seconds", [1e-6, 0.001, 0.01])
def test_a_tiny_timeout_is_never_lost(store, seconds):
    """A limit that passes before DuckDB has started the statement (whose interrupt DuckDB then drops) still stops
    it: the watchdog interrupts until the query has returned, and the deadline is checked between statements."""
    for write in (False, True):
        for _ in range(4):
            start = time.monotonic()
            with pytest.raises(QueryStoppedError, match=r"\(--timeout\)"):
                store.user_query("SELECT 1; " * write + LONG_QUERY, write=write, time_limit=seconds)
            assert time.monotonic() - start < 3
    assert len(rows(store)) == 3


def test_the_timeout_must_be_a_positive_finite_number(store):
    for bad in (0, -1, float("nan"), float("inf"), True, "5"):
        with pytest.raises(InputError, match="--timeout must be a number of seconds > 0"):
            store.user_query("SELECT 1", time_limit=bad)


def test_a_refresh_waiting_behind_a_long_query_gets_the_store(store, tmp_path):
    """A dashboard's runaway query in another process: the writer (as a refresh's) waits, then proceeds."""
    query = subprocess.Popen(
        [sys.executable, "-m", "t2ibench.cli", "sql", "--store", str(store.path), "--timeout", "2", LONG_QUERY],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # wait until the query holds the file
        try:
            duckdb.connect(str(store.path)).close()
        except duckdb.IOException:
            break
        time.sleep(0.05)
    waited = time.monotonic()
    writer = Store(store.path, timeout=60)
    with writer.write() as con:
        writer.upsert(con, "prompts", [{"suite": "g", "prompt_index": 8, "task": "colors", "prompt": "p8"}])
    waited = time.monotonic() - waited
    _, err = query.communicate(timeout=30)
    assert query.returncode == 1
    assert "stopped after 2 s" in err
    assert "Traceback" not in err
    assert waited < 15
    assert len(rows(store)) == 4


def test_ctrl_c_stops_the_query_without_a_traceback(store):
    proc = subprocess.Popen(
        [sys.executable, "-m", "t2ibench.cli", "sql", "--store", str(store.path), "--timeout", "60", LONG_QUERY],
        stderr=subprocess.PIPE,
        text=True,
        # SIGINT at its default, as a shell starts a foreground job (Ctrl-C's target): a test worker may ignore it,
        # and a command started ignoring a signal keeps ignoring it (t2ibench.signals.ignored_at_start)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(3.0)  # past the interpreter's start and the store's opening, also on a loaded machine
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip() == "t2ibench sql: error: the query was interrupted (Ctrl-C) and the store released"
    duckdb.connect(str(store.path)).close()  # released


def test_results_are_streamed_not_loaded_whole(store, capsys):
    start = time.monotonic()
    result = store.user_query("SELECT * FROM range(10000000000) t(a)", max_rows=5)
    assert time.monotonic() - start < 5
    assert result.rows == [(i,) for i in range(5)]
    assert result.truncated
    assert sql(store, "--limit", "2", "SELECT * FROM range(10000000000) t(a)") == 0
    captured = capsys.readouterr()
    assert "| 1 |" in captured.out
    assert "| 2 |" not in captured.out
    assert "more than 2 rows" in captured.err


# -- what the store file is ----------------------------------------------------------------------------------------


def test_store_errors_are_told_apart(tmp_path, store):
    junk = tmp_path / "junk.duckdb"
    junk.write_text("not a database\n" * 50)
    empty = tmp_path / "empty.duckdb"
    empty.write_bytes(b"")
    folder = tmp_path / "folder.duckdb"
    folder.mkdir()
    for path in (junk, empty):
        before = path.read_bytes()
        for write in (False, True):
            with pytest.raises(StoreDamagedError, match="will not write into it"):
                Store(path).user_query("SELECT 1", write=write)
        with pytest.raises(StoreDamagedError):
            Store(path).initialise()
        assert path.read_bytes() == before, "a damaged store is never written into"
    with pytest.raises(InputError, match="is a directory"):
        Store(folder).user_query("SELECT 1")
    damaged = tmp_path / "damaged.duckdb"
    big = Store(damaged)
    with big.write() as con:
        con.execute("CREATE TABLE filler AS SELECT range AS a, md5(range::VARCHAR) AS b FROM range(200000)")
    size = damaged.stat().st_size
    with open(damaged, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(os.urandom(8192))
    with pytest.raises(StoreDamagedError, match="damaged"):
        Store(damaged).user_query("SELECT sum(length(b)) FROM filler")


def test_a_busy_store_names_its_holder(tmp_path, store):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, time; c = duckdb.connect({str(store.path)!r}); print(1, flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        holder.stdout.readline()
        with pytest.raises(InputError, match=rf"held by another process .*pid {holder.pid}: .*python"):
            Store(store.path, timeout=0.3).user_query("SELECT 1")
    finally:
        holder.kill()
        holder.wait()


def test_docs_state_the_security_model():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    for claim in ("enable_external_access", "lock_configuration", "--timeout", "--write", "ATTACH", "COPY", "INSTALL"):
        assert claim in doc
