"""Modes behind a diversity score: eigenvectors of a feature covariance turned into sample rankings.

An eigenvector v_i of the feature covariance C (or of the Scendi Schur complement Λ_I) defines the proxy
eigenfunction u_i(x) = v_iᵀφ(x) (FKEA eq. (5)): it is large on the samples that make up mode i. Its sign is
arbitrary, so it is fixed to make the mode's mass Σ_j u_i(x_j) positive; then the samples with the largest
u_i are the mode's representatives (and, for Scendi, the smallest ones its opposite pole).

Scoring needs φ(x) of every sample once more, so the samples are streamed a second time (any iterable of
batches in the original order); memory is O(k·(top + bottom)) beyond one batch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from t2ibench.errors import InputError, note
from t2ibench.metrics.checks import as_matrix, check_positive_int
from t2ibench.metrics.entropy import StreamingKernelEntropy
from t2ibench.metrics.kernels import FeatureMap
from t2ibench.metrics.scendi import DEFAULT_EPSILON, Scendi


@dataclass(frozen=True)
class Mode:
    """One mode: its eigenvalue, shares of the spectrum and of its entropy, and its extreme samples."""

    index: int
    eigenvalue: float
    share: float
    entropy_share: float
    mass: float
    top: tuple[int, ...]
    top_scores: tuple[float, ...]
    bottom: tuple[int, ...] = ()
    bottom_scores: tuple[float, ...] = ()


@dataclass(frozen=True)
class ModeSet:
    """The top-k modes of one covariance (``source``: 'fkea', 'cosine' or 'scendi') over n samples."""

    source: str
    n: int
    modes: tuple[Mode, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "source": self.source,
            "n": self.n,
            "modes": [
                {
                    "index": m.index,
                    "eigenvalue": m.eigenvalue,
                    "share": m.share,
                    "entropy_share": m.entropy_share,
                    "mass": m.mass,
                    "top": list(m.top),
                    "top_scores": list(m.top_scores),
                    "bottom": list(m.bottom),
                    "bottom_scores": list(m.bottom_scores),
                }
                for m in self.modes
            ],
        }


def _top_eigenpairs(matrix: NDArray[np.float64], k: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Top-k eigenpairs of a symmetric (D, D) matrix: values (k,) descending, vectors (D, k)."""
    D = matrix.shape[0]
    k = min(k, D)
    values, vectors = scipy.linalg.eigh(matrix, subset_by_index=(D - k, D - 1))
    return values[::-1].copy(), vectors[:, ::-1].copy()


def _batches(samples: NDArray[Any] | Iterable[ArrayLike], batch_size: int) -> Iterator[NDArray[Any]]:
    """Slices of an (n, d) array, or the 2-D batches of an iterable, in order."""
    if isinstance(samples, np.ndarray):
        for start in range(0, len(samples), batch_size):
            yield samples[start : start + batch_size]
        return
    for batch in samples:
        yield np.asarray(batch)


class _Extremes:
    """Running top/bottom selection of k score columns over streamed batches."""

    def __init__(self, k: int, keep: int) -> None:
        self.keep = keep
        self.top_idx = np.empty((0, k), dtype=np.int64)
        self.top_val = np.empty((0, k))
        self.bot_idx = np.empty((0, k), dtype=np.int64)
        self.bot_val = np.empty((0, k))
        self.mass = np.zeros(k)
        self.n = 0

    def add(self, scores: NDArray[np.float64]) -> None:
        idx = np.arange(self.n, self.n + len(scores))[:, None].repeat(scores.shape[1], axis=1)
        self.mass += scores.sum(axis=0)
        self.top_idx, self.top_val = self._merge(self.top_idx, self.top_val, idx, scores, largest=True)
        self.bot_idx, self.bot_val = self._merge(self.bot_idx, self.bot_val, idx, scores, largest=False)
        self.n += len(scores)

    def _merge(self, idx_a, val_a, idx_b, val_b, *, largest: bool):  # type: ignore[no-untyped-def]
        idx = np.concatenate([idx_a, idx_b])
        val = np.concatenate([val_a, val_b])
        order = np.argsort(-val if largest else val, axis=0, kind="stable")[: self.keep]
        return np.take_along_axis(idx, order, axis=0), np.take_along_axis(val, order, axis=0)


