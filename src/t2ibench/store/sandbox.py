"""The user's SQL surface (``t2ibench sql``, docs/security.md): every connection's sealed configuration, the statement
checks, the time limit, and the queries and exports a user runs through a ``Store``."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import duckdb
from duckdb import SQLExpression, sqltypes

from t2ibench.errors import InputError, note
from t2ibench.store.errors import _first_line, _is_damage
from t2ibench.store.migrations import _fill_copies, _schema_damage, ensure_schema, schema_problems
from t2ibench.store.schema import TABLES, VIEWS, WAL_SUFFIXES

if TYPE_CHECKING:
    from t2ibench.store.connection import Store


# Every connection runs sealed: no file outside the store can be read, written, attached, exported or installed,
# and no setting can be changed afterwards (docs/security.md). Internal SQL never needs more. No temporary directory:
# DuckDB would otherwise allow every file under ``<store>.tmp`` (a link planted there reads any file); a query that
# outgrows memory fails instead of spilling to disk. A read-only connection also disables the local file system
# once the store is open (Store._connect), so not even the store's log files can be read through it.
SANDBOX_CONFIG: dict[str, Any] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "temp_directory": "",  # after enable_external_access: DuckDB applies the settings in this order
}
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # as t2ibench.signals: each stops a query
OWN_NAMES = frozenset({"store_meta", *TABLES, *VIEWS})  # t2ibench's tables and views: no temporary object may hide one
DEFAULT_QUERY_TIMEOUT = 60.0  # seconds; below the 120 s a refresh's writer waits for the store
EXPORT_BATCH = 65_536  # rows per Arrow batch when a query's result is written to a file

# DuckDB types (DuckDBPyType.id) whose Arrow/Parquet form is not the value DuckDB prints: an exported column of one
# (or of a nested type holding one) is written as DuckDB's text of the value, what `t2ibench sql` prints
# (tests/unit/test_sql_export.py writes every type of DuckDB's test_all_types() and compares). A CSV file is text
# throughout: every column is DuckDB's text of its values, so no type reaches it through Arrow.
PARQUET_AS_TEXT: dict[str, str] = {
    "bit": "Arrow carries its internal bytes",
    "time with time zone": "Arrow and Parquet times have no offset",
    "interval": "Parquet's interval keeps milliseconds only",
    "union": "Arrow writes it as a struct holding its tag",
    "tuple": "Arrow writes it as a struct of named elements",
    "variant": "a value's type varies by row, and Parquet's variant holds neither BIT, TIMETZ, INTERVAL nor UHUGEINT",
}
# 128-bit integers reach Arrow as DECIMAL(38,0) (UHUGEINT wraps around, HUGEINT's minimum stops DuckDB): they are
# cast to it in the sealed connection, where a value past 38 digits is refused naming its column
WIDE_INTEGERS = frozenset({"hugeint", "uhugeint"})
WIDE_INTEGER_FORM = "DECIMAL(38,0)"

# statement types a user's query may run (duckdb.StatementType names); everything else is refused up front
READ_STATEMENTS = frozenset({"SELECT", "EXPLAIN", "CALL"})
WRITE_STATEMENTS = READ_STATEMENTS | frozenset(
    {"INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "MERGE_INTO", "CREATE_FUNC", "ANALYZE", "VACUUM"}
)
NEVER_STATEMENTS = {
    "ATTACH": "attaching another database",
    "DETACH": "detaching a database",
    "COPY": "COPY reads or writes files (use --out FILE.csv|.parquet to save rows)",
    "COPY_DATABASE": "copying a database",
    "EXPORT": "EXPORT DATABASE writes files (use --out FILE.csv|.parquet to save rows)",
    "LOAD": "installing or loading extensions",
    "EXTENSION": "installing or loading extensions",
    "SET": "changing settings (the configuration is locked)",
    "TRANSACTION": "transaction control (each --write call is one transaction, committed on success)",
    # DuckDB parses some statements (e.g. COPY FROM DATABASE) into PRAGMAs; the catalogue is reachable otherwise
    "PRAGMA": "PRAGMA statements (use DESCRIBE t, SHOW TABLES, or SELECT * FROM pragma_table_info('t'))",
    "PREPARE": "prepared statements",
    "EXECUTE": "prepared statements",
}


class QueryStoppedError(InputError):
    """A user's query ran past its time limit or was interrupted; the store was released."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class QueryRows:
    """The first rows of a user's query: column names, rows, and whether more rows exist than were fetched."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool


def user_query(
    store: Store,
    sql: str,
    *,
    write: bool = False,
    max_rows: int = 50,
    time_limit: float = DEFAULT_QUERY_TIMEOUT,
    text: bool = False,
) -> QueryRows:
    """Run a user's SQL sealed (no files, no attach, no extensions, no settings), at most ``time_limit`` s.

    Read-only unless ``write`` (then one transaction). Streams: only ``max_rows`` + 1 rows of the last
    statement are fetched, however large its result. With ``text``, each value is DuckDB's text of it (None for
    NULL): what ``t2ibench sql`` prints and ``--out FILE.csv`` writes.
    """
    statements = check_user_sql(sql, write=write)
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 0:
        raise InputError(f"--limit must be an integer ≥ 0; got {max_rows!r}")
    if write and not store.path.is_file():
        raise InputError(f"{store.path}: no such results store (--write never creates one)")
    context = store.write(repair=True) if write else store.read()
    with context as con:
        before = _guarded_state(store, con) if write else None
        with _time_limit(con, time_limit) as limit:
            try:
                for statement in statements[:-1]:
                    limit.check()  # a deadline passed between statements is never lost
                    con.execute(statement)
                limit.check()
                columns: tuple[str, ...] = ()
                rows: list[tuple[Any, ...]] = []
                if text and _kind(duckdb.extract_statements(statements[-1])[0]) == "SELECT":
                    relation = _as_text(con.sql(statements[-1]))  # a query: read lazily, its first rows only
                    columns = tuple(relation.columns)
                    rows = relation.limit(max_rows + 1).fetchall()
                else:  # other statements (EXPLAIN, CALL, writes) stream their rows as Python values
                    cursor = con.execute(statements[-1])
                    if cursor.description:
                        columns = tuple(d[0] for d in cursor.description)
                        rows = cursor.fetchmany(max_rows + 1)
                limit.check()
            except duckdb.Error as exc:
                _raise_sql_error(exc)
        if before is not None:
            try:
                _protect_schema(con, before, _guarded_state(store, con), store.path)
            except duckdb.Error as exc:  # the checks or the view rebuild failed on what the statements left
                if _is_damage(exc):
                    raise
                raise InputError(
                    f"refused: after the statements t2ibench could not check or restore its schema "
                    f"({_first_line(exc)}); nothing was changed"
                ) from None
    return QueryRows(columns, rows[:max_rows], truncated=len(rows) > max_rows)


def user_export(store: Store, sql: str, path: str | Path, *, time_limit: float = DEFAULT_QUERY_TIMEOUT) -> int:
    """Write a user's read-only query's rows to CSV or Parquet (by suffix) from Python; returns the row count.

    The query runs sealed, exactly as ``user_query``; its rows stream as Arrow batches into a separate
    in-memory connection that writes only ``path`` (through a temporary file renamed into place). The
    user's SQL is never spliced into a COPY. Every value written is the one ``t2ibench sql`` prints: a CSV holds
    DuckDB's text of each value; a Parquet file keeps each column's type where Arrow carries it faithfully and
    holds DuckDB's text of the others (PARQUET_AS_TEXT, a note names them).
    """
    target = Path(path)
    fmt = {".csv": "FORMAT CSV, HEADER", ".parquet": "FORMAT PARQUET"}.get(target.suffix.lower())
    if fmt is None:
        raise InputError(f"{target}: export as .csv or .parquet")
    if target.exists() and not target.is_file():
        raise InputError(f"{target}: is a folder or a special file; give a file name for --out")
    statements = check_user_sql(sql, write=False)
    if importlib.util.find_spec("pyarrow") is None:  # the Arrow stream between the two connections
        raise InputError("--out needs pyarrow (pip install pyarrow; part of the 'orchestration' extra)") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    writer = duckdb.connect(":memory:")
    writer.execute("SET enable_progress_bar = false")
    try:
        with store.read() as con, _time_limit(con, time_limit, also=writer) as limit:
            try:
                relation = con.sql(statements[0])
                if relation is None:
                    raise InputError("--out: the statement returns no rows")
                wide: list[str] = []  # 128-bit integer columns cast to DECIMAL(38,0) for Parquet
                if target.suffix.lower() == ".csv":
                    relation = _as_text(relation)
                else:
                    wide = [n for n, k in zip(relation.columns, relation.types, strict=True) if k.id in WIDE_INTEGERS]
                    relation, as_text = _for_parquet(relation)
                    if as_text:
                        note(
                            f"{target}: written as text, as t2ibench sql prints them (Parquet has no faithful type for "
                            f"them): {', '.join(as_text)}"
                        )
                writer.register("user_result", relation.to_arrow_reader(EXPORT_BATCH))
                escaped = str(tmp).replace("'", "''")
                limit.check()
                counted = writer.execute(f"COPY user_result TO '{escaped}' ({fmt})").fetchone()
                limit.check()
            except duckdb.Error as exc:
                if wide and isinstance(exc, duckdb.ConversionException) and WIDE_INTEGER_FORM in str(exc):
                    raise InputError(
                        f"{target}: {_first_line(exc)} — Parquet holds a 128-bit integer ({', '.join(wide)}) as "
                        f"{WIDE_INTEGER_FORM}, at most 38 digits: cast that column to VARCHAR in the query, or write "
                        ".csv"
                    ) from None
                _raise_sql_error(exc)
        os.replace(tmp, target)
    finally:
        writer.close()
        tmp.unlink(missing_ok=True)
    return int(counted[0]) if counted else 0


def _as_text(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """The relation with every column cast to DuckDB's text of its values (NULL stays NULL); columns by position."""
    return relation.project(
        *[SQLExpression(f"#{i}").cast(sqltypes.VARCHAR).alias(name) for i, name in enumerate(relation.columns, 1)]
    )


