"""`t2ibench sql --out` writes exactly what `t2ibench sql` prints, for every DuckDB type.

The reference is DuckDB's own text of each value (what the sealed query prints): a CSV cell must be that text, and a
Parquet value, read back by a plain DuckDB connection and cast to text, must be too — or the export refuses in one
line naming the column.
"""

from __future__ import annotations

import csv
import logging
import shutil
from pathlib import Path

import duckdb
import pytest

from t2ibench.cli import main
from t2ibench.errors import InputError
from t2ibench.store import Store
from t2ibench.store.sandbox import PARQUET_AS_TEXT, WIDE_INTEGERS

# values beside DuckDB's test_all_types() (its minimum, maximum and NULL of every type): offsets, sub-millisecond
# intervals, infinities, nested types holding a type Arrow changes, names SQL must quote, a duplicated name
EXTRA = {
    "bit": "'101'::BIT",
    "timetz": "'08:00:00+00'::TIMETZ",
    "timetz_offset": "'08:00:00+05:30'::TIMETZ",
    "interval_us": "INTERVAL '1 month 2 days 03:04:05.123456'",
    "hugeint_in_range": "12345678901234567890123456789::HUGEINT",
    "uhugeint_in_range": "12345678901234567890123456789::UHUGEINT",
    "bit_list": "['101'::BIT, NULL]",
    "struct_timetz": "{'t': '08:00:00+05:30'::TIMETZ, 'n': 1}",
    "map_uhugeint": "MAP {'k': 340282366920938463463374607431768211455::UHUGEINT}",
    "union_list": "[union_value(n := 2)::UNION(n INT, s VARCHAR)]",
    "variant_timetz": "'08:00:00+05:30'::TIMETZ::VARIANT",
    "variant_int": "1::VARIANT",
    "date_infinity": "'infinity'::DATE",
    "timestamp_ns": "'2024-01-01 08:00:00.123456789'::TIMESTAMP_NS",
    "float": "0.1::FLOAT",
    "blob": "'\\xAA\\x00ab'::BLOB",
    'text, "quoted"': "'a,\"b\"\n c'",
    "dup": "1",
    "dup ": "2",
}
EXTRA_QUERY = "SELECT " + ", ".join(f'{v} AS "{k.strip().replace(chr(34), chr(34) * 2)}"' for k, v in EXTRA.items())


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A store holding one prompt, made once: each test's store is a byte copy (no new store's schema per test)."""
    s = Store(tmp_path_factory.mktemp("template") / "store.duckdb", timeout=5)
    with s.write() as con:
        s.upsert(con, "prompts", [{"suite": "g", "prompt_index": 0, "task": "colors", "prompt": "p"}])
    assert not Path(f"{s.path}.wal").exists()  # all of it in the file the copies are made of
    return s.path


@pytest.fixture
def store(tmp_path: Path, template: Path) -> Store:
    shutil.copy(template, tmp_path / "store.duckdb")
    return Store(tmp_path / "store.duckdb", timeout=5)


def printed(store: Store, sql: str) -> tuple[tuple[str, ...], list[list[str]]]:
    """What `t2ibench sql` prints: DuckDB's text of each value, '' for NULL."""
    result = store.user_query(sql, max_rows=100, text=True)
    return result.columns, [["" if v is None else v for v in row] for row in result.rows]


def csv_cells(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))[1:]


def parquet_cells(path: Path) -> list[list[str]]:
    """The Parquet file's values as DuckDB's text, read by a plain connection ('' for NULL)."""
    con = duckdb.connect()
    rows = con.execute(f"SELECT COLUMNS(*)::VARCHAR FROM read_parquet('{path}')").fetchall()
    return [["" if v is None else v for v in row] for row in rows]


def differences(columns: tuple[str, ...], want: list[list[str]], got: list[list[str]]) -> list[str]:
    assert len(want) == len(got)
    return [
        f"{name}: printed {[r[i] for r in want]} wrote {[r[i] for r in got]}"
        for i, name in enumerate(columns)
        if [r[i] for r in want] != [r[i] for r in got]
    ]


