"""Bad-input corpus, round three: the store and the sealed SQL: private temp directory, schema versions, damaged
stores, --write that breaks the schema, time limits."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from t2ibench.store.schema import SCHEMA_VERSION
from tests.corpus import case

NEWER = SCHEMA_VERSION + 1  # the schema a newer t2ibench writes

__all__: list[str] = []


def _user_sql(tmp: Path, query: str, **kwargs: Any) -> Any:
    from t2ibench.store import Store

    return Store(tmp / "populated.duckdb", timeout=2).user_query(query, **kwargs)


def _secret(tmp: Path) -> Path:
    path = tmp / "secret.txt"
    path.write_text("hunter2\n")
    return path


def _copy(tmp: Path, name: str) -> Path:
    """A copy of the populated store to damage (the populated store itself stays as it was)."""
    target = tmp / name
    shutil.copy(tmp / "populated.duckdb", target)
    return target


def _raw(path: Path, *statements: str) -> None:
    """Change a store behind t2ibench's back (as an older version, a crash or another tool could)."""
    import duckdb

    con = duckdb.connect(str(path))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def _meta(path: Path) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT key, value FROM store_meta ORDER BY key").fetchall()
    finally:
        con.close()


# -- the sealed connection's last ways out ----------------------------------------------------------------------


@case(
    "sql-temp-dir-link",
    "a hard link and a symlink planted in `<store>.tmp`, read by `t2ibench sql`",
    "refused: the sealed connection has no temporary directory",
    r"file system operations are disabled",
)
def _(tmp: Path) -> Any:
    secret = _secret(tmp)
    folder = tmp / "populated.duckdb.tmp"
    folder.mkdir()
    os.link(secret, folder / "hard.txt")
    os.symlink(secret, folder / "soft.txt")
    from t2ibench.errors import InputError

    try:
        _user_sql(tmp, f"SELECT content FROM read_text('{folder / 'soft.txt'}')")
    except InputError as exc:
        refused = str(exc)
    else:
        raise AssertionError("a symlink in <store>.tmp was read")
    if "hunter2" in refused:
        raise AssertionError("the refusal shows the file")
    return _user_sql(tmp, f"SELECT content FROM read_text('{folder / 'hard.txt'}')")


@case(
    "sql-wal-sibling-link",
    "`<store>.wal.checkpoint` a symlink to another file (DuckDB allows that name)",
    "refused before the store is opened, naming the file",
    r"populated\.duckdb\.wal\.checkpoint: is a symbolic link, where DuckDB keeps the store's log",
)
def _(tmp: Path) -> Any:
    link = tmp / "populated.duckdb.wal.checkpoint"
    os.symlink(_secret(tmp), link)
    try:
        return _user_sql(tmp, f"SELECT content FROM read_text('{link}')")
    finally:
        link.unlink()  # the planted link goes; the store is then checked unchanged


@case(
    "sql-read-store-log",
    "a read-only query reading the store's own files (`read_blob` of the store, its .wal)",
    "refused: a read-only connection reads no file once the store is open",
    r"file system operations are disabled",
)
def _(tmp: Path) -> Any:
    return _user_sql(tmp, f"SELECT size FROM read_blob('{tmp / 'populated.duckdb'}')")