def _for_parquet(relation: duckdb.DuckDBPyRelation) -> tuple[duckdb.DuckDBPyRelation, list[str]]:
    """The relation with each column Arrow would change cast to what keeps its value (text, or DECIMAL(38,0) for a
    128-bit integer), and the columns written as text ('name (TYPE)')."""
    expressions, as_text = [], []
    for i, (name, kind) in enumerate(zip(relation.columns, relation.types, strict=True), 1):
        column = SQLExpression(f"#{i}")
        if _arrow_changes(kind):
            column = column.cast(sqltypes.VARCHAR)
            as_text.append(f"{name} ({kind})")
        elif kind.id in WIDE_INTEGERS:
            column = column.cast(WIDE_INTEGER_FORM)
        expressions.append(column.alias(name))
    return relation.project(*expressions), as_text


def _arrow_changes(kind: sqltypes.DuckDBPyType) -> bool:
    """Whether Arrow/Parquet would not hold a value of ``kind`` as DuckDB prints it (nested types: any member)."""
    if kind.id in PARQUET_AS_TEXT:
        return True
    try:
        members = [child for _, child in kind.children if isinstance(child, sqltypes.DuckDBPyType)]
    except duckdb.Error:  # not a nested type (DECIMAL and ENUM have children, but of other kinds)
        members = []
    if kind.id == "struct" and not members:
        return True  # Parquet has no empty struct
    return any(child.id in WIDE_INTEGERS or _arrow_changes(child) for child in members)


