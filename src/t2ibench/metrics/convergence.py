"""Finite-sample convergence report of a kernel-entropy score: the score at n/8, n/4, n/2 and n prompts, with bands.

A diversity score computed on n images is only meaningful as a property of the model when it has stopped moving
with n: plain VENDI with a Gaussian kernel keeps growing with the sample when every image is its own mode, while
truncated VENDI (a bounded number of modes, t) settles at n = O(t). This module measures that on the sample at hand.

**Subsets.** The m prompts (clusters of images) are put in the fixed order of ``cluster_index`` and permuted once
with ``default_rng(SeedSequence((seed, 3)))`` (a stream separate from the random Fourier frequencies'
``default_rng(seed)``, Scendi's ``(seed, 1)`` and the bootstrap's ``(seed, 2)``). The subset at fraction f is the
first ⌈f·m⌉ prompts of that permutation, with all their images, so the subsets are nested: n/8 ⊂ n/4 ⊂ n/2 ⊂ n.

**Score and band per subset.** The score comes from the spectrum of the subset's feature covariance (equal to the
non-zero spectrum of its Gram matrix ΦΦᵀ/k). The band is the centred-percentile cluster bootstrap of
``bootstrap_entropy`` over the subset's prompts (``resamples`` draws from ``SeedSequence((seed, 2))``, level
``level``): an interval for the score a model gets *at that many prompts*. Plain VENDI_α and RKE go through
``bootstrap_entropy`` itself; any other score (truncated VENDI, a callable on the eigenvalues) through the same
draws (``cluster_draws``) and the same weighted Gram / covariance identity, with ``gram_matrix`` built once.

**Verdict rule.** Let v_half and v_full be the scores at the two largest fractions (n/2 and n by default) and
[low, high] the band at the largest. The score is **'converged'** when both

1. the relative change |v_full − v_half| / v_half is below ``tolerance`` (default 0.05, i.e. 5 %), and
2. v_half lies inside the band of v_full: low ≤ v_half ≤ high;

otherwise it is **'not yet'**, and ``reason`` says which condition failed and by how much (e.g. 'VENDI-1 grew
18.0 % from n/2 to n (tolerance 5 %)'). The first condition asks that the score no longer moves by much when the
sample doubles; the second that the move is within the score's own sampling noise at n. Neither proves
convergence beyond n: a score still growing slowly (logarithmically) can pass at one n and fail at a larger one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from t2ibench.errors import InputError, unknown_choice
from t2ibench.metrics.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    WeightedSpectra,
    bootstrap_entropy,
    check_level,
    cluster_draws,
    cluster_index,
)
from t2ibench.metrics.checks import as_matrix, check_positive_int, check_seed
from t2ibench.metrics.kernels import DEFAULT_BLOCK
from t2ibench.metrics.spectrum import renyi_vendi
from t2ibench.metrics.truncated import check_truncation_memory, truncated_vendi

SCORES = ("vendi_1", "vendi_2", "vendi_inf", "rke", "truncated_vendi_1")
DEFAULT_FRACTIONS: tuple[float, ...] = (0.125, 0.25, 0.5, 1.0)
DEFAULT_TOLERANCE = 0.05
SUBSAMPLE_STREAM = 3
"""The prompt permutation comes from ``default_rng(SeedSequence((seed, 3)))``, separate from the bootstrap's
``(seed, 2)``, Scendi's ``(seed, 1)`` and the random Fourier frequencies' ``default_rng(seed)``."""
VERDICTS = ("converged", "not yet")

_PLAIN_ALPHA = {"vendi_1": 1.0, "vendi_2": 2.0, "vendi_inf": math.inf, "rke": 2.0}
_LABEL = {"vendi_1": "VENDI-1", "vendi_2": "VENDI-2", "vendi_inf": "VENDI-inf", "rke": "RKE"}

SpectrumScore = Callable[[NDArray[np.float64]], float]
"""A score of a spectrum: eigenvalues (k,) sorted descending, round-off zeroed, summing to 1 → a float."""


@dataclass(frozen=True)
class ConvergencePoint:
    """The score on one nested subset: its fraction of the prompts, its size, value and bootstrap band [low, high]."""

    fraction: float
    n_images: int
    n_prompts: int
    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        """This point as a JSON-ready dict."""
        return {
            "fraction": self.fraction,
            "n_images": self.n_images,
            "n_prompts": self.n_prompts,
            "value": self.value,
            "low": self.low,
            "high": self.high,
        }


@dataclass(frozen=True)
class ConvergenceReport:
    """Score at each fraction of the prompts (nested subsets, bootstrap bands), and the verdict with its reason.

    ``relative_change`` is (v_full − v_half) / v_half between the two largest fractions (signed).
    """

    score: str
    points: tuple[ConvergencePoint, ...]
    verdict: str
    reason: str
    relative_change: float
    tolerance: float
    level: float
    resamples: int
    seed: int

    @property
    def converged(self) -> bool:
        """Whether the verdict is 'converged'."""
        return self.verdict == "converged"

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (points as a list of dicts)."""
        return {
            "score": self.score,
            "points": [p.to_dict() for p in self.points],
            "verdict": self.verdict,
            "reason": self.reason,
            "relative_change": self.relative_change,
            "tolerance": self.tolerance,
            "level": self.level,
            "resamples": self.resamples,
            "seed": self.seed,
            "method": f"centred percentile bootstrap over prompts, B={self.resamples}",
        }