@case(
    "sql-timeout-before-start",
    "`--timeout 0.000001` firing before the query starts (five runs)",
    "stopped within seconds every time, never lost",
    r"stopped after 1e-06 s \(--timeout\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import QueryStoppedError

    query = "SELECT 1; SELECT sum(a * b) FROM range(60000) t1(a), range(60000) t2(b)"
    last: QueryStoppedError | None = None
    for _ in range(5):
        start = time.monotonic()
        try:
            _user_sql(tmp, query, write=True, time_limit=1e-6)
        except QueryStoppedError as exc:
            last = exc
        assert time.monotonic() - start < 3, "the time limit was lost: the query ran on"
    raise last if last is not None else AssertionError("never stopped")


@case(
    "sql-write-store-meta",
    "`--write` editing store_meta (its schema version)",
    "refused and rolled back",
    r"refused: the statements would change store_meta",
)
def _(tmp: Path) -> Any:
    return _user_sql(tmp, f"UPDATE store_meta SET value = '{NEWER}' WHERE key = 'schema_version'", write=True)


@case(
    "sql-write-drops-key",
    "`--write` re-creating `verdicts` without its primary key",
    "refused and rolled back, naming the table",
    r"refused: after the statements table verdicts has lost its primary key \(model, model_hash",
)
def _(tmp: Path) -> Any:
    return _user_sql(
        tmp,
        "CREATE TABLE v2 AS SELECT * FROM verdicts; DROP TABLE verdicts; ALTER TABLE v2 RENAME TO verdicts",
        write=True,
    )


@case(
    "sql-write-retypes-column",
    "`--write` changing a column's type (`verdicts.correct` to VARCHAR)",
    "refused and rolled back, naming the column and both types",
    r"column verdicts\.correct is VARCHAR \(t2ibench writes BOOLEAN\)",
)
def _(tmp: Path) -> Any:
    return _user_sql(tmp, "ALTER TABLE verdicts ALTER correct TYPE VARCHAR", write=True)


@case(
    "sql-write-not-null",
    "`--write` adding NOT NULL to a column t2ibench may leave empty",
    "refused and rolled back, naming the table and column",
    r"table verdicts has a not null \(reason\) t2ibench does not write by",
)
def _(tmp: Path) -> Any:
    return _user_sql(tmp, "ALTER TABLE verdicts ALTER COLUMN reason SET NOT NULL", write=True)


@case(
    "sql-write-index",
    "`--write` creating an index on a t2ibench table",
    "refused (DuckDB could no longer add columns to it)",
    r"table prompts has an index by_prompt",
)
def _(tmp: Path) -> Any:
    return _user_sql(tmp, "CREATE UNIQUE INDEX by_prompt ON prompts (prompt)", write=True)


@case(
    "sql-write-shadow-macro",
    "`--write` creating a macro named like a DuckDB function the views call",
    "refused: reports would call it",
    r"macro json_extract_string shadows DuckDB's function",
)
def _(tmp: Path) -> Any:
    return _user_sql(tmp, "CREATE MACRO json_extract_string(a, b) AS 'forged'", write=True)


@case(
    "sql-write-shadow-type",
    "`--write` creating a type named like a DuckDB type (`json`)",
    "refused: the next migration's columns would take it",
    r"type json shadows DuckDB's type",
)
def _(tmp: Path) -> Any:
    return _user_sql(tmp, "CREATE TYPE json AS INTEGER", write=True)


@case(
    "sql-write-schema-mask",
    "`--write` moving `modes` into another schema (a copy there masks the drop)",
    "refused: only the store's main schema counts",
    r"refused: the statements would remove t2ibench's own table modes",
)
def _(tmp: Path) -> Any:
    return _user_sql(tmp, "CREATE SCHEMA s; CREATE TABLE s.modes AS SELECT * FROM modes; DROP TABLE modes", write=True)


# -- schema versions, damaged stores ---------------------------------------------------------------------------


@case(
    "store-newer-schema",
    "a store labelled with a newer schema version (the current + 1)",
    "refused for writing, naming both versions; the label kept",
    rf"written by schema {NEWER}; this t2ibench knows up to {SCHEMA_VERSION}: upgrade",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    path = _copy(tmp, "newer.duckdb")
    _raw(path, f"UPDATE store_meta SET value = '{NEWER}' WHERE key = 'schema_version'")
    try:
        return Store(path).initialise()
    finally:
        assert ("schema_version", str(NEWER)) in _meta(path), "the newer store was relabelled"


@case(
    "store-garbled-version",
    "store_meta's schema_version not a number ('10; DROP')",
    "refused for writing, naming the value",
    r"store_meta's schema_version is '10; DROP', not a schema number; t2ibench will not write into it",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    path = _copy(tmp, "garbled.duckdb")
    _raw(path, "UPDATE store_meta SET value = '10; DROP' WHERE key = 'schema_version'")
    try:
        return Store(path).upsert_rows("prompts", [{"suite": "g", "prompt_index": 9, "task": "colors"}])
    finally:
        assert ("schema_version", "10; DROP") in _meta(path)


@case(
    "store-keyless-table",
    "a store whose `verdicts` lost its primary key (an older --write), then refreshed",
    "refused naming the table, not a bare DuckDB error; nothing written",
    r"keyless\.duckdb: table verdicts has lost its primary key .* will not write into it",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    path = _copy(tmp, "keyless.duckdb")
    _raw(path, "CREATE TABLE v2 AS SELECT * FROM verdicts", "DROP TABLE verdicts", "ALTER TABLE v2 RENAME TO verdicts")
    row = {"model": "m", "model_hash": "h", "evaluator_hash": "e", "suite": "g", "prompt_index": 0, "sample": 0}
    return Store(path).upsert_rows("verdicts", [{**row, "task": "colors", "correct": False}])


@case(
    "store-damaged-finish-run",
    "a refresh failing on a damaged store, then recording the run as failed",
    "the run row is not written; the damage stays the error shown",
    r"damaged\.duckdb: not a DuckDB database, or damaged",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store, StoreDamagedError

    store = Store(tmp / "damaged.duckdb")
    with store.write() as con:
        con.execute("CREATE TABLE filler AS SELECT range AS a, md5(range::VARCHAR) AS b FROM range(200000)")
    size = store.path.stat().st_size
    with open(store.path, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(os.urandom(8192))
    try:
        store.user_query("SELECT sum(length(b)) FROM filler")
    except StoreDamagedError as exc:
        before = store.path.read_bytes()
        recorded = store.finish_run("r", "failed", {"error": str(exc)})
        if recorded or store.path.read_bytes() != before:
            raise AssertionError("a run row was written into a store found damaged") from None
        raise
    raise AssertionError("the damage was not found")


@case(
    "store-wal-symlink",
    "`<store>.wal` a symlink to another file",
    "refused naming the log file; the other file untouched",
    r"populated\.duckdb\.wal: is a symbolic link",
)
def _(tmp: Path) -> Any:
    secret = _secret(tmp)
    os.symlink(secret, tmp / "populated.duckdb.wal")
    try:
        return _user_sql(tmp, "SELECT count(*) FROM prompts")
    finally:
        (tmp / "populated.duckdb.wal").unlink()
        assert secret.read_text() == "hunter2\n"


@case(
    "store-hard-linked",
    "a store file with a second hard link (two names, two DuckDB logs)",
    "refused for writing, naming the link count",
    r"has 2 hard links .* will not write into it",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    path = _copy(tmp, "linked.duckdb")
    os.link(path, tmp / "other-name.duckdb")
    return Store(path).initialise()


@case(
    "store-fifo",
    "a store path that is a named pipe",
    "refused at once (DuckDB would wait on it forever)",
    r"pipe\.duckdb: not a regular file \(a pipe, socket or device\)",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import Store

    os.mkfifo(tmp / "pipe.duckdb")
    return Store(tmp / "pipe.duckdb").user_query("SELECT 1")


# -- the run lock ------------------------------------------------------------------------------------------------


@case(
    "store-lock-symlink",
    "`<store>.lock` a symlink to another file",
    "refused; the other file is never truncated",
    r"populated\.duckdb\.lock: is a symbolic link, not t2ibench's run lock",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import run_lock

    victim = tmp / "notes.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, tmp / "populated.duckdb.lock")
    try:
        with run_lock(tmp / "populated.duckdb"):
            return "locked"
    finally:
        assert victim.read_text() == "keep me\n", "the lock truncated another file"


@case(
    "store-lock-directory",
    "`<store>.lock` a directory",
    "a one-line error naming it",
    r"populated\.duckdb\.lock: is a folder, not t2ibench's run lock",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import run_lock

    (tmp / "populated.duckdb.lock").mkdir()
    with run_lock(tmp / "populated.duckdb"):
        return "locked"


@case(
    "store-alias-lock",
    "one store refreshed twice at once through a symlink and a `./..` spelling",
    "the second waits: every alias takes the same run lock",
    r"another refresh is running \(pid \d+",
)
def _(tmp: Path) -> Any:
    from t2ibench.store import run_lock

    (tmp / "sub").mkdir()
    os.symlink(tmp / "populated.duckdb", tmp / "alias.duckdb")
    with run_lock(tmp / "alias.duckdb", holder="first"), run_lock(tmp / "sub" / ".." / "." / "populated.duckdb"):
        return "two refreshes held one store at once"
