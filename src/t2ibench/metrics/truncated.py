"""Truncated VENDI_α (Ospanov & Farnia, UAI 2025): the entropy of the top-t kernel spectrum, leftover spread evenly.

For a unit-diagonal kernel the eigenvalues λ_1 ≥ λ_2 ≥ … of K/n are non-negative and sum to 1. The t-truncated
spectrum keeps the top t and spreads the mass they leave out evenly over those same t:

    λ̃_i = λ_i + (1 − Σ_{j≤t} λ_j) / t,   i = 1 … t,

a probability vector of length t, and truncated VENDI_α = exp(H_α(λ̃)) with H_α the Rényi entropy of order α
(α = 1 Shannon, α = ∞ −log max λ̃), evaluated by ``renyi_vendi``. It lies in [1, t]. The paper shows the sample
truncated score converges to its population value with n = O(t) samples, unlike plain VENDI for kernels with an
infinite-dimensional feature map (the Gaussian), and that FKEA and Nyström estimates converge to it too.

**Checked against the reference code** (github.com/aziksh-ospanov/truncated-vendi, ``_calculate_stats``): it sorts
the eigenvalues of K/n, keeps the top t, adds (1 − Σ top)/t to *each of the t kept values* and takes the Rényi
entropy of those t numbers, which is the rule above. Where this module deliberately differs, and why:

* **Round-off.** The reference clamps every eigenvalue at 1e-10 (so exact zeros count as tiny modes). Here round-off
  eigenvalues are zeroed with the rule of ``clean_spectrum`` (everything at or below max(|λ_min| if λ_min < 0,
  k·ε₆₄·λ_max)), and negative mass beyond round-off is an error rather than a silent clamp.
* **The leftover** is computed as (Σ_{j>t} λ_j) + (total − Σ_all λ) instead of total − Σ_{j≤t} λ_j: the same
  number in exact arithmetic, without cancellation when the leftover is small.
* **Incomplete spectra and t beyond the rank.** The reference truncates only when t < len(spectrum); otherwise it
  returns the entropy of the raw eigenvalues, not renormalised. For a Nyström spectrum (whose trace is below 1:
  the kernel mass the landmarks do not capture) with m = t landmarks, as the reference computes it, that is the
  entropy of a vector summing to less than 1. Here the spectrum is always read as the top of a unit-mass spectrum
  whose unlisted eigenvalues are 0: it is padded with zeros to length t when shorter, and the deficit
  total − Σλ is part of the leftover. So a spectrum of fewer than t non-zero eigenvalues keeps its zeros among
  the top t, and they receive leftover/t each: for a complete spectrum (deficit within ``tolerance``, e.g. the
  exact K/n, or FKEA, whose features have unit norm) the leftover is 0 and truncated VENDI equals plain VENDI for
  every t ≥ the number of non-zero eigenvalues (in particular t ≥ n); for an incomplete estimate the missing
  mass is spread over all t entries, exactly as the definition treats eigenvalues it does not keep.
* A deficit no larger than ``tolerance`` · total (default 1e-6) is round-off (float32 FKEA traces are 1 ± 1e-7)
  and is not spread; λ̃ is always rescaled to sum exactly 1, a change within that tolerance.

Which spectrum to pass: ``exact_entropy(X, sigma=…).eigenvalues`` (exact K/n), ``FKEA(...).compute().eigenvalues``
(the 2r × 2r random-Fourier covariance, trace 1), ``NystromEntropy(...).spectrum()`` (raw, trace ≤ 1: do not
renormalise it, the deficit is information). Spectra of K itself (summing to n) must be divided by n, or
passed with ``total=n``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from t2ibench.errors import InputError
from t2ibench.metrics.checks import check_alphas, check_embedding_dtype, check_memory, check_positive_int
from t2ibench.metrics.spectrum import CLIP_TOLERANCE, check_vendi_invariants, renyi_vendi

MASS_TOLERANCE = CLIP_TOLERANCE
"""Relative mass (of ``total``) within which a spectrum counts as complete, and its negative part as round-off."""

_EPS64 = float(np.finfo(np.float64).eps)


def _check_scalar(value: float, *, name: str, low: float, high: float, open_high: bool = False) -> float:
    """``value`` as a float in (low, high] (or (low, high)), else an InputError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number; got {value!r}")
    v = float(value)
    inside = low < v < high if open_high else low < v <= high
    if not math.isfinite(v) or not inside:
        bracket = ")" if open_high else "]"
        raise InputError(f"{name} must be a finite number in ({low:g}, {high:g}{bracket}; got {value!r}")
    return v