def fraction_label(fraction: float) -> str:
    """'n' for 1, 'n/k' for 1/k (k an integer), else e.g. '0.3n'."""
    if fraction == 1.0:
        return "n"
    k = round(1.0 / fraction)
    return f"n/{k}" if abs(k * fraction - 1.0) < 1e-9 else f"{fraction:g}n"


def check_fractions(fractions: Sequence[float]) -> tuple[float, ...]:
    """Fractions as floats, at least 2, strictly increasing, each in (0, 1]; else InputError naming ``fractions``."""
    try:
        items = list(fractions)
    except TypeError:
        raise InputError(
            f"fractions must be a sequence of numbers in (0, 1], e.g. (1/8, 1/4, 1/2, 1); got {fractions!r}"
        ) from None
    if len(items) < 2:
        raise InputError(f"fractions needs at least 2 values (the verdict compares the last two); got {items!r}")
    out: list[float] = []
    for f in items:
        if isinstance(f, (bool, np.bool_)) or not isinstance(f, (int, float, np.integer, np.floating)):
            raise InputError(f"fractions must be numbers in (0, 1]; got {f!r}")
        v = float(f)
        if not math.isfinite(v) or not 0.0 < v <= 1.0:
            raise InputError(f"fractions must lie in (0, 1]; got {f!r}")
        out.append(v)
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise InputError(f"fractions must be strictly increasing; got {tuple(out)!r}")
    return tuple(out)


def _check_tolerance(tolerance: float) -> float:
    """``tolerance`` as a finite float > 0, else InputError naming it."""
    if isinstance(tolerance, (bool, np.bool_)) or not isinstance(tolerance, (int, float, np.integer, np.floating)):
        raise InputError(f"tolerance must be a number > 0, e.g. 0.05; got {tolerance!r}")
    v = float(tolerance)
    if not math.isfinite(v) or v <= 0.0:
        raise InputError(f"tolerance must be a finite number > 0, e.g. 0.05; got {tolerance!r}")
    return v


def _resolve_score(
    score: str | SpectrumScore, t: int | None
) -> tuple[str, SpectrumScore, str | None, tuple[float, float]]:
    """(label, spectrum score, name of the plain score for bootstrap_entropy or None, the band's clip range)."""
    if callable(score):
        if t is not None:
            raise InputError("t applies only to score='truncated_vendi_1'; a callable score takes the spectrum itself")
        return str(getattr(score, "__name__", "score")), score, None, (-math.inf, math.inf)
    if not isinstance(score, str) or score not in SCORES:
        raise unknown_choice("score", score, SCORES)
    if score == "truncated_vendi_1":
        if t is None:
            raise InputError("t: score='truncated_vendi_1' needs the truncation t (an integer ≥ 1, e.g. 100)")
        tt = check_positive_int(t, name="t")
        check_truncation_memory(tt)  # once: the band scores thousands of resampled spectra at this t

        def score_t(p: NDArray[np.float64]) -> float:
            return truncated_vendi(p, 1.0, tt, memory_checked=True)[1.0]

        return f"truncated VENDI-1 (t={tt})", score_t, None, (1.0, float(tt))
    if t is not None:
        raise InputError(f"t applies only to score='truncated_vendi_1', not {score!r}")
    alpha = _PLAIN_ALPHA[score]
    return _LABEL[score], lambda p: renyi_vendi(p, alpha), score, (1.0, math.inf)


