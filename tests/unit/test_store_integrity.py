"""A store's bytes are checked before t2ibench writes into it (store/integrity.py): DuckDB's own headers, free list
and block checksums, read independently of DuckDB — and compared with what DuckDB itself says of the same file."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from t2ibench.store import Store, StoreDamagedError
from t2ibench.store.integrity import DATA_START, block_problem, checksum, free_blocks, header_problem

BLOCK = 262144


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A store of several blocks, some freed (a dropped table) — as a real store after updates; made once."""
    path = tmp_path_factory.mktemp("filled") / "s.duckdb"
    store = Store(path)
    store.upsert_rows("prompts", [{"suite": "s", "prompt_index": i, "prompt": f"p{i}" * 8} for i in range(30000)])
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE scratch AS SELECT range AS a, md5(range::VARCHAR) AS b FROM range(100000)")
    con.execute("CHECKPOINT")
    con.execute("DROP TABLE scratch")
    con.execute("CHECKPOINT")
    con.close()
    assert not Path(f"{path}.wal").exists()  # all of it in the file the copies are made of
    return path


def filled(tmp_path: Path, built: Path) -> Path:
    """A byte copy of ``built`` in ``tmp_path`` (s.duckdb)."""
    shutil.copy(built, tmp_path / "s.duckdb")
    return tmp_path / "s.duckdb"


def duckdb_reads_everything(path) -> bool:
    """Whether DuckDB reads every row of every table and rewrites every index without an error."""
    try:
        con = duckdb.connect(str(path))
        try:
            for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
                con.execute(f"SELECT sum(hash(t)) FROM {table} AS t").fetchall()
                con.execute("BEGIN")
                con.execute(f"INSERT OR REPLACE INTO {table} SELECT * FROM {table}")
                con.execute("ROLLBACK")
        finally:
            con.close()
    except duckdb.Error:
        return False
    return True


def test_the_checksum_is_duckdbs_own_on_every_block_in_use(tmp_path, built):
    """The transcription agrees with DuckDB on a healthy file (every block in use checks out), and the free list it
    reads holds as many blocks as DuckDB's own count."""
    import numpy as np

    path = filled(tmp_path, built)
    assert block_problem(path) is None
    data = path.read_bytes()
    header = np.frombuffer(data[4096 + 8 : 8192], dtype="<u8").reshape(1, -1)
    assert int(checksum(header)[0]) == int.from_bytes(data[4096:4104], "little")
    con = duckdb.connect(str(path), read_only=True)
    total, used, free = con.execute(
        "SELECT total_blocks, used_blocks, free_blocks FROM pragma_database_size()"
    ).fetchone()
    con.close()
    assert free > 0  # the dropped table's blocks
    assert total == used + free
    assert len(free_blocks(path) or ()) == free  # the free list read here is the one DuckDB counts


def test_a_flipped_byte_in_any_block_in_use_or_header_is_found_where_duckdb_is_silent(tmp_path, built):
    """Flip one byte in each block: every block DuckDB needs is caught — including ones no SELECT reads (primary-key
    indexes), which DuckDB only trips on at a later write; free blocks (never read again) are not damage."""
    path = filled(tmp_path, built)
    data = path.read_bytes()
    blocks = (len(data) - DATA_START) // BLOCK
    silent_duckdb = 0
    for block in range(blocks):
        damaged = bytearray(data)
        damaged[DATA_START + block * BLOCK + 1000] ^= 0xFF
        copy = tmp_path / "copy.duckdb"
        copy.write_bytes(bytes(damaged))
        found = block_problem(copy)
        if found is None:
            assert duckdb_reads_everything(copy), f"block {block}: damage DuckDB trips on was not found"
        else:
            assert found.startswith(f"block {block} ") or "checksum" in found
            silent_duckdb += duckdb_reads_everything(copy) is False
    assert silent_duckdb > 0
    for offset in (4096 + 40, 8192 + 40):  # either database header
        damaged = bytearray(data)
        damaged[offset] ^= 0xFF
        (tmp_path / "h.duckdb").write_bytes(bytes(damaged))
        assert "header at byte" in (header_problem(tmp_path / "h.duckdb") or "")


def test_a_store_cut_short_is_truncated_exactly_when_a_block_in_use_is_missing(tmp_path, built):
    """Cut the file at every block boundary (and once inside a block): it is called truncated exactly when DuckDB can
    no longer read it all (free blocks at the end may go — DuckDB trims them itself — blocks in use may not)."""
    path = filled(tmp_path, built)
    data = path.read_bytes()
    blocks = (len(data) - DATA_START) // BLOCK
    verdicts = []
    for cut in [DATA_START + k * BLOCK for k in range(1, blocks)] + [len(data) - BLOCK // 2]:
        short = tmp_path / "short.duckdb"
        short.write_bytes(data[:cut])
        truncated = "truncated" in (header_problem(short) or "")
        assert truncated != duckdb_reads_everything(short), f"cut at {cut}: truncated={truncated}"
        verdicts.append(truncated)
    assert any(verdicts)
    half = tmp_path / "half.duckdb"
    half.write_bytes(data[: DATA_START + BLOCK])
    with pytest.raises(StoreDamagedError, match=r"half\.duckdb: not a DuckDB database, or damaged \(truncated"):
        Store(half).start_run({"run_id": "r"})
    assert half.read_bytes() == data[: DATA_START + BLOCK]  # never opened for writing


def test_files_this_check_cannot_read_get_no_verdict_rather_than_a_wrong_one(tmp_path, built):
    empty = tmp_path / "empty.duckdb"
    empty.write_bytes(b"")
    assert header_problem(empty) is None  # named as an empty file by the store
    garbage = tmp_path / "g.duckdb"
    garbage.write_bytes(b"x" * 20000)
    assert header_problem(garbage) == "its first bytes are not a DuckDB header"
    unknown = bytearray(filled(tmp_path, built).read_bytes())
    for offset in (4096, 8192):  # both header checksums unlike this transcription's: another storage layout
        unknown[offset : offset + 8] = b"\x00" * 8
    (tmp_path / "u.duckdb").write_bytes(bytes(unknown))
    assert block_problem(tmp_path / "u.duckdb") is None