@dataclass(frozen=True)
class _Guarded:
    """What a user's ``--write`` may not change: t2ibench's bookkeeping rows and the files beside the store."""

    meta: tuple[tuple[Any, ...], ...]
    files: tuple[tuple[str, int, int, int], ...]


def _guarded_state(store: Store, con: duckdb.DuckDBPyConnection) -> _Guarded:
    """store_meta's rows (its schema version, its owner) and the identity of the store's log files."""
    try:
        meta = tuple(con.execute("SELECT key, value FROM main.store_meta ORDER BY key").fetchall())
    except duckdb.Error:
        meta = ()
    files = []
    for suffix in WAL_SUFFIXES:
        name = f"{store.file}{suffix}"
        with contextlib.suppress(OSError):
            st = os.lstat(name)
            files.append((suffix, st.st_mode, st.st_ino, st.st_nlink))
    return _Guarded(meta, tuple(files))


def _protect_schema(con: duckdb.DuckDBPyConnection, before: _Guarded, after: _Guarded, where: Path) -> None:
    """Refuse (roll back) a user's --write that drops t2ibench's own tables, columns (deprecated copies included)
    or views, changes a table's column types, key or constraints, adds an index to one, shadows a DuckDB function or
    type, or edits store_meta; restore views a user replaced (CREATE OR REPLACE VIEW leaderboard ...), so reports
    never read a redefined view; fill the spelling a user's INSERT or UPDATE left empty (DEPRECATED_COPIES). A log file
    beside the store that turned into a link while the SQL ran (a sealed query may read those names) refuses too."""
    if before.meta != after.meta:
        raise InputError(
            "refused: the statements would change store_meta (t2ibench's schema version and owner records); nothing "
            "was changed"
        )
    links = [f"{where}{s}" for s, mode, _, nlink in after.files if not stat.S_ISREG(mode) or nlink > 1]
    if links or {f[0] for f in after.files} - {f[0] for f in before.files} - {".wal"}:
        raise InputError(
            f"refused: a file beside the store changed while the statements ran ({', '.join(links) or 'a log file'}); "
            "nothing was changed"
        )
    shadows = [
        f"{kind} {name}"
        for kind, name in con.execute(
            "SELECT 'table', table_name FROM duckdb_tables() WHERE temporary UNION ALL "
            "SELECT 'view', view_name FROM duckdb_views() WHERE temporary AND NOT internal ORDER BY 2"
        ).fetchall()
        if name in OWN_NAMES
    ]
    if shadows:
        raise InputError(
            f"refused: the statements create a temporary {shadows[0]} named like one of t2ibench's own (it would hide "
            "the store's for the rest of the call); nothing was changed — give it another name"
        )
    damage = _schema_damage(con)
    if damage:
        raise InputError(
            f"refused: the statements would remove t2ibench's own {', '.join(damage[:3])}"
            f"{' ...' if len(damage) > 3 else ''}; nothing was changed (create your own tables and views "
            "beside them)"
        )
    problems = schema_problems(con)
    if problems:
        raise InputError(
            f"refused: after the statements {problems[0]}"
            f"{f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''}; t2ibench's refreshes could no longer "
            "write there, so nothing was changed (create your own tables, macros and types beside them)"
        )
    ensure_schema(con, str(where))  # a store a --write has just put back is brought to the current schema
    for name, sql in VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")
    _fill_copies(con)  # rows the user's SQL wrote with one spelling only get the other (DEPRECATED_COPIES)


