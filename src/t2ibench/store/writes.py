"""The store's row writes inside a caller's transaction: idempotent upserts by natural key and scoped replaces."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from t2ibench.errors import InputError
from t2ibench.store.schema import TABLES, _columns, column_types, with_deprecated_copies

UPSERT_CHUNK = 256  # rows per INSERT statement
ARROW_MIN_ROWS = 256
"""Rows from which an upsert hands DuckDB one Arrow table rather than bound parameters: far less time per row
(docs/performance.md, store writes), but pyarrow's import and DuckDB's first Arrow scan cost once per process, more
than a few small writes save."""
ARROW_TYPES: dict[str, tuple[str, tuple[type, ...]]] = {
    "VARCHAR": ("string", (str,)), "JSON": ("string", (str,)), "TIMESTAMP": ("string", (str,)),
    "DOUBLE": ("float64", (float, int)), "INTEGER": ("int32", (int,)), "BIGINT": ("int64", (int,)),
    "UBIGINT": ("uint64", (int,)), "BOOLEAN": ("bool_", (bool,)),
}  # fmt: skip
"""For each declared column type: the Arrow type an Arrow write gives it, and the Python types of the values that
bind to the same stored value either way (a string column's text is cast by the INSERT itself — JSON checked, a
timestamp parsed — as a bound string is; a bool is no number here, as DuckDB binds it as BOOLEAN)."""


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
    batch = _arrow_rows(table, columns, values) if len(values) >= ARROW_MIN_ROWS else None
    if batch is not None:
        view, listed = "t2ibench_upsert_rows", ", ".join(columns)
        con.register(view, batch)
        try:
            con.execute(f"INSERT INTO {table} ({listed}) SELECT {listed} FROM {view} {conflict}")
        finally:
            with contextlib.suppress(duckdb.Error):  # a refused row aborted the transaction: its error stands
                con.unregister(view)
        return len(values)
    placeholder = f"({', '.join('?' for _ in columns)})"
    for start in range(0, len(values), UPSERT_CHUNK):
        chunk = values[start : start + UPSERT_CHUNK]
        con.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([placeholder] * len(chunk))} {conflict}",
            [v for row in chunk for v in row],
        )
    return len(values)


def _arrow_rows(table: str, columns: Sequence[str], values: Sequence[Sequence[Any]]) -> Any:
    """``values`` (rows in ``columns``' order) as one ``pyarrow.Table`` typed by ``table``'s columns (``ARROW_TYPES``);
    None where a value is not of a Python type that binds to the same value (not a bool as a number, a float as an
    integer, bytes, a date object, a numpy scalar other than float64, ...) or does not fit its column (an integer out
    of range), or without pyarrow (the 'orchestration' extra). The caller then binds parameters, as for a small
    write, which cast such a value as DuckDB does or refuse it."""
    try:
        import pyarrow as pa
    except ImportError:
        return None

    types = column_types(table)
    arrays = []
    for column, cells in zip(columns, zip(*values, strict=True), strict=True):
        if types[column] not in ARROW_TYPES:
            return None
        arrow, allowed = ARROW_TYPES[types[column]]
        refused = () if arrow == "bool_" else (bool,)  # a bool is an int, but DuckDB binds it as BOOLEAN
        if not all(c is None or (isinstance(c, allowed) and not isinstance(c, refused)) for c in cells):
            return None
        try:
            arrays.append(pa.array(cells, type=getattr(pa, arrow)()))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return None
    return pa.Table.from_arrays(arrays, names=list(columns))


def replace(
    con: duckdb.DuckDBPyConnection, table: str, scope: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
) -> int:
    """Replace every row matching ``scope`` (column = value) by ``rows``: re-evaluations drop stale rows."""
    if scope:
        where = " AND ".join(f"{c} = ?" for c in scope)
        con.execute(f"DELETE FROM {table} WHERE {where}", list(scope.values()))
    return upsert(con, table, [{**scope, **r} for r in rows])
