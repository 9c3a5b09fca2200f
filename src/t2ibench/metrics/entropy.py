"""Kernel-entropy diversity scores: exact VENDI/RKE and the streaming FKEA estimator.

Layers, from the bottom:

* ``StreamingKernelEntropy`` — on the project's one estimator base (``metrics/additive.py``, which owns n, the
  spec, merge and save/load): ``update(X)`` and ``compute(alphas)`` of one additive Σφφᵀ of a feature map.
* ``FKEA`` (Gaussian kernel through random Fourier features, float32 compute, float64 accumulation) and
  ``CosineEntropy`` (the cosine kernel's exact feature map x/‖x‖, float64): both give VENDI_α for any α from
  the D × D covariance, whose non-zero spectrum is that of K/n (exactly for cosine, approximately for FKEA).
* One-shot functions: ``vendi_score``, ``rke_score``, ``exact_entropy``, ``fkea_scores``.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from t2ibench.errors import InputError
from t2ibench.metrics.additive import AdditiveEstimator
from t2ibench.metrics.checks import (
    as_matrix,
    check_alphas,
    check_kernel,
    check_memory,
    check_nonzero_rows,
    check_positive_int,
    check_seed,
    check_sigma,
)
from t2ibench.metrics.covariance import release_mapped_rows
from t2ibench.metrics.kernels import (
    DEFAULT_BLOCK,
    FeatureMap,
    NormalizedLinearFeatures,
    RandomFourierFeatures,
    gaussian_blocks,
    gaussian_kernel,
)
from t2ibench.metrics.spectrum import check_vendi_invariants, clean_spectrum, renyi_vendi

DEFAULT_ALPHAS: tuple[float, ...] = (1.0, 2.0, math.inf)
DEFAULT_BATCH = 8192
DEFAULT_DELTA = 0.05
DEFAULT_MAX_N = 20_000


def fkea_error_radius(n: int, rff_dim: int, delta: float = DEFAULT_DELTA) -> float:
    """FKEA Theorem-2 radius √(8 log(n/(2δ)) / r): with prob. ≥ 1−δ it bounds ‖λ_FKEA − λ_exact‖₂ (unitless)."""
    check_positive_int(n, name="n")
    check_positive_int(rff_dim, name="rff_dim")
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)) or not 0 < delta < 1:
        raise InputError(f"delta must be in (0, 1); got {delta!r}")
    return math.sqrt(8.0 * max(math.log(n / (2.0 * delta)), 0.0) / rff_dim)


def _alpha_key(alpha: float) -> str:
    """JSON/SQL-friendly name of an entropy order: '1', '2', '0.5', 'inf'."""
    return "inf" if math.isinf(alpha) else f"{alpha:.12g}"


@dataclass(frozen=True)
class EntropyResult:
    """Diversity scores of one sample set: VENDI_α per α, RKE, the normalised spectrum and how they were made.

    ``eigenvalues`` are the spectrum of K/n (exact) or of the RFF covariance (FKEA), clipped at 0, sorted
    descending and normalised to sum 1 (shape (k,)). ``error_radius`` is FKEA's Theorem-2 bound on the ℓ2
    distance between this spectrum and the exact one, holding with probability ≥ 1 − ``delta``.
    """

    method: str
    kernel: str
    n: int
    vendi: Mapping[float, float]
    rke: float
    eigenvalues: NDArray[np.float64] = field(repr=False)
    clipped_fraction: float
    sigma: float | None = None
    rff_dim: int | None = None
    seed: int | None = None
    error_radius: float | None = None
    delta: float | None = None

    def score(self, alpha: float) -> float:
        """VENDI_α for an α that was computed (KeyError names the available ones otherwise)."""
        key = float(alpha)
        if key not in self.vendi:
            raise KeyError(f"VENDI_{_alpha_key(key)} was not computed; available: {sorted(self.vendi)}")
        return self.vendi[key]

    def to_dict(self, *, top_eigenvalues: int = 32) -> dict[str, Any]:
        """JSON-serialisable summary (α keys as strings, at most ``top_eigenvalues`` eigenvalues)."""
        return {
            "method": self.method,
            "kernel": self.kernel,
            "n": self.n,
            "vendi": {_alpha_key(a): v for a, v in self.vendi.items()},
            "rke": self.rke,
            "sigma": self.sigma,
            "rff_dim": self.rff_dim,
            "seed": self.seed,
            "error_radius": self.error_radius,
            "delta": self.delta,
            "clipped_fraction": self.clipped_fraction,
            "eigenvalues_top": [float(x) for x in self.eigenvalues[:top_eigenvalues]],
        }


class StreamingKernelEntropy(AdditiveEstimator):
    """Streaming kernel-entropy estimator of one embedding set: ``update`` batches, ``merge`` shards, ``compute``.

    The state (``AdditiveEstimator``) is one additive statistic Σφφᵀ (D × D, float64) of an explicit feature map
    φ and n. ``update`` is atomic: all rows of a call are validated before any is added. Subclasses give the map
    (``_make_map``) and their parameters; FKEA and cosine share this ``update`` and ``compute``.
    """

    method: ClassVar[str]
    kernel: ClassVar[str]
    compute_dtype: ClassVar[type[np.floating]]

    def __init__(self, *, dim: int | None = None, batch_size: int = DEFAULT_BATCH) -> None:
        super().__init__(batch_size=batch_size)
        self._map: FeatureMap | None = None
        if dim is not None:
            self._initialise(dim=check_positive_int(dim, name="dim"))

    # -- subclass hooks ---------------------------------------------------------------------------------------
    @abstractmethod
    def _make_map(self, dim: int) -> FeatureMap:
        """Build the feature map once the input dimension is known."""

    def _prepare(self, X: NDArray[np.floating], row_offset: int) -> None:
        """Extra per-batch validation (e.g. zero rows for cosine)."""

    def _accumulate(self, chunk: NDArray[np.floating], dtype: type[np.floating]) -> None:
        """Add one validated batch (b, d) to the state (a backend may accumulate elsewhere and ``_sync`` later)."""
        assert self._map is not None
        self._add(self._map.transform(chunk, dtype))

    def _error_radius(self, n: int, delta: float) -> float | None:
        """Approximation radius of the spectrum (None for exact estimators)."""
        return None

    def _batch_dtype(self, source: np.dtype[Any]) -> type[np.floating]:
        """Precision of a batch's features and its SYRK, given the input's dtype (FKEA: float32 always)."""
        return self.compute_dtype

    def _input_dtype(self, batch: type[np.floating] | None = None) -> type[np.floating]:
        """Precision rows are read in before the feature map (float64 when a centre must be subtracted first)."""
        return np.float64 if getattr(self, "center", None) is not None else (batch or self.compute_dtype)

    # -- state ------------------------------------------------------------------------------------------------
    def _initialise(self, **dims: int) -> None:
        self._map = self._make_map(dims["dim"])
        self._start({"covariance": self._map.feature_dim})

    def _input_dims(self) -> dict[str, int | None]:
        return {"dim": None if self._map is None else self._map.dim}

    def spec(self) -> dict[str, Any]:
        """Identity of the estimator: class, kernel, dim and parameters (shards merge only if these match)."""
        return {"estimator": self.kind(), "kernel": self.kernel, **self._input_dims(), **self._params()}

    @property
    def dim(self) -> int | None:
        """Input dimension d (None until the first update)."""
        return None if self._map is None else self._map.dim

    @property
    def feature_map(self) -> FeatureMap:
        """The feature map φ (available once d is known)."""
        if self._map is None:
            raise InputError("the input dimension is not known yet: call update() first or pass dim=")
        return self._map

    def update(self, X: ArrayLike) -> Self:
        """Add rows X (b, d) to the state; validates all rows first, then one SYRK per ``batch_size`` rows."""
        arr = X if isinstance(X, np.ndarray) else np.asarray(X)
        if arr.ndim != 2:
            raise InputError(f"X must be a 2-D array of shape (n, d); got shape {arr.shape}")
        if arr.shape[0] == 0:
            raise InputError("X is empty: need at least 1 row")
        expected = self.dim
        if expected is not None and arr.shape[1] != expected:
            raise InputError(f"X has dimension {arr.shape[1]} but earlier batches (or dim=) had dimension {expected}")
        starts = range(0, arr.shape[0], self.batch_size)
        chunks = []
        batch_dtype = self._batch_dtype(arr.dtype)
        dtype = self._input_dtype(batch_dtype)
        for start in starts:  # validate everything before touching the state (atomic update)
            chunk = as_matrix(
                arr[start : start + self.batch_size],
                name="X",
                dtype=dtype,
                dim=arr.shape[1],
                row_offset=self.n + start,
            )
            self._prepare(chunk, self.n + start)
            chunks.append(chunk if len(starts) == 1 else None)  # keep the single chunk, re-read big inputs
            release_mapped_rows(arr, start, start + self.batch_size)  # a whole-file memmap streams in O(batch)
        if self._map is None:
            self._initialise(dim=arr.shape[1])
        for start, kept in zip(starts, chunks, strict=True):
            chunk = kept if kept is not None else np.asarray(arr[start : start + self.batch_size], dtype)
            self._accumulate(chunk, batch_dtype)
            release_mapped_rows(arr, start, start + self.batch_size)
        return self

    def features(self, X: ArrayLike) -> NDArray[np.floating]:
        """Features φ(X) (n, D), compute dtype, of rows X (n, d): validated, mapped as ``update`` does, not added."""
        arr = X if isinstance(X, np.ndarray) else np.asarray(X)
        if arr.ndim != 2:
            raise InputError(f"X must be a 2-D array of shape (n, d); got shape {arr.shape}")
        if self._map is None:
            self._initialise(dim=check_positive_int(arr.shape[1], name="dim"))
        assert self._map is not None
        out = np.empty((arr.shape[0], self._map.feature_dim), dtype=self.compute_dtype)
        for start in range(0, max(arr.shape[0], 1), self.batch_size):
            chunk = as_matrix(
                arr[start : start + self.batch_size],
                name="X",
                dtype=self._input_dtype(),
                dim=self._map.dim,
                row_offset=start,
            )
            self._prepare(chunk, start)
            out[start : start + chunk.shape[0]] = self._map.transform(chunk, self.compute_dtype)
        return out

    def covariance(self) -> NDArray[np.float64]:
        """Feature covariance C = Σφφᵀ / n (D, D), float64; its spectrum approximates that of K/n."""
        self._require_data()
        return self._stat().second_moment()

    def rke(self) -> float:
        """RKE = (Tr C)² / ‖C‖_F² = 1 / Σλ² from the Frobenius norm (no eigendecomposition, no D² copy)."""
        self._require_data()
        acc = self._stat()
        return float(acc.trace() ** 2 / acc.frobenius_squared())

    def eigh(self, top_k: int | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Top ``top_k`` (default all) eigenpairs of C: values (k,) descending, vectors (D, k) as columns."""
        C = self.covariance()
        D = C.shape[0]
        k = D if top_k is None else min(check_positive_int(top_k, name="top_k"), D)
        values, vectors = scipy.linalg.eigh(C, subset_by_index=(D - k, D - 1))
        return values[::-1].copy(), vectors[:, ::-1].copy()

    def compute(
        self, alphas: float | str | Iterable[float | str] = DEFAULT_ALPHAS, *, delta: float = DEFAULT_DELTA
    ) -> EntropyResult:
        """VENDI_α for every α, RKE (Frobenius), the normalised spectrum and (FKEA) the Theorem-2 radius."""
        orders = check_alphas(alphas)
        rke = self.rke()  # validates that there is data
        acc = self._stat()
        D = acc.feature_dim
        eps = float(np.finfo(np.float32).eps)  # batches may have been multiplied in float32 (FKEA; float32 cosine)
        spectrum = clean_spectrum(acc.eigenvalues(), eps=eps, rank=self.n)
        params = self._params()
        radius = self._error_radius(self.n, delta)
        vendi = {a: renyi_vendi(spectrum.probabilities, a) for a in orders}
        check_vendi_invariants(vendi, rke, bound=min(self.n, D), slack=1e-6 + 4 * spectrum.clipped_fraction + D * eps)
        return EntropyResult(
            method=self.method,
            kernel=self.kernel,
            n=self.n,
            vendi=vendi,
            rke=rke,
            eigenvalues=spectrum.probabilities,
            clipped_fraction=spectrum.clipped_fraction,
            sigma=params.get("sigma"),
            rff_dim=params.get("rff_dim"),
            seed=params.get("seed"),
            error_radius=radius,
            delta=None if radius is None else delta,
        )