def check_user_sql(sql: str, *, write: bool) -> list[str]:
    """The statements of a user's SQL, each of an allowed type; InputError for empty, unparsable or refused SQL.

    Read-only SQL is one query (several would show only the last result); ``--write`` may chain statements.
    """
    if not isinstance(sql, str):
        raise InputError(f"SQL must be text; got {type(sql).__name__}")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise InputError(f"SQL error: {_first_line(exc)}") from None
    if not statements:
        raise InputError("the query is empty (nothing but whitespace or comments)")
    allowed = WRITE_STATEMENTS if write else READ_STATEMENTS
    for number, statement in enumerate(statements, start=1):
        kind = _kind(statement)
        where = f"statement {number} ({kind})" if len(statements) > 1 else kind
        if kind == "UNKNOWN":
            raise InputError(f"statement {number} is of a kind t2ibench sql does not support")
        if kind in NEVER_STATEMENTS:
            raise InputError(
                f"{where} is not allowed: {NEVER_STATEMENTS[kind]}; t2ibench sql reads and writes only the store "
                "(docs/security.md)"
            )
        if kind not in allowed:
            hint = "; add --write to modify the store" if kind in WRITE_STATEMENTS else ""
            raise InputError(f"{where} is not allowed in a {'--write' if write else 'read-only'} query{hint}")
    if not write and len(statements) > 1:
        raise InputError(f"give one query at a time; got {len(statements)} statements (only one result is shown)")
    return [s.query for s in statements]


def _kind(statement: Any) -> str:
    """The statement's type name; 'UNKNOWN' for types this duckdb build's Python API cannot name."""
    try:
        return str(statement.type.name)
    except ValueError:  # e.g. UPDATE EXTENSIONS
        return "UNKNOWN"


