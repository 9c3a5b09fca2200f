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
