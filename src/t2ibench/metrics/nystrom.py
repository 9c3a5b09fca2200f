"""Streaming Nyström kernel-entropy estimator: VENDI_α and truncated VENDI_α from m landmarks.

With m landmarks z_1 … z_m, the Nyström feature map is φ(x) = K_mm^{+1/2} k_m(x) ∈ R^m, where K_mm is the
m × m kernel matrix of the landmarks, k_m(x) = (k(x, z_1), …, k(x, z_m)) and K_mm^{+1/2} = U diag(s^{-1/2}) Uᵀ
over the eigenpairs (s, U) of K_mm above the floor ``rcond`` · s_max (default m·ε₆₄, the numerical-rank rule of
``numpy.linalg.matrix_rank``; eigen-directions at or below it are dropped, i.e. the pseudo-inverse square root on
K_mm's numerical range, and ``rank`` reports how many were kept). Then φ(x)ᵀφ(y) = k_m(x)ᵀ K_mm⁺ k_m(y), the
Nyström approximation of k(x, y); φ(z_i)ᵀφ(z_i) = 1 at the landmarks and φ(x)ᵀφ(x) ≤ 1 elsewhere. The map is the
same as scikit-learn's ``Nystroem`` fitted on the landmark rows (which clips s at 1e-12 instead of dropping
directions: identical whenever K_mm is well conditioned); the symmetric square root makes the features, and so
the state, independent of the eigenvector basis LAPACK returns.

The state is FKEA's: the additive statistic S = Σ φφᵀ (m × m, float64, on ``AdditiveEstimator``) and n, so
shards with **the same landmarks** (and kernel, σ, floor) merge into exactly the state of one pass; merging
states with different landmarks is refused. ``spectrum()`` is the eigenvalues of C = S/n, which are those of the
Nyström kernel matrix K̂/n = Φ Φᵀ/n; their sum Tr C ≤ 1 is the share of the kernel's unit trace the landmarks
capture. ``compute(alphas, t)`` gives VENDI_α of that spectrum normalised to sum 1 and, with t, truncated VENDI_α
(``truncated_vendi``: the uncaptured mass 1 − Tr C is spread with the rest of the leftover).

**Landmarks.** Either given explicitly (``landmarks=``, an (m, d) array: required for shards computed separately,
e.g. from ``choose_landmarks(X, m, seed=…)`` on a pilot sample) or drawn at the first ``update``: m distinct rows
of that call's X, uniformly without replacement from ``numpy.random.default_rng(seed)``, kept in row order.
Cost: O(b·m·(d + 2m)) per batch of b rows, O(m³) for K_mm and for the final eigendecomposition; memory ~4 m²
doubles.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from t2ibench.errors import InputError, StateMismatchError, unknown_choice
from t2ibench.metrics.additive import AdditiveEstimator
from t2ibench.metrics.checks import (
    KERNELS,
    as_matrix,
    check_alphas,
    check_kernel,
    check_memory,
    check_nonzero_rows,
    check_positive_int,
    check_seed,
    check_sigma,
)
from t2ibench.metrics.entropy import DEFAULT_ALPHAS
from t2ibench.metrics.kernels import cosine_kernel, gaussian_kernel
from t2ibench.metrics.spectrum import check_vendi_invariants, clean_spectrum, renyi_vendi
from t2ibench.metrics.truncated import truncated_vendi

NYSTROM_KERNELS = KERNELS
DEFAULT_NYSTROM_BATCH = 2048
_EPS64 = float(np.finfo(np.float64).eps)


LANDMARK_METHODS = ("uniform", "rpcholesky")
RPCHOLESKY_BLOCK = 128


def choose_landmarks(
    X: ArrayLike,
    m: int,
    *,
    seed: int,
    method: str = "uniform",
    kernel: str = "gaussian",
    sigma: float | None = None,
) -> NDArray[np.float64]:
    """m distinct rows of X (n, d) as landmarks, (m, d) float64 in row order, drawn by default_rng(seed).

    ``uniform``: uniformly without replacement (kernel and σ unused). ``rpcholesky``: randomly pivoted Cholesky
    (Chen, Epperly, Tropp & Webber 2023), in blocks of 128 candidates drawn ∝ the diagonal of the residual
    K − K̂ and accepted one by one with probability (residual now) / (residual when drawn) — the accelerated
    variant (Epperly, Tropp & Webber 2024), equivalent in distribution to pivoting one row at a time: rows far
    from the landmarks chosen so far are likelier, so K̂'s captured trace is near the best rank-m one. Needs the
    kernel and σ (Gaussian).
    """
    m = check_positive_int(m, name="m")
    if method not in LANDMARK_METHODS:
        raise unknown_choice("method", method, LANDMARK_METHODS)
    rng = np.random.default_rng(check_seed(seed))
    rows = as_matrix(X, name="X", min_rows=m, need=f"m={m} landmarks")
    if method == "uniform":
        picked = np.sort(rng.choice(rows.shape[0], size=m, replace=False))
    else:
        picked = np.sort(_rpcholesky_pivots(rows, m, rng, kernel=kernel, sigma=sigma))
    out: NDArray[np.float64] = np.ascontiguousarray(rows[picked])
    return out


def _rpcholesky_pivots(
    rows: NDArray[np.float64], m: int, rng: np.random.Generator, *, kernel: str, sigma: float | None
) -> NDArray[np.intp]:
    """m distinct pivot indices of ``rows`` (n, d) by block randomly pivoted Cholesky of the kernel matrix."""
    check_kernel(kernel)
    if kernel == "gaussian":
        s = check_sigma(sigma)

        def columns(idx: NDArray[np.intp]) -> NDArray[np.float64]:
            return gaussian_kernel(rows, rows[idx], sigma=s)
    else:
        check_nonzero_rows(rows, name="X")

        def columns(idx: NDArray[np.intp]) -> NDArray[np.float64]:
            return cosine_kernel(rows, rows[idx])

    n = rows.shape[0]
    check_memory(8 * n * m, what=f"randomly pivoted Cholesky: an {n}×{m} factor")
    factor = np.zeros((n, m), dtype=np.float64)
    residual = np.ones(n, dtype=np.float64)  # k(x, x) = 1 for both kernels
    chosen: list[int] = []
    taken = np.zeros(n, dtype=bool)
    while len(chosen) < m:
        weights = np.where(taken, 0.0, np.clip(residual, 0.0, None))
        total = float(weights.sum())
        want = min(RPCHOLESKY_BLOCK, m - len(chosen))
        if total <= n * _EPS64:  # the landmarks span the data numerically: fill up uniformly
            rest = np.setdiff1d(np.arange(n), np.asarray(chosen, dtype=np.intp))
            extra = rng.choice(rest, size=m - len(chosen), replace=False)
            chosen.extend(int(i) for i in extra)
            break
        draw = rng.choice(n, size=want, replace=True, p=weights / total)
        k = len(chosen)
        block = columns(draw) - factor[:, :k] @ factor[draw, :k].T  # residual columns (n, b)
        # accept the candidates in turn with probability (residual now) / (residual when drawn): the block then
        # behaves like b sequential RPCholesky steps (Epperly, Tropp & Webber 2024); a repeat has residual 0
        inner = 0.5 * (block[draw] + block[draw].T)
        chol = np.zeros((want, want), dtype=np.float64)
        accepted: list[int] = []
        for i in range(want):
            drawn_with = float(inner[i, i])
            if drawn_with <= n * _EPS64:
                continue
            if accepted:
                row = scipy.linalg.solve_triangular(
                    chol[: len(accepted), : len(accepted)], inner[i, accepted], lower=True
                )
            else:
                row = np.zeros(0)
            left = drawn_with - float(row @ row)
            if left <= drawn_with * 1e3 * _EPS64 or rng.random() >= left / drawn_with:
                continue
            j = len(accepted)
            chol[j, :j] = row
            chol[j, j] = np.sqrt(left)
            accepted.append(i)
        if not accepted:
            continue
        good = draw[accepted]
        block = block[:, accepted]
        chol = chol[: len(accepted), : len(accepted)]
        new = scipy.linalg.solve_triangular(chol, block.T, lower=True).T  # (n, b): K̂ grows by new newᵀ
        factor[:, k : k + len(good)] = new
        residual -= np.einsum("ij,ij->i", new, new)
        taken[good] = True
        chosen.extend(int(i) for i in good)
    return np.asarray(chosen[:m], dtype=np.intp)


def _landmark_digest(landmarks: NDArray[np.float64]) -> str:
    """SHA-256 (hex) of the landmarks' float64 bytes and shape: identifies a landmark set in specs and files."""
    h = hashlib.sha256(json.dumps(list(landmarks.shape)).encode())
    h.update(np.ascontiguousarray(landmarks, dtype=np.float64).tobytes())
    return h.hexdigest()


