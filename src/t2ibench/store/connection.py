"""The store's connections and its typed writes: ``Store`` opens the DuckDB file sealed (read-only or in one
transaction, retrying while another process holds it, migrating it on the first write), turns damage into a clear
error, and writes one model version, a run's records and upserted rows; ``VersionRows`` is a version's content."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from t2ibench.errors import InputError
from t2ibench.store import sandbox, writes
from t2ibench.store.errors import (
    StoreBusyError,
    StoreDamagedError,
    StoreRefusedError,
    StoreVersionError,
    _damaged,
    _first_line,
    _is_damage,
    _lock_holder,
    file_identity,
    found_damaged,
)
from t2ibench.store.integrity import block_problem, header_problem
from t2ibench.store.lock import run_lock
from t2ibench.store.migrations import check_version, ensure_schema
from t2ibench.store.sandbox import DEFAULT_QUERY_TIMEOUT, SANDBOX_CONFIG, QueryRows
from t2ibench.store.schema import SCHEMA_VERSION, SPINE_SQL, WAL_SUFFIXES


@dataclass(frozen=True)
class VersionRows:
    """Every row of one model/evaluation version, as the store writes it (version columns added by the store)."""

    model: str
    model_hash: str
    evaluator_hash: str
    suite: str
    content_hash: str
    model_row: Mapping[str, Any]
    prompts: Sequence[Mapping[str, Any]]
    images: Sequence[Mapping[str, Any]]
    spine: Mapping[str, Sequence[Mapping[str, Any]]]  # the spine benchmark's tables (SPINE_SQL.version_tables) → rows
    metrics: Sequence[Mapping[str, Any]]
    modes: Sequence[Mapping[str, Any]]
    evaluator_settings: Mapping[str, Any] = field(default_factory=dict)  # an ``evaluators`` row (settings, lite)
    benchmarks: Sequence[BenchmarkRows] = ()  # the other benchmarks evaluated with this version (GenEval 2, ...)
    selftest: Mapping[str, Any] | None = None  # an ``evaluator_selftests`` row: the run's spine evaluator measured


@dataclass(frozen=True)
class BenchmarkRows:
    """One benchmark's evaluation of a model version, under its own ``evaluator_hash``: its protocol
    (``benchmark_protocols``), every answer of a VQA-judged one (``vqa_answers``), every judged image of one whose
    judgement is not a list of questions (``benchmark_images``) and every cell of its tables (``benchmark_scores``),
    without the version columns."""

    benchmark: str
    evaluator_hash: str
    settings: Mapping[str, Any]
    answers: Sequence[Mapping[str, Any]]
    scores: Sequence[Mapping[str, Any]]
    images: Sequence[Mapping[str, Any]] = ()


# store files this process has checked whole before writing into them, by identity (device, inode, size, mtime):
# the process's own writes keep a file verified (``_still_verified``); a change made elsewhere is checked again
_VERIFIED: set[tuple[int, int, int, int]] = set()
_VERIFIED_LOCK = threading.Lock()


def _file_identity(path: Path) -> tuple[int, int, int, int] | None:
    """``file_identity`` of an existing non-empty file, None otherwise (nothing to verify yet)."""
    identity = file_identity(path)
    return identity if identity is not None and identity[2] else None


def _still_verified(path: Path) -> None:
    """After this process wrote ``path`` (verified before the write), its new identity is verified too."""
    identity = _file_identity(path)
    if identity is not None:
        with _VERIFIED_LOCK:
            _VERIFIED.add(identity)


# per store file (device, inode): its ``_schema_state`` after this process's last own write, its schema checked
# (``ensure_schema``) before it; a write finding the file still in that state skips the check (a dozen catalogue
# queries). One entry per file, however many writes
_SCHEMA_CHECKED: dict[tuple[int, int], tuple[Any, ...]] = {}


def _schema_state(path: Path) -> tuple[Any, ...] | None:
    """The store file as it is now, from ``os.stat`` alone: the ``file_identity`` of it and of each DuckDB log beside
    it (None: no file yet). Never opens the file: closing any descriptor of a file drops every POSIX lock this process
    holds on it, DuckDB's included. A change made elsewhere within one tick of the file clock that leaves the size
    alone would go unseen, as for ``_VERIFIED``."""
    main = file_identity(path)
    return None if main is None else (main, *(file_identity(Path(f"{path}{suffix}")) for suffix in WAL_SUFFIXES))


EVALUATE_WRITER = "t2ibench evaluate"  # the owner of a store that `t2ibench evaluate --store` started


def _owner(path: Path, value: Any) -> dict[str, str]:
    """The store's recorded owner: a config ({'config', 'file'}) or ``t2ibench evaluate`` ({'writer'}); a damaged
    record is refused, never guessed."""
    try:
        owner = json.loads(value)
    except (TypeError, ValueError):
        owner = None
    if isinstance(owner, dict) and owner.get("writer") == EVALUATE_WRITER and len(owner) == 1:
        return {"writer": EVALUATE_WRITER}
    if not (isinstance(owner, dict) and all(isinstance(owner.get(k), str) for k in ("config", "file"))):
        raise InputError(
            f"{path}: store_meta's owner record is damaged ({str(value)[:80]!r}); t2ibench will not write into it"
        )
    return {"config": owner["config"], "file": owner["file"]}


def describe_owner(owner: Mapping[str, str]) -> str:
    """Whose a store is, as 'this store …' goes on: "belongs to config 'smoke' (configs/smoke.yaml)", or "holds
    evaluations stored by `t2ibench evaluate --store` (no config)"."""
    if owner.get("writer") == EVALUATE_WRITER:
        return f"holds evaluations stored by `{EVALUATE_WRITER} --store` (no config)"
    return f"belongs to config {owner.get('config')!r} ({owner.get('file')})"


