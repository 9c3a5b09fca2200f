import itertools
import math
import warnings

import numpy as np
import pytest
from vendi_score import vendi as reference

from t2ibench.errors import InputError
from t2ibench.metrics import SpectrumClippingWarning, clean_spectrum, renyi_vendi, vendi_spectrum_scores

ALPHAS = [0.25, 0.5, 1.0, 1.5, 2.0, 3.7, 10.0, math.inf]


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("m", [1, 2, 7, 40])
def test_uniform_spectrum_over_m_modes_scores_m(alpha, m):
    p = np.full(m, 1.0 / m)
    assert renyi_vendi(p, alpha) == pytest.approx(m, rel=1e-12)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_matches_vendi_score_entropy_formula(rng, alpha):
    p = rng.dirichlet(np.full(30, 0.3))
    q = "inf" if math.isinf(alpha) else alpha
    expected = math.exp(reference.entropy_q(p, q=q))
    assert renyi_vendi(p, alpha) == pytest.approx(expected, rel=1e-10)


def test_vendi_is_non_increasing_in_alpha(rng):
    p = rng.dirichlet(np.ones(25))
    scores = [renyi_vendi(p, a) for a in ALPHAS]
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(scores))


def test_alpha_one_is_the_limit_of_nearby_orders(rng):
    p = rng.dirichlet(np.ones(12))
    assert renyi_vendi(p, 1 + 1e-7) == pytest.approx(renyi_vendi(p, 1.0), rel=1e-5)
    assert renyi_vendi(p, 1 - 1e-7) == pytest.approx(renyi_vendi(p, 1.0), rel=1e-5)


def test_large_alpha_approaches_min_entropy(rng):
    p = rng.dirichlet(np.ones(12))
    assert renyi_vendi(p, 2000.0) == pytest.approx(renyi_vendi(p, math.inf), rel=5e-3)


def test_rke_is_inverse_sum_of_squares(rng):
    p = rng.dirichlet(np.ones(9))
    assert renyi_vendi(p, 2) == pytest.approx(1.0 / np.sum(p**2), rel=1e-12)


def test_roundoff_negatives_are_clipped_and_reported_without_warning():
    lam = np.array([0.6, 0.4, -1e-17, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = clean_spectrum(lam)
    assert spec.probabilities.min() == 0.0
    assert spec.probabilities.sum() == pytest.approx(1.0)
    assert spec.clipped_fraction == pytest.approx(1e-17)
    np.testing.assert_array_equal(spec.probabilities, np.sort(spec.probabilities)[::-1])


def test_clipping_beyond_roundoff_warns_and_reports_fraction():
    lam = np.array([0.7, 0.4, -0.1])  # an indefinite "kernel": far beyond round-off
    with pytest.warns(SpectrumClippingWarning, match="0.1 of the trace"):
        spec = clean_spectrum(lam)
    assert spec.clipped_fraction == pytest.approx(0.1)


def test_many_float32_sized_negatives_are_not_flagged():
    """The FKEA n < 2r case: thousands of ±1e-9 null eigenvalues from float32 SYRK round-off."""
    gen = np.random.default_rng(0)
    lam = np.concatenate([gen.dirichlet(np.ones(100)), gen.normal(0, 1e-9, 3900)])
    eps32 = float(np.finfo(np.float32).eps)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = clean_spectrum(lam, eps=eps32)
    assert spec.clipped_fraction > 1e-6  # reported, but explained by float32 round-off
    with pytest.warns(SpectrumClippingWarning):  # the same noise in a float64 matrix is not round-off
        clean_spectrum(lam)


@pytest.mark.parametrize(
    ("lam", "message"),
    [
        ([], "empty"),
        ([0.5, np.nan], "NaN"),
        ([0.0, 0.0], "trace must be > 0"),
        ([-1.0, 0.5], "trace must be > 0"),
    ],
)
def test_bad_spectra_are_rejected(lam, message):
    with pytest.raises(InputError, match=message):
        clean_spectrum(np.array(lam, dtype=float))


@pytest.mark.parametrize("alpha", [0, -1, "nan", "abc"])
def test_non_positive_or_invalid_alpha_is_rejected(alpha):
    with pytest.raises(InputError, match="alpha must be"):
        vendi_spectrum_scores([0.5, 0.5], [1, alpha])


def test_alpha_strings_and_duplicates():
    scores = vendi_spectrum_scores([0.5, 0.25, 0.25], ["1", "inf", 1.0, "∞"])
    assert list(scores) == [1.0, math.inf]
    assert scores[math.inf] == pytest.approx(2.0)


def test_roundoff_sized_positive_eigenvalues_do_not_inflate_small_alpha():
    """α < 1 sums λ^α: 49 eigenvalues of 1e-17 would add 49·√1e-17 ≈ 1.5e-7 to VENDI_0.5 if kept."""
    lam = np.concatenate([[1.0], np.full(24, 1e-17), np.full(25, -1e-17)])
    spec = clean_spectrum(lam)
    assert renyi_vendi(spec.probabilities, 0.5) == 1.0


def test_spectrum_dominated_by_negatives_is_rejected():
    with pytest.warns(SpectrumClippingWarning), pytest.raises(InputError, match="not PSD"):
        clean_spectrum(np.array([0.3, 0.3, -0.5]))
