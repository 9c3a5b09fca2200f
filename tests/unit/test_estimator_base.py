"""The one additive-estimator base (metrics/additive.py), tested once over every streaming estimator.

For each estimator: shards merge to one pass (in any grouping, into an empty estimator too), save/load round-trips
to the same numbers, a state with other parameters or another class is refused naming what differs, and a state
saved by the format before the shared base (tests/unit/states/, written by commit b79f110) still loads and gives
the numbers it gave then.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from t2ibench.errors import InputError, StateMismatchError
from t2ibench.metrics import FKEA, CosineEntropy, Scendi
from t2ibench.metrics.additive import AdditiveEstimator
from t2ibench.metrics.conditional import ConditionalVendiEstimator
from t2ibench.metrics.nystrom import NystromEntropy, choose_landmarks

STATES = Path(__file__).parent / "states"
RNG = np.random.default_rng(11)
X = RNG.normal(size=(90, 6))
T = np.repeat(RNG.normal(size=(9, 4)), 10, axis=0) + 0.2 * RNG.normal(size=(90, 4))
IDS = [f"img{i:03d}" for i in range(90)]
LANDMARKS = choose_landmarks(X, 10, seed=1)


def _paired(est: Any, rows: slice) -> Any:
    if isinstance(est, Scendi):
        return est.update(X[rows], T[rows], image_ids=IDS[rows], text_ids=IDS[rows])
    if isinstance(est, ConditionalVendiEstimator):
        return est.update(X[rows], T[rows], image_ids=IDS[rows], text_ids=IDS[rows])
    return est.update(X[rows])


def _numbers(est: Any) -> dict[str, Any]:
    """Every number an estimator's compute() reports, flattened (eigenvalues included)."""
    result = est.compute()
    out = result.to_dict(top_eigenvalues=1000) if "top_eigenvalues" in _params(result.to_dict) else result.to_dict()
    return {k: v for k, v in out.items()}


def _params(fn: Callable[..., Any]) -> tuple[str, ...]:
    import inspect

    return tuple(inspect.signature(fn).parameters)


ESTIMATORS: dict[str, Callable[[], AdditiveEstimator]] = {
    "fkea": lambda: FKEA(sigma=2.0, rff_dim=24, seed=5),
    "fkea-orthogonal-centred": lambda: FKEA(sigma=2.0, rff_dim=24, seed=5, orthogonal=True, center=X.mean(0)),
    "cosine": lambda: CosineEntropy(),
    "nystrom-gaussian": lambda: NystromEntropy(kernel="gaussian", sigma=2.0, landmarks=LANDMARKS),
    "nystrom-cosine": lambda: NystromEntropy(kernel="cosine", landmarks=LANDMARKS),
    "scendi-gaussian": lambda: Scendi(kernel="gaussian", image_sigma=2.0, text_sigma=1.0, rff_dim=12, seed=3),
    "scendi-cosine": lambda: Scendi(kernel="cosine"),
    "conditional-gaussian": lambda: ConditionalVendiEstimator(
        kernel="gaussian", image_sigma=2.0, text_sigma=1.0, rff_dim=12, seed=3
    ),
    "conditional-cosine": lambda: ConditionalVendiEstimator(kernel="cosine"),
}


def _close(a: Any, b: Any, path: str = "", *, rel: float = 1e-9) -> None:
    """Equal structure, equal non-floats, floats within ``rel`` (float64 paths 1e-9; float32 SYRKs 1e-5)."""
    if isinstance(a, dict):
        assert isinstance(b, dict), path
        assert set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}", rel=rel)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]", rel=rel)
    elif isinstance(a, float) and not (math.isinf(a) or math.isnan(a)):
        assert b == pytest.approx(a, rel=rel, abs=rel), path
    else:
        assert a == b, path


def test_every_streaming_estimator_is_on_the_one_base():
    for make in ESTIMATORS.values():
        est = make()
        assert isinstance(est, AdditiveEstimator)
        own = [c for c in type(est).__mro__ if issubclass(c, AdditiveEstimator) and c is not AdditiveEstimator]
        for method in ("merge", "save", "load", "n", "_start", "_add"):  # owned by the base, never re-implemented
            assert not [c for c in own if method in vars(c)], (type(est).__name__, method)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_shards_merge_to_one_pass(name):
    one = _paired(ESTIMATORS[name](), slice(0, 90))
    shards = [_paired(ESTIMATORS[name](), s) for s in (slice(0, 17), slice(17, 61), slice(61, 90))]
    into_empty = ESTIMATORS[name]()  # an empty estimator takes over the first shard's dimensions
    for shard in shards:
        into_empty.merge(shard)
    into_first = shards[0].merge(shards[1]).merge(shards[2])
    # float32 features (Gaussian RFF) are summed per batch in float32: another split rounds differently
    rel = 1e-5 if getattr(one, "compute_dtype", np.float64) == np.float32 else 1e-9
    for merged in (into_empty, into_first):
        assert merged.n == one.n == 90
        _close(_numbers(one), _numbers(merged), rel=rel)
    assert into_empty.spec() == one.spec()


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_save_load_round_trip(name, tmp_path):
    est = _paired(ESTIMATORS[name](), slice(0, 90))
    path = est.save(tmp_path / f"{name}.npz")
    back = type(est).load(path)
    assert back.spec() == est.spec()
    assert back.n == 90
    _close(_numbers(est), _numbers(back))
    # a loaded state keeps streaming: adding the same rows again equals a doubled pass
    _close(
        _numbers(_paired(back, slice(0, 90))),
        _numbers(_paired(_paired(ESTIMATORS[name](), slice(0, 90)), slice(0, 90))),
    )


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_another_class_is_refused_in_merge_and_load(name, tmp_path):
    est = _paired(ESTIMATORS[name](), slice(0, 30))
    other_name = "cosine" if not name.startswith("cosine") else "fkea"
    other = _paired(ESTIMATORS[other_name](), slice(0, 30))
    with pytest.raises(StateMismatchError, match="cannot merge a"):
        est.merge(other)
    path = other.save(tmp_path / "other.npz")
    with pytest.raises(StateMismatchError, match=rf"{re.escape(str(path))}: holds a .* state, not {type(est).kind()}"):
        type(est).load(path)