def _band(
    phi: NDArray[np.float64],
    ids: Sequence[Hashable],
    func: SpectrumScore,
    *,
    eps: float,
    resamples: int,
    level: float,
    seed: int,
    block_size: int,
    clip: tuple[float, float],
) -> tuple[float, float, float]:
    """(score, low, high) of a spectrum score: centred-percentile cluster bootstrap (bootstrap_entropy's draws), band
    clipped to ``clip`` (the score's range: [1, t] for truncated VENDI)."""
    n = phi.shape[0]
    distinct, position = cluster_index(ids, n)
    m = len(distinct)
    spectra = WeightedSpectra(phi, eps, block_size)

    def score(weights: NDArray[np.float64]) -> float:
        return float(func(spectra.spectrum(*spectra.matrix(weights)).probabilities))

    estimate = score(np.ones(n))
    replicates = np.empty(resamples, dtype=np.float64)
    for b, drawn in enumerate(cluster_draws(m, resamples, seed)):
        replicates[b] = score(np.bincount(drawn, minlength=m)[position].astype(np.float64))
    tail = (1.0 - level) / 2.0
    q_lo, q_hi = np.quantile(replicates, [tail, 1.0 - tail])
    bias = float(replicates.mean()) - estimate
    low, high = np.clip([q_lo - bias, q_hi - bias], *clip)
    return estimate, float(low), float(high)


def _bands(
    phi: NDArray[np.float64],
    ids: Sequence[Hashable],
    funcs: Sequence[SpectrumScore],
    clips: Sequence[tuple[float, float]],
    *,
    eps: float,
    resamples: int,
    level: float,
    seed: int,
    block_size: int,
) -> list[tuple[float, float, float]]:
    """``_band`` for several scores at once: one weighted spectrum per resample feeds every score."""
    n = phi.shape[0]
    distinct, position = cluster_index(ids, n)
    m = len(distinct)
    spectra = WeightedSpectra(phi, eps, block_size)

    def scores(weights: NDArray[np.float64]) -> NDArray[np.float64]:
        p = spectra.spectrum(*spectra.matrix(weights)).probabilities
        return np.array([float(f(p)) for f in funcs])

    estimate = scores(np.ones(n))
    replicates = np.empty((resamples, len(funcs)), dtype=np.float64)
    for b, drawn in enumerate(cluster_draws(m, resamples, seed)):
        replicates[b] = scores(np.bincount(drawn, minlength=m)[position].astype(np.float64))
    tail = (1.0 - level) / 2.0
    q_lo, q_hi = np.quantile(replicates, [tail, 1.0 - tail], axis=0)
    bias = replicates.mean(axis=0) - estimate
    out = []
    for j, clip in enumerate(clips):
        low, high = np.clip([q_lo[j] - bias[j], q_hi[j] - bias[j]], *clip)
        out.append((float(estimate[j]), float(low), float(high)))
    return out


def _verdict(label: str, points: Sequence[ConvergencePoint], tolerance: float) -> tuple[str, str, float]:
    """(verdict, reason, signed relative change) by the module's rule, comparing the last two points; a point
    without a band (NaN low/high: a score with no bootstrap) is judged by the first condition alone."""
    half, full = points[-2], points[-1]
    change = (full.value - half.value) / half.value
    span = f"from {fraction_label(half.fraction)} to {fraction_label(full.fraction)}"
    band = f"[{full.low:.4g}, {full.high:.4g}]"
    moved = "grew" if change > 0 else "shrank" if change < 0 else "changed"
    step = f"{label} {moved} {abs(change) * 100:.1f} % {span}"
    if abs(change) >= tolerance:
        return "not yet", f"{step} (tolerance {tolerance * 100:g} %)", change
    if math.isnan(full.low) or math.isnan(full.high):
        return "converged", f"{step} (< {tolerance * 100:g} %; no bootstrap band, so the change rule alone)", change
    if not full.low <= half.value <= full.high:
        return (
            "not yet",
            f"{step} (within {tolerance * 100:g} %), but the {fraction_label(half.fraction)} value {half.value:.4g} "
            f"lies outside the {fraction_label(full.fraction)} band {band}",
            change,
        )
    return (
        "converged",
        f"{step} (< {tolerance * 100:g} %) and the {fraction_label(half.fraction)} value {half.value:.4g} lies inside "
        f"the {fraction_label(full.fraction)} band {band}",
        change,
    )


