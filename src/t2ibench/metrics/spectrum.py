"""Rényi entropies of a kernel spectrum: VENDI_α and RKE.

For a unit-diagonal kernel the eigenvalues λ of K/n (or of the feature covariance C = ΦᵀΦ/n, which has the
same non-zero spectrum) are non-negative and sum to 1. Then

* VENDI_α = (Σ λ^α)^{1/(1−α)} for α > 0, α ≠ 1;
* VENDI_1 = exp(−Σ λ log λ) (the limit α → 1, exp of the Shannon entropy);
* VENDI_∞ = 1 / max λ (the limit α → ∞);
* RKE = VENDI_2 = 1 / Σ λ² = 1 / ‖K/n‖_F².

Round-off leaves tiny eigenvalues of either sign where the exact matrix has zeros (always so when n is below
the matrix size, e.g. FKEA with n < 2r). Every eigenvalue no larger than the noise floor
max(|λ_min| if λ_min < 0, D·ε₆₄·λ_max) is set to 0 — the most negative eigenvalue measures the round-off of
this very matrix, and D·ε₆₄·λ_max is the float64 eigensolver's own resolution — then the spectrum is
renormalised to sum 1. Without this, orders α < 1 (Σλ^α) would amplify round-off into visible error. The
removed mass, as a fraction of the trace, is always returned (``clipped_fraction``). A
``SpectrumClippingWarning`` is raised when the negative mass exceeds 1e-6 of the trace *and* some negative
eigenvalue is larger than round-off can explain, |λ| > D·ε·λ_max with ε the machine epsilon of the precision
the matrix was computed in (the ``numpy.linalg.matrix_rank`` rule): a genuinely indefinite matrix, not noise.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from t2ibench.errors import InputError
from t2ibench.metrics.checks import check_alphas, parse_alpha

NEAR_ONE = 1e-5
"""|α − 1| below which VENDI_α is evaluated by its expansion around α = 1 (relative error ≲ 1e-10)."""

CLIP_TOLERANCE = 1e-6
"""Clipped negative mass, as a fraction of the trace, above which a warning is raised."""


class SpectrumClippingWarning(RuntimeWarning):
    """Negative eigenvalues beyond round-off were clipped: the matrix was not positive semi-definite."""


@dataclass(frozen=True)
class CleanSpectrum:
    """Eigenvalues with round-off removed, sorted descending and normalised to sum 1, and the mass removed."""

    probabilities: NDArray[np.float64]
    trace: float
    clipped_fraction: float


def clean_spectrum(
    eigenvalues: ArrayLike,
    *,
    tolerance: float = CLIP_TOLERANCE,
    eps: float = float(np.finfo(np.float64).eps),
    reference: float | None = None,
    rank: int | None = None,
) -> CleanSpectrum:
    """Zero the round-off eigenvalues of a PSD spectrum (k,), sort descending, normalise to sum 1.

    ``eps`` is the machine epsilon of the precision the matrix was computed in (float32 for FKEA).
    ``reference`` is the trace of the matrix these eigenvalues were derived from when that is larger (e.g.
    Tr C_II for the Schur complement Λ_I = C_II − P): round-off and the clipping tolerance scale with it.
    ``rank`` bounds the true rank (e.g. n for a covariance of n feature rows): eigenvalues beyond the top
    ``rank`` are round-off by construction and are zeroed too (else orders α → 0 would count them).
    """
    lam = np.asarray(eigenvalues, dtype=np.float64).ravel()
    if lam.size == 0:
        raise InputError("eigenvalues is empty")
    if not np.isfinite(lam).all():
        raise InputError("eigenvalues contain NaN or inf")
    trace = float(lam.sum())
    if trace <= 0:
        raise InputError(f"the spectrum's trace must be > 0; got {trace:g}")
    lam_min, lam_max = float(lam.min()), float(lam.max())
    scale = lam_max if reference is None else max(lam_max, reference)
    negative = float(-lam[lam < 0].sum())
    roundoff = lam.size * eps * scale
    if negative / max(trace, 0.0 if reference is None else reference) > tolerance and lam_min < -roundoff:
        warnings.warn(
            f"clipped negative eigenvalues carrying {negative / trace:.3g} of the trace (> {tolerance:g}), the "
            f"largest {-lam_min:.3g} beyond round-off ({roundoff:.3g}): the matrix is not numerically PSD",
            SpectrumClippingWarning,
            stacklevel=2,
        )
    floor = max(-lam_min, lam.size * float(np.finfo(np.float64).eps) * scale, 0.0)
    kept = np.where(lam > floor, lam, 0.0)
    if rank is not None and rank < kept.size:
        kept[np.argsort(kept)[: kept.size - rank]] = 0.0
    if not kept.any():
        raise InputError(f"no eigenvalue stands above the round-off floor {floor:.3g}: the matrix is not PSD")
    removed = float(np.abs(lam - kept).sum())
    p = np.sort(kept)[::-1]
    p = p / p.sum()
    return CleanSpectrum(probabilities=p, trace=trace, clipped_fraction=removed / trace)


def renyi_vendi(probabilities: NDArray[np.float64], alpha: float | str) -> float:
    """VENDI_α (an effective number of modes, ≥ 1) of a probability vector (k,) summing to 1."""
    a = parse_alpha(alpha)
    p = probabilities[probabilities > 0]
    if a == 1.0:
        return float(math.exp(-np.sum(p * np.log(p))))
    if math.isinf(a):
        return float(1.0 / p.max())
    if abs(a - 1.0) < NEAR_ONE:
        # log Σ p^α / (1 − α) cancels catastrophically here; H_α = H − (α − 1)/2 · Var_p(log p) + O((α − 1)²)
        logp = np.log(p)
        shannon = float(-np.sum(p * logp))
        variance = float(np.sum(p * logp * logp)) - shannon * shannon
        return float(math.exp(shannon - 0.5 * (a - 1.0) * variance))
    # log Σ p^α computed as logsumexp(α log p): stable for large α and tiny p.
    return float(math.exp(float(logsumexp(a * np.log(p))) / (1.0 - a)))


def vendi_spectrum_scores(eigenvalues: ArrayLike, alphas: float | str | Iterable[float | str]) -> dict[float, float]:
    """VENDI_α for each α of ``alphas`` from a raw PSD spectrum (k,) (clipped and normalised first)."""
    spec = clean_spectrum(eigenvalues)
    return {a: renyi_vendi(spec.probabilities, a) for a in check_alphas(alphas)}


class InvariantError(InputError):
    """A computed score broke a bound it must satisfy: refused rather than returned as a wrong number."""


def check_vendi_invariants(
    vendi: Mapping[float, float], rke: float | None, *, bound: int, slack: float = 0.0, what: str = "VENDI"
) -> None:
    """Assert 1 ≤ VENDI_α ≤ ``bound`` (n or the feature dimension), VENDI non-increasing in α, RKE = VENDI_2 between.

    ``slack`` is the relative tolerance (round-off, plus clipped spectral mass where RKE and the spectrum are
    computed by different routes).
    """
    tol = 1e-9 + slack
    for alpha, value in vendi.items():
        name = f"{what}_{'inf' if math.isinf(alpha) else f'{alpha:g}'}"
        if not math.isfinite(value) or value < 1 - tol or value > bound * (1 + tol):
            raise InvariantError(
                f"{name} = {value:.6g} is outside [1, {bound}] (n or the feature dimension): the spectrum is dominated "
                f"by round-off{' (an order this small counts it)' if alpha < 1 else ''}; refusing a wrong number"
            )
    orders = sorted(vendi)
    for a, b in itertools.pairwise(orders):
        if vendi[b] > vendi[a] * (1 + tol):
            raise InvariantError(
                f"{what} must not grow with the order α, but {what}_{b:g} = {vendi[b]:.6g} > {what}_{a:g} = "
                f"{vendi[a]:.6g}; refusing a wrong number"
            )
    if rke is not None:
        lo = max([v for a, v in vendi.items() if a > 2], default=1.0)
        hi = min([v for a, v in vendi.items() if a < 2], default=float(bound))
        if not (lo * (1 - tol) - 1e-9 <= rke <= hi * (1 + tol) + 1e-9):
            raise InvariantError(
                f"RKE = {rke:.6g} must lie between VENDI of higher and lower orders ({lo:.6g} … {hi:.6g}); "
                "refusing a wrong number"
            )