class FKEA(StreamingKernelEntropy):
    """FKEA (Ospanov et al. 2024): Gaussian-kernel VENDI/RKE from the 2r × 2r random-Fourier-feature covariance.

    σ is the kernel bandwidth in embedding units; ``rff_dim`` = r frequencies (2r features); ``seed`` fixes ω;
    ``orthogonal`` draws orthogonal random features (Yu et al. 2016) from the same seed (lower-variance kernel).
    Features are computed in float32 and accumulated in float64; memory is (2r)² doubles, whatever n.
    """

    method = "fkea"
    kernel = "gaussian"
    compute_dtype = np.float32

    def __init__(
        self,
        *,
        sigma: float,
        rff_dim: int,
        seed: int,
        dim: int | None = None,
        batch_size: int = DEFAULT_BATCH,
        center: ArrayLike | None = None,
        orthogonal: bool = False,
    ) -> None:
        self.sigma = check_sigma(sigma)
        self.rff_dim = check_positive_int(rff_dim, name="rff_dim")
        self.seed = check_seed(seed)
        if not isinstance(orthogonal, (bool, np.bool_)):
            raise InputError(f"orthogonal must be true or false; got {orthogonal!r}")
        self.orthogonal = bool(orthogonal)
        self.center = None if center is None else tuple(float(v) for v in np.asarray(center, dtype=np.float64).ravel())
        super().__init__(dim=dim, batch_size=batch_size)

    def _make_map(self, dim: int) -> FeatureMap:
        return RandomFourierFeatures(
            dim=dim,
            sigma=self.sigma,
            rff_dim=self.rff_dim,
            seed=self.seed,
            center=self.center,
            orthogonal=self.orthogonal,
        )

    def _params(self) -> dict[str, Any]:
        center = None if self.center is None else list(self.center)
        return {
            "sigma": self.sigma,
            "rff_dim": self.rff_dim,
            "seed": self.seed,
            "center": center,
            "orthogonal": self.orthogonal,
        }

    def _error_radius(self, n: int, delta: float) -> float | None:
        return fkea_error_radius(n, self.rff_dim, delta)