def nested_subsets(cluster_ids: Sequence[Hashable], fractions: Sequence[float], *, seed: int) -> list[NDArray[np.intp]]:
    """Row indices (ascending) of the nested subsets: the first ⌈f·m⌉ of m prompts, permuted by (seed, 3), per f."""
    fracs = check_fractions(fractions)
    ids = list(cluster_ids)
    distinct, position = cluster_index(ids, len(ids))
    m = len(distinct)
    order = np.random.default_rng(np.random.SeedSequence((check_seed(seed), SUBSAMPLE_STREAM))).permutation(m)
    rank = np.empty(m, dtype=np.intp)
    rank[order] = np.arange(m)
    row_rank = rank[position]  # each row's prompt's place in the permutation
    return [np.flatnonzero(row_rank < math.ceil(round(f * m, 9))) for f in fracs]


def _report(
    label: str, points: Sequence[ConvergencePoint], tolerance: float, level: float, resamples: int, seed: int
) -> ConvergenceReport:
    """The report of a score's points, with the verdict of the module's rule."""
    verdict, reason, change = _verdict(label, points, tolerance)
    return ConvergenceReport(label, tuple(points), verdict, reason, change, tolerance, level, resamples, seed)


def _setup(
    phi: NDArray[np.float64],
    cluster_ids: Sequence[Hashable],
    fractions: Sequence[float],
    resamples: int,
    level: float,
    seed: int,
    tolerance: float,
    block_size: int,
) -> tuple[tuple[float, ...], int, float, int, float, int, list[Hashable], list[int]]:
    """The checked parameters of a convergence report and the prompts per subset (InputError names the bad one)."""
    fracs = check_fractions(fractions)
    B = check_positive_int(resamples, name="resamples")
    lvl = check_level(level)
    seed = check_seed(seed)
    tol = _check_tolerance(tolerance)
    block = check_positive_int(block_size, name="block_size")
    ids = list(cluster_ids)
    distinct, _ = cluster_index(ids, phi.shape[0])
    m = len(distinct)
    sizes = [math.ceil(round(f * m, 9)) for f in fracs]
    if sizes[0] < 2:
        raise InputError(
            f"fractions: the smallest subset ({fracs[0]:g} of {m} prompts = {sizes[0]}) needs at least 2 prompts "
            "to bootstrap over; raise the smallest fraction or add prompts"
        )
    return fracs, B, lvl, seed, tol, block, ids, sizes


def convergence_report(
    features: ArrayLike,
    cluster_ids: Sequence[Hashable],
    *,
    score: str | SpectrumScore = "vendi_1",
    t: int | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int,
    tolerance: float = DEFAULT_TOLERANCE,
    block_size: int = DEFAULT_BLOCK,
) -> ConvergenceReport:
    """Score of features Φ (n, D) on nested prompt subsets (⌈f·m⌉ of m prompts per fraction f), bands and verdict.

    ``score`` is one of 'vendi_1', 'vendi_2', 'vendi_inf', 'rke', 'truncated_vendi_1' (with ``t``) or a callable
    on the normalised eigenvalues (k,); the verdict rule is in the module docstring. Cost: per fraction, one
    bootstrap of ``resamples`` eigendecompositions of size min(k, D).
    """
    phi = as_matrix(features, name="features")
    raw_dtype = np.asarray(features).dtype
    eps = float(np.finfo(raw_dtype if np.issubdtype(raw_dtype, np.floating) else np.float64).eps)
    label, func, plain, clip = _resolve_score(score, t)
    fracs, B, lvl, seed, tol, block, ids, sizes = _setup(
        phi, cluster_ids, fractions, resamples, level, seed, tolerance, block_size
    )
    work_dtype = raw_dtype if np.issubdtype(raw_dtype, np.floating) else np.float64
    points = []
    for f, size, rows in zip(fracs, sizes, nested_subsets(ids, fracs, seed=seed), strict=True):
        sub_ids = [ids[i] for i in rows]
        if plain is not None:
            boot = bootstrap_entropy(
                phi[rows].astype(work_dtype, copy=False),
                sub_ids,
                alphas=_PLAIN_ALPHA[plain],
                resamples=B,
                level=lvl,
                seed=seed,
                method="centred",
                block_size=block,
            )
            interval = boot.rke if plain == "rke" else boot.interval(_PLAIN_ALPHA[plain])
            value, low, high = interval.estimate, interval.low, interval.high
        else:
            value, low, high = _band(
                phi[rows], sub_ids, func, eps=eps, resamples=B, level=lvl, seed=seed, block_size=block, clip=clip
            )
        points.append(ConvergencePoint(f, int(rows.size), size, value, low, high))
    return _report(label, points, tol, lvl, B, seed)


