"""The additive sufficient statistic behind every streaming diversity metric.

``CovarianceAccumulator`` holds S = Σ_i φ(x_i)φ(x_i)ᵀ (D × D, float64) and the count n. A batch adds one
BLAS-3 rank-b update (SYRK, i.e. a GEMM that computes only one triangle) in the batch's own precision, and the
result is accumulated in float64. Two accumulators over disjoint shards add up to the accumulator of their
union, so shards computed anywhere merge exactly (up to float addition order). Memory is D² doubles,
independent of n.
"""

from __future__ import annotations

import json
import mmap
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray
from scipy.linalg import blas

from t2ibench.errors import InputError, StateMismatchError
from t2ibench.metrics.checks import check_memory, check_positive_int
from t2ibench.metrics.npz import read_npz_arrays

_ACCUMULATE_BLOCK = 512
_SHARED_MODES = frozenset({"r", "readonly", "r+", "readwrite", "w+", "write"})


def release_mapped_rows(arr: NDArray[Any], start: int, stop: int) -> None:
    """Tell the kernel that rows [start, stop) of a file-backed ``numpy.memmap`` (C-contiguous) are done with, so
    their pages leave this process's resident set (a no-op for any other array).

    Streaming a whole-file memmap otherwise keeps every page read in RSS until the map closes (3 GB for 1M × 768
    float32). Only shared mappings are released (their pages live in the file / page cache, so a later read
    faults them back in unchanged); a copy-on-write map (mode 'c') keeps private changes and is left alone.
    """
    mapping = getattr(arr, "_mmap", None)
    if not isinstance(mapping, mmap.mmap) or getattr(arr, "mode", None) not in _SHARED_MODES:
        return
    if not arr.flags.c_contiguous or stop <= start or not hasattr(mapping, "madvise"):
        return
    try:
        base = np.frombuffer(mapping, dtype=np.uint8).ctypes.data
    except (TypeError, ValueError):  # a closed map
        return
    row_bytes = arr.strides[0] if arr.ndim else arr.itemsize
    first = arr.ctypes.data + start * row_bytes - base
    last = arr.ctypes.data + min(stop, arr.shape[0]) * row_bytes - base
    first -= first % mmap.PAGESIZE  # madvise wants a page-aligned start; the pages are re-read if touched again
    last = min(last, len(mapping))
    if first < 0 or last <= first:
        return
    mapping.madvise(mmap.MADV_DONTNEED, first, last - first)