def test_every_duckdb_type_is_written_to_csv_as_printed(store, tmp_path):
    for sql in ("SELECT * FROM test_all_types()", EXTRA_QUERY):
        columns, want = printed(store, sql)
        assert store.user_export(sql, tmp_path / "rows.csv") == len(want)
        assert differences(columns, want, csv_cells(tmp_path / "rows.csv")) == []


def test_every_duckdb_type_is_written_to_parquet_as_printed(store, tmp_path):
    """Typed where Arrow holds the value, DuckDB's text where it does not (PARQUET_AS_TEXT); the 128-bit integers'
    extremes (39 digits) are refused apart, below."""
    wide = ", ".join(c for c in ("hugeint", "uhugeint"))
    for sql in (f"SELECT * EXCLUDE ({wide}) FROM test_all_types()", EXTRA_QUERY):
        columns, want = printed(store, sql)
        assert store.user_export(sql, tmp_path / "rows.parquet") == len(want)
        assert differences(columns, want, parquet_cells(tmp_path / "rows.parquet")) == []


def test_parquet_keeps_the_types_arrow_holds_and_names_the_text_columns(store, tmp_path, caplog):
    sql = "SELECT 1 AS n, 12345678901234567890123456789::HUGEINT AS h, '101'::BIT AS b, ['08:00:00+00'::TIMETZ] AS t"
    with caplog.at_level(logging.WARNING, logger="t2ibench"):
        store.user_export(sql, tmp_path / "rows.parquet")
    types = duckdb.connect().execute(f"DESCRIBE SELECT * FROM read_parquet('{tmp_path / 'rows.parquet'}')").fetchall()
    assert [(name, kind) for name, kind, *_ in types] == [
        ("n", "INTEGER"),
        ("h", "DECIMAL(38,0)"),
        ("b", "VARCHAR"),
        ("t", "VARCHAR"),
    ]
    assert "written as text" in caplog.text
    assert "b (BIT), t (TIME WITH TIME ZONE[])" in caplog.text


@pytest.mark.parametrize("kind", ["HUGEINT", "UHUGEINT"])
def test_a_128_bit_integer_past_38_digits_is_refused_for_parquet_naming_its_column(store, tmp_path, kind):
    sql = f"SELECT 1 AS n, x::{kind} AS big FROM (VALUES (1), (100000000000000000000000000000000000000)) t(x)"
    with pytest.raises(InputError, match=r"rows\.parquet: .*column big.* 38 digits: cast that column to VARCHAR") as e:
        store.user_export(sql, tmp_path / "rows.parquet")
    assert "\n" not in str(e.value)
    assert not (tmp_path / "rows.parquet").exists()
    store.user_export(sql, tmp_path / "rows.csv")  # text holds it
    assert csv_cells(tmp_path / "rows.csv")[1] == ["1", "100000000000000000000000000000000000000"]


def test_the_cli_prints_and_writes_the_same_text(store, tmp_path, capsys):
    sql = "SELECT '101'::BIT AS b, '08:00:00+00'::TIMETZ AS t, INTERVAL '1 month 1 microsecond' AS i"
    assert main(["sql", "--store", str(store.path), sql]) == 0
    shown = capsys.readouterr().out.splitlines()[-1]
    assert [c.strip() for c in shown.strip("|").split("|")] == ["101", "08:00:00+00", "1 month 00:00:00.000001"]
    for suffix in (".csv", ".parquet"):
        assert main(["sql", "--store", str(store.path), sql, "--out", str(tmp_path / f"rows{suffix}")]) == 0
    assert csv_cells(tmp_path / "rows.csv") == [["101", "08:00:00+00", "1 month 00:00:00.000001"]]
    assert parquet_cells(tmp_path / "rows.parquet") == [["101", "08:00:00+00", "1 month 00:00:00.000001"]]


def test_the_table_of_text_types_names_duckdb_type_ids():
    known = {str(t.id) for t in (duckdb.sqltypes.BIT, duckdb.sqltypes.TIME_TZ, duckdb.sqltypes.INTERVAL)}
    assert known <= set(PARQUET_AS_TEXT)
    assert {str(duckdb.sqltypes.HUGEINT.id), str(duckdb.sqltypes.UHUGEINT.id)} == WIDE_INTEGERS