CHANGED: dict[str, tuple[Callable[[], AdditiveEstimator], str]] = {
    "fkea": (lambda: FKEA(sigma=2.5, rff_dim=24, seed=5), "sigma"),
    "nystrom-gaussian": (lambda: NystromEntropy(kernel="gaussian", sigma=2.0, landmarks=LANDMARKS[::-1]), "landmarks"),
    "scendi-gaussian": (
        lambda: Scendi(kernel="gaussian", image_sigma=2.0, text_sigma=1.0, rff_dim=12, seed=4),
        "seed",
    ),
    "conditional-gaussian": (
        lambda: ConditionalVendiEstimator(kernel="gaussian", image_sigma=2.0, text_sigma=1.5, rff_dim=12, seed=3),
        "text_sigma",
    ),
}


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_other_parameters_are_refused_naming_them(name):
    make, field = CHANGED[name]
    est = _paired(ESTIMATORS[name](), slice(0, 30))
    before = _numbers(est)
    with pytest.raises(StateMismatchError, match=field):
        est.merge(_paired(make(), slice(30, 60)))
    _close(before, _numbers(est))  # a refused merge changes nothing


def test_other_input_dimensions_are_refused():
    a = FKEA(sigma=2.0, rff_dim=8, seed=0).update(X)
    b = FKEA(sigma=2.0, rff_dim=8, seed=0).update(X[:, :5])
    with pytest.raises(StateMismatchError, match="input dimensions"):
        a.merge(b)


def test_a_header_that_does_not_rebuild_its_state_is_refused(tmp_path):
    est = NystromEntropy(kernel="gaussian", sigma=2.0, landmarks=LANDMARKS).update(X)
    path = est.save(tmp_path / "nys.npz")
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["landmarks"] = arrays["landmarks"] + 1e-3  # landmarks that are not the ones the header's digest names
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(StateMismatchError, match=r"landmarks_sha256.*corrupt"):
        NystromEntropy.load(tmp_path / "bad.npz")
    meta = json.loads(str(arrays["meta"]))
    meta["sigma"] = "wide"
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "bad2.npz", **arrays)
    with pytest.raises(InputError, match=r"bad2\.npz: not a t2ibench NystromEntropy state"):
        NystromEntropy.load(tmp_path / "bad2.npz")


def test_a_device_backend_syncs_through_the_base():
    pytest.importorskip("torch")
    from t2ibench.models.torch_fkea import TorchFKEA

    dev = TorchFKEA(sigma=2.0, rff_dim=24, seed=5, device="cpu").update(X[:50])
    host = FKEA(sigma=2.0, rff_dim=24, seed=5).update(X[50:])
    assert dev.n == 50
    merged = FKEA(sigma=2.0, rff_dim=24, seed=5).merge(dev).merge(host)  # the device rows come across on merge
    one = FKEA(sigma=2.0, rff_dim=24, seed=5).update(X)
    for a, b in zip(one.compute().vendi.values(), merged.compute().vendi.values(), strict=True):
        assert b == pytest.approx(a, rel=1e-5)


EXPECTED = json.loads((STATES / "expected.json").read_text())
OLD_FORMAT: dict[str, tuple[type[AdditiveEstimator], Callable[[Any], Any]]] = {
    "fkea": (FKEA, lambda e: e.compute()),
    "cosine": (CosineEntropy, lambda e: e.compute()),
    "nystrom": (NystromEntropy, lambda e: e.compute(t=4)),
    "scendi": (Scendi, lambda e: e.compute()),
    "conditional": (ConditionalVendiEstimator, lambda e: e.compute()),
    "conditional_cosine": (ConditionalVendiEstimator, lambda e: e.compute()),
}


@pytest.mark.parametrize("name", sorted(OLD_FORMAT))
def test_states_saved_before_the_shared_base_still_load(name):
    cls, compute = OLD_FORMAT[name]
    est = cls.load(STATES / f"{name}.npz")
    result = compute(est)
    got = result.to_dict(top_eigenvalues=100) if "top_eigenvalues" in _params(result.to_dict) else result.to_dict()
    _close(EXPECTED[name], json.loads(json.dumps(got, default=float)))
