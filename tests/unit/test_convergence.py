"""Convergence report: plain VENDI settles on a few separated modes and keeps growing when every image is its own
mode, where truncated VENDI settles; subsets are nested and seeded; values match a brute-force spectrum; bad
parameters are named."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from t2ibench.errors import InputError
from t2ibench.metrics import FKEA, bootstrap_entropy
from t2ibench.metrics.convergence import convergence_report, fraction_label, nested_subsets
from t2ibench.metrics.truncated import truncated_vendi

FRACTIONS = (0.125, 0.25, 0.5, 1.0)


def modes_sample() -> tuple[np.ndarray, list[int]]:
    """200 prompts × 4 images, each prompt in one of 3 modes far apart (d = 8, σ = 1): VENDI-1 ≈ a few modes."""
    rng = np.random.default_rng(0)
    modes = 10.0 * rng.standard_normal((3, 8))
    centres = modes[rng.integers(0, 3, 200)] + 0.05 * rng.standard_normal((200, 8))
    X = np.repeat(centres, 4, axis=0) + 0.05 * rng.standard_normal((800, 8))
    return FKEA(sigma=1.0, rff_dim=128, seed=0).features(X), np.repeat(np.arange(200), 4).tolist()


def continuous_sample() -> tuple[np.ndarray, list[int]]:
    """100 prompts × 4 images of i.i.d. N(0, I_64) (σ = 2): every image is its own mode, VENDI-1 → n."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((400, 64))
    return FKEA(sigma=2.0, rff_dim=1024, seed=0).features(X), np.repeat(np.arange(100), 4).tolist()


def brute(rows: np.ndarray) -> np.ndarray:
    """Normalised eigenvalues (descending) of the covariance of the rows, in float64 numpy."""
    phi = rows.astype(np.float64)
    lam = np.clip(np.linalg.eigvalsh(phi.T @ phi / len(phi)), 0.0, None)[::-1]
    return lam / lam.sum()


def shannon_vendi(p: np.ndarray) -> float:
    """exp(Shannon entropy) of a probability vector."""
    q = p[p > 1e-12]
    return float(np.exp(-np.sum(q * np.log(q))))


def test_few_modes_converge_and_values_match_brute_force() -> None:
    phi, ids = modes_sample()
    report = convergence_report(phi, ids, score="vendi_1", resamples=60, seed=0)
    assert report.verdict == "converged", report.reason
    assert report.converged
    assert [p.n_prompts for p in report.points] == [25, 50, 100, 200]
    assert [p.n_images for p in report.points] == [100, 200, 400, 800]
    assert 2.5 < report.points[-1].value < 4.5
    assert "from n/2 to n" in report.reason
    for point, rows in zip(report.points, nested_subsets(ids, FRACTIONS, seed=0), strict=True):
        assert point.value == pytest.approx(shannon_vendi(brute(phi[rows])), rel=1e-4)
        assert point.low <= point.value <= point.high
    assert abs(report.relative_change) < 0.05


def test_every_image_its_own_mode_plain_grows_truncated_converges() -> None:
    phi, ids = continuous_sample()
    plain = convergence_report(phi, ids, score="vendi_1", resamples=40, seed=0)
    assert plain.verdict == "not yet"
    assert plain.reason.startswith("VENDI-1 grew")
    assert "from n/2 to n" in plain.reason
    assert plain.relative_change > 0.5
    truncated = convergence_report(phi, ids, score="truncated_vendi_1", t=10, resamples=40, seed=0)
    assert truncated.verdict == "converged", truncated.reason
    assert truncated.score == "truncated VENDI-1 (t=10)"
    for point, rows in zip(truncated.points, nested_subsets(ids, FRACTIONS, seed=0), strict=True):
        assert point.value == pytest.approx(truncated_vendi(brute(phi[rows]), 1.0, 10)[1.0], rel=1e-5)
        assert 1.0 <= point.low <= point.value <= point.high <= 10.0


