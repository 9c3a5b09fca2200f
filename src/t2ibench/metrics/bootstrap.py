"""Cluster-bootstrap confidence intervals of kernel-entropy scores (VENDI_α, RKE) from explicit features.

Images come in clusters (all images of one prompt). A resample draws the m clusters with replacement, so image i
gets the integer weight w_i = how often its cluster was drawn. The resample's feature covariance is

    C_w = Σ_i w_i φ_i φ_iᵀ / Σ_i w_i        (D × D)

and its non-zero eigenvalues are those of the weighted Gram matrix

    M_w = diag(√w) G diag(√w) / Σ_i w_i      (k × k over the k images with w_i > 0),  G = ΦΦᵀ,

so every resample costs one eigendecomposition of size min(k, D) (k ≈ 0.63 n distinct images on average):
the Gram side (G built once, in tiles) when k ≤ D, the covariance side otherwise. Duplicating the drawn rows and
recomputing FKEA gives the same spectrum (tested against exactly that brute force).

Bias, and the three intervals. A duplicated image is perfectly similar to its copy, so a resample's kernel
entropy is lower than the sample's: the bootstrap distribution sits below the estimate, by about as much as the
sample's own plug-in bias sits below the population value (entropy estimators are biased low). The default,
*centred*, interval [q_lo − b, q_hi − b] (b = mean resample − estimate) moves the bootstrap distribution back onto
the estimate: it is an interval for the score a model gets at this many prompts — what differs between two models
measured on one suite — and covered that expected score 0.96–1.00 of the time for VENDI_1 and RKE in every measured
case, VENDI → n included (docs/metrics.md#confidence-intervals). The *basic* interval [2θ̂ − q_hi, 2θ̂ − q_lo]
targets the population value (coverage 0.85–0.995 while VENDI_1 stays below about a fifth of the number of
prompts, failing beyond; it may lie wholly above the estimate); the *percentile* interval [q_lo, q_hi] covers
neither (≤ 0.41). None is reliable for VENDI_∞ (a maximum).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from t2ibench.errors import InputError, unknown_choice
from t2ibench.metrics.checks import as_matrix, check_alphas, check_memory, check_positive_int, check_seed
from t2ibench.metrics.covariance import CovarianceAccumulator
from t2ibench.metrics.kernels import DEFAULT_BLOCK
from t2ibench.metrics.levels import CI_LEVEL
from t2ibench.metrics.spectrum import CleanSpectrum, check_vendi_invariants, clean_spectrum, renyi_vendi

INTERVAL_METHODS = ("centred", "basic", "percentile")
DEFAULT_RESAMPLES = 200
DEFAULT_LEVEL = CI_LEVEL  # one confidence level across the benchmark (GenEval's intervals use it too)
BOOTSTRAP_STREAM = 2
"""The draws come from ``default_rng(SeedSequence((seed, 2)))``: a stream separate from the random Fourier
frequencies' ``default_rng(seed)`` (and from Scendi's text stream ``(seed, 1)``), so one seed serves both."""

_DESCRIPTION = {
    "centred": "centred percentile bootstrap",
    "basic": "basic bootstrap",
    "percentile": "percentile bootstrap",
}


@dataclass(frozen=True)
class ScoreInterval:
    """A score of the sample (all weights 1), its bootstrap interval [low, high], the bootstrap's shift
    ``bias`` = mean(replicates) − estimate and standard error ``se`` (all in the score's units: modes).

    ``estimate − bias`` is the bootstrap's bias-corrected score (the basic interval lies around it).
    """

    estimate: float
    low: float
    high: float
    bias: float
    se: float


@dataclass(frozen=True)
class EntropyBootstrap:
    """Cluster-bootstrap intervals of VENDI_α (per α) and RKE, and the replicates they came from.

    ``replicates`` has shape (resamples, len(alphas) + 1): one column per α in ``vendi``'s order, then RKE.
    ``side`` says which matrix was eigendecomposed per resample ('gram': k × k, 'covariance': D × D).
    """

    vendi: Mapping[float, ScoreInterval]
    rke: ScoreInterval
    level: float
    method: str
    resamples: int
    clusters: int
    n: int
    seed: int
    side: str
    replicates: NDArray[np.float64] = field(repr=False)

    def describe(self) -> str:
        """Short text for reports and the store's ci_method, e.g. 'basic bootstrap over prompts, B=200'."""
        return f"{_DESCRIPTION[self.method]} over prompts, B={self.resamples}"

    def interval(self, alpha: float) -> ScoreInterval:
        """The interval of VENDI_α for an α that was computed (KeyError naming the available ones otherwise)."""
        key = float(alpha)
        if key not in self.vendi:
            raise KeyError(f"VENDI_{alpha:g} has no interval; available: {sorted(self.vendi)}")
        return self.vendi[key]


def check_level(level: float, *, name: str = "level") -> float:
    """Return a confidence level as a float in (0, 1), or raise InputError naming ``name``."""
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number in (0, 1), e.g. 0.95; got {level!r}")
    value = float(level)
    if not 0.0 < value < 1.0:
        raise InputError(f"{name} must be in (0, 1), e.g. 0.95; got {level!r}")
    return value


def cluster_index(cluster_ids: Sequence[Hashable], n: int) -> tuple[list[Hashable], NDArray[np.intp]]:
    """(the m distinct clusters in a fixed order (sorted by repr), each of the n rows' cluster position (n,))."""
    ids = list(cluster_ids)
    if len(ids) != n:
        raise InputError(f"cluster_ids has {len(ids)} entries for {n} feature rows (one cluster id per row)")
    try:
        distinct = sorted(set(ids), key=repr)
    except TypeError:
        raise InputError("cluster_ids must be hashable values such as prompt indices") from None
    position = {c: j for j, c in enumerate(distinct)}
    return distinct, np.fromiter((position[c] for c in ids), dtype=np.intp, count=n)


def cluster_draws(clusters: int, resamples: int, seed: int) -> NDArray[np.intp]:
    """The resampled cluster positions (resamples, clusters): row b lists the m clusters drawn with replacement."""
    m = check_positive_int(clusters, name="clusters")
    b = check_positive_int(resamples, name="resamples")
    check_memory(8.0 * b * m, what=f"the bootstrap's draws ({b} resamples of {m} clusters)")
    rng = np.random.default_rng(np.random.SeedSequence((check_seed(seed), BOOTSTRAP_STREAM)))
    draws: NDArray[np.intp] = rng.integers(0, m, size=(b, m)).astype(np.intp)
    return draws


def gram_matrix(features: NDArray[np.float64], *, block_size: int = DEFAULT_BLOCK) -> NDArray[np.float64]:
    """G = ΦΦᵀ (n, n) float64 of features Φ (n, D), in block × block tiles (never one n × n BLAS call)."""
    n = features.shape[0]
    check_positive_int(block_size, name="block_size")
    check_memory(8.0 * n * n, what=f"the {n}×{n} Gram matrix of the bootstrap")
    G = np.empty((n, n), dtype=np.float64)
    for i0 in range(0, n, block_size):
        rows = slice(i0, min(i0 + block_size, n))
        for j0 in range(i0, n, block_size):
            cols = slice(j0, min(j0 + block_size, n))
            tile = features[rows] @ features[cols].T
            G[rows, cols] = tile
            if j0 != i0:
                G[cols, rows] = tile.T
    return G


class WeightedSpectra:
    """Spectra of weighted sample sets: the eigenvalues of Σ w_i φ_i φ_iᵀ / Σ w_i from the weighted k × k Gram
    matrix (G = ΦΦᵀ built once, in tiles) or the D × D covariance, in the precision the features came in."""

    def __init__(self, features: NDArray[np.float64], eps: float, block_size: int) -> None:
        self.features = features
        self.eps = eps
        self.eig_dtype: type[np.floating] = np.float32 if eps >= float(np.finfo(np.float32).eps) else np.float64
        self.block_size = block_size
        self.gram: NDArray[np.float64] | None = None

    def matrix(self, weights: NDArray[np.float64], side: str | None = None) -> tuple[NDArray[np.float64], int]:
        """(the weighted, normalised Gram or covariance matrix, images kept) for integer ``weights`` (n,) ≥ 0;
        ``side`` 'gram' or 'covariance' (None: whichever is smaller for these weights)."""
        kept = np.flatnonzero(weights > 0)
        root = np.sqrt(weights[kept])
        D = self.features.shape[1]
        if (side or ("gram" if kept.size <= D else "covariance")) == "gram":
            if self.gram is None:
                self.gram = gram_matrix(self.features, block_size=self.block_size)
            M = self.gram[np.ix_(kept, kept)]
            M *= root[:, None]
            M *= root[None, :]
        else:
            acc = CovarianceAccumulator(D)
            for start in range(0, kept.size, self.block_size):
                part = kept[start : start + self.block_size]
                acc.add(self.features[part] * root[start : start + self.block_size, None])
            M = acc.sum_matrix()
        M /= float(weights[kept].sum())
        return M, int(kept.size)

    def spectrum(self, M: NDArray[np.float64], kept: int) -> CleanSpectrum:
        """The cleaned spectrum of a ``matrix`` result (eigenvalues in the features' precision: float32 for FKEA,
        ~2.5× faster than float64 with VENDI within ~1e-6; divide and conquer, LAPACK's fastest values-only driver)."""
        values = scipy.linalg.eigvalsh(M.astype(self.eig_dtype, copy=False), check_finite=False, driver="evd")
        return clean_spectrum(values, eps=self.eps, rank=min(kept, self.features.shape[1]))

    def scores(self, weights: NDArray[np.float64], orders: tuple[float, ...], side: str) -> NDArray[np.float64]:
        """(VENDI_α for each α, RKE) of the sample weighted by ``weights`` (n,), integers ≥ 0."""
        M, kept = self.matrix(weights, side)
        trace = float(np.trace(M))
        rke = trace * trace / float(np.einsum("ij,ij->", M, M))
        spectrum = self.spectrum(M, kept)
        vendi = {a: renyi_vendi(spectrum.probabilities, a) for a in orders}
        bound = min(kept, self.features.shape[1])
        check_vendi_invariants(
            vendi, rke, bound=bound, slack=1e-6 + 4 * spectrum.clipped_fraction + M.shape[0] * self.eps
        )
        return np.array([*(vendi[a] for a in orders), rke], dtype=np.float64)


def bootstrap_entropy(
    features: ArrayLike,
    cluster_ids: Sequence[Hashable],
    *,
    alphas: float | str | Iterable[float | str] = (1.0, 2.0, math.inf),
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int,
    method: str = "centred",
    block_size: int = DEFAULT_BLOCK,
) -> EntropyBootstrap:
    """Cluster-bootstrap intervals at ``level`` of VENDI_α and RKE from features Φ (n, D) and one cluster id per row.

    Clusters (prompts) are drawn with replacement ``resamples`` times from ``SeedSequence((seed, 2))``; each
    resample's spectrum comes from the weighted k × k Gram matrix or the D × D covariance, whichever is smaller.
    ``method`` 'centred' (default) gives [q_lo − b, q_hi − b] with b = mean(replicates) − θ̂ (an interval for the
    score at this n: what differs between two models measured on one suite), 'basic' [2θ̂ − q_hi, 2θ̂ − q_lo] (for
    the population value), 'percentile' [q_lo, q_hi], with q the bootstrap quantiles at (1 ∓ level)/2; all are
    clipped to [1, D]. Cost O(resamples · min(k, D)³).
    """
    phi = as_matrix(features, name="features")
    raw_dtype = np.asarray(features).dtype
    eps = float(np.finfo(raw_dtype if np.issubdtype(raw_dtype, np.floating) else np.float64).eps)
    orders = check_alphas(alphas)
    B = check_positive_int(resamples, name="resamples")
    lvl = check_level(level)
    seed = check_seed(seed)
    if method not in INTERVAL_METHODS:
        raise unknown_choice("method", method, INTERVAL_METHODS)
    n, D = phi.shape
    distinct, position = cluster_index(cluster_ids, n)
    m = len(distinct)
    if m < 2:
        raise InputError(f"cluster_ids: need at least 2 clusters (prompts) to bootstrap over; got {m}")
    draws = cluster_draws(m, B, seed)
    spectra = WeightedSpectra(phi, eps, check_positive_int(block_size, name="block_size"))
    # the side of each eigenproblem: k × k Gram (k = distinct images drawn, ≈ 0.63 n) or D × D covariance
    kept = np.array([np.count_nonzero(np.bincount(d, minlength=m)[position]) for d in draws])
    side = "gram" if float(np.median(kept)) <= D else "covariance"
    estimate = spectra.scores(np.ones(n), orders, "gram" if n <= D else "covariance")
    replicates = np.empty((B, len(orders) + 1), dtype=np.float64)
    for b, drawn in enumerate(draws):
        weights = np.bincount(drawn, minlength=m)[position].astype(np.float64)
        replicates[b] = spectra.scores(weights, orders, side)
    tail = (1.0 - lvl) / 2.0
    q_lo, q_hi = np.quantile(replicates, [tail, 1.0 - tail], axis=0)
    bias = replicates.mean(axis=0) - estimate
    if method == "basic":
        low, high = 2.0 * estimate - q_hi, 2.0 * estimate - q_lo
    elif method == "centred":
        low, high = q_lo - bias, q_hi - bias
    else:
        low, high = q_lo, q_hi
    low, high = np.clip(low, 1.0, float(D)), np.clip(high, 1.0, float(D))
    se = replicates.std(axis=0, ddof=1) if B > 1 else np.zeros_like(estimate)
    intervals = [
        ScoreInterval(float(e), float(lo), float(hi), float(bi), float(s))
        for e, lo, hi, bi, s in zip(estimate, low, high, bias, se, strict=True)
    ]
    return EntropyBootstrap(
        vendi=dict(zip(orders, intervals[:-1], strict=True)),
        rke=intervals[-1],
        level=lvl,
        method=method,
        resamples=B,
        clusters=m,
        n=n,
        seed=seed,
        side=side,
        replicates=replicates,
    )
