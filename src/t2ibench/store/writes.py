"""The store's row writes inside a caller's transaction: idempotent upserts by natural key and scoped replaces."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from t2ibench.errors import InputError
from t2ibench.store.schema import TABLES, _columns, with_deprecated_copies

UPSERT_CHUNK = 256  # rows per INSERT statement


def _json(value: Any) -> Any:
    """JSON-encode dicts/lists for JSON columns; leave scalars alone."""
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (dict, list, tuple)) else value


plain = _json  # a value as a write stores it (``Store.replace_if_changed`` compares with what is held)


def table_columns(table: str) -> list[str]:
    """The columns of ``table``, in the schema's order."""
    return _columns(table)


def upsert(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
    """Insert or update ``rows`` by the table's natural key (inside the caller's transaction)."""
    if not rows:
        return 0
    rows = with_deprecated_copies(table, rows)
    columns = _columns(table)
    unknown = sorted(set().union(*(r.keys() for r in rows)) - set(columns))
    if unknown:
        raise InputError(f"{table}: unknown column(s) {', '.join(unknown)}")
    key = TABLES[table][1]
    updates = [c for c in columns if c not in key]
    conflict = f"ON CONFLICT ({', '.join(key)}) DO " + (
        f"UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in updates)}" if updates else "NOTHING"
    )
    # one row per key, the last one winning (a single INSERT may not update a row twice), then multi-row
    # INSERTs: DuckDB's executemany runs one statement per row, about 25x slower (docs/performance.md)
    unique = {tuple(r.get(k) for k in key): [_json(r.get(c)) for c in columns] for r in rows}
    values = list(unique.values())
    placeholder = f"({', '.join('?' for _ in columns)})"
    for start in range(0, len(values), UPSERT_CHUNK):
        chunk = values[start : start + UPSERT_CHUNK]
        con.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([placeholder] * len(chunk))} {conflict}",
            [v for row in chunk for v in row],
        )
    return len(values)


def replace(
    con: duckdb.DuckDBPyConnection, table: str, scope: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
) -> int:
    """Replace every row matching ``scope`` (column = value) by ``rows``: re-evaluations drop stale rows."""
    if scope:
        where = " AND ".join(f"{c} = ?" for c in scope)
        con.execute(f"DELETE FROM {table} WHERE {where}", list(scope.values()))
    return upsert(con, table, [{**scope, **r} for r in rows])