def _raise_sql_error(exc: duckdb.Error) -> NoReturn:
    if isinstance(exc, duckdb.InterruptException) or _is_damage(exc):
        raise exc  # turned into QueryStoppedError by _time_limit, StoreDamagedError by read()/write()
    if isinstance(exc, duckdb.PermissionException) and "disabled by configuration" in str(exc):
        raise InputError(  # DuckDB words it two ways (external access off; the local file system off once open)
            f"SQL error: file system operations are disabled: t2ibench sql reads and writes only the store "
            f"(docs/security.md) — {_first_line(exc)}"
        ) from None
    if isinstance(exc, duckdb.OutOfMemoryException):
        raise InputError(
            f"SQL error: {_first_line(exc)} (t2ibench's sealed connection has no temporary directory to spill to: "
            "narrow the query, or aggregate before sorting or joining)"
        ) from None
    raise InputError(f"SQL error: {_first_line(exc)}") from None


class _Limit:
    """A query's time limit, race-free: once the deadline passes (or Ctrl-C comes), a watchdog thread interrupts the
    connections again and again until the guarded block has left DuckDB — an interrupt DuckDB drops because no
    statement was running yet is repeated — and ``check`` stops the block between statements."""

    REPEAT = 0.05  # seconds between the watchdog's interrupts once the limit has passed

    def __init__(self, seconds: float, connections: tuple[duckdb.DuckDBPyConnection, ...]) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.connections = connections
        self.reason: str | None = None
        self._stop = threading.Event()  # the deadline passed or Ctrl-C: interrupt until done
        self._done = threading.Event()  # the guarded block has returned
        self._thread = threading.Thread(target=self._watch, name="t2ibench-query-limit", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, why: str) -> None:
        if self.reason is None:
            self.reason = why
        self._stop.set()
        self._interrupt()

    def check(self) -> None:
        """Raise InterruptException at once when the limit has passed (called between statements)."""
        if self.reason is None and time.monotonic() >= self.deadline:
            self.stop("timeout")
        if self.reason is not None:
            raise duckdb.InterruptException(f"stopped ({self.reason})")

    def finish(self) -> None:
        self._done.set()
        self._stop.set()
        self._thread.join()

    def _interrupt(self) -> None:
        for c in self.connections:
            with contextlib.suppress(duckdb.Error):
                c.interrupt()

    def _watch(self) -> None:
        if not self._stop.wait(max(0.0, self.deadline - time.monotonic())) and not self._done.is_set():
            self.stop("timeout")
        while not self._done.wait(self.REPEAT if self.reason is not None else None):
            self._interrupt()


@contextlib.contextmanager
def _time_limit(
    con: duckdb.DuckDBPyConnection, seconds: float, *, also: duckdb.DuckDBPyConnection | None = None
) -> Iterator[_Limit]:
    """Interrupt ``con`` (and ``also``) after ``seconds`` or on Ctrl-C, until the block has returned; raise
    QueryStoppedError naming which."""
    if not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 < seconds < float("inf")):
        raise InputError(f"--timeout must be a number of seconds > 0; got {seconds!r}")
    limit = _Limit(float(seconds), tuple(c for c in (con, also) if c is not None))
    previous: dict[int, Any] = {}
    received: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        received.append(signum)
        limit.stop(signal.Signals(signum).name)

    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS}
    limit.start()
    try:
        yield limit
        if received:  # a signal while the block was between statements: still a stop
            raise duckdb.InterruptException("interrupted")
    except (duckdb.InterruptException, KeyboardInterrupt):
        if limit.reason == "timeout":
            raise QueryStoppedError(
                f"the query was stopped after {seconds:g} s (--timeout) and the store released; narrow it (WHERE, "
                "LIMIT) or raise --timeout"
            ) from None
        signum = received[0] if received else int(signal.SIGINT)
        how = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        raise QueryStoppedError(
            f"the query was interrupted ({how}) and the store released", exit_code=128 + signum
        ) from None
    except duckdb.Error as exc:
        if limit.reason:  # an interrupt surfaced as another error type (e.g. through the Arrow stream)
            raise QueryStoppedError(f"the query was stopped ({limit.reason}) and the store released") from None
        _raise_sql_error(exc)
    finally:
        limit.finish()
        for s, handler in previous.items():
            signal.signal(s, handler)
