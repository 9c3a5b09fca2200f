"""The torch backend of FKEA's covariance update: same scores and state as the numpy path (on CPU torch here)."""

import numpy as np
import pytest

from t2ibench.errors import InputError, StateMismatchError
from t2ibench.metrics import FKEA

torch = pytest.importorskip("torch")
from t2ibench.models.torch_fkea import TorchFKEA  # noqa: E402


@pytest.fixture
def X(rng):  # noqa: N802 - the data matrix, as in the other estimator tests
    centres = rng.standard_normal((6, 12))
    return (centres[rng.integers(0, 6, 900)] + 0.3 * rng.standard_normal((900, 12))).astype(np.float32)


@pytest.mark.parametrize("orthogonal", [False, True])
def test_torch_backend_equals_the_numpy_path(X, orthogonal):
    kw = dict(sigma=1.3, rff_dim=300, seed=4, batch_size=256, orthogonal=orthogonal)  # 2r > one 512 block
    ref = FKEA(**kw).update(X)
    dev = TorchFKEA(device="cpu", **kw).update(X)
    assert dev.n == ref.n == len(X)
    np.testing.assert_allclose(dev.covariance(), ref.covariance(), rtol=0, atol=2e-7)
    a, b = dev.compute([1, 2, "inf"]), ref.compute([1, 2, "inf"])
    for alpha in (1.0, 2.0, float("inf")):
        assert a.vendi[alpha] == pytest.approx(b.vendi[alpha], rel=1e-5)
    assert a.rke == pytest.approx(b.rke, rel=1e-5)


def test_torch_backend_with_a_centre_equals_the_numpy_path(X):
    shifted = X.astype(np.float64) + 300.0  # far from the origin: only the float64 centring keeps the phases
    centre = shifted.mean(axis=0)
    ref = FKEA(sigma=1.3, rff_dim=100, seed=1, center=centre).update(shifted)
    dev = TorchFKEA(sigma=1.3, rff_dim=100, seed=1, center=centre, device="cpu").update(shifted)
    assert dev.compute([1]).vendi[1.0] == pytest.approx(ref.compute([1]).vendi[1.0], rel=1e-5)


def test_device_and_cpu_shards_merge_into_the_one_pass_state(X, tmp_path):
    kw = dict(sigma=1.3, rff_dim=120, seed=2)
    whole = FKEA(**kw).update(X)
    gpu_like = TorchFKEA(device="cpu", **kw).update(X[:400])
    cpu = FKEA(**kw).update(X[400:])
    merged = FKEA(**kw).merge(gpu_like).merge(cpu)  # a device shard into a numpy estimator
    assert merged.n == len(X)
    np.testing.assert_allclose(merged.covariance(), whole.covariance(), atol=2e-7)
    other_way = TorchFKEA(device="cpu", **kw).update(X[400:]).merge(FKEA(**kw).update(X[:400]))
    assert other_way.compute([1]).vendi[1.0] == pytest.approx(whole.compute([1]).vendi[1.0], rel=1e-5)
    path = TorchFKEA(device="cpu", **kw).update(X).save(tmp_path / "state.npz")
    loaded = FKEA.load(path)  # the file is an FKEA state
    assert loaded.n == len(X)
    assert loaded.compute([2]).vendi[2.0] == pytest.approx(whole.compute([2]).vendi[2.0], rel=1e-5)
    with pytest.raises(StateMismatchError, match="parameters differ"):
        FKEA(sigma=1.3, rff_dim=120, seed=3).merge(TorchFKEA(device="cpu", **kw).update(X[:10]))


def test_state_is_synced_lazily_and_counts_rows_meanwhile(X):
    dev = TorchFKEA(sigma=1.3, rff_dim=50, seed=0, device="cpu", batch_size=100)
    dev.update(X[:300])
    dev.update(X[300:])
    assert dev._unsynced_rows == len(X)  # nothing copied to the host per batch
    assert dev.n == len(X)
    dev.rke()
    assert dev._unsynced_rows == 0
    assert dev.n == len(X)


def test_bad_devices_and_phases_are_named(X):
    with pytest.raises(InputError, match="device must be a torch device"):
        TorchFKEA(sigma=1.0, rff_dim=10, seed=0, device="gpu-please")
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA is not available"):
            TorchFKEA(sigma=1.0, rff_dim=10, seed=0, device="cuda")
    with pytest.raises(InputError, match="random-Fourier phases"):
        TorchFKEA(sigma=1e-6, rff_dim=10, seed=0, device="cpu").update(X + 1e3)