CENTER_BLOCK = DEFAULT_BATCH  # rows per block of ``mean_of_blocks``


def mean_of_blocks(blocks: Iterable[ArrayLike]) -> NDArray[np.float64]:
    """The mean row (d,), float64, of rows given as consecutive blocks of ``CENTER_BLOCK`` rows (the last may be
    shorter): each block summed in float64, the sums added in order — the same bits for an array in memory
    (``feature_center``) and a file read block by block (``t2ibench diversity FILE``)."""
    total: NDArray[np.float64] | None = None
    n = 0
    for block in blocks:
        part = np.asarray(block, dtype=np.float64)
        total = part.sum(axis=0) if total is None else total + part.sum(axis=0)
        n += part.shape[0]
    if total is None or n == 0:
        raise InputError("the mean of no rows: need at least 1 row")
    mean: NDArray[np.float64] = total / n
    return mean


def feature_center(X: ArrayLike) -> NDArray[np.float64]:
    """The mean feature vector (d,), float64, of X (n, d) by ``mean_of_blocks``: every FKEA shard of a model
    subtracts the same one before its random Fourier features (exact, the Gaussian kernel being shift-invariant; it
    keeps float32 phases precise)."""
    arr = np.asarray(X)
    return mean_of_blocks(arr[start : start + CENTER_BLOCK] for start in range(0, arr.shape[0], CENTER_BLOCK))