def test_small_change_outside_the_band_is_not_yet() -> None:
    phi, ids = continuous_sample()
    report = convergence_report(phi, ids, score="vendi_1", resamples=40, seed=0, tolerance=10.0)
    assert report.verdict == "not yet"
    assert "outside the n band" in report.reason


def test_subsets_are_nested_seeded_and_sized() -> None:
    ids = np.repeat(np.arange(37), 3).tolist()
    subsets = nested_subsets(ids, FRACTIONS, seed=5)
    prompts = [set(np.asarray(ids)[rows].tolist()) for rows in subsets]
    assert [len(p) for p in prompts] == [math.ceil(f * 37) for f in FRACTIONS]
    assert all(a < b for a, b in itertools.pairwise(prompts))  # strict subsets
    assert all(len(rows) == 3 * len(p) for rows, p in zip(subsets, prompts, strict=True))  # all images of a prompt
    again = nested_subsets(ids, FRACTIONS, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(subsets, again, strict=True))
    other = nested_subsets(ids, FRACTIONS, seed=6)
    assert not np.array_equal(subsets[2], other[2])


def test_deterministic_per_seed_and_json_ready() -> None:
    phi, ids = modes_sample()
    a = convergence_report(phi, ids, score="rke", resamples=20, seed=3)
    b = convergence_report(phi, ids, score="rke", resamples=20, seed=3)
    c = convergence_report(phi, ids, score="rke", resamples=20, seed=4)
    assert a.to_dict() == b.to_dict()
    assert a.points[0].value != c.points[0].value
    assert a.points[-1].value == pytest.approx(c.points[-1].value)  # n = all prompts, whatever the permutation
    data = json.loads(json.dumps(a.to_dict()))
    assert data["verdict"] in {"converged", "not yet"}
    assert len(data["points"]) == 4
    assert set(data["points"][0]) == {"fraction", "n_images", "n_prompts", "value", "low", "high"}


def test_callable_score_uses_bootstrap_entropy_draws() -> None:
    phi, ids = modes_sample()

    def vendi1(p: np.ndarray) -> float:
        return shannon_vendi(p)

    named = convergence_report(phi, ids, score="vendi_1", resamples=30, seed=2)
    own = convergence_report(phi, ids, score=vendi1, resamples=30, seed=2)
    assert own.score == "vendi1"
    for x, y in zip(named.points, own.points, strict=True):
        assert (y.value, y.low, y.high) == pytest.approx((x.value, x.low, x.high), rel=1e-4)
    rows = nested_subsets(ids, FRACTIONS, seed=2)[-1]
    full = bootstrap_entropy(phi[rows], np.asarray(ids)[rows].tolist(), alphas=1.0, resamples=30, seed=2)
    assert named.points[-1].low == full.vendi[1.0].low
    assert named.points[-1].high == full.vendi[1.0].high


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"fractions": (0.5, 0.25, 1.0)}, "fractions must be strictly increasing"),
        ({"fractions": (0.5, 0.5)}, "fractions must be strictly increasing"),
        ({"fractions": (0.0, 1.0)}, "fractions must lie in (0, 1]"),
        ({"fractions": (0.5, 1.5)}, "fractions must lie in (0, 1]"),
        ({"fractions": (1.0,)}, "fractions needs at least 2 values"),
        ({"fractions": ("half", 1.0)}, "fractions must be numbers"),
        ({"fractions": (0.01, 1.0)}, "fractions: the smallest subset"),
        ({"score": "vendi1"}, "did you mean 'vendi_1'"),
        ({"score": "truncated_vendi_1"}, "t: score='truncated_vendi_1' needs"),
        ({"score": "vendi_1", "t": 10}, "t applies only"),
        ({"score": "truncated_vendi_1", "t": 0}, "t must be ≥ 1"),
        ({"tolerance": 0.0}, "tolerance must be"),
        ({"resamples": 0}, "resamples must be"),
        ({"level": 1.5}, "level must be in (0, 1)"),
    ],
)
def test_bad_inputs_name_the_parameter(kwargs: dict[str, object], needle: str) -> None:
    rng = np.random.default_rng(0)
    phi = rng.standard_normal((60, 6))
    ids = np.repeat(np.arange(20), 3).tolist()
    with pytest.raises(InputError) as err:
        convergence_report(phi, ids, seed=0, **{"resamples": 5, **kwargs})  # type: ignore[arg-type]
    message = str(err.value)
    assert needle in message
    assert "\n" not in message