class NystromFeatures:
    """Nyström feature map φ(x) = K_mm^{+1/2} k_m(x) ∈ R^m for the Gaussian (σ in embedding units) or cosine kernel."""

    def __init__(
        self, landmarks: ArrayLike, *, kernel: str = "gaussian", sigma: float | None = None, rcond: float | None = None
    ) -> None:
        check_kernel(kernel)
        self.kernel = kernel
        L = as_matrix(landmarks, name="landmarks").copy()  # own copy: it is made read-only below
        if kernel == "gaussian":
            self.sigma: float | None = check_sigma(sigma)
        else:
            if sigma is not None:
                raise InputError(f"sigma applies to the gaussian kernel only; got sigma={sigma!r} with kernel='cosine'")
            check_nonzero_rows(L, name="landmarks")
            self.sigma = None
        m = L.shape[0]
        if rcond is None:
            rcond = m * _EPS64
        if isinstance(rcond, (bool, np.bool_)) or not isinstance(rcond, (int, float, np.integer, np.floating)):
            raise InputError(f"rcond must be a number in (0, 1); got {rcond!r}")
        if not 0 < float(rcond) < 1:
            raise InputError(f"rcond must be in (0, 1) (a floor relative to K_mm's largest eigenvalue); got {rcond!r}")
        self.rcond = float(rcond)
        check_memory(4 * 8 * m * m, what=f"the {m}×{m} landmark kernel and its square root")
        L.setflags(write=False)
        self.landmarks: NDArray[np.float64] = L
        self.digest = _landmark_digest(L)
        Kmm = self._kernel(L)
        Kmm = 0.5 * (Kmm + Kmm.T)
        s, U = scipy.linalg.eigh(Kmm, overwrite_a=True, driver="evd")  # divide and conquer: fast on clusters
        keep = s > self.rcond * float(s.max())
        self.rank = int(keep.sum())
        Uk = U[:, keep]
        self._root: NDArray[np.float64] = (Uk / np.sqrt(s[keep])) @ Uk.T  # symmetric K_mm^{+1/2}

    @property
    def dim(self) -> int:
        """Input dimension d."""
        return int(self.landmarks.shape[1])

    @property
    def feature_dim(self) -> int:
        """Output dimension m (the number of landmarks)."""
        return int(self.landmarks.shape[0])

    def _kernel(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.kernel == "gaussian":
            assert self.sigma is not None
            return gaussian_kernel(X, self.landmarks, sigma=self.sigma)
        return cosine_kernel(X, self.landmarks)

    def transform(self, X: NDArray[np.floating], dtype: type[np.floating] = np.float64) -> NDArray[np.floating]:
        """Features φ(X) (n, m) in ``dtype`` of already-validated rows X (n, d); computed in float64."""
        phi = self._kernel(np.asarray(X, dtype=np.float64)) @ self._root
        out: NDArray[np.floating] = phi.astype(dtype, copy=False)
        return out

    def spec(self) -> dict[str, Any]:
        """Identity of the map: kind, kernel, d, m, σ, floor and the landmarks' SHA-256."""
        return {
            "kind": "nystrom",
            "kernel": self.kernel,
            "dim": self.dim,
            "m": self.feature_dim,
            "sigma": self.sigma,
            "rcond": self.rcond,
            "landmarks_sha256": self.digest,
        }


@dataclass(frozen=True)
class NystromResult:
    """Nyström scores of one sample set: VENDI_α, truncated VENDI_α (when t was given) and the raw spectrum.

    ``eigenvalues`` (m,) are the spectrum of C = Σφφᵀ/n, descending, not renormalised (round-off may leave tiny
    negatives); ``trace`` = Tr C ≤ 1 is the kernel mass the landmarks capture. ``vendi`` uses that spectrum
    normalised to sum 1; ``truncated`` is ``truncated_vendi(eigenvalues, alphas, t)``.
    """

    kernel: str
    n: int
    m: int
    rank: int
    vendi: Mapping[float, float]
    t: int | None
    truncated: Mapping[float, float] | None
    eigenvalues: NDArray[np.float64] = field(repr=False)
    trace: float
    clipped_fraction: float
    sigma: float | None = None
    seed: int | None = None

    def score(self, alpha: float, *, truncated: bool = False) -> float:
        """VENDI_α (or truncated VENDI_α) for an α that was computed (KeyError names the available ones otherwise)."""
        table = self.truncated if truncated else self.vendi
        if table is None:
            raise KeyError("truncated VENDI was not computed: pass t= to compute()")
        key = float(alpha)
        if key not in table:
            raise KeyError(f"VENDI_{alpha:g} was not computed; available: {sorted(table)}")
        return table[key]

    def to_dict(self, *, top_eigenvalues: int = 32) -> dict[str, Any]:
        """JSON-serialisable summary (α keys as strings, at most ``top_eigenvalues`` eigenvalues)."""

        def keyed(table: Mapping[float, float]) -> dict[str, float]:
            return {("inf" if math.isinf(a) else f"{a:.12g}"): v for a, v in table.items()}

        return {
            "method": "nystrom",
            "kernel": self.kernel,
            "n": self.n,
            "m": self.m,
            "rank": self.rank,
            "sigma": self.sigma,
            "seed": self.seed,
            "vendi": keyed(self.vendi),
            "t": self.t,
            "truncated_vendi": None if self.truncated is None else keyed(self.truncated),
            "trace": self.trace,
            "clipped_fraction": self.clipped_fraction,
            "eigenvalues_top": [float(x) for x in self.eigenvalues[:top_eigenvalues]],
        }


class NystromEntropy(AdditiveEstimator):
    """Streaming Nyström VENDI/truncated VENDI: ``update`` batches, ``merge`` shards (same landmarks), ``compute``.

    Give ``landmarks`` (m, d), or ``m`` and ``seed`` to draw m landmarks from the rows of the first ``update`` call
    (``landmark_method``: 'uniform' or 'rpcholesky', see ``choose_landmarks``).
    ``kernel`` is 'gaussian' (needs σ, embedding units) or 'cosine'; ``rcond`` is the K_mm eigenvalue floor relative
    to its largest eigenvalue (default m·ε₆₄). Features are computed and accumulated in float64. The state
    (``AdditiveEstimator``) is one Σφφᵀ (m × m) and n; the landmarks are part of the identity (their SHA-256 in
    the spec) and are saved beside the state.
    """

    method = "nystrom"

    def __init__(
        self,
        *,
        kernel: str = "gaussian",
        sigma: float | None = None,
        m: int | None = None,
        seed: int | None = None,
        landmarks: ArrayLike | None = None,
        rcond: float | None = None,
        batch_size: int = DEFAULT_NYSTROM_BATCH,
        landmark_method: str = "uniform",
    ) -> None:
        super().__init__(batch_size=batch_size)
        check_kernel(kernel)
        if landmark_method not in LANDMARK_METHODS:
            raise unknown_choice("landmark_method", landmark_method, LANDMARK_METHODS)
        self.kernel = kernel
        self.landmark_method = landmark_method
        self.sigma = check_sigma(sigma) if kernel == "gaussian" else None
        if kernel == "cosine" and sigma is not None:
            raise InputError(f"sigma applies to the gaussian kernel only; got sigma={sigma!r} with kernel='cosine'")
        self._rcond = rcond
        self._map: NystromFeatures | None = None
        self._seed: int | None = None
        self._m: int
        if landmarks is not None:
            if seed is not None:
                raise InputError("seed draws the landmarks: give either landmarks= or m= and seed=, not both")
            if landmark_method != "uniform":
                raise InputError("landmark_method chooses landmarks that are drawn: it does not apply to landmarks=")
            fmap = NystromFeatures(landmarks, kernel=kernel, sigma=self.sigma, rcond=rcond)
            if m is not None and check_positive_int(m, name="m") != fmap.feature_dim:
                raise InputError(f"m={m} but landmarks has {fmap.feature_dim} rows")
            self._m = fmap.feature_dim
            self._set_map(fmap)
        else:
            if m is None:
                raise InputError("m (the number of landmarks) is required unless landmarks= is given")
            if seed is None:
                raise InputError("seed is required to draw the landmarks (every random draw takes an explicit seed)")
            self._m = check_positive_int(m, name="m")
            self._seed = check_seed(seed)
            check_memory(4 * 8 * self._m**2, what=f"a Nyström estimator with m={self._m} landmarks")

    def _set_map(self, fmap: NystromFeatures) -> None:
        self._map = fmap
        self._start({"covariance": fmap.feature_dim})

    # -- the base's hooks ------------------------------------------------------------------------------------
    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "kernel": self.kernel,
            "m": self._m,
            "sigma": self.sigma,
            "seed": self._seed,
            "landmark_method": self.landmark_method if self._seed is not None else None,
        }
        if self._map is not None:  # the landmarks, the floor and K_mm's numerical rank are part of the identity
            params.update(rcond=self._map.rcond, landmarks_sha256=self._map.digest, rank=self._map.rank)
        return params

    def _input_dims(self) -> dict[str, int | None]:
        return {"dim": self.dim}

    def _initialise(self, **dims: int) -> None:
        raise StateMismatchError("a Nyström state needs its landmarks, not only its input dimension")

    def _check_merge(self, other: Self) -> None:
        if self._map is None or other._map is None:
            which = "this estimator" if self._map is None else "the other estimator"
            raise StateMismatchError(
                f"cannot merge: {which} has no landmarks yet; shards must share one landmark set (draw it once with "
                "choose_landmarks(X, m, seed=...) and pass landmarks= to every shard)"
            )
        if not np.array_equal(self._map.landmarks, other._map.landmarks):  # beyond the digest: the rows themselves
            raise StateMismatchError("cannot merge Nyström states with different landmarks")

    def _extra_arrays(self) -> dict[str, NDArray[Any]]:
        assert self._map is not None
        return {"landmarks": np.asarray(self._map.landmarks, dtype=np.float64)}

    @classmethod
    def _from_saved(cls, meta: Mapping[str, Any], arrays: Mapping[str, NDArray[Any]]) -> Self:
        landmarks = arrays.get("landmarks")
        if landmarks is None or landmarks.ndim != 2 or not np.issubdtype(landmarks.dtype, np.floating):
            raise InputError("no 2-D float 'landmarks' array")
        est = cls(kernel=meta["kernel"], sigma=meta["sigma"], landmarks=landmarks, rcond=meta["rcond"])
        if meta["seed"] is not None:  # landmarks drawn at the first update: the draw is part of the identity
            est._seed = check_seed(meta["seed"])
            est.landmark_method = meta.get("landmark_method") or "uniform"
        return est

    # -- identity and state ----------------------------------------------------------------------------------
    @property
    def m(self) -> int:
        """Number of landmarks."""
        return self._m

    @property
    def seed(self) -> int | None:
        """Seed the landmarks were drawn with (None when they were given)."""
        return self._seed

    @property
    def dim(self) -> int | None:
        """Input dimension d (None until the landmarks are known)."""
        return None if self._map is None else self._map.dim

    @property
    def rank(self) -> int | None:
        """Numerical rank of K_mm: landmark eigen-directions kept above the floor (None until landmarks are known)."""
        return None if self._map is None else self._map.rank

    @property
    def feature_map(self) -> NystromFeatures:
        """The Nyström feature map φ (available once the landmarks are known)."""
        if self._map is None:
            raise InputError("the landmarks are not known yet: call update() first or pass landmarks=")
        return self._map

    @property
    def landmarks(self) -> NDArray[np.float64]:
        """The landmarks (m, d), float64, read-only."""
        return self.feature_map.landmarks

    # -- streaming -------------------------------------------------------------------------------------------
    def _validated(self, X: ArrayLike, row_offset: int) -> NDArray[np.float64]:
        rows = as_matrix(X, name="X", dim=self.dim, row_offset=row_offset)
        if self.kernel == "cosine":
            check_nonzero_rows(rows, name="X", row_offset=row_offset)
        return rows

    def update(self, X: ArrayLike) -> Self:
        """Add rows X (b, d) to the state; validates all rows first (atomic), the first call may draw the landmarks."""
        arr = X if isinstance(X, np.ndarray) else np.asarray(X)
        if arr.ndim != 2:
            raise InputError(f"X must be a 2-D array of shape (n, d); got shape {arr.shape}")
        if arr.shape[0] == 0:
            raise InputError("X is empty: need at least 1 row")
        if self.dim is not None and arr.shape[1] != self.dim:
            raise InputError(f"X has dimension {arr.shape[1]} but the landmarks have dimension {self.dim}")
        starts = range(0, arr.shape[0], self.batch_size)
        kept: list[NDArray[np.float64] | None] = []
        for start in starts:  # validate everything before touching the state
            chunk = self._validated(arr[start : start + self.batch_size], self.n + start)
            kept.append(chunk if len(starts) == 1 else None)
        if self._map is None:
            if arr.shape[0] < self._m:
                raise InputError(
                    f"X: the first update() draws m={self._m} landmarks from its rows but has only {arr.shape[0]}: "
                    "pass at least m rows first, or give landmarks="
                )
            assert self._seed is not None
            self._set_map(
                NystromFeatures(
                    choose_landmarks(
                        arr, self._m, seed=self._seed, method=self.landmark_method, kernel=self.kernel, sigma=self.sigma
                    ),
                    kernel=self.kernel,
                    sigma=self.sigma,
                    rcond=self._rcond,
                )
            )
        assert self._map is not None
        for start, held in zip(starts, kept, strict=True):
            rows = held if held is not None else np.asarray(arr[start : start + self.batch_size], np.float64)
            self._add(self._map.transform(rows))
        return self

    def features(self, X: ArrayLike) -> NDArray[np.float64]:
        """Features φ(X) (n, m), float64, of rows X (n, d), validated as ``update`` does; the state is untouched."""
        fmap = self.feature_map
        arr = X if isinstance(X, np.ndarray) else np.asarray(X)
        if arr.ndim != 2:
            raise InputError(f"X must be a 2-D array of shape (n, d); got shape {arr.shape}")
        out = np.empty((arr.shape[0], fmap.feature_dim), dtype=np.float64)
        for start in range(0, max(arr.shape[0], 1), self.batch_size):
            chunk = self._validated(arr[start : start + self.batch_size], start)
            out[start : start + chunk.shape[0]] = fmap.transform(chunk)
        return out

    # -- results ---------------------------------------------------------------------------------------------
    def covariance(self) -> NDArray[np.float64]:
        """Nyström feature covariance C = Σφφᵀ / n (m, m), float64; its spectrum is that of K̂/n, trace ≤ 1."""
        self._require_data()
        return self._stat().second_moment()

    def spectrum(self) -> NDArray[np.float64]:
        """Eigenvalues (m,) of C = Σφφᵀ/n, descending, not renormalised (sum Tr C ≤ 1); feeds ``truncated_vendi``."""
        values: NDArray[np.float64] = scipy.linalg.eigvalsh(self.covariance(), overwrite_a=True)[::-1].copy()
        return values

    def compute(
        self, alphas: float | str | Iterable[float | str] = DEFAULT_ALPHAS, t: int | None = None
    ) -> NystromResult:
        """VENDI_α of the normalised Nyström spectrum and, when ``t`` is given, truncated VENDI_α (both in [1, …])."""
        orders = check_alphas(alphas)
        if t is not None:
            check_positive_int(t, name="t")
        eig = self.spectrum()
        trace = float(eig.sum())
        clean = clean_spectrum(eig, rank=self.n)
        vendi = {a: renyi_vendi(clean.probabilities, a) for a in orders}
        check_vendi_invariants(
            vendi, None, bound=min(self.n, self._m), slack=1e-6 + 4 * clean.clipped_fraction, what="Nyström VENDI"
        )
        truncated = None if t is None else truncated_vendi(eig, orders, t)
        assert self._map is not None
        return NystromResult(
            kernel=self.kernel,
            n=self.n,
            m=self._m,
            rank=self._map.rank,
            vendi=vendi,
            t=t,
            truncated=truncated,
            eigenvalues=eig,
            trace=trace,
            clipped_fraction=clean.clipped_fraction,
            sigma=self.sigma,
            seed=self._seed,
        )
