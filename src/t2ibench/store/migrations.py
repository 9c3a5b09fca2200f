"""Bringing a store file to the current schema: the DDL (additive: tables, columns, views, the schema version),
the value and name migrations of older stores, the Table-2 backfill, and the checks for a schema that is current or
damaged (a user's ``--write`` SQL may have dropped a view or column)."""

from __future__ import annotations

import duckdb

from t2ibench.metrics.geneval import table2_rows
from t2ibench.store.schema import DEPRECATED_COPIES, RENAMED_VIEWS, SCHEMA_VERSION, TABLES, VIEWS, _columns
from t2ibench.store.writes import upsert


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Migrate the store ``con`` holds to the current schema inside its transaction (nothing to do when current)."""
    if not _schema_current(con):
        for statement in _ddl():
            con.execute(statement)
        _migrate_names(con)  # before the backfill, which reads verdicts.task
        _backfill_scores(con)
        _migrate_values(con)
        _migrate_sigma_sources(con)


def _ddl() -> list[str]:
    statements = [
        "CREATE TABLE IF NOT EXISTS store_meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    ]
    for table, (columns, key) in TABLES.items():
        statements.append(f"CREATE TABLE IF NOT EXISTS {table} ({columns}, PRIMARY KEY ({', '.join(key)}))")
        # additive migration: a store written by an older version gains the newer columns (NULL in old rows)
        statements += [f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {c.strip()}" for c in columns.split(",")]
    for name, sql in VIEWS.items():
        statements.append(f"CREATE OR REPLACE VIEW {name} AS {sql}")
    statements.append(
        "INSERT INTO store_meta VALUES ('schema_version', "
        f"'{SCHEMA_VERSION}') ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    return statements


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
    exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'store_meta'").fetchone()
    if not exists or not exists[0]:
        return False
    row = con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
    if row is None or row[0] != str(SCHEMA_VERSION):
        return False
    return not _schema_damage(con)  # a dropped view or column is re-created by the DDL (additive, idempotent)


def _schema_damage(con: duckdb.DuckDBPyConnection) -> list[str]:
    """t2ibench's own tables, columns and views missing from the store (e.g. dropped by a user's --write SQL)."""
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    columns: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM duckdb_columns()").fetchall():
        columns.setdefault(table, set()).add(column)
    damage = [f"view {v}" for v in VIEWS if v not in views]
    for table in TABLES:
        if table not in columns:
            damage.append(f"table {table}")
        else:
            damage += [f"column {table}.{c}" for c in _columns(table) if c not in columns[table]]
    return damage
