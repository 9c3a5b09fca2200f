"""A whole-file memmap streamed through an estimator stays out of the resident set, and nothing it maps is lost."""

import numpy as np
import pytest

from t2ibench.metrics import FKEA, CosineEntropy
from t2ibench.metrics.covariance import release_mapped_rows


def _resident_mib() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    import mmap

    return pages * mmap.PAGESIZE / 2**20


@pytest.fixture
def big_file(tmp_path, rng):
    path = tmp_path / "emb.npy"
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(60_000, 256))  # 59 MiB
    for i in range(0, 60_000, 10_000):
        out[i : i + 10_000] = rng.standard_normal((10_000, 256), dtype=np.float32)
    out.flush()
    del out
    return path


@pytest.mark.skipif(not hasattr(__import__("mmap"), "MADV_DONTNEED"), reason="no madvise on this platform")
def test_a_whole_file_memmap_streams_in_constant_memory(big_file):
    touched = np.load(big_file, mmap_mode="r")
    before = _resident_mib()
    float(touched.sum(dtype=np.float64))  # the control: reading a map keeps its pages resident
    assert _resident_mib() - before > 40
    del touched
    X = np.load(big_file, mmap_mode="r")
    before = _resident_mib()
    est = FKEA(sigma=16.0, rff_dim=32, seed=0, batch_size=4096).update(X)
    assert _resident_mib() - before < 20  # one batch at a time, not the 59 MiB file
    ref = FKEA(sigma=16.0, rff_dim=32, seed=0, batch_size=4096).update(np.array(X))
    assert est.compute([1]).vendi[1.0] == ref.compute([1]).vendi[1.0]  # same numbers, bit for bit
    view = X[1000:31_000]  # a slice of the map releases its own rows only, and still reads right afterwards
    CosineEntropy().update(view)
    np.testing.assert_array_equal(np.asarray(X[1000:1003]), np.load(big_file)[1000:1003])


def test_copy_on_write_maps_and_plain_arrays_are_left_alone(big_file):
    cow = np.load(big_file, mmap_mode="c")
    cow[5] = 7.0  # a private change: releasing its pages would discard it
    release_mapped_rows(cow, 0, 100)
    assert float(cow[5, 0]) == 7.0
    plain = np.ones((100, 4))
    release_mapped_rows(plain, 0, 100)  # not a map: nothing happens
    assert plain.sum() == 400
    cols = np.load(big_file, mmap_mode="r")[:, :10]  # not C-contiguous: skipped, still correct
    release_mapped_rows(cols, 0, 10)
    np.testing.assert_array_equal(np.asarray(cols[:2]), np.load(big_file)[:2, :10])
