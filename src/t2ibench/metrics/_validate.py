"""Input checks shared by the metric functions: every error names the parameter and the offending rows."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from t2ibench.errors import InputError

_MAX_LISTED_ROWS = 10


def _rows_text(rows: NDArray[np.intp], offset: int) -> str:
    """Render row indices (shifted by ``offset``) as '3, 17, 99 (+4 more)'."""
    shown = ", ".join(str(int(r) + offset) for r in rows[:_MAX_LISTED_ROWS])
    more = len(rows) - _MAX_LISTED_ROWS
    return shown + (f" (+{more} more)" if more > 0 else "")


def as_matrix(
    X: ArrayLike,
    *,
    name: str = "X",
    dtype: DTypeLike = np.float64,
    dim: int | None = None,
    row_offset: int = 0,
    min_rows: int = 1,
) -> NDArray[Any]:
    """Return ``X`` as a C-contiguous (n, d) array of ``dtype``, or raise InputError naming the bad rows.

    ``row_offset`` shifts reported row numbers so that a batch inside a stream reports global rows.
    Values that overflow ``dtype`` (e.g. 1e39 in float32) are reported like NaN/inf.
    """
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise InputError(f"{name} must be a 2-D array of shape (n, d); got shape {arr.shape}")
    n, d = arr.shape
    if n < min_rows:
        raise InputError(f"{name} is empty: need at least {min_rows} row(s), got {n}")
    if d < 1:
        raise InputError(f"{name} has zero columns (shape {arr.shape})")
    if dim is not None and d != dim:
        raise InputError(f"{name} has dimension {d} but {dim} was expected (earlier batches or the feature map)")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise InputError(f"{name} must be numeric; got dtype {arr.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(arr, dtype=dtype)
    finite_rows = np.isfinite(out).all(axis=1)
    if not finite_rows.all():
        bad = np.flatnonzero(~finite_rows)
        raise InputError(
            f"{name} has non-finite values (NaN, inf, or beyond {np.dtype(dtype).name} range) in "
            f"{len(bad)} row(s): {_rows_text(bad, row_offset)}"
        )
    return out


def check_nonzero_rows(X: NDArray[np.floating], *, name: str = "X", row_offset: int = 0) -> None:
    """Raise InputError if any row of ``X`` has zero norm (cosine kernel undefined there)."""
    zero = np.flatnonzero(~np.any(X != 0, axis=1))
    if len(zero):
        raise InputError(
            f"{name} has all-zero rows, for which the cosine kernel is undefined: {_rows_text(zero, row_offset)}"
        )


def check_sigma(sigma: float | None, *, name: str = "sigma") -> float:
    """Return ``sigma`` as a float, or raise InputError if it is missing, non-finite or ≤ 0."""
    if sigma is None:
        raise InputError(f"{name} is required for the Gaussian kernel (a bandwidth > 0, in embedding units)")
    value = float(sigma)
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{name} must be a finite number > 0; got {sigma!r}")
    return value


def check_positive_int(value: int, *, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an int, or raise InputError if it is not an integer ≥ ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer ≥ {minimum}; got {value!r}")
    if value < minimum:
        raise InputError(f"{name} must be ≥ {minimum}; got {value}")
    return int(value)


def check_seed(seed: int) -> int:
    """Return ``seed`` as a non-negative int (every random draw in t2ibench takes an explicit seed)."""
    return check_positive_int(seed, name="seed", minimum=0)


def parse_alpha(alpha: float | str) -> float:
    """Return an entropy order α > 0 as a float; accepts math.inf and the strings 'inf'/'∞'."""
    if isinstance(alpha, str):
        text = alpha.strip().lower()
        value = math.inf if text in {"inf", "infinity", "∞"} else _float_or_error(text, alpha)
    else:
        value = float(alpha)
    if math.isnan(value) or value <= 0:
        raise InputError(f"alpha must be > 0 (use inf for the min-entropy); got {alpha!r}")
    return value


def _float_or_error(text: str, original: object) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"alpha must be a number > 0 or 'inf'; got {original!r}") from None


def check_alphas(alphas: float | str | Iterable[float | str]) -> tuple[float, ...]:
    """Return a non-empty tuple of distinct α > 0, in the order given."""
    items: Sequence[float | str] = [alphas] if isinstance(alphas, (int, float, str)) else list(alphas)
    if not items:
        raise InputError("alphas must list at least one entropy order α > 0")
    parsed: list[float] = []
    for a in items:
        value = parse_alpha(a)
        if value not in parsed:
            parsed.append(value)
    return tuple(parsed)
