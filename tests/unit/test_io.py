import numpy as np
import pytest

from t2ibench.errors import InputError
from t2ibench.io import iter_npy_batches, npy_layout, open_embeddings, remove_stale_tmp, write_text_atomic


def test_batches_reassemble_the_array(tmp_path, rng):
    X = rng.standard_normal((103, 7)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    got = list(iter_npy_batches(tmp_path / "x.npy", 10))
    assert [s for s, _ in got] == list(range(0, 103, 10))
    np.testing.assert_array_equal(np.concatenate([b for _, b in got]), X)
    limited = list(iter_npy_batches(tmp_path / "x.npy", 10, limit=25))
    assert sum(len(b) for _, b in limited) == 25


def test_npz_and_npy_sources_agree(tmp_path, rng):
    X = rng.standard_normal((40, 3))
    np.save(tmp_path / "x.npy", X)
    np.savez(tmp_path / "x.npz", emb=X)
    a, b = open_embeddings(tmp_path / "x.npy"), open_embeddings(tmp_path / "x.npz")
    assert (a.n, a.dim) == (b.n, b.dim) == (40, 3)
    idx = np.array([5, 1, 30])
    np.testing.assert_array_equal(a.rows(idx), X[np.sort(idx)])
    np.testing.assert_array_equal(np.concatenate([x for _, x in b.batches(16)]), X)


def test_truncated_npy_is_named(tmp_path, rng):
    path = tmp_path / "x.npy"
    np.save(path, rng.standard_normal((50, 4)))
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(InputError, match=r"x\.npy: truncated"):
        npy_layout(path)


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.zeros((2, 3, 4)), "must be 2-D"),
        (np.asfortranarray(np.zeros((3, 4))), "Fortran-ordered"),
    ],
)
def test_unstreamable_npy_files_are_rejected(tmp_path, array, message):
    np.save(tmp_path / "x.npy", array)
    with pytest.raises(InputError, match=message):
        npy_layout(tmp_path / "x.npy")


def test_object_arrays_are_refused_without_unpickling(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[object(), 1]], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="object arrays"):
        npy_layout(tmp_path / "x.npy")


def test_garbage_file_is_named(tmp_path):
    (tmp_path / "x.npy").write_bytes(b"not numpy at all")
    with pytest.raises(InputError, match=r"x\.npy: not a readable \.npy file"):
        open_embeddings(tmp_path / "x.npy")


def test_npz_with_two_arrays_is_rejected(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros((2, 2)), b=np.zeros((2, 2)))
    with pytest.raises(InputError, match=r"expected an .embeddings. array"):
        open_embeddings(tmp_path / "x.npz")


def test_embedding_table_columns(tmp_path, rng):
    from t2ibench.io import load_embedding_table

    X = rng.standard_normal((3, 2))
    np.savez(
        tmp_path / "t.npz", embeddings=X, ids=np.array([7, 8, 7]), paths=np.array(["a.png", "/abs/b.png", "c.png"])
    )
    table = load_embedding_table(tmp_path / "t.npz")
    np.testing.assert_array_equal(table.embeddings, X)
    assert table.ids == ("7", "8", "7")
    assert table.paths == (str(tmp_path / "a.png"), "/abs/b.png", str(tmp_path / "c.png"))
    assert table.texts is None
    with pytest.raises(InputError, match="needs a 'texts' array"):
        table.require("texts", "a text gallery")


def test_embedding_table_rejects_misshapen_columns(tmp_path, rng):
    from t2ibench.io import load_embedding_table

    np.savez(tmp_path / "t.npz", embeddings=rng.standard_normal((3, 2)), ids=np.array([1, 2]))
    with pytest.raises(InputError, match=r"'ids' must have one entry per row \(3\)"):
        load_embedding_table(tmp_path / "t.npz")


def test_atomic_text_writes_and_stale_temporary_files(tmp_path):
    import os
    import subprocess
    import sys

    target = write_text_atomic(tmp_path / "report.md", "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]
    # a temporary file of a process that has exited is stale; one of a live process is an in-flight write
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"report.md.{int(dead.stdout)}.tmp"
    live = tmp_path / f"report.md.{os.getpid()}.tmp"
    other = tmp_path / "notes.tmp"
    for p in (stale, live, other):
        p.write_text("x")
    assert remove_stale_tmp(tmp_path) == [stale]
    assert live.exists()
    assert other.exists()
    assert not stale.exists()


def _zip_members(path, members):
    import warnings
    import zipfile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members:
                archive.writestr(name, data)
    return path


def _npy_bytes(array):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, array)
    return buf.getvalue()


