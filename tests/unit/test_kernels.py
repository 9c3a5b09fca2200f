import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist
from sklearn.metrics.pairwise import cosine_similarity

from t2ibench.errors import InputError
from t2ibench.metrics import (
    NormalizedLinearFeatures,
    RandomFourierFeatures,
    cosine_kernel,
    gaussian_kernel,
    median_heuristic_sigma,
)


def reference_gaussian(X, Y, sigma):
    return np.exp(-cdist(X, Y, "sqeuclidean") / (2 * sigma**2))


@pytest.mark.parametrize("block_size", [7, 64, 2048])
def test_gaussian_kernel_matches_cdist_reference(rng, block_size):
    X = rng.standard_normal((150, 9))
    Y = rng.standard_normal((40, 9))
    np.testing.assert_allclose(
        gaussian_kernel(X, sigma=1.7, block_size=block_size),
        reference_gaussian(X, X, 1.7),
        rtol=1e-10,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        gaussian_kernel(X, Y, sigma=1.7, block_size=block_size),
        reference_gaussian(X, Y, 1.7),
        rtol=1e-10,
        atol=1e-12,
    )


def test_gaussian_kernel_is_symmetric_with_unit_diagonal(rng):
    K = gaussian_kernel(rng.standard_normal((33, 4)), sigma=0.8, block_size=5)
    np.testing.assert_array_equal(K, K.T)
    np.testing.assert_array_equal(np.diag(K), 1.0)


def test_cosine_kernel_matches_sklearn(rng):
    X = rng.standard_normal((30, 6)) * rng.uniform(0.1, 10, size=(30, 1))
    Y = rng.standard_normal((11, 6))
    np.testing.assert_allclose(cosine_kernel(X), cosine_similarity(X), atol=1e-12)
    np.testing.assert_allclose(cosine_kernel(X, Y), cosine_similarity(X, Y), atol=1e-12)


def test_cosine_kernel_rejects_zero_rows_by_index(rng):
    X = rng.standard_normal((5, 3))
    X[3] = 0
    with pytest.raises(InputError, match=r"all-zero rows.*: 3"):
        cosine_kernel(X)


def test_rff_features_follow_fkea_equation_1(rng):
    """φ(x) = [cos ω1ᵀx, sin ω1ᵀx, …, cos ωrᵀx, sin ωrᵀx]/√r with ω ~ N(0, I/σ²) drawn from the seed."""
    fm = RandomFourierFeatures(dim=5, sigma=2.0, rff_dim=7, seed=3)
    omega = np.random.default_rng(3).standard_normal((5, 7)) / 2.0
    np.testing.assert_array_equal(fm.omega, omega)
    x = rng.standard_normal((4, 5))
    expected = np.empty((4, 14))
    for i in range(7):
        expected[:, 2 * i] = np.cos(x @ omega[:, i])
        expected[:, 2 * i + 1] = np.sin(x @ omega[:, i])
    expected /= math.sqrt(7)
    np.testing.assert_allclose(fm.transform(x, np.float64), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fm.transform(x), expected, atol=2e-6)  # float32 path
    assert fm.transform(x).dtype == np.float32


def test_rff_self_inner_product_is_exactly_one(rng):
    fm = RandomFourierFeatures(dim=3, sigma=0.5, rff_dim=100, seed=0)
    phi = fm.transform(rng.standard_normal((20, 3)), np.float64)
    np.testing.assert_allclose(np.sum(phi * phi, axis=1), 1.0, rtol=1e-12)


def test_rff_kernel_estimate_converges_like_inverse_sqrt_r(rng):
    """Mean |φ(x)ᵀφ(y) − k(x, y)| falls as r^{-1/2}: ×16 frequencies → ≈ ×4 smaller error."""
    X = rng.standard_normal((60, 4))
    K = reference_gaussian(X, X, 1.5)
    errors = {}
    for r in (64, 256, 1024, 4096):
        errs = []
        for seed in range(8):
            phi = RandomFourierFeatures(dim=4, sigma=1.5, rff_dim=r, seed=seed).transform(X, np.float64)
            errs.append(np.mean(np.abs(phi @ phi.T - K)))
        errors[r] = float(np.mean(errs))
    assert errors[64] > errors[256] > errors[1024] > errors[4096]
    ratio = errors[64] / errors[4096]  # r grew 64×: expected √64 = 8
    assert 5.5 < ratio < 11.5, errors
    slope = np.polyfit(np.log(list(errors)), np.log(list(errors.values())), 1)[0]
    assert -0.6 < slope < -0.4, slope


def test_rff_seed_reproducibility():
    a = RandomFourierFeatures(dim=8, sigma=1.0, rff_dim=16, seed=42)
    b = RandomFourierFeatures(dim=8, sigma=1.0, rff_dim=16, seed=42)
    c = RandomFourierFeatures(dim=8, sigma=1.0, rff_dim=16, seed=43)
    np.testing.assert_array_equal(a.omega, b.omega)
    assert not np.allclose(a.omega, c.omega)
    assert a == b
    assert a != c


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sigma": 0.0}, "sigma must be a finite number > 0"),
        ({"sigma": -1.0}, "sigma must be a finite number > 0"),
        ({"sigma": float("nan")}, "sigma must be a finite number > 0"),
        ({"rff_dim": 0}, "rff_dim must be ≥ 1"),
        ({"seed": -1}, "seed must be ≥ 0"),
        ({"dim": 0}, "dim must be ≥ 1"),
    ],
)
def test_rff_rejects_bad_parameters(kwargs, message):
    params = {"dim": 3, "sigma": 1.0, "rff_dim": 4, "seed": 0} | kwargs
    with pytest.raises(InputError, match=message):
        RandomFourierFeatures(**params)


def test_normalized_linear_features_are_unit_rows(rng):
    X = rng.standard_normal((10, 4)) * 7
    phi = NormalizedLinearFeatures(dim=4).transform(X)
    np.testing.assert_allclose(np.linalg.norm(phi, axis=1), 1.0)


def test_median_heuristic_matches_brute_force(rng):
    X = rng.standard_normal((300, 5))
    assert median_heuristic_sigma(X, max_samples=1000) == pytest.approx(np.median(pdist(X)), rel=1e-12)


def test_median_heuristic_subsample_is_seeded(rng):
    X = rng.standard_normal((3000, 5))
    a = median_heuristic_sigma(X, max_samples=500, seed=1)
    assert a == median_heuristic_sigma(X, max_samples=500, seed=1)
    assert a != median_heuristic_sigma(X, max_samples=500, seed=2)
    assert a == pytest.approx(np.median(pdist(X)), rel=0.05)


def test_gaussian_kernel_names_nonfinite_rows(rng):
    X = rng.standard_normal((8, 2))
    X[2, 0] = np.nan
    X[6, 1] = np.inf
    with pytest.raises(InputError, match=r"X has non-finite values .* in 2 row\(s\): 2, 6"):
        gaussian_kernel(X, sigma=1.0)
