"""Orthogonal random features (Yu et al. 2016) as an FKEA option: structure, accuracy, seeds, merge and persistence."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import chi, kstest

from t2ibench.errors import InputError, StateMismatchError
from t2ibench.metrics import FKEA, RandomFourierFeatures


def reference_gaussian(X, Y, sigma):
    return np.exp(-cdist(X, Y, "sqeuclidean") / (2 * sigma**2))


def kernel_mse(X, sigma, rff_dim, seeds, orthogonal):
    """Mean squared error of φ(x)ᵀφ(y) against the exact Gaussian kernel, averaged over pairs and seeds."""
    K = reference_gaussian(X, X, sigma)
    errs = []
    for seed in seeds:
        fm = RandomFourierFeatures(dim=X.shape[1], sigma=sigma, rff_dim=rff_dim, seed=seed, orthogonal=orthogonal)
        phi = fm.transform(X, np.float64)
        errs.append(np.mean((phi @ phi.T - K) ** 2))
    return float(np.mean(errs))


def test_plain_rff_is_unchanged_by_the_new_option():
    """orthogonal=False keeps the i.i.d. draw from default_rng(seed) bit for bit."""
    plain = RandomFourierFeatures(dim=6, sigma=1.3, rff_dim=20, seed=4)
    explicit = RandomFourierFeatures(dim=6, sigma=1.3, rff_dim=20, seed=4, orthogonal=False)
    reference = np.random.default_rng(4).standard_normal((6, 20)) / 1.3
    np.testing.assert_array_equal(plain.omega, reference)
    np.testing.assert_array_equal(explicit.omega, reference)


def test_orf_follows_the_documented_construction():
    """W = (1/σ) S Q from the same stream: per block a Gaussian G (QR, sign-fixed by diag R), then √χ²_d norms."""
    d, r, sigma, seed = 5, 12, 0.7, 11
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(3):  # ⌈12 / 5⌉ blocks
        q, rr = np.linalg.qr(rng.standard_normal((d, d)))
        q = q * np.sign(np.diag(rr))
        rows.append(np.sqrt(rng.chisquare(d, size=d))[:, None] * q)
    expected = np.concatenate(rows)[:r].T / sigma
    fm = RandomFourierFeatures(dim=d, sigma=sigma, rff_dim=r, seed=seed, orthogonal=True)
    np.testing.assert_allclose(fm.omega, expected, rtol=1e-12, atol=1e-14)
    assert fm.omega.shape == (d, r)


@pytest.mark.parametrize(("d", "r"), [(8, 8), (8, 30), (16, 5)])
def test_rows_of_each_block_are_orthogonal(d, r):
    W = RandomFourierFeatures(dim=d, sigma=2.0, rff_dim=r, seed=1, orthogonal=True).omega.T * 2.0  # (r, d), σ = 1
    for start in range(0, r, d):
        block = W[start : start + d]
        gram = block @ block.T
        norms = np.linalg.norm(block, axis=1)
        np.testing.assert_allclose(gram, np.diag(norms**2), atol=1e-10 * float(norms.max() ** 2))
    if r > d:  # different blocks are independent, not orthogonal to each other
        cross = W[:d] @ W[d : 2 * d].T
        assert np.abs(cross).max() > 1e-3


def test_row_norms_have_the_gaussian_chi_marginal():
    """Each row of W·σ has the norm distribution of an N(0, I_d) vector (chi with d degrees of freedom)."""
    d = 6
    W = RandomFourierFeatures(dim=d, sigma=1.0, rff_dim=3000, seed=2, orthogonal=True).omega.T
    assert kstest(np.linalg.norm(W, axis=1), chi(d).cdf).pvalue > 1e-3
    direction = W / np.linalg.norm(W, axis=1, keepdims=True)  # directions uniform on the sphere: mean ≈ 0
    assert np.abs(direction.mean(axis=0)).max() < 0.06


def test_orf_kernel_estimate_is_unbiased_and_beats_plain_rff():
    data = np.random.default_rng(123)
    centres = data.standard_normal((4, 16)) * 0.6
    X = centres[data.integers(0, 4, 60)] + 0.4 * data.standard_normal((60, 16))
    sigma = float(np.median(cdist(X, X)[np.triu_indices(60, 1)]))
    K = reference_gaussian(X, X, sigma)
    seeds = range(12)
    mean_orf = np.mean(
        [
            (lambda p: p @ p.T)(
                RandomFourierFeatures(dim=16, sigma=sigma, rff_dim=64, seed=s, orthogonal=True).transform(X, np.float64)
            )
            for s in range(200)
        ],
        axis=0,
    )
    assert np.abs(mean_orf - K).mean() < 0.01  # unbiased-ish: the seed average converges to the kernel
    for r in (16, 64):
        orf = kernel_mse(X, sigma, r, seeds, orthogonal=True)
        rff = kernel_mse(X, sigma, r, seeds, orthogonal=False)
        assert orf < rff, (r, orf, rff)


def test_orf_is_deterministic_per_seed_and_depends_on_it(rng):
    X = rng.standard_normal((200, 7))
    a = FKEA(sigma=1.5, rff_dim=50, seed=9, orthogonal=True).update(X)
    b = FKEA(sigma=1.5, rff_dim=50, seed=9, orthogonal=True).update(X)
    c = FKEA(sigma=1.5, rff_dim=50, seed=10, orthogonal=True).update(X)
    plain = FKEA(sigma=1.5, rff_dim=50, seed=9).update(X)
    np.testing.assert_array_equal(a.covariance(), b.covariance())
    assert a.compute().vendi == b.compute().vendi
    assert not np.array_equal(a.covariance(), c.covariance())
    assert not np.array_equal(a.covariance(), plain.covariance())
    assert a.feature_map.spec()["orthogonal"] is True
    assert plain.feature_map.spec()["orthogonal"] is False


def test_orf_shards_merge_like_one_update(rng):
    X = rng.standard_normal((500, 6))
    whole = FKEA(sigma=1.2, rff_dim=40, seed=3, orthogonal=True).update(X)
    merged = (
        FKEA(sigma=1.2, rff_dim=40, seed=3, orthogonal=True)
        .update(X[:200])
        .merge(FKEA(sigma=1.2, rff_dim=40, seed=3, orthogonal=True).update(X[200:]))
    )
    np.testing.assert_allclose(merged.covariance(), whole.covariance(), rtol=1e-6, atol=1e-9)


def test_merge_refused_across_orthogonal_and_plain(rng):
    X = rng.standard_normal((10, 3))
    orf = FKEA(sigma=1.0, rff_dim=16, seed=0, orthogonal=True).update(X)
    plain = FKEA(sigma=1.0, rff_dim=16, seed=0).update(X)
    assert orf.spec()["orthogonal"] is True
    assert plain.spec()["orthogonal"] is False
    with pytest.raises(StateMismatchError, match="parameters differ"):
        orf.merge(plain)
    with pytest.raises(StateMismatchError, match="parameters differ"):
        plain.merge(FKEA(sigma=1.0, rff_dim=16, seed=0, orthogonal=True).update(X))


@pytest.mark.parametrize("orthogonal", [True, False])
def test_save_and_load_round_trip_keeps_the_option(tmp_path, rng, orthogonal):
    X = rng.standard_normal((300, 5))
    est = FKEA(sigma=1.2, rff_dim=40, seed=3, orthogonal=orthogonal).update(X)
    loaded = FKEA.load(est.save(tmp_path / "state.npz"))
    assert loaded.orthogonal is orthogonal
    assert loaded.spec() == est.spec()
    np.testing.assert_array_equal(loaded.feature_map.omega, est.feature_map.omega)  # type: ignore[attr-defined]
    more = rng.standard_normal((50, 5))  # keeps streaming with the same frequencies
    np.testing.assert_allclose(loaded.update(more).covariance(), est.update(more).covariance())
    other = FKEA(sigma=1.2, rff_dim=40, seed=3, orthogonal=not orthogonal).update(X)
    with pytest.raises(StateMismatchError):
        loaded.merge(other)


def test_a_state_saved_before_the_option_loads_as_plain_rff(tmp_path, rng):
    from t2ibench.metrics.covariance import save_state

    est = FKEA(sigma=1.0, rff_dim=8, seed=0).update(rng.standard_normal((20, 3)))
    old_spec = {k: v for k, v in est.spec().items() if k != "orthogonal"}
    path = save_state(tmp_path / "old.npz", est._stat().to_arrays(old_spec))
    loaded = FKEA.load(path)
    assert loaded.orthogonal is False
    np.testing.assert_array_equal(loaded.covariance(), est.covariance())


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_orthogonal_must_be_a_bool(bad):
    with pytest.raises(InputError, match="orthogonal"):
        FKEA(sigma=1.0, rff_dim=8, seed=0, orthogonal=bad)
    with pytest.raises(InputError, match="orthogonal"):
        RandomFourierFeatures(dim=3, sigma=1.0, rff_dim=8, seed=0, orthogonal=bad)
