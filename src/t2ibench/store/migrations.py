"""Bringing a store file to the current schema: the DDL (additive: tables, columns, views, the schema version),
the value and name migrations of older stores, the Table-2 backfill, and the checks for a schema that is current or
damaged (a user's ``--write`` SQL may have dropped a view or column)."""

from __future__ import annotations

import functools

import duckdb

from t2ibench.store.errors import StoreDamagedError, StoreVersionError
from t2ibench.store.schema import (
    DEPRECATED_COPIES,
    RENAMED_VIEWS,
    SCHEMA_VERSION,
    TABLES,
    VIEWS,
    VIEWS_SHA256,
    _columns,
)
from t2ibench.store.writes import upsert

META_TABLE = "store_meta (key VARCHAR PRIMARY KEY, value VARCHAR)"


def ensure_schema(con: duckdb.DuckDBPyConnection, where: str = "the store") -> None:
    """Migrate the store ``con`` holds to the current schema inside its transaction (nothing to do when current).

    Refuses, changing nothing, a store of a newer schema (``StoreVersionError``) and one whose own tables a user's
    SQL changed beyond what the additive migration restores (``StoreDamagedError`` naming the table: see
    ``schema_problems``); ``where`` names the store in those messages."""
    check_version(con, where)
    refuse_broken_schema(con, where)
    if not _schema_current(con):
        before = stored_version(con)
        for statement in _ddl(existing=set(_table_columns(con))):
            con.execute(statement)
        _migrate_names(con)  # before the backfill, which reads verdicts.task
        _backfill_scores(con)
        _migrate_values(con)
        _migrate_sigma_sources(con)
        if before is not None and before < 12:
            _migrate_benchmark_protocols(con)