class Store:
    """A DuckDB results file: create/migrate, idempotent upserts in transactions, read-only queries."""

    def __init__(self, path: str | Path, *, timeout: float = 120.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._held = threading.local()  # a read-only connection ``session`` holds for this thread's queries

    # -- connections ------------------------------------------------------------------------------------------
    @property
    def file(self) -> Path:
        """The store file itself: ``path`` with symbolic links, '.' and '..' resolved, so every alias of one store
        opens, logs (``<file>.wal``) and locks (``<file>.lock``) beside the same file."""
        return Path(os.path.realpath(self.path))

    def _checked_file(self, *, read_only: bool) -> Path:
        """``file``, refused (one line) when it is not a plain file, when DuckDB's log files beside it are links or
        special files (a sealed query may read those names), and, for writing, when it was found damaged in this
        process or has other hard links (each name would keep its own log: the two would diverge)."""
        if self.path.is_dir():
            raise InputError(f"{self.path}: is a directory, not a DuckDB results store")
        target = self.file
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise InputError(f"{self.path}: cannot open the results store ({exc.strerror})") from None
        if st is None and read_only:
            raise InputError(f"{self.path}: no results store yet (run a benchmark first)")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise StoreRefusedError(f"{self.path}: not a regular file (a pipe, socket or device), not a results store")
        if st is not None and (problem := header_problem(target)) is not None:
            raise _damaged(self.path, problem)
        for suffix in WAL_SUFFIXES:
            sibling = Path(f"{target}{suffix}")
            try:
                sl = os.lstat(sibling)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(sl.st_mode) or not stat.S_ISREG(sl.st_mode) or sl.st_nlink > 1:
                what = (
                    "a symbolic link"
                    if stat.S_ISLNK(sl.st_mode)
                    else ("a hard link to another file" if stat.S_ISREG(sl.st_mode) else "not a regular file")
                )
                raise StoreRefusedError(
                    f"{sibling}: is {what}, where DuckDB keeps the store's log; t2ibench will not open the store "
                    "beside it — remove it (only DuckDB itself creates that file)"
                )
        if st is not None and not read_only:
            if found_damaged(target):
                raise StoreDamagedError(
                    f"{self.path}: found damaged earlier in this process; t2ibench will not write into it — move it "
                    "aside (a refresh then starts a new store) or restore it from a copy"
                )
            if st.st_nlink > 1:
                raise StoreRefusedError(
                    f"{self.path}: has {st.st_nlink} hard links (the same file under other names, each of which would "
                    "keep its own DuckDB log); t2ibench will not write into it — give the store one name (cp, not ln)"
                )
        return target

    def _connect(self, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        """A sealed connection (SANDBOX_CONFIG, settings locked; a read-only one reads no file at all but the store it
        opened); waits while another process holds the file. Before a process first opens a file for writing, every
        table of it is read through a read-only connection (``verify``): a damaged store is never opened for writing."""
        target = self._checked_file(read_only=read_only)
        if not read_only:
            self.verify()
        return self._open(target, read_only=read_only)

    def verify(self) -> None:
        """Refuse (``StoreDamagedError``) a store whose headers, size or any block fail DuckDB's own checksums
        (``integrity.block_problem``), read under a read-only connection so that no writer changes the file
        meanwhile; done once per process and file (a new store passes at once)."""
        target = self._checked_file(read_only=False)
        identity = _file_identity(target)
        if identity is None or identity in _VERIFIED:
            return
        con = self._open(target, read_only=True)
        try:
            problem = block_problem(target)
        finally:
            con.close()
        if problem is not None:
            raise _damaged(self.path, problem)
        with _VERIFIED_LOCK:
            _VERIFIED.add(identity)

    def _open(self, target: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        """``duckdb.connect`` to the checked file ``target``, sealed, retrying while another process holds it."""
        deadline = time.monotonic() + self.timeout
        delay = 0.05
        while True:
            try:
                con = duckdb.connect(str(target), read_only=read_only, config=dict(SANDBOX_CONFIG))
                break
            except duckdb.Error as exc:
                if _is_damage(exc):
                    raise _damaged(self.path, exc) from None
                if "lock" not in str(exc).lower():
                    raise InputError(f"{self.path}: cannot open the results store ({_first_line(exc)})") from None
                if time.monotonic() > deadline:
                    raise StoreBusyError(
                        f"{self.path}: held by another process for more than {self.timeout:g} s "
                        f"({_lock_holder(str(exc))})"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        try:
            con.execute("SET enable_progress_bar = false")
            if read_only:  # the store's file is open: no other file (its logs included) can be read from here on
                con.execute("SET disabled_filesystems = 'LocalFileSystem'")
            con.execute("SET lock_configuration = true")
        except duckdb.Error:
            con.close()
            raise
        return con

    @contextlib.contextmanager
    def write(self, *, repair: bool = False, keeps_schema: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection inside one transaction: committed on success, rolled back on any error.

        The one check of every write: a store that cannot be verified — damaged, of a newer schema, its own tables
        changed by a user's SQL (``migrations.schema_problems``) — is refused before anything is written. The
        schema's part of it is skipped when the file is exactly as this process's last ``keeps_schema`` write left
        it (``_schema_state``, taken while DuckDB's lock is held): ``keeps_schema`` promises that the statements run
        inside leave the schema as they found it (t2ibench's own typed writes below; never a caller's free SQL).
        With ``repair`` (a user's ``--write`` SQL only) a changed schema is let in unmigrated, so that the SQL can put
        it back; the caller then checks the result before it commits (``sandbox._protect_schema``)."""
        self.file.parent.mkdir(parents=True, exist_ok=True)
        con = self._connect(read_only=False)
        committed = False
        checked: tuple[Any, ...] | None = None
        try:
            con.execute("BEGIN TRANSACTION")
            if repair:
                check_version(con, str(self.path))
                with contextlib.suppress(StoreDamagedError):
                    ensure_schema(con, str(self.path))
            elif (state := _schema_state(self.file)) is None or _SCHEMA_CHECKED.get(state[0][:2]) != state:
                ensure_schema(con, str(self.path))
            yield con
            con.execute("COMMIT")
            committed = True
            if keeps_schema and not repair:
                # the log folded into the file now, while DuckDB's lock is still held (closing would do it next):
                # the state recorded is this write's, whoever takes the file after the close (a failed checkpoint
                # records nothing: the next write checks the schema again)
                with contextlib.suppress(duckdb.Error):
                    con.execute("CHECKPOINT")
                    checked = _schema_state(self.file)
        except BaseException as exc:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            if isinstance(exc, duckdb.Error) and _is_damage(exc):
                raise _damaged(self.path, exc) from None
            raise
        finally:
            con.close()
            if committed:
                _still_verified(self.file)  # this process's own write: the file stays verified as it now is
        if checked is not None:
            with _VERIFIED_LOCK:
                _SCHEMA_CHECKED[checked[0][:2]] = checked

    @contextlib.contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection (writes through it fail)."""
        con = self._connect(read_only=True)
        try:
            yield con
        except duckdb.Error as exc:
            if _is_damage(exc):
                raise _damaged(self.path, exc) from None
            raise
        finally:
            con.close()

    @contextlib.contextmanager
    def session(self) -> Iterator[Store]:
        """Run this thread's read-only ``query``/``rows`` calls inside on one connection (a report's dozens of reads
        open the file once, and see one state of it)."""
        if getattr(self._held, "con", None) is not None:
            yield self
            return
        with self.read() as con:
            self._held.con = con
            try:
                yield self
            finally:
                self._held.con = None

    def initialise(self) -> None:
        """Create the tables and views if missing."""
        with self.write(keeps_schema=True):
            pass

    # -- writes -----------------------------------------------------------------------------------------------
    @staticmethod
    def upsert(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert or update ``rows`` by the table's natural key (inside the caller's transaction)."""
        return writes.upsert(con, table, rows)

    @staticmethod
    def replace(
        con: duckdb.DuckDBPyConnection, table: str, scope: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
    ) -> int:
        """Replace every row matching ``scope`` (column = value) by ``rows``: re-evaluations drop stale rows."""
        return writes.replace(con, table, scope, rows)

    # -- reads ------------------------------------------------------------------------------------------------
    def query(
        self, sql: str, params: Sequence[Any] | None = None, *, write: bool = False
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """(column names, rows) of t2ibench's own SQL (trusted, with parameters); read-only unless ``write``."""
        held = None if write else getattr(self._held, "con", None)
        context = self.write() if write else (contextlib.nullcontext(held) if held is not None else self.read())
        with context as con:
            try:
                cursor = con.execute(sql, list(params) if params else None)
            except duckdb.Error as exc:
                if _is_damage(exc):
                    raise
                raise InputError(f"{self.path}: SQL error: {_first_line(exc)}{self._newer(con)}") from None
            description: list[Any] | None = cursor.description
            if not description:
                return [], []
            return [d[0] for d in description], cursor.fetchall()

    @staticmethod
    def _newer(con: duckdb.DuckDBPyConnection) -> str:
        """' (the store was written by schema N; ...)' when a read failed on a store of a newer schema, else ''."""
        try:
            check_version(con)
        except StoreVersionError:
            row = con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
            return (
                f" (the store was written by schema {row[0] if row else '?'}; this t2ibench knows up to "
                f"{SCHEMA_VERSION}: upgrade t2ibench)"
            )
        except duckdb.Error:
            return ""
        return ""

    # -- a user's SQL (t2ibench sql) ---------------------------------------------------------------------------
    def user_query(
        self,
        sql: str,
        *,
        write: bool = False,
        max_rows: int = 50,
        time_limit: float = DEFAULT_QUERY_TIMEOUT,
        text: bool = False,
    ) -> QueryRows:
        """Run a user's SQL sealed (no files, no attach, no extensions, no settings), at most ``time_limit`` s.

        Read-only unless ``write`` (then one transaction). Streams: only ``max_rows`` + 1 rows of the last
        statement are fetched, however large its result. With ``text``, each value is DuckDB's text of it (None
        for NULL): what ``t2ibench sql`` prints and ``--out FILE.csv`` writes.
        """
        return sandbox.user_query(self, sql, write=write, max_rows=max_rows, time_limit=time_limit, text=text)

    def user_export(self, sql: str, path: str | Path, *, time_limit: float = DEFAULT_QUERY_TIMEOUT) -> int:
        """Write a user's read-only query's rows to CSV or Parquet (by suffix) from Python; returns the row count.

        The query runs sealed, exactly as ``user_query``; its rows stream as Arrow batches into a separate
        in-memory connection that writes only ``path`` (through a temporary file renamed into place). The
        user's SQL is never spliced into a COPY. Every value written is the one ``t2ibench sql`` prints (CSV: DuckDB's
        text; Parquet: typed where Arrow is faithful, text otherwise).
        """
        return sandbox.user_export(self, sql, path, time_limit=time_limit)

    def rows(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Query results as dictionaries (read-only)."""
        columns, rows = self.query(sql, params)
        return [dict(zip(columns, r, strict=True)) for r in rows]

    # -- what the pipeline and the analyses write -------------------------------------------------------------
    def upsert_rows(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert or update ``rows`` of ``table`` by its natural key, in one transaction of their own."""
        with self.write(keeps_schema=True) as con:
            return self.upsert(con, table, rows)

    def replace_if_changed(self, table: str, scope: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> bool:
        """Make ``rows`` the rows of ``table`` that match ``scope`` (column = value; empty: the whole table), in one
        transaction of its own — unless they already are, when the store file is not touched (a report re-made
        from the same rows leaves a DVC-tracked store as it was); True when it wrote."""
        columns = writes.table_columns(table)
        where = " AND ".join(f"{c} = ?" for c in scope) or "TRUE"
        wanted = sorted(
            (tuple(writes.plain({**r, **scope}.get(c)) for c in columns) for r in rows), key=repr
        )  # as the store would hold them
        with self.read() as con:
            held = con.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE {where}", list(scope.values()))
            stored = sorted((tuple(v) for v in held.fetchall()), key=repr)
        if stored == wanted:
            return False
        with self.write(keeps_schema=True) as con:
            if scope:
                self.replace(con, table, scope, rows)
            else:
                con.execute(f"DELETE FROM {table}")
                self.upsert(con, table, rows)
        return True

    def write_agreement(
        self, annotations: Sequence[Mapping[str, Any]], statistics: Sequence[Mapping[str, Any]]
    ) -> None:
        """Upsert human annotations (with their verdicts) and the agreement statistics computed from them, in one
        transaction: never the annotations without their statistics."""
        with self.write(keeps_schema=True) as con:
            self.upsert(con, "annotations", annotations)
            self.upsert(con, "agreement", statistics)

    def _write_benchmark(
        self,
        con: duckdb.DuckDBPyConnection,
        version: Mapping[str, str],
        rows: BenchmarkRows,
        *,
        source: Mapping[str, Any] | None = None,
    ) -> None:
        scope = {**version, "benchmark": rows.benchmark}
        protocol = {"settings": dict(rows.settings), "source": None if source is None else dict(source)}
        self.replace(con, "benchmark_protocols", scope, [protocol])
        self.replace(con, "vqa_answers", scope, rows.answers)
        self.replace(con, "benchmark_images", scope, rows.images)
        self.replace(con, "benchmark_scores", scope, rows.scores)

    def write_version(self, run_id: str, version: VersionRows) -> bool:
        """Store one model/evaluation version in one transaction; returns True if it was already stored unchanged.

        An identical re-run (same content hash) only records that ``run_id`` produced the version; a changed one
        replaces that version's rows, so stale verdicts, detections, scores or modes never survive.
        """
        key = {"model": version.model, "model_hash": version.model_hash}
        judged = {**key, "evaluator_hash": version.evaluator_hash}
        if set(version.spine) != set(SPINE_SQL.version_tables):
            raise ValueError(f"VersionRows.spine has {sorted(version.spine)}, not {sorted(SPINE_SQL.version_tables)}")
        with self.write(keeps_schema=True) as con:
            stored = con.execute(
                "SELECT content_hash FROM model_versions WHERE model = ? AND model_hash = ? AND evaluator_hash = ?",
                [version.model, version.model_hash, version.evaluator_hash],
            ).fetchone()
            unchanged = stored is not None and stored[0] == version.content_hash
            if not unchanged:
                self.upsert(con, "models", [{**key, **version.model_row}])
                self.upsert(con, "prompts", [{"suite": version.suite, **r} for r in version.prompts])
                self.replace(con, "images", {**key, "suite": version.suite}, version.images)
                scopes = {"suite": version.suite}  # what a spine table's rows may be scoped by beyond the version
                for table, columns in SPINE_SQL.version_tables.items():  # the spine benchmark's rows
                    scope = {**judged, **{column: scopes[column] for column in columns}}
                    self.replace(con, table, scope, version.spine[table])
                self.replace(con, "metrics", judged, version.metrics)
                self.replace(con, "modes", judged, version.modes)
                # the VQA-judged benchmarks evaluated with this version, each under its own evaluation hash
                for rows in version.benchmarks:
                    self._write_benchmark(con, {**key, "evaluator_hash": rows.evaluator_hash}, rows)
                # run_id: the run whose computation these rows are (a later cached run does not replace it)
                stamp = {"content_hash": version.content_hash, "stored_at": datetime.now(UTC), "run_id": run_id}
                self.upsert(con, "model_versions", [{**judged, **stamp}])
            if version.evaluator_settings:
                self.upsert(
                    con,
                    "evaluators",
                    [{"evaluator_hash": version.evaluator_hash, **version.evaluator_settings}],
                )
            self.upsert(con, "run_models", [{"run_id": run_id, **judged}])
            # which benchmark evaluation this run made current for the model (none: the model has none now)
            self.replace(
                con,
                "run_benchmarks",
                {"run_id": run_id, "model": version.model},
                [{"model_hash": version.model_hash, "benchmark": b.benchmark, "evaluator_hash": b.evaluator_hash}
                 for b in version.benchmarks],
            )  # fmt: skip
            # the self-test of the spine's evaluator this run judged the model with (none: not measured)
            if version.selftest is not None:
                self.upsert(con, "evaluator_selftests", [dict(version.selftest)])
            self.replace(
                con,
                "run_selftests",
                {"run_id": run_id, "model": version.model},
                [] if version.selftest is None else [{"selftest_hash": version.selftest["selftest_hash"]}],
            )
        return unchanged

    def claim(self, config: str, config_file: str) -> None:
        """Make sure this store belongs to the config named ``config`` (its file ``config_file``, relative to the
        workspace): a store records the first config that ran into it, and another config is refused — a second
        config's models would otherwise show under the first's names on its leaderboard. A store written before
        owners were recorded is adopted when every run in it is of this config."""
        with self.write(keeps_schema=True) as con:
            self._claim(con, config, config_file)

    def _claim(self, con: duckdb.DuckDBPyConnection, config: str, config_file: str) -> None:
        """``claim`` inside the caller's transaction."""
        if self._refuse_claim(con, config, config_file):
            con.execute(
                "INSERT INTO store_meta VALUES ('owner', ?)", [json.dumps({"config": config, "file": config_file})]
            )

    def check_claim(self, config: str, config_file: str) -> None:
        """Refuse (one line), reading only, a store that config ``config`` could not claim (see ``claim``); a store
        not there yet passes."""
        if self.file.exists():
            with self.read() as con:
                self._refuse_claim(con, config, config_file)

    def _refuse_claim(self, con: duckdb.DuckDBPyConnection, config: str, config_file: str) -> bool:
        """Refuse a store owned by another config or by ``t2ibench evaluate``, or holding other configs' runs;
        True when the store has no owner record yet (the claim writes one)."""
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        owner_sql = "SELECT value FROM store_meta WHERE key = 'owner'"
        row = con.execute(owner_sql).fetchone() if "store_meta" in tables else None
        if row is not None:
            owner = _owner(self.path, row[0])
            if (owner.get("config"), owner.get("file")) != (config, config_file):
                raise InputError(
                    f"{self.path}: this store {describe_owner(owner)}; config {config!r} ({config_file}) "
                    "cannot write into it — give it its own outputs.store"
                )
            return False
        sql = "SELECT DISTINCT config_name FROM runs WHERE config_name IS DISTINCT FROM ? ORDER BY 1"
        others = [r[0] for r in con.execute(sql, [config]).fetchall()] if "runs" in tables else []
        if others:
            raise InputError(
                f"{self.path}: this store holds runs of config(s) {', '.join(map(repr, others))}; config "
                f"{config!r} cannot write into it — give it its own outputs.store"
            )
        return True

    def check_evaluation_target(self) -> None:
        """Before any judging: refuse (one line) a store that ``t2ibench evaluate --store`` may not write — damaged
        (every block checked), or belonging to a config (only that config's refresh writes there: images stored from
        elsewhere would show as its models' results)."""
        if not self.file.exists():
            self._checked_file(read_only=False)  # a special file or a bad name is refused now, not after judging
            return
        self.verify()
        with self.read() as con:
            self._refuse_for_evaluation(con)

    def _refuse_for_evaluation(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Refuse a store belonging to a config (or holding a refresh's runs); True when it is already
        ``t2ibench evaluate``'s own, False when it is unclaimed."""
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "store_meta" not in tables:
            return False
        row = con.execute("SELECT value FROM store_meta WHERE key = 'owner'").fetchone()
        owner = None if row is None else _owner(self.path, row[0])
        if owner is not None and owner.get("writer") == EVALUATE_WRITER:
            return True
        sql = "SELECT DISTINCT config_name FROM runs ORDER BY 1"
        configs = [r[0] for r in con.execute(sql).fetchall()] if "runs" in tables else []
        if owner is not None or configs:
            whose = (
                describe_owner(owner)
                if owner is not None
                else f"holds runs of config(s) {', '.join(map(repr, configs))}"
            )
            raise InputError(
                f"{self.path}: this store {whose}; only that config's refresh writes there — store this "
                "evaluation in a store of its own (--store OTHER.duckdb), or put the images on that leaderboard as a "
                "model of the config (generator backend 'folder')"
            )
        return False

    def write_evaluation(
        self,
        version: Mapping[str, str],
        rows: BenchmarkRows,
        source: Mapping[str, Any],
    ) -> None:
        """Store a benchmark's evaluation ``rows`` made outside a refresh (``t2ibench evaluate --store``) in one
        transaction, through the same write as a refresh's version, with its ``source`` (who stored it, the images,
        the prompts judged); the store is claimed for ``t2ibench evaluate`` in the same transaction, and one
        belonging to a config is refused."""
        if rows.evaluator_hash != version["evaluator_hash"]:
            raise ValueError(f"{rows.benchmark}: rows of evaluation {rows.evaluator_hash} given for {version}")
        with self.write(keeps_schema=True) as con:
            if not self._refuse_for_evaluation(con):
                con.execute("INSERT INTO store_meta VALUES ('owner', ?)", [json.dumps({"writer": EVALUATE_WRITER})])
            self._write_benchmark(con, version, rows, source=source)

    def record_folders(self, run_id: str, folders: Sequence[tuple[str, str]]) -> None:
        """Record version folders (folder relative to the data folder, model) a run of this store's config planned;
        a folder already recorded keeps the run that first planned it."""
        with self.write(keeps_schema=True) as con:
            if folders:
                con.executemany(
                    "INSERT INTO output_folders VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    [[folder, model, run_id] for folder, model in folders],
                )

    def recorded_folders(self) -> set[str]:
        """Every version folder this store's refreshes planned, relative to their config's data folder."""
        with self.read() as con:
            return {r[0] for r in con.execute("SELECT folder FROM output_folders").fetchall()}

    def stored_image_paths(self) -> list[tuple[str, str, str]]:
        """(model, model_hash, the path of one of its images) per stored images version: where a version stored
        before folders were recorded keeps its images."""
        with self.read() as con:
            rows = con.execute("SELECT model, model_hash, min(path) FROM images GROUP BY ALL ORDER BY 1, 2").fetchall()
        return [(str(m), str(h), str(p)) for m, h, p in rows if p is not None]

    def owner(self) -> dict[str, str] | None:
        """The config this store belongs to ({'config': name, 'file': path in the workspace}), None if unclaimed."""
        if not self.path.exists():
            return None
        with self.read() as con:
            exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'store_meta'").fetchone()
            if not exists or not exists[0]:
                return None
            row = con.execute("SELECT value FROM store_meta WHERE key = 'owner'").fetchone()
        return None if row is None else _owner(self.path, row[0])

    def start_run(self, run: Mapping[str, Any], *, owner: tuple[str, str] | None = None) -> int:
        """Record a run as started (``run``: a ``runs`` row); runs still 'running' become 'abandoned' (returned).
        With ``owner`` (config name, config file), the store is ``claim``ed for it first, in the same transaction.

        Called under the store's run lock, so no other refresh is alive: a 'running' row is a killed run's.
        """
        with self.write(keeps_schema=True) as con:
            if owner is not None:
                self._claim(con, *owner)
            stale = con.execute("SELECT count(*) FROM runs WHERE status = 'running'").fetchone()
            con.execute(
                "UPDATE runs SET status = 'abandoned', finished_at = ? WHERE status = 'running'", [datetime.now(UTC)]
            )
            self.upsert(con, "runs", [{**run, "started_at": datetime.now(UTC), "status": "running"}])
        return int(stale[0]) if stale else 0

    def finish_run(self, run_id: str, status: str, details: Mapping[str, Any] | None = None) -> bool:
        """Mark a run completed or failed (its models become current only when completed); ``details`` are added to
        those recorded when it started. Returns False, writing nothing and raising nothing, when the store cannot be
        verified (damaged, a newer schema, its tables changed): the error that ended the run stays the one shown."""
        try:
            self._finish_run(run_id, status, details)
        except StoreRefusedError:
            return False
        return True

    def interrupt_latest_running(self, details: Mapping[str, Any]) -> bool:
        """Mark the latest run still 'running' as 'interrupted' (its process was killed after a signal, under the
        run lock, so no other refresh is running); False when there is none or the store cannot be verified."""
        if not self.file.is_file():
            return False
        try:
            with run_lock(self.path, wait=5.0, holder="t2ibench run (recording a killed refresh)"):
                with self.read() as con:
                    row = con.execute(
                        "SELECT run_id FROM runs WHERE status = 'running' ORDER BY started_at DESC LIMIT 1"
                    ).fetchone()
                if row is None:
                    return False
                return self.finish_run(str(row[0]), "interrupted", details)
        except InputError:
            return False

    def _finish_run(self, run_id: str, status: str, details: Mapping[str, Any] | None) -> None:
        """``finish_run``'s write."""
        with self.write(keeps_schema=True) as con:
            found = con.execute("SELECT details FROM runs WHERE run_id = ?", [run_id]).fetchone()
            merged: dict[str, Any] = {}
            if found and found[0]:
                try:
                    recorded = json.loads(found[0])
                except (TypeError, ValueError):
                    recorded = found[0]
                # a record a --write turned into something else is kept beside the new details, never lost
                merged = recorded if isinstance(recorded, dict) else {"details_as_found": recorded}
            merged.update(details or {})
            con.execute(
                "UPDATE runs SET status = ?, finished_at = ?, details = ? WHERE run_id = ?",
                [status, datetime.now(UTC), json.dumps(merged, default=str), run_id],
            )