class CosineEntropy(StreamingKernelEntropy):
    """Exact cosine-kernel VENDI/RKE at any n from the d × d matrix XᵀX/n of L2-normalised rows.

    Products are taken in the input's precision — float32 embeddings (what the pipeline stores) with float32
    SYRK per batch, anything else in float64 — and always summed in float64; the float32 path's relative error
    in VENDI is measured in tests/unit/test_entropy.py (≤ 1e-6) and is what makes it as fast as vendi-score's
    float32 ``score_dual`` (docs/performance.md).
    """

    method = "exact"
    kernel = "cosine"
    compute_dtype = np.float64

    def _batch_dtype(self, source: np.dtype[Any]) -> type[np.floating]:
        return np.float32 if source in (np.dtype(np.float32), np.dtype(np.float16)) else np.float64

    def _make_map(self, dim: int) -> FeatureMap:
        return NormalizedLinearFeatures(dim=dim)

    def _params(self) -> dict[str, Any]:
        return {}

    def _prepare(self, X: NDArray[np.floating], row_offset: int) -> None:
        check_nonzero_rows(X, name="X", row_offset=row_offset)


# -- choosing between exact and FKEA ------------------------------------------------------------------------------

# Cost model of the two Gaussian-kernel paths, in seconds, fitted to this project's 2-core reference machine
# (docs/performance.md, fkea_throughput): a float64 dense eigenvalue decomposition costs ~7e-11 s per n³
# (4000: 4.5 s, 8000: 31 s), float32 SYRK/GEMM runs at ~1.3e11 flop/s, the exact kernel's float64 distance GEMM
# and exp at ~6e10 flop/s. Only the ratio of the two estimates decides, so the constants need not match another
# machine; both scale with the same BLAS.
EIG_SECONDS_PER_N3 = 7.0e-11
GEMM_FLOPS = 1.3e11
KERNEL_FLOPS = 6.0e10
EXACT_ANYWAY_SECONDS = 1.0  # exact is preferred whenever it is this cheap: no approximation for a second's work