def test_fraction_labels() -> None:
    assert [fraction_label(f) for f in (0.125, 0.25, 0.5, 1.0, 0.3)] == ["n/8", "n/4", "n/2", "n", "0.3n"]


# -- the whole family at once, and scores refitted per subset -------------------------------------------------------


def test_family_reports_equal_the_one_score_reports_from_one_spectrum_per_resample() -> None:
    from t2ibench.metrics import convergence_reports

    phi, ids = continuous_sample()
    many = convergence_reports(phi, ids, scores=("vendi_1", "rke", "truncated_vendi_1"), t=10, resamples=20, seed=3)
    assert set(many) == {"vendi_1", "rke", "truncated_vendi_1"}
    one = convergence_report(phi, ids, score="truncated_vendi_1", t=10, resamples=20, seed=3)
    got = many["truncated_vendi_1"]
    assert got.verdict == one.verdict
    assert got.reason == one.reason
    for a, b in zip(got.points, one.points, strict=True):  # the same code path: identical
        assert (a.value, a.low, a.high) == pytest.approx((b.value, b.low, b.high), rel=1e-12)
    plain = convergence_report(phi, ids, score="vendi_1", resamples=20, seed=3)  # via bootstrap_entropy
    for a, b in zip(many["vendi_1"].points, plain.points, strict=True):
        assert a.value == pytest.approx(b.value, rel=1e-5)
        assert (a.low, a.high) == pytest.approx((b.low, b.high), rel=1e-3)
    # at fraction 1 the band is the bootstrap interval of the whole sample (same draws, rows in order)
    boot = bootstrap_entropy(phi, ids, alphas=(1.0,), resamples=20, seed=3)
    full = many["rke"].points[-1]
    assert full.value == pytest.approx(boot.rke.estimate, rel=1e-5)
    assert (full.low, full.high) == pytest.approx((boot.rke.low, boot.rke.high), rel=1e-3)
    assert many["vendi_1"].verdict == "not yet"
    assert many["truncated_vendi_1"].verdict == "converged"
    with pytest.raises(InputError, match="distinct names"):
        convergence_reports(phi, ids, scores=("rke", "rke"), seed=0)
    with pytest.raises(InputError, match="t applies only"):
        convergence_reports(phi, ids, scores=("rke",), t=5, seed=0)


def test_values_refitted_per_subset_are_judged_by_the_change_rule() -> None:
    from t2ibench.metrics import convergence_of_values

    sizes = [(100, 25), (200, 50), (400, 100), (800, 200)]
    flat = convergence_of_values("Scendi", FRACTIONS, [3.1, 3.3, 3.36, 3.4], sizes, seed=0)
    assert flat.verdict == "converged"
    assert "no bootstrap band" in flat.reason
    assert math.isnan(flat.points[-1].low)
    growing = convergence_of_values("Scendi", FRACTIONS, [3.0, 4.0, 5.0, 6.0], sizes, seed=0)
    assert growing.verdict == "not yet"
    assert "grew 20.0 % from n/2 to n" in growing.reason
    with pytest.raises(InputError, match="one entry per fraction"):
        convergence_of_values("Scendi", FRACTIONS, [1.0, 2.0], sizes, seed=0)