def test_npz_is_opened_from_its_headers_without_inflating(tmp_path, rng, monkeypatch):
    from t2ibench.io import npz_members

    X = rng.standard_normal((6, 3)).astype(np.float32)
    np.savez_compressed(tmp_path / "x.npz", embeddings=X, ids=np.arange(6))
    members = npz_members(tmp_path / "x.npz")
    assert {n: (m.shape, m.dtype.str, m.nbytes) for n, m in members.items()} == {
        "embeddings": ((6, 3), "<f4", 72),
        "ids": ((6,), np.dtype(int).str, 6 * np.dtype(int).itemsize),
    }

    def no_data(*_args, **_kwargs):
        raise AssertionError("array data read while opening")

    monkeypatch.setattr(np.lib.format, "read_array", no_data)
    monkeypatch.setattr(np, "load", no_data)
    source = open_embeddings(tmp_path / "x.npz")
    assert (source.n, source.dim, source.member) == (6, 3, "embeddings")
    monkeypatch.undo()
    np.testing.assert_array_equal(source.load(), X)


def test_npz_bomb_is_refused_before_inflating(tmp_path, monkeypatch):
    import zipfile

    path = tmp_path / "bomb.npz"
    header = {"descr": "<f8", "fortran_order": False, "shape": (4000, 1000)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("embeddings.npy", "w") as fh:
        np.lib.format.write_array_header_1_0(fh, header)
        for _ in range(4000):
            fh.write(bytes(8000))
    assert path.stat().st_size < 100_000  # 32 MB of zeros
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "4M")
    with pytest.raises(InputError, match=r"bomb\.npz: inflating array 'embeddings' \(4000, 1000\) float64 needs ~30"):
        open_embeddings(path)


@pytest.mark.parametrize(
    ("members", "message"),
    [
        (
            [("embeddings.npy", _npy_bytes(np.ones((4, 4)))[:-96])],
            r"declares 160 bytes inflated, its header promises 256",
        ),
        ([("embeddings.npy", _npy_bytes(np.ones((2, 2))) + b"\0" * 8)], r"declares 168 bytes .* promises 160"),
        ([("embeddings.npy", _npy_bytes(np.ones((2, 2))))] * 2, r"holds array 'embeddings' twice"),
        ([("embeddings.npy", _npy_bytes(np.ones((2, 2)) + 1j))], r"complex values"),
        ([("embeddings.npy", b"not an npy header at all")], r"not a readable \.npz file"),
    ],
    ids=["short", "padded", "twice", "complex", "garbage"],
)
def test_npz_members_that_lie_are_refused_unread(tmp_path, members, message):
    with pytest.raises(InputError, match=message):
        open_embeddings(_zip_members(tmp_path / "x.npz", members)).load()


def test_npz_fortran_order_and_unread_object_members_are_fine(tmp_path):
    X = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    np.savez(tmp_path / "x.npz", embeddings=X, notes=np.array([object()], dtype=object))
    np.testing.assert_array_equal(open_embeddings(tmp_path / "x.npz").load(), X)
    np.savez(tmp_path / "o.npz", embeddings=np.array([[object()]], dtype=object))
    with pytest.raises(InputError, match="object arrays, which would need pickle"):
        open_embeddings(tmp_path / "o.npz")


def test_embedding_table_columns_are_estimated_before_inflating(tmp_path, monkeypatch):
    from t2ibench.io import load_embedding_table

    np.savez_compressed(tmp_path / "t.npz", embeddings=np.ones((4, 2)), texts=np.array(["x" * 500_000] * 4))
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "4M")
    with pytest.raises(InputError, match=r"t\.npz: its embeddings and 'texts' columns needs ~"):
        load_embedding_table(tmp_path / "t.npz")
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "64M")
    assert load_embedding_table(tmp_path / "t.npz").texts == ("x" * 500_000,) * 4