@dataclass(frozen=True)
class MethodChoice:
    """What ``method='auto'`` picked for n rows of dimension d, the cost model's estimates (s) and why."""

    method: str
    reason: str
    exact_seconds: float | None
    fkea_seconds: float | None


def estimated_seconds(n: int, dim: int, rff_dim: int) -> tuple[float, float]:
    """(exact, FKEA) estimated seconds for n rows of dimension d, FKEA with 2·rff_dim features (cost model above)."""
    D = 2 * rff_dim
    exact = EIG_SECONDS_PER_N3 * n**3 + 2.0 * n * n * dim / KERNEL_FLOPS
    fkea = (n * D * D + n * dim * D) / GEMM_FLOPS + EIG_SECONDS_PER_N3 * D**3
    return exact, fkea


def choose_method(
    n: int, dim: int, *, rff_dim: int, kernel: str = "gaussian", max_n: int = DEFAULT_MAX_N
) -> MethodChoice:
    """Exact or FKEA for n rows (d columns): exact when the cost model says it is no slower than FKEA with
    2·rff_dim features, or under ``EXACT_ANYWAY_SECONDS``, and n ≤ max_n; the reason names the numbers."""
    check_positive_int(n, name="n")
    check_positive_int(dim, name="dim")
    check_positive_int(rff_dim, name="rff_dim")
    if check_kernel(kernel) == "cosine":
        return MethodChoice(
            "exact",
            f"cosine kernel: exact at any n from the {dim}×{dim} covariance (O(n·d²)), no estimator needed",
            None,
            None,
        )
    exact, fkea = estimated_seconds(n, dim, rff_dim)
    where = f"n = {n:,}, d = {dim}: estimated {exact:.2g} s exact vs {fkea:.2g} s FKEA with 2r = {2 * rff_dim:,}"
    if n > max_n:
        return MethodChoice("fkea", f"{where}; n exceeds the exact limit {max_n:,} (the n×n kernel)", exact, fkea)
    if exact <= fkea:
        return MethodChoice("exact", f"{where}; exact is no slower, and exact", exact, fkea)
    if exact <= EXACT_ANYWAY_SECONDS:
        return MethodChoice(
            "exact", f"{where}; exact takes under {EXACT_ANYWAY_SECONDS:g} s, so no approximation is used", exact, fkea
        )
    return MethodChoice("fkea", f"{where}; FKEA is faster", exact, fkea)


# -- one-shot functional API -------------------------------------------------------------------------------------


