"""Both ways ``Store.upsert`` writes rows store the same values: bound parameters (a small write) and one Arrow table
(``ARROW_MIN_ROWS`` rows and more), for every table and every declared column type, new rows and updated ones; a
value that only parameters cast the way DuckDB does (a bool as a number, a number as text, bytes, a date object, an
integer too big for its column) sends the whole write through parameters: the same stored value, or the same
refusal."""

from __future__ import annotations

import datetime
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from t2ibench.store import Store, writes
from t2ibench.store.schema import DEPRECATED_COPIES, TABLES, _columns, column_types

N = 64  # rows per table (ARROW_MIN_ROWS is set per write here: 1 for the Arrow way, past any count for parameters)


def cell(kind: str, rng: np.random.Generator, i: int) -> Any:
    """A value of a column of type ``kind`` as writers give them (Python scalars, numpy's float64, None)."""
    if rng.random() < 0.1:
        return None
    pick = int(rng.integers(4))
    if kind == "VARCHAR":
        return ["", "plain", "quote ' \" and, comma", "ünïcødé ✓ 漢字"][pick] + str(i)
    if kind == "JSON":
        return json.dumps([{"a": i, "b": [1.5, None]}, [i, "x"], i, "text"][pick], sort_keys=True)
    if kind == "TIMESTAMP":
        return f"2026-0{1 + pick}-1{pick} 0{pick}:{i % 60:02d}:00"
    if kind == "DOUBLE":
        specials = [math.nan, math.inf, -0.0, 1e300]
        return [float(rng.normal()), int(rng.integers(-1000, 1000)), np.float64(rng.normal()), specials[i % 4]][pick]
    if kind in ("INTEGER", "BIGINT", "UBIGINT"):
        top = {"INTEGER": 2**31 - 1, "BIGINT": 2**63 - 1, "UBIGINT": 2**64 - 1}[kind]
        low = 0 if kind == "UBIGINT" else -top
        return [int(rng.integers(-5, 5)) % (top + 1), top, low, i][pick]
    if kind == "BOOLEAN":
        return [True, False][pick % 2]
    raise AssertionError(f"a column type this test does not know: {kind}")


def rows_of(table: str, seed: int, n: int = N) -> list[dict[str, Any]]:
    """``n`` rows of ``table`` with distinct keys (a key column: the row's number, as text or integer), every column but
    the deprecated copies (the write fills those)."""
    rng = np.random.default_rng(seed)
    types, key = column_types(table), TABLES[table][1]
    copies = set(DEPRECATED_COPIES.get(table, {}).values())
    return [
        {
            c: (f"k{i}" if types[c] == "VARCHAR" else i) if c in key else cell(types[c], rng, i)
            for c in _columns(table)
            if c not in copies
        }
        for i in range(n)
    ]


def stored(store: Store, tables: list[str]) -> dict[str, str]:
    """Each table's rows, in key order, as their repr (NaN included)."""
    with store.read() as con:
        return {t: repr(con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()) for t in tables}


@pytest.fixture(scope="module")
def empty(tmp_path_factory) -> Path:
    """A new store, made once: each store here is a byte copy (no new store's schema each)."""
    store = Store(tmp_path_factory.mktemp("empty") / "s.duckdb")
    store.initialise()
    return store.path


def copy_of(empty: Path, path: Path) -> Store:
    path.parent.mkdir(exist_ok=True)
    shutil.copy(empty, path)
    return Store(path)


def write(store: Store, table: str, rows: list[dict[str, Any]]) -> int:
    with store.write() as con:
        return store.upsert(con, table, rows)


@pytest.fixture
def arrow_used(monkeypatch) -> list[bool]:
    """Whether each write went the Arrow way (appended as ``_arrow_rows`` answers)."""
    used: list[bool] = []
    real = writes._arrow_rows
    monkeypatch.setattr(writes, "_arrow_rows", lambda *a: used.append((out := real(*a)) is not None) or out)
    return used


def test_every_table_and_column_type_stores_the_same_either_way(tmp_path, monkeypatch, arrow_used, empty):
    assert {kind for t in TABLES for kind in column_types(t).values()} <= set(writes.ARROW_TYPES)
    by_params, by_arrow = copy_of(empty, tmp_path / "params.duckdb"), copy_of(empty, tmp_path / "arrow.duckdb")
    first = {table: rows_of(table, seed) for seed, table in enumerate(TABLES)}
    second = {table: rows_of(table, 1000 + seed)[: N // 2] for seed, table in enumerate(TABLES)}  # the same keys
    for batch in (first, second):  # new rows, then half of them updated
        for store, limit in ((by_params, 10**9), (by_arrow, 1)):
            monkeypatch.setattr(writes, "ARROW_MIN_ROWS", limit)
            with store.write() as con:
                for table, rows in batch.items():
                    assert store.upsert(con, table, rows) == len(rows)
    assert arrow_used == [True] * 2 * len(TABLES)  # every Arrow write went that way
    params, arrow = stored(by_params, list(TABLES)), stored(by_arrow, list(TABLES))
    for table in TABLES:
        assert arrow[table] == params[table], table
        assert by_arrow.rows(f"SELECT count(*) AS n FROM {table}") == [{"n": N}], table


ODD = [
    ("verdicts", "correct", 1),  # an int in a BOOLEAN column
    ("verdicts", "reason", 7),  # a number as text
    ("verdicts", "reason", b"bytes \xff"),
    ("verdicts", "reason", True),
    ("verdicts", "sample", True),  # a bool as a number
    ("verdicts", "sample", 2.0),  # a float in an INTEGER column
    ("verdicts", "sample", "3"),  # text in an INTEGER column
    ("verdicts", "sample", 2**40),  # too big for INTEGER: refused
    ("detections", "score", "0.5"),
    ("detections", "score", np.float32(0.25)),  # numpy scalars other than float64: refused by DuckDB either way
    ("verdicts", "sample", np.int64(2)),
    ("verdicts", "correct", np.bool_(True)),
    ("runs", "started_at", datetime.datetime(2026, 1, 2, 3, 4, 5)),
]
REFUSED_TEXT = [("runs", "started_at", "not a time"), ("prompts", "metadata", "{not json")]
"""Text in a string column that its declared type refuses: the Arrow way, refused by the same cast."""


@pytest.mark.parametrize(
    ("table", "column", "value"), ODD + REFUSED_TEXT, ids=[f"{t}.{c}={v!r}" for t, c, v in ODD + REFUSED_TEXT]
)
def test_a_value_only_parameters_cast_sends_the_write_through_them(tmp_path, monkeypatch, arrow_used, empty, table,
                                                                   column, value):  # fmt: skip
    rows = rows_of(table, 7, 16)
    rows[8][column] = value
    outcomes = []
    for name, limit in (("params", 10**9), ("arrow", 1)):
        monkeypatch.setattr(writes, "ARROW_MIN_ROWS", limit)
        store = copy_of(empty, tmp_path / name / "s.duckdb")
        try:
            write(store, table, rows)
        except Exception as exc:  # the same refusal: its kind and first line (without the store's folder, and the
            # column DuckDB's Arrow scan names where the parameters' error points at the statement instead)
            first = str(exc).replace(str(tmp_path / name), "").splitlines()[0].split(" when casting from source")[0]
            outcomes.append((type(exc).__name__, first))
        else:
            outcomes.append(("stored", stored(store, [table])[table]))
    assert outcomes[1] == outcomes[0]
    assert arrow_used == [(table, column, value) in REFUSED_TEXT]  # else the Arrow table was refused: parameters