def _modes_from(
    source: str,
    values: NDArray[np.float64],
    vectors: NDArray[np.float64],
    spectrum_total: float,
    fmap: FeatureMap,
    samples: NDArray[Any] | Iterable[ArrayLike],
    *,
    top: int,
    bottom: int,
    batch_size: int,
    dtype: type[np.floating],
) -> ModeSet:
    k = len(values)
    ext = _Extremes(k, max(top, bottom))
    for batch in _batches(samples, batch_size):
        read = np.float64 if getattr(fmap, "center", None) is not None else dtype  # keep an offset's digits
        X = as_matrix(batch, name="samples", dtype=read, dim=fmap.dim, row_offset=ext.n)
        ext.add(np.asarray(fmap.transform(X, dtype), dtype=np.float64) @ vectors)
    if ext.n == 0:
        raise InputError("no samples to score")
    p_all = np.clip(values, 0.0, None) / spectrum_total
    modes = []
    for i in range(k):
        sign = 1.0 if ext.mass[i] >= 0 else -1.0
        # with the sign flipped, the old bottom becomes the new top
        hi_idx, hi_val = (ext.top_idx[:, i], ext.top_val[:, i]) if sign > 0 else (ext.bot_idx[:, i], ext.bot_val[:, i])
        lo_idx, lo_val = (ext.bot_idx[:, i], ext.bot_val[:, i]) if sign > 0 else (ext.top_idx[:, i], ext.top_val[:, i])
        p = float(p_all[i])
        modes.append(
            Mode(
                index=i,
                eigenvalue=float(values[i]),
                share=p,
                entropy_share=0.0,  # filled below once the whole spectrum's entropy is known
                mass=float(sign * ext.mass[i] / ext.n),
                top=tuple(int(j) for j in hi_idx[:top]),
                top_scores=tuple(float(sign * v) for v in hi_val[:top]),
                bottom=tuple(int(j) for j in lo_idx[:bottom]),
                bottom_scores=tuple(float(sign * v) for v in lo_val[:bottom]),
            )
        )
    return ModeSet(source=source, n=ext.n, modes=tuple(modes))


def _with_entropy_shares(modeset: ModeSet, spectrum: NDArray[np.float64]) -> ModeSet:
    """Fill each mode's share of the spectrum's Shannon entropy, −p_i log p_i / H."""
    p = spectrum / spectrum.sum()
    nz = p[p > 0]
    H = float(-np.sum(nz * np.log(nz)))
    out = []
    for m in modeset.modes:
        contribution = -m.share * math.log(m.share) if m.share > 0 else 0.0
        out.append(Mode(**{**m.__dict__, "entropy_share": contribution / H if H > 0 else 1.0}))
    return ModeSet(source=modeset.source, n=modeset.n, modes=tuple(out))


def _cap_modes(k: int, n: int) -> int:
    """At most n modes: a covariance of n feature rows has rank ≤ n, further eigenvectors are round-off."""
    if k > n:
        note(f"{k} modes asked of {n} samples: showing {n} (the rank is at most n; more would be round-off)")
        return n
    return k


def kernel_modes(
    estimator: StreamingKernelEntropy,
    samples: NDArray[Any] | Iterable[ArrayLike],
    *,
    k: int = 8,
    top: int = 16,
    batch_size: int = 8192,
) -> ModeSet:
    """Top-k modes of an FKEA (or cosine) estimator; ``samples`` are the rows it was fitted on, same order."""
    check_positive_int(k, name="k")
    check_positive_int(top, name="top")
    C = estimator.covariance()
    k = _cap_modes(k, estimator.n)
    values, vectors = _top_eigenpairs(C, k)
    spectrum = np.clip(scipy.linalg.eigvalsh(C), 0.0, None)
    result = _modes_from(
        estimator.method if estimator.kernel == "gaussian" else estimator.kernel,
        values,
        vectors,
        float(spectrum.sum()),
        estimator.feature_map,
        samples,
        top=top,
        bottom=0,
        batch_size=batch_size,
        dtype=estimator.compute_dtype,
    )
    if result.n != estimator.n:
        raise InputError(f"scored {result.n} samples but the estimator was fitted on {estimator.n}")
    return _with_entropy_shares(result, spectrum)


def scendi_modes(
    estimator: Scendi,
    images: NDArray[Any] | Iterable[ArrayLike],
    *,
    k: int = 8,
    top: int = 16,
    bottom: int = 16,
    epsilon: float = DEFAULT_EPSILON,
    batch_size: int = 8192,
    inverse: str = "ridge",
) -> ModeSet:
    """Top-k model-driven modes (eigenvectors of Λ_I) with their top and bottom images (same order as fitted);
    ``inverse`` is Scendi's regularisation of C_TT⁻¹ ('ridge' with ``epsilon``, or the reference's 'pinv')."""
    check_positive_int(k, name="k")
    check_positive_int(top, name="top")
    check_positive_int(bottom, name="bottom", minimum=0)
    Lam, _, _ = estimator.decompose(epsilon, inverse=inverse)
    k = _cap_modes(k, estimator.n)
    values, vectors = _top_eigenpairs(Lam, k)
    spectrum = np.clip(scipy.linalg.eigvalsh(Lam), 0.0, None)
    result = _modes_from(
        "scendi",
        values,
        vectors,
        float(spectrum.sum()),
        estimator.feature_maps[0],
        images,
        top=top,
        bottom=bottom,
        batch_size=batch_size,
        dtype=estimator.compute_dtype,
    )
    if result.n != estimator.n:
        raise InputError(f"scored {result.n} images but the estimator was fitted on {estimator.n} pairs")
    return _with_entropy_shares(result, spectrum)