def _checked_spectrum(
    eigenvalues: ArrayLike, *, total: float, eps: float, tolerance: float
) -> tuple[NDArray[np.float64], float]:
    """Validated spectrum: values (k,) sorted descending with round-off zeroed, and the deficit total − Σλ (≥ 0)."""
    try:
        raw = np.asarray(eigenvalues)
    except ValueError:  # ragged nested lists
        raise InputError("eigenvalues must be a 1-D array of shape (k,); its rows have different lengths") from None
    check_embedding_dtype(raw.dtype, where="eigenvalues")
    if raw.ndim != 1:
        raise InputError(f"eigenvalues must be a 1-D array of shape (k,); got shape {raw.shape} (pass the spectrum)")
    if raw.size == 0:
        raise InputError("eigenvalues is empty: need at least 1 eigenvalue")
    lam = raw.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(lam))
    if bad.size:
        raise InputError(f"eigenvalues contain NaN or inf ({bad.size} of {lam.size}, first at index {int(bad[0])})")
    lam_max, lam_min = float(lam.max()), float(lam.min())
    if lam_max <= 0:
        raise InputError(f"eigenvalues has no positive value (largest {lam_max:g}): not the spectrum of a kernel")
    negative = float(-lam[lam < 0].sum())
    roundoff = lam.size * eps * lam_max
    if negative > tolerance * total and lam_min < -roundoff:
        raise InputError(
            f"eigenvalues: negative values carry {negative / total:.3g} of the total mass (> {tolerance:g}), the "
            f"largest {-lam_min:.3g} beyond round-off ({roundoff:.3g}): not the spectrum of a PSD kernel matrix"
        )
    floor = max(-lam_min, lam.size * _EPS64 * lam_max, 0.0)
    kept = np.sort(np.where(lam > floor, lam, 0.0))[::-1]
    mass = float(kept.sum())
    if mass > total * (1.0 + tolerance):
        raise InputError(
            f"eigenvalues sum to {mass:.6g}, more than total = {total:g}: pass the spectrum of K/n (the kernel "
            "matrix divided by n, unit-diagonal kernel) or of the feature covariance, or set total="
        )
    deficit = total - mass
    return kept, (deficit if deficit > tolerance * total else 0.0)


def truncate_spectrum(
    eigenvalues: ArrayLike,
    t: int,
    *,
    total: float = 1.0,
    eps: float = _EPS64,
    tolerance: float = MASS_TOLERANCE,
    memory_checked: bool = False,
) -> NDArray[np.float64]:
    """The t-truncated spectrum λ̃ (t,), descending, summing to 1, of a kernel spectrum (k,) of total mass ``total``.

    λ̃_i = (λ_i + leftover / t) / total with leftover = total − Σ_{j≤t} λ_j, the top t of the spectrum padded
    with zeros when it has fewer than t values (see the module docstring for round-off and incomplete spectra).
    ``eps`` is the machine epsilon of the precision the matrix was computed in (float32 for raw FKEA eigenvalues),
    used to tell round-off negatives from an indefinite matrix. ``memory_checked``: the caller has checked this t's
    16·t bytes against the memory limit once for many calls (a bootstrap's thousands; each check reads /proc and the
    cgroup's files, ~0.5 ms).
    """
    t = check_positive_int(t, name="t")
    total = _check_scalar(total, name="total", low=0.0, high=math.inf, open_high=True)
    eps = _check_scalar(eps, name="eps", low=0.0, high=1.0, open_high=True)
    tolerance = _check_scalar(tolerance, name="tolerance", low=0.0, high=1.0, open_high=True)
    kept, deficit = _checked_spectrum(eigenvalues, total=total, eps=eps, tolerance=tolerance)
    if not memory_checked:
        check_truncation_memory(t)
    top = np.zeros(t, dtype=np.float64)
    head = kept[:t]
    top[: head.size] = head
    leftover = float(kept[t:].sum()) + deficit
    top += leftover / t
    out: NDArray[np.float64] = top / top.sum()
    return out


def check_truncation_memory(t: int) -> None:
    """Refuse (InputError naming t) a truncation whose spectrum, 16·t bytes, exceeds the memory limit."""
    check_memory(2 * 8 * t, what=f"a truncated spectrum of t={t} values")


def truncated_vendi(
    eigenvalues: ArrayLike,
    alphas: float | str | Iterable[float | str],
    t: int,
    *,
    total: float = 1.0,
    eps: float = _EPS64,
    tolerance: float = MASS_TOLERANCE,
    memory_checked: bool = False,
) -> dict[float, float]:
    """Truncated VENDI_α (effective number of modes, in [1, t]) for each α of a kernel spectrum (k,) of mass ``total``.

    The spectrum is that of K/n (exact), of the FKEA covariance or the Nyström covariance; see ``truncate_spectrum``
    (``memory_checked`` as there).
    """
    orders = check_alphas(alphas)
    p = truncate_spectrum(eigenvalues, t, total=total, eps=eps, tolerance=tolerance, memory_checked=memory_checked)
    scores = {a: renyi_vendi(p, a) for a in orders}
    check_vendi_invariants(scores, None, bound=int(np.count_nonzero(p)), slack=1e-9, what="truncated VENDI")
    return scores