def convergence_reports(
    features: ArrayLike,
    cluster_ids: Sequence[Hashable],
    *,
    scores: Sequence[str] = ("vendi_1", "vendi_2", "rke"),
    t: int | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int,
    tolerance: float = DEFAULT_TOLERANCE,
    block_size: int = DEFAULT_BLOCK,
) -> dict[str, ConvergenceReport]:
    """``convergence_report`` for several scores of features Φ (n, D) at once (name → report): per subset and
    resample one weighted spectrum feeds every score, so the family costs what one score does.

    Names are those of ``SCORES`` ('truncated_vendi_1' needs ``t``). Each band is the centred percentile of the
    same cluster draws as ``bootstrap_entropy`` (SeedSequence((seed, 2)), clusters in row order); at fraction 1
    the subset is every row in order, so its band is the interval the pipeline stores for the score itself. RKE
    is read off the spectrum (1/Σp²; ``bootstrap_entropy`` uses the equal Frobenius form).
    """
    phi = as_matrix(features, name="features")
    raw_dtype = np.asarray(features).dtype
    eps = float(np.finfo(raw_dtype if np.issubdtype(raw_dtype, np.floating) else np.float64).eps)
    names = list(scores)
    if not names or len(set(names)) != len(names):
        raise InputError(f"scores must be distinct names from {SCORES}; got {names!r}")
    resolved = [_resolve_score(name, t if name == "truncated_vendi_1" else None) for name in names]
    if t is not None and "truncated_vendi_1" not in names:
        raise InputError("t applies only to score 'truncated_vendi_1', which is not among scores")
    funcs = [
        (lambda p: 1.0 / float(np.sum(p * p))) if name == "rke" else r[1]
        for name, r in zip(names, resolved, strict=True)
    ]
    fracs, B, lvl, seed, tol, block, ids, sizes = _setup(
        phi, cluster_ids, fractions, resamples, level, seed, tolerance, block_size
    )
    points: list[list[ConvergencePoint]] = [[] for _ in names]
    for f, size, rows in zip(fracs, sizes, nested_subsets(ids, fracs, seed=seed), strict=True):
        bands = _bands(
            phi[rows],
            [ids[i] for i in rows],
            funcs,
            [r[3] for r in resolved],
            eps=eps,
            resamples=B,
            level=lvl,
            seed=seed,
            block_size=block,
        )
        for j, (value, low, high) in enumerate(bands):
            points[j].append(ConvergencePoint(f, int(rows.size), size, value, low, high))
    out = {}
    for name, r, pts in zip(names, resolved, points, strict=True):
        out[name] = _report(r[0], pts, tol, lvl, B, seed)
    return out


def convergence_of_values(
    label: str,
    fractions: Sequence[float],
    values: Sequence[float],
    sizes: Sequence[tuple[int, int]],
    *,
    seed: int,
    tolerance: float = DEFAULT_TOLERANCE,
) -> ConvergenceReport:
    """A report for a score refitted on the nested subsets by its own estimator (Scendi, conditional VENDI: no
    bootstrap band), from its values per fraction and (images, prompts) per subset; judged by the change rule."""
    fracs = check_fractions(fractions)
    if len(values) != len(fracs) or len(sizes) != len(fracs):
        raise InputError(
            f"values and sizes need one entry per fraction ({len(fracs)}); got {len(values)}, {len(sizes)}"
        )
    nan = float("nan")
    pts = tuple(
        ConvergencePoint(f, int(k), int(m), float(v), nan, nan)
        for f, v, (k, m) in zip(fracs, values, sizes, strict=True)
    )
    return _report(label, pts, _check_tolerance(tolerance), nan, 0, check_seed(seed))