def exact_entropy(
    X: ArrayLike,
    *,
    kernel: str = "gaussian",
    sigma: float | None = None,
    alphas: float | str | Iterable[float | str] = DEFAULT_ALPHAS,
    max_n: int = DEFAULT_MAX_N,
    block_size: int = DEFAULT_BLOCK,
) -> EntropyResult:
    """Exact VENDI_α/RKE of rows X (n, d): Gaussian from eigenvalues of K/n (n ≤ max_n), cosine via XᵀX/n."""
    orders = check_alphas(alphas)
    if check_kernel(kernel) == "cosine":
        return CosineEntropy().update(X).compute(orders)
    s = check_sigma(sigma)
    Xm = as_matrix(X, name="X")
    n = Xm.shape[0]
    if n > max_n:
        raise InputError(
            f"exact Gaussian VENDI needs the full {n}×{n} kernel matrix ({n * n * 8 / 2**30:.1f} GiB) and O(n³) "
            f"time; n={n} exceeds the exact limit {max_n}: use FKEA (t2ibench diversity --method fkea; "
            "fkea_scores() in Python)"
        )
    check_memory(2 * 8 * n * n, what=f"exact Gaussian VENDI of n={n} (the {n}×{n} kernel and its eigensolver)")
    K = gaussian_kernel(Xm, sigma=s, block_size=block_size)
    K /= n
    spectrum = clean_spectrum(scipy.linalg.eigvalsh(K, overwrite_a=True))
    p = spectrum.probabilities
    vendi = {a: renyi_vendi(p, a) for a in orders}
    rke = float(1.0 / np.sum(p * p))
    check_vendi_invariants(vendi, rke, bound=n, slack=1e-6)
    return EntropyResult(
        method="exact",
        kernel="gaussian",
        n=n,
        vendi=vendi,
        rke=rke,
        eigenvalues=p,
        clipped_fraction=spectrum.clipped_fraction,
        sigma=s,
    )


def vendi_score(
    X: ArrayLike, *, kernel: str = "gaussian", sigma: float | None = None, alpha: float | str = 1.0
) -> float:
    """Exact VENDI_α (effective number of modes, in [1, n]) of rows X (n, d) under the chosen kernel."""
    result = exact_entropy(X, kernel=kernel, sigma=sigma, alphas=[alpha])
    return next(iter(result.vendi.values()))


def rke_score(
    X: ArrayLike, *, kernel: str = "gaussian", sigma: float | None = None, block_size: int = DEFAULT_BLOCK
) -> float:
    """Exact RKE = 1 / mean_ij k(x_i, x_j)² of rows X (n, d), in blocks: memory O(block² + n·d), never n × n."""
    if check_kernel(kernel) == "cosine":
        return CosineEntropy().update(X).rke()
    s = check_sigma(sigma)
    Xm = as_matrix(X, name="X")
    Xm = Xm - Xm.mean(axis=0)  # shift-invariant kernel: centring keeps the distances' digits
    check_positive_int(block_size, name="block_size")
    total = 0.0
    for rows, cols, tile in gaussian_blocks(Xm, sigma=s, block_size=block_size):
        square_sum = float(np.einsum("ij,ij->", tile, tile))
        total += square_sum if rows == cols else 2.0 * square_sum
    n = Xm.shape[0]
    return float(n * n / total)


def fkea_scores(
    X: ArrayLike,
    *,
    sigma: float,
    rff_dim: int,
    seed: int,
    alphas: float | str | Iterable[float | str] = DEFAULT_ALPHAS,
    batch_size: int = DEFAULT_BATCH,
    delta: float = DEFAULT_DELTA,
    orthogonal: bool = False,
) -> EntropyResult:
    """FKEA VENDI_α/RKE of rows X (n, d) with r = rff_dim seeded frequencies (orthogonal random features when
    ``orthogonal``); O(n·r·(d + r)) time."""
    Xm = as_matrix(X, name="X")
    est = FKEA(
        sigma=sigma, rff_dim=rff_dim, seed=seed, batch_size=batch_size, center=Xm.mean(axis=0), orthogonal=orthogonal
    )
    return est.update(Xm).compute(alphas, delta=delta)