def _ddl(existing: set[str]) -> list[str]:
    """The statements that bring a store to the current schema; ``existing`` names the tables the store already has,
    the only ones that may lack a column (a table this DDL creates has them all: a new store is made in ~190 ms, not
    ~240 ms)."""
    statements = [f"CREATE TABLE IF NOT EXISTS {META_TABLE}"]
    for table, (columns, key) in TABLES.items():
        statements.append(f"CREATE TABLE IF NOT EXISTS {table} ({columns}, PRIMARY KEY ({', '.join(key)}))")
        if table in existing:
            # additive migration: a store written by an older version gains the newer columns (NULL in old rows)
            statements += [f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {c.strip()}" for c in columns.split(",")]
    for name, sql in VIEWS.items():
        statements.append(f"CREATE OR REPLACE VIEW {name} AS {sql}")
    statements.append(
        "INSERT INTO store_meta VALUES ('schema_version', "
        f"'{SCHEMA_VERSION}') ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    statements.append(
        "INSERT INTO store_meta VALUES ('views_sha256', "
        f"'{VIEWS_SHA256}') ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    return statements


def _stored_views(con: duckdb.DuckDBPyConnection) -> str | None:
    """The digest of the view definitions the store was last migrated with (None: not recorded): a registered
    benchmark added or changed (its views, its leaderboard columns) makes the next write re-create the views, with
    no schema version of its own."""
    row = con.execute("SELECT value FROM store_meta WHERE key = 'views_sha256'").fetchone()
    return None if row is None else str(row[0])


def _migrate_benchmark_protocols(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 12 keeps a benchmark evaluation's protocol in benchmark_protocols; schema 11 wrote it as the
    evaluators row of its own evaluator hash (``t2ibench evaluate geneval2 --store``): copied over, once."""
    con.execute(
        "INSERT INTO benchmark_protocols (model, model_hash, evaluator_hash, benchmark, settings) "
        "SELECT DISTINCT s.model, s.model_hash, s.evaluator_hash, s.benchmark, e.settings "
        "FROM benchmark_scores s JOIN evaluators e USING (evaluator_hash) "
        "WHERE json_extract(e.settings, '$.judge') IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM benchmark_protocols p WHERE p.model = s.model AND "
        "p.model_hash = s.model_hash AND p.evaluator_hash = s.evaluator_hash AND p.benchmark = s.benchmark)"
    )


def _migrate_values(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 9 stores α = ∞ as the value inf (older stores wrote NULL; the params key always said 'inf')."""
    con.execute(
        "UPDATE metrics SET alpha = 'inf'::DOUBLE "
        "WHERE alpha IS NULL AND json_extract_string(details, '$.alpha') = 'inf'"
    )


SCENDI_FAMILY = ("scendi", "scendi_conditional_vendi", "scendi_model_share", "scendi_prompt_score", "clip_image_vendi",
                 "cond_vendi", "info_vendi")  # fmt: skip


def _migrate_sigma_sources(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 10 records where each Gaussian σ came from (``metrics.sigma_source``). Rows stored before are marked
    from the evaluator settings that made them — 'median:<model>' where σ was each model's own median (not comparable
    across models), 'fixed' where it was a number, 'unknown' where the settings are gone — and never recomputed.
    Scendi's family takes scendi.image_sigma, the convergence rows of its scores too; every other row
    diversity.sigma. Idempotent: only rows without a source are touched."""
    family = ", ".join(f"'{m}'" for m in SCENDI_FAMILY)
    scendi_row = (
        f"(m.metric IN ({family}) OR (m.metric = 'convergence' AND "
        "json_extract_string(m.details, '$.score') IN ('scendi', 'cond_vendi', 'info_vendi')))"
    )
    setting = (
        f"CASE WHEN {scendi_row} THEN coalesce(json_extract_string(e.settings, '$.scendi.image_sigma'), "
        "json_extract_string(e.settings, '$.scendi.scendi.image_sigma')) "
        "ELSE coalesce(json_extract_string(e.settings, '$.diversity.sigma'), "
        "json_extract_string(e.settings, '$.diversity.diversity.sigma')) END"
    )
    con.execute(
        f"""
        UPDATE metrics SET sigma_source = src.source
        FROM (
            SELECT m.model, m.model_hash, m.evaluator_hash, m.metric, m.params_key,
                   CASE WHEN {setting} IS NULL THEN 'unknown'
                        WHEN {setting} = 'median' THEN 'median:' || m.model
                        ELSE 'fixed' END AS source
            FROM metrics m LEFT JOIN evaluators e USING (evaluator_hash)
            WHERE m.sigma_source IS NULL AND m.sigma IS NOT NULL
        ) src
        WHERE metrics.model = src.model AND metrics.model_hash = src.model_hash
          AND metrics.evaluator_hash = src.evaluator_hash AND metrics.metric = src.metric
          AND metrics.params_key = src.params_key
        """
    )
    # Scendi's text σ: its source in the row's details, from scendi.text_sigma alike
    text = (
        "coalesce(json_extract_string(e.settings, '$.scendi.text_sigma'), "
        "json_extract_string(e.settings, '$.scendi.scendi.text_sigma'))"
    )
    con.execute(
        f"""
        UPDATE metrics SET details = json_merge_patch(metrics.details, json_object('text_sigma_source', src.source))
        FROM (
            SELECT m.model, m.model_hash, m.evaluator_hash, m.metric, m.params_key,
                   CASE WHEN {text} IS NULL THEN 'unknown' WHEN {text} = 'median' THEN 'median:' || m.model
                        ELSE 'fixed' END AS source
            FROM metrics m LEFT JOIN evaluators e USING (evaluator_hash)
            WHERE m.metric IN ({family}) AND m.kernel = 'gaussian'
              AND json_extract_string(m.details, '$.text_sigma_source') IS NULL
        ) src
        WHERE metrics.model = src.model AND metrics.model_hash = src.model_hash
          AND metrics.evaluator_hash = src.evaluator_hash AND metrics.metric = src.metric
          AND metrics.params_key = src.params_key
        """
    )


def _migrate_names(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 9's spellings (DEPRECATED_COPIES, RENAMED_VIEWS): rows written before get the new column filled from
    its deprecated copy, and the renamed views' old names are dropped (a user's own table of that name is left
    alone). Runs once per migration, before anything reads ``task``; idempotent."""
    _fill_copies(con)
    old = ", ".join(f"'{name}'" for name in RENAMED_VIEWS)
    for (name,) in con.execute(
        f"SELECT view_name FROM duckdb_views() WHERE NOT internal AND view_name IN ({old})"
    ).fetchall():
        con.execute(f"DROP VIEW IF EXISTS {name}")


def _fill_copies(con: duckdb.DuckDBPyConnection) -> None:
    """Fill each column of DEPRECATED_COPIES from its copy where only the copy holds a value, and the copy from the
    column where only the column does (rows of older versions, or of a user's INSERT naming one spelling)."""
    for table, pairs in DEPRECATED_COPIES.items():
        for column, copy in pairs.items():
            con.execute(f"UPDATE {table} SET {column} = {copy} WHERE {column} IS NULL AND {copy} IS NOT NULL")
            con.execute(f"UPDATE {table} SET {copy} = {column} WHERE {copy} IS NULL AND {column} IS NOT NULL")


def _backfill_scores(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 3 stores Table 2 in ``geneval_scores``; a store written before has only verdicts: compute the scores
    of every version that lacks them once, with the same function the pipeline uses (never in SQL)."""
    missing = con.execute(
        "SELECT DISTINCT model, model_hash, evaluator_hash FROM verdicts "
        "ANTI JOIN geneval_scores USING (model, model_hash, evaluator_hash) "
        "UNION SELECT model, model_hash, evaluator_hash FROM geneval_scores "  # schema 6 added the intervals
        "WHERE task = 'overall' AND images > 0 AND ci_low IS NULL"
    ).fetchall()
    if missing:
        from t2ibench.benchmarks.geneval.metrics import table2_rows  # numpy: loaded only for an old store's backfill
    for model, mh, eh in missing:
        verdicts = con.execute(
            "SELECT task, correct, prompt_index FROM verdicts "
            "WHERE model = ? AND model_hash = ? AND evaluator_hash = ?",
            [model, mh, eh],
        ).fetchall()
        version = {"model": model, "model_hash": mh, "evaluator_hash": eh}
        rows = table2_rows((t, bool(ok), p) for t, ok, p in verdicts)
        upsert(con, "geneval_scores", [{**version, **r} for r in rows])


def _schema_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether this file already has the current schema (then the DDL is skipped: it costs a few 100 ms)."""
    if stored_version(con) != SCHEMA_VERSION or _stored_views(con) != VIEWS_SHA256:
        return False
    return not _schema_damage(con)  # a dropped view or column is re-created by the DDL (additive, idempotent)


def _own_views(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Names of the user views in the store's main schema (where t2ibench's own live)."""
    return {
        r[0]
        for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal AND database_name = current_database() "
            "AND schema_name = 'main'"
        ).fetchall()
    }


def _schema_damage(con: duckdb.DuckDBPyConnection) -> list[str]:
    """t2ibench's own tables, columns and views missing from the store (e.g. dropped by a user's --write SQL)."""
    views = _own_views(con)
    columns = {table: set(found) for table, found in _table_columns(con).items()}
    damage = [f"view {v}" for v in VIEWS if v not in views]
    for table in TABLES:
        if table not in columns:
            damage.append(f"table {table}")
        else:
            damage += [f"column {table}.{c}" for c in _columns(table) if c not in columns[table]]
    return damage


def stored_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The schema version the store records (None: no store_meta or no version yet, i.e. new or very old);
    StoreVersionError (without the store's name) when the record is not a version number."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' "
        "AND table_name = 'store_meta'"
    ).fetchone()
    if not exists or not exists[0]:
        return None
    row = con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return None
    text = row[0]
    if not (isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= 6):
        raise StoreVersionError(f"store_meta's schema_version is {str(text)[:40]!r}, not a schema number")
    return int(text)


def check_version(con: duckdb.DuckDBPyConnection, where: str = "the store") -> None:
    """Refuse (StoreVersionError naming both versions) a store written by a newer schema than this t2ibench's, or
    whose version record is garbled: a migration would relabel it and write rows in the older layout."""
    try:
        version = stored_version(con)
    except StoreVersionError as exc:
        raise StoreVersionError(f"{where}: {exc}; t2ibench will not write into it") from None
    if version is not None and version > SCHEMA_VERSION:
        raise StoreVersionError(
            f"{where}: written by schema {version}; this t2ibench knows up to {SCHEMA_VERSION}: upgrade t2ibench to "
            "write into it (nothing was changed)"
        )


@functools.cache
def _reference() -> tuple[dict[str, dict[str, str]], dict[str, frozenset[tuple[str, tuple[str, ...]]]]]:
    """The columns (name: type) and constraints of t2ibench's own tables as the DDL makes them (an empty in-memory
    database, built once): what a store's tables are checked against."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"CREATE TABLE {META_TABLE}")
        for table, (columns, key) in TABLES.items():
            con.execute(f"CREATE TABLE {table} ({columns}, PRIMARY KEY ({', '.join(key)}))")
        return _table_columns(con), _table_constraints(con)
    finally:
        con.close()


def _own_tables() -> list[str]:
    return ["store_meta", *TABLES]


def _table_columns(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for table, column, kind in con.execute(
        "SELECT c.table_name, c.column_name, c.data_type FROM duckdb_columns() c "
        "JOIN duckdb_tables() t USING (database_name, schema_name, table_name) "  # tables only, not views
        "WHERE c.database_name = current_database() AND c.schema_name = 'main'"
    ).fetchall():
        found.setdefault(table, {})[column] = kind
    return found


def _table_constraints(con: duckdb.DuckDBPyConnection) -> dict[str, frozenset[tuple[str, tuple[str, ...]]]]:
    found: dict[str, set[tuple[str, tuple[str, ...]]]] = {}
    for table, kind, columns in con.execute(
        "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
        "WHERE database_name = current_database() AND schema_name = 'main'"
    ).fetchall():
        found.setdefault(table, set()).add((kind, tuple(columns or ())))
    return {t: frozenset(c) for t, c in found.items()}


def _describe(constraint: tuple[str, tuple[str, ...]]) -> str:
    kind, columns = constraint
    return f"{kind.lower()} ({', '.join(columns)})"


def schema_problems(con: duckdb.DuckDBPyConnection) -> list[str]:
    """What a user's SQL changed in t2ibench's own schema that the additive migration cannot restore, one phrase each
    naming the table: a column of another type, a primary key lost or changed, a constraint or index added (DuckDB
    cannot then add columns, and upserts fail), another table's foreign key into one (replacing rows fails), a
    table turned into a view or a view into a table, a macro or type shadowing one of DuckDB's own (t2ibench's
    views and DDL would call it). Missing tables, columns and views are not here: the migration re-creates them
    (``_schema_damage``)."""
    want_columns, want_constraints = _reference()
    columns = _table_columns(con)
    constraints = _table_constraints(con)
    problems: list[str] = []
    views = _own_views(con)
    for table in _own_tables():
        if table in views:
            problems.append(f"{table} is a view (t2ibench keeps a table there)")
            continue
        if table not in columns:
            continue  # missing: re-created by the DDL
        for column, kind in want_columns[table].items():
            typed = columns[table].get(column)
            if typed is not None and typed != kind:
                problems.append(f"column {table}.{column} is {typed} (t2ibench writes {kind})")
        have = constraints.get(table, frozenset())
        want = want_constraints.get(table, frozenset())
        key = next(c for c in want if c[0] == "PRIMARY KEY")
        if key not in have:  # its NOT NULLs went with it (CREATE TABLE ... AS SELECT)
            problems.append(f"table {table} has lost its primary key ({', '.join(key[1])})")
        else:
            problems += [f"table {table} has lost its {_describe(c)}" for c in sorted(want - have)]
        problems += [f"table {table} has a {_describe(c)} t2ibench does not write by" for c in sorted(have - want)]
    tables = set(columns)
    problems += [f"{v} is a table (t2ibench keeps a view there)" for v in VIEWS if v in tables]
    own = ", ".join(f"'{t}'" for t in _own_tables())
    for index, table in con.execute(
        "SELECT index_name, table_name FROM duckdb_indexes() WHERE database_name = current_database() "
        f"AND schema_name = 'main' AND table_name IN ({own})"
    ).fetchall():
        problems.append(f"table {table} has an index {index} (DuckDB cannot add columns to an indexed table)")
    for table, referenced in con.execute(
        "SELECT table_name, referenced_table FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' "
        f"AND database_name = current_database() AND referenced_table IN ({own}) ORDER BY 1, 2"
    ).fetchall():
        problems.append(
            f"table {table} has a foreign key into {referenced} (t2ibench replaces rows there; its writes would fail)"
        )
    problems += [f"macro {name} shadows DuckDB's function {name}" for name in _shadowing(con, "function")]
    problems += [f"type {name} shadows DuckDB's type {name}" for name in _shadowing(con, "type")]
    return problems


def _shadowing(con: duckdb.DuckDBPyConnection, what: str) -> list[str]:
    """User macros (``what`` 'function') or types ('type') named like one of DuckDB's built-in ones."""
    source, name = ("duckdb_functions()", "function_name") if what == "function" else ("duckdb_types()", "type_name")
    own = con.execute(f"SELECT DISTINCT {name} FROM {source} WHERE NOT internal").fetchall()
    if not own:  # the usual case, one scan (listing DuckDB's functions costs ~20 ms; every write checks this)
        return []
    rows = con.execute(
        f"SELECT DISTINCT {name} FROM {source} WHERE NOT internal AND lower({name}) IN "
        f"(SELECT lower({name}) FROM {source} WHERE internal) ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def refuse_broken_schema(con: duckdb.DuckDBPyConnection, where: str = "the store") -> None:
    """StoreDamagedError naming the first table (and how many more) when ``schema_problems`` finds any."""
    problems = schema_problems(con)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StoreDamagedError(
            f"{where}: {problems[0]}{more}, changed since t2ibench made it (a --write?); t2ibench will not write "
            "into it — restore it from a copy, or put it back as docs/schema.md defines it with t2ibench sql --write"
        )