class CovarianceAccumulator:
    """Streaming sum S = Σ φφᵀ (D, D) in float64 plus the row count n; one SYRK per added batch."""

    def __init__(self, feature_dim: int) -> None:
        self._dim = check_positive_int(feature_dim, name="feature_dim")
        # the sum, one batch's SYRK output, and the symmetric copy + eigendecomposition workspace at compute()
        check_memory(3 * 8 * self._dim**2, what=f"a {self._dim}×{self._dim} feature covariance")
        # Fortran order, like SYRK's output, so the per-batch float64 accumulation reads both contiguously.
        self._upper = np.zeros((self._dim, self._dim), dtype=np.float64, order="F")
        self._n = 0

    @property
    def n(self) -> int:
        """Number of rows added so far."""
        return self._n

    @property
    def feature_dim(self) -> int:
        """Feature dimension D."""
        return self._dim

    def add(self, features: NDArray[np.floating]) -> None:
        """Add a batch of features (b, D), float32 or float64, with one SYRK; accumulate in float64."""
        if features.ndim != 2 or features.shape[1] != self._dim:
            raise InputError(f"features must have shape (b, {self._dim}); got {features.shape}")
        if features.shape[0] == 0:
            return
        if features.dtype == np.float32:
            syrk = blas.ssyrk
        elif features.dtype == np.float64:
            syrk = blas.dsyrk
        else:
            raise InputError(f"features must be float32 or float64; got {features.dtype}")
        # features.T of a C-contiguous (b, D) array is Fortran-ordered (D, b): BLAS reads it without a copy.
        update = syrk(1.0, np.ascontiguousarray(features).T, trans=0, lower=0)
        # Only the upper triangle is meaningful: add it column block by column block (half the work).
        for j in range(0, self._dim, _ACCUMULATE_BLOCK):
            stop = min(j + _ACCUMULATE_BLOCK, self._dim)
            self._upper[:stop, j:stop] += update[:stop, j:stop]
        self._n += features.shape[0]

    def add_sum(self, total: NDArray[np.floating], n: int) -> None:
        """Add a Σφφᵀ (D, D) of n rows computed elsewhere (e.g. on a GPU); its upper triangle is read, in float64."""
        if total.shape != (self._dim, self._dim):
            raise InputError(f"a feature sum must have shape ({self._dim}, {self._dim}); got {total.shape}")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InputError(f"n must be a non-negative integer; got {n!r}")
        if not np.isfinite(total).all():
            raise InputError("a feature sum holds NaN or inf")
        for j in range(0, self._dim, _ACCUMULATE_BLOCK):
            stop = min(j + _ACCUMULATE_BLOCK, self._dim)
            self._upper[:stop, j:stop] += np.triu(np.asarray(total[:stop, j:stop], dtype=np.float64), -j)
        self._n += int(n)

    def merge(self, other: CovarianceAccumulator) -> None:
        """Add another accumulator's state into this one (in place)."""
        if other.feature_dim != self._dim:
            raise StateMismatchError(f"cannot merge states of feature dimension {other.feature_dim} and {self._dim}")
        self._upper += other._upper
        self._n += other._n

    def sum_matrix(self) -> NDArray[np.float64]:
        """The symmetric sum S = Σ φφᵀ (D, D), float64."""
        return np.triu(self._upper) + np.triu(self._upper, 1).T

    def _check_nonempty(self) -> None:
        if self._n == 0:
            raise InputError("no samples have been added: call update() before compute()")

    def eigenvalues(self, dtype: type[np.floating] = np.float64) -> NDArray[np.float64]:
        """Eigenvalues of C = S / n (D,), ascending, returned as float64, read from the stored triangle: no symmetric
        copy of S is made (LAPACK's working copy, in ``dtype``, is the only D² allocation). ``dtype`` float32 halves
        the time and that copy, but its round-off (~ε₃₂·λ_max per eigenvalue) survives as spurious small eigenvalues
        of a rank-deficient C: the estimators use float64."""
        self._check_nonempty()
        work = self._upper if dtype == np.float64 else self._upper.astype(dtype, order="F")
        values = scipy.linalg.eigvalsh(
            work, lower=False, check_finite=False, driver="evd", overwrite_a=work is not self._upper
        )
        out: NDArray[np.float64] = values.astype(np.float64) / self._n
        return out

    def trace(self) -> float:
        """Tr C = Tr S / n (for unit-norm features 1)."""
        self._check_nonempty()
        return float(np.trace(self._upper)) / self._n

    def frobenius_squared(self) -> float:
        """‖C‖_F² = Σ_ij C_ij² from the stored triangle (diagonal once, off-diagonal twice), in column blocks."""
        self._check_nonempty()
        total = 0.0
        for j in range(0, self._dim, _ACCUMULATE_BLOCK):
            stop = min(j + _ACCUMULATE_BLOCK, self._dim)
            above = self._upper[:j, j:stop]
            block = np.triu(self._upper[j:stop, j:stop])
            diagonal = np.diagonal(block)
            total += 2.0 * float(np.einsum("ij,ij->", above, above)) + 2.0 * float(np.einsum("ij,ij->", block, block))
            total -= float(diagonal @ diagonal)
        return total / (self._n * self._n)

    def second_moment(self) -> NDArray[np.float64]:
        """The uncentred covariance C = S / n (D, D), float64; for unit-norm features Tr C = 1."""
        if self._n == 0:
            raise InputError("no samples have been added: call update() before compute()")
        return self.sum_matrix() / self._n

    def copy(self) -> CovarianceAccumulator:
        """An independent copy of this state."""
        out = CovarianceAccumulator(self._dim)
        out._upper = self._upper.copy(order="F")
        out._n = self._n
        return out

    # -- persistence (no pickle: plain arrays and a JSON header) --------------------------------------------
    def to_arrays(self, meta: dict[str, Any]) -> dict[str, NDArray[Any]]:
        """Arrays for ``numpy.savez``: the upper triangle, n, and a JSON header ``meta`` (str array)."""
        iu = np.triu_indices(self._dim)
        return {
            "upper": self._upper[iu],
            "n": np.array(self._n, dtype=np.int64),
            "meta": np.array(json.dumps(meta, sort_keys=True)),
        }

    @classmethod
    def from_arrays(cls, arrays: Any, *, source: str = "state") -> tuple[CovarianceAccumulator, dict[str, Any]]:
        """Rebuild an accumulator and its JSON header from ``to_arrays`` output (e.g. an NpzFile).

        Strict: ``n`` must be a non-negative integer scalar, ``upper`` a finite float vector of triangular length,
        ``meta`` a JSON object; anything else is an InputError naming ``source``.
        """

        def bad(why: str) -> InputError:
            return InputError(f"{source}: not a t2ibench covariance state ({why})")

        for key in ("meta", "upper", "n"):
            if key not in arrays:
                raise bad(f"no {key!r} array")
        n_arr = np.asarray(arrays["n"])
        if n_arr.shape != () or not np.issubdtype(n_arr.dtype, np.integer) or int(n_arr) < 0:
            raise bad(f"'n' must be a non-negative integer scalar; got {n_arr.dtype} {n_arr.shape}")
        packed = np.asarray(arrays["upper"])
        if packed.ndim != 1 or not np.issubdtype(packed.dtype, np.floating):
            raise bad(f"'upper' must be a float vector; got {packed.dtype} {packed.shape}")
        if not np.isfinite(packed).all():
            raise bad("'upper' holds NaN or inf")
        try:
            meta = json.loads(str(np.asarray(arrays["meta"])))
        except ValueError:
            raise bad("'meta' is not JSON") from None
        if not isinstance(meta, dict):
            raise bad("'meta' must be a JSON object")
        dim = int((np.sqrt(8 * packed.size + 1) - 1) / 2)
        if dim * (dim + 1) // 2 != packed.size or dim < 1:
            raise bad(f"'upper' has {packed.size} entries, not a triangle")
        acc = cls(dim)
        acc._upper[np.triu_indices(dim)] = packed.astype(np.float64)
        acc._n = int(n_arr)
        return acc, meta


def save_state(path: str | Path, arrays: dict[str, NDArray[Any]]) -> Path:
    """Write state arrays to ``path`` (.npz) atomically: a temp file renamed into place."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds too narrowly
    tmp.replace(target)
    return target


def load_state(path: str | Path) -> dict[str, NDArray[Any]]:
    """Read state arrays from an .npz written by ``save_state`` (never unpickles; each member's header checked and
    the whole estimated against the memory limit before anything is inflated: ``npz.read_npz_arrays``); InputError
    names the file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such state file" if not p.exists() else f"{p}: not a file")
    if not zipfile.is_zipfile(p):
        raise InputError(f"{p}: not a t2ibench covariance state (not an .npz archive)")
    return read_npz_arrays(p)
