"""Kernels and explicit feature maps.

* Gaussian kernel k(x, y) = exp(−‖x − y‖² / (2σ²)), built in blocks so no step holds more than a
  block × block tile beyond the output (and OpenBLAS never sees one huge ``X @ X.T``).
* Cosine kernel k(x, y) = xᵀy / (‖x‖‖y‖) (the linear kernel on L2-normalised rows).
* Random Fourier features exactly as FKEA eq. (1): ω_i ~ N(0, I/σ²) in R^d for i = 1..r and
  φ(x) = [cos ω_1ᵀx, sin ω_1ᵀx, …, cos ω_rᵀx, sin ω_rᵀx] / √r ∈ R^{2r}, so φ(x)ᵀφ(y) → k(x, y)
  and φ(x)ᵀφ(x) = 1 exactly.
* Orthogonal random features (Yu et al. 2016, "Orthogonal Random Features"), ``orthogonal=True``: the frequency
  rows are W = (1/σ) S Q, Q from the sign-fixed QR of seeded d × d Gaussian blocks (stacked until r rows) and S a
  diagonal of chi-distributed norms (d degrees of freedom), so each ω_i keeps the N(0, I/σ²) marginal while the
  rows within a block are exactly orthogonal; the kernel estimate stays unbiased with a lower variance.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.spatial.distance import pdist

from t2ibench.errors import InputError
from t2ibench.metrics.checks import (
    as_matrix,
    check_memory,
    check_nonzero_rows,
    check_positive_int,
    check_seed,
    check_sigma,
)

DEFAULT_BLOCK = 2048
# |ω·x| (radians) beyond which the phase keeps < ~1e-3 rad of precision: float32 (4 bytes), float64 (8 bytes)
MAX_PHASE = {4: 1e4, 8: 1e12}


def _sq_dists(A: NDArray[np.float64], B: NDArray[np.float64]) -> NDArray[np.float64]:
    """Squared Euclidean distances (a, b) between rows of A (a, d) and B (b, d), clamped at 0."""
    sq: NDArray[np.float64] = np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :]
    sq -= 2.0 * (A @ B.T)
    np.maximum(sq, 0.0, out=sq)
    return sq


def gaussian_blocks(
    X: NDArray[np.float64], *, sigma: float, block_size: int = DEFAULT_BLOCK
) -> Iterator[tuple[slice, slice, NDArray[np.float64]]]:
    """Yield the upper-triangular tiles (rows, cols, K[rows, cols]) of the (n, n) Gaussian kernel of X."""
    n = X.shape[0]
    scale = -1.0 / (2.0 * sigma * sigma)
    for i0 in range(0, n, block_size):
        rows = slice(i0, min(i0 + block_size, n))
        for j0 in range(i0, n, block_size):
            cols = slice(j0, min(j0 + block_size, n))
            tile = _sq_dists(X[rows], X[cols])
            tile *= scale
            np.exp(tile, out=tile)
            yield rows, cols, tile


def gaussian_kernel(
    X: ArrayLike, Y: ArrayLike | None = None, *, sigma: float, block_size: int = DEFAULT_BLOCK
) -> NDArray[np.float64]:
    """Gaussian kernel matrix (n, m) in float64 between rows of X (n, d) and Y (m, d); σ in embedding units."""
    s = check_sigma(sigma)
    Xm = as_matrix(X, name="X")
    shift = Xm.mean(axis=0)  # the kernel is shift-invariant; centring keeps the distances' digits
    Xm = Xm - shift
    if Y is None:
        n = Xm.shape[0]
        K = np.empty((n, n), dtype=np.float64)
        for rows, cols, tile in gaussian_blocks(Xm, sigma=s, block_size=block_size):
            K[rows, cols] = tile
            if rows != cols:
                K[cols, rows] = tile.T
        np.fill_diagonal(K, 1.0)
        return K
    Ym = as_matrix(Y, name="Y", dim=Xm.shape[1]) - shift
    K = np.empty((Xm.shape[0], Ym.shape[0]), dtype=np.float64)
    scale = -1.0 / (2.0 * s * s)
    for i0 in range(0, Xm.shape[0], block_size):
        for j0 in range(0, Ym.shape[0], block_size):
            tile = _sq_dists(Xm[i0 : i0 + block_size], Ym[j0 : j0 + block_size])
            K[i0 : i0 + block_size, j0 : j0 + block_size] = np.exp(tile * scale)
    return K


def l2_normalize(X: ArrayLike, *, name: str = "X", row_offset: int = 0) -> NDArray[np.float64]:
    """Rows of X (n, d) scaled to unit L2 norm (float64); all-zero rows are an error naming them."""
    Xm = as_matrix(X, name=name, row_offset=row_offset)
    check_nonzero_rows(Xm, name=name, row_offset=row_offset)
    out: NDArray[np.float64] = Xm / np.linalg.norm(Xm, axis=1, keepdims=True)
    return out


def cosine_kernel(X: ArrayLike, Y: ArrayLike | None = None) -> NDArray[np.float64]:
    """Cosine kernel matrix (n, m) in float64: inner products of L2-normalised rows of X and Y."""
    Xn = l2_normalize(X, name="X")
    Yn = Xn if Y is None else l2_normalize(as_matrix(Y, name="Y", dim=Xn.shape[1]), name="Y")
    K: NDArray[np.float64] = Xn @ Yn.T
    return K


def median_heuristic_sigma(
    X: ArrayLike, *, max_samples: int = 2000, seed: int = 0, name: str = "X", option: str = "sigma"
) -> float:
    """Median pairwise Euclidean distance (embedding units) over a seeded subsample of ≤ max_samples rows of X.

    Used as the default Gaussian bandwidth σ: at the median distance the kernel equals exp(−1/2) ≈ 0.61. An error
    (fewer than two rows, a zero median) names ``name`` (which embeddings: the side and the file) and ``option``
    (the option or config key that gives σ instead).
    """
    Xm = as_matrix(X, name=name, min_rows=2, need=f"the median-heuristic σ (or give {option})")
    check_positive_int(max_samples, name="max_samples", minimum=2)
    rng = np.random.default_rng(check_seed(seed))
    if Xm.shape[0] > max_samples:
        Xm = Xm[np.sort(rng.choice(Xm.shape[0], size=max_samples, replace=False))]
    # pdist takes differences directly: no cancellation for data far from the origin, and unlike a GEMM its result
    # does not depend on the BLAS thread count, so σ is bit-identical on every task runner
    med = float(np.median(pdist(Xm)))
    if med <= 0:
        raise InputError(
            f"{name}: median pairwise distance is 0 (more than half the pairs are identical), so the median-heuristic "
            f"σ is undefined: set {option} explicitly"
        )
    return med


def orthogonal_frequencies(dim: int, rows: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """Unit-bandwidth ORF rows W = S Q (rows, dim): Haar-orthogonal d × d blocks scaled by chi_d norms, from rng.

    Per block, in this order: a (d, d) standard Gaussian G (QR → Q with columns sign-fixed by diag R, so Q is
    uniformly (Haar) distributed), then d chi_d norms as √χ²_d. Blocks are stacked and cut to ``rows`` rows; every
    row is marginally N(0, I_d) and the rows of one block are mutually orthogonal.
    """
    check_positive_int(dim, name="dim")
    check_positive_int(rows, name="rows")
    blocks = []
    for _ in range(-(-rows // dim)):
        gauss = rng.standard_normal((dim, dim))
        q, r = np.linalg.qr(gauss)
        signs = np.sign(np.diag(r))
        signs[signs == 0] = 1.0
        q *= signs[None, :]  # G = QR with R's diagonal made positive: the unique, Haar-distributed Q
        norms = np.sqrt(rng.chisquare(dim, size=dim))
        blocks.append(norms[:, None] * q)  # rows of Q are orthonormal too (Q is square); S rescales them
    out: NDArray[np.float64] = np.concatenate(blocks, axis=0)[:rows]
    return out


@runtime_checkable
class FeatureMap(Protocol):
    """An explicit feature map φ: R^d → R^D whose inner products give (or approximate) a kernel."""

    @property
    def dim(self) -> int:
        """Input dimension d."""

    @property
    def feature_dim(self) -> int:
        """Output dimension D."""

    def transform(self, X: NDArray[np.floating], dtype: type[np.floating] = np.float32) -> NDArray[np.floating]:
        """Features (n, D) of already-validated rows X (n, d)."""

    def spec(self) -> dict[str, Any]:
        """JSON-serialisable description that identifies the map (used to refuse merging unlike states)."""


@dataclass(frozen=True)
class RandomFourierFeatures:
    """Seeded random Fourier features for the Gaussian kernel of bandwidth σ (FKEA eq. (1)); D = 2·rff_dim."""

    dim: int
    sigma: float
    rff_dim: int
    seed: int
    center: tuple[float, ...] | None = None  # subtracted before projecting: exact (shift-invariant kernel)
    orthogonal: bool = False  # orthogonal random features (Yu et al. 2016) instead of i.i.d. Gaussian frequencies

    def __post_init__(self) -> None:
        check_positive_int(self.dim, name="dim")
        object.__setattr__(self, "sigma", check_sigma(self.sigma))
        check_positive_int(self.rff_dim, name="rff_dim")
        check_seed(self.seed)
        if not isinstance(self.orthogonal, (bool, np.bool_)):
            raise InputError(f"orthogonal must be true or false; got {self.orthogonal!r}")
        object.__setattr__(self, "orthogonal", bool(self.orthogonal))
        check_memory(12 * self.dim * self.rff_dim, what=f"{self.rff_dim} random frequencies in dimension {self.dim}")
        if self.orthogonal:  # one d × d Gaussian block, its QR factors and the stacked rows are alive at once
            check_memory(
                8 * self.dim * (3 * self.dim + self.rff_dim),
                what=f"orthogonal random features: {self.dim} × {self.dim} blocks for {self.rff_dim} frequencies",
            )
        if self.center is not None:
            c = np.asarray(self.center, dtype=np.float64)
            if c.shape != (self.dim,) or not np.isfinite(c).all():
                raise InputError(f"center must be {self.dim} finite numbers (one per dimension); got shape {c.shape}")
            object.__setattr__(self, "center", tuple(float(v) for v in c))

    @property
    def feature_dim(self) -> int:
        """Output dimension 2r."""
        return 2 * self.rff_dim

    @cached_property
    def omega(self) -> NDArray[np.float64]:
        """Frequencies (d, r), column i = ω_i ~ N(0, I/σ²) (marginally), drawn in float64 from default_rng(seed)."""
        rng = np.random.default_rng(self.seed)
        if not self.orthogonal:
            return rng.standard_normal((self.dim, self.rff_dim)) / self.sigma
        return orthogonal_frequencies(self.dim, self.rff_dim, rng).T / self.sigma

    @cached_property
    def _omega32(self) -> NDArray[np.float32]:
        return self.omega.astype(np.float32)

    def transform(self, X: NDArray[np.floating], dtype: type[np.floating] = np.float32) -> NDArray[np.floating]:
        """Features φ(X) (n, 2r) in ``dtype``, interleaved [cos ω_1ᵀx, sin ω_1ᵀx, …] / √r."""
        omega = self._omega32 if dtype == np.float32 else self.omega.astype(dtype, copy=False)
        if self.center is not None:  # subtract in the input's precision (float64 keeps an offset's digits)
            shifted = np.asarray(X) - np.asarray(self.center, dtype=np.result_type(np.asarray(X).dtype, np.float32))
            with np.errstate(over="ignore"):
                rows = np.asarray(shifted, dtype=dtype)
            if not np.isfinite(rows).all():
                bad = np.flatnonzero(~np.isfinite(rows).all(axis=1))
                raise InputError(
                    f"X has values beyond {np.dtype(dtype).name} range after centring in {len(bad)} row(s) (first: "
                    f"{int(bad[0])} of this batch)"
                )
        else:
            rows = np.asarray(X, dtype=dtype)
        proj = rows @ omega
        peak = float(np.abs(proj).max()) if proj.size else 0.0
        limit = MAX_PHASE[np.dtype(dtype).itemsize]
        if not peak <= limit:
            raise InputError(
                f"random-Fourier phases ω·x reach {peak:.3g} rad, beyond {limit:.0e} where {np.dtype(dtype).name} "
                "keeps no useful precision (the features would be noise): the embeddings lie far from the origin "
                "relative to σ; centre them (the Gaussian kernel is shift-invariant: pass center=, e.g. their "
                "mean) or check σ"
            )
        phi = np.empty((proj.shape[0], self.feature_dim), dtype=dtype)
        np.cos(proj, out=phi[:, 0::2])
        np.sin(proj, out=phi[:, 1::2])
        phi *= dtype(1.0 / math.sqrt(self.rff_dim))
        return phi

    def spec(self) -> dict[str, Any]:
        """Identity of the map: kind, d, σ, r, seed, centre and whether the frequencies are orthogonal."""
        return {
            "kind": "rff",
            "dim": self.dim,
            "sigma": self.sigma,
            "rff_dim": self.rff_dim,
            "seed": self.seed,
            "center": list(self.center) if self.center is not None else None,
            "orthogonal": self.orthogonal,
        }


@dataclass(frozen=True)
class NormalizedLinearFeatures:
    """The cosine kernel's exact feature map φ(x) = x / ‖x‖ (D = d)."""

    dim: int

    def __post_init__(self) -> None:
        check_positive_int(self.dim, name="dim")

    @property
    def feature_dim(self) -> int:
        """Output dimension d."""
        return self.dim

    def transform(self, X: NDArray[np.floating], dtype: type[np.floating] = np.float64) -> NDArray[np.floating]:
        """Rows of X (n, d) scaled to unit norm, in ``dtype`` (all-zero rows must be rejected beforehand)."""
        Xd = np.asarray(X, dtype=dtype)
        out: NDArray[np.floating] = Xd / np.linalg.norm(Xd, axis=1, keepdims=True)
        return out

    def spec(self) -> dict[str, Any]:
        """Identity of the map: kind and d."""
        return {"kind": "cosine", "dim": self.dim}
