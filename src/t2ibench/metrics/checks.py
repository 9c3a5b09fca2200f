"""Input checks shared by the metric functions and the rest of the library: every error names the parameter and
the offending rows."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from t2ibench.errors import InputError, unknown_choice

KernelName = Literal["gaussian", "cosine"]
"""A kernel every diversity estimator offers: Gaussian (bandwidth σ, embedding units) or cosine — the one list of
kernel names (config fields, command-line choices and the estimator table are derived from it)."""
KERNELS: tuple[str, ...] = get_args(KernelName)
"""The kernel names, in ``KernelName``'s order."""

DiversityMethod = Literal["auto", "exact", "fkea", "both"]
"""How the diversity of an embedding file is computed: ``auto`` (exact when a cost model says it is no slower than
FKEA or under 1 s, else FKEA), ``exact``, ``fkea`` or ``both``."""
ScendiInverse = Literal["ridge", "pinv"]
"""How Scendi regularises C_TT⁻¹: a ridge, or the reference repository's pinv cut-off."""


def check_kernel(kernel: str) -> str:
    """``kernel`` if it is one of KERNELS, else an InputError with a did-you-mean suggestion."""
    if kernel not in KERNELS:
        raise unknown_choice("kernel", kernel, KERNELS)
    return kernel


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
    need: str = "",
) -> NDArray[Any]:
    """Return ``X`` as a C-contiguous (n, d) array of ``dtype``, or raise InputError naming the bad rows.

    ``row_offset`` shifts reported row numbers so that a batch inside a stream reports global rows.
    Values that overflow ``dtype`` (e.g. 1e39 in float32) are reported like NaN/inf.
    """
    try:
        arr = np.asarray(X)
    except ValueError:  # ragged nested lists
        raise InputError(f"{name} must be a 2-D array of shape (n, d); its rows have different lengths") from None
    if arr.ndim != 2:
        raise InputError(f"{name} must be a 2-D array of shape (n, d); got shape {arr.shape}")
    n, d = arr.shape
    if n < min_rows:
        what = f" for {need}" if need else ""
        raise InputError(
            f"{name} is empty: need at least {min_rows} row(s){what}, got {n}"
            if n == 0
            else f"{name} has {n} row(s); {min_rows} are needed{what}"
        )
    if d < 1:
        raise InputError(f"{name} has zero columns (shape {arr.shape})")
    if dim is not None and d != dim:
        raise InputError(f"{name} has dimension {d} but {dim} was expected (earlier batches or the feature map)")
    check_embedding_dtype(arr.dtype, where=name)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(arr, dtype=dtype)
    if out.size and np.issubdtype(out.dtype, np.floating):  # fast path: two reductions, no temporaries
        hi, lo = float(out.max()), float(out.min())  # NaN propagates through both
        top = max(abs(hi), abs(lo))
        if math.isfinite(top) and top <= MAX_MAGNITUDE and not 0 < top < MIN_MAGNITUDE:
            return out
    finite_rows = np.isfinite(out).all(axis=1)
    if not finite_rows.all():
        bad = np.flatnonzero(~finite_rows)
        raise InputError(
            f"{name} has non-finite values (NaN, inf, or beyond {np.dtype(dtype).name} range) in "
            f"{len(bad)} row(s): {_rows_text(bad, row_offset)}"
        )
    magnitude = np.abs(out).max(axis=1).astype(np.float64)
    huge = np.flatnonzero(magnitude > MAX_MAGNITUDE)
    if len(huge):
        rows = _rows_text(huge, row_offset)
        raise InputError(
            f"{name} has values up to {float(magnitude.max()):.3g} in {len(huge)} row(s): {rows}; squared "
            f"distances and norms overflow float64 beyond ~{MAX_MAGNITUDE:.0e}: rescale the embeddings "
            "(e.g. L2-normalise them)"
        )
    top = float(magnitude.max())
    if 0 < top < MIN_MAGNITUDE:
        raise InputError(
            f"{name}: every value is below {MIN_MAGNITUDE:.0e} in magnitude (largest {top:.3g}); squared distances "
            "underflow float64 to 0: rescale the embeddings (e.g. L2-normalise them)"
        )
    return out


MAX_MAGNITUDE = 1e150
MIN_MAGNITUDE = 1e-150


def check_embedding_dtype(dtype: Any, *, where: str) -> None:
    """Refuse dtypes that are not real numbers (complex would lose its imaginary part, objects need pickle)."""
    kind = np.dtype(dtype)
    if np.issubdtype(kind, np.complexfloating):
        raise InputError(f"{where}: complex values (dtype {kind}) are not embeddings; the imaginary part would be lost")
    if kind.kind in "mM":  # numpy counts timedelta64 as a number; durations and dates are not coordinates
        raise InputError(f"{where} must be numeric; got dtype {kind} (times or durations, not embeddings)")
    if not (np.issubdtype(kind, np.number) or kind == np.bool_):
        raise InputError(f"{where} must be numeric; got dtype {kind}")


def check_nonzero_rows(X: NDArray[np.floating], *, name: str = "X", row_offset: int = 0) -> None:
    """Raise InputError if any row of ``X`` has zero norm (cosine kernel undefined there)."""
    zero = np.flatnonzero(~np.any(X != 0, axis=1))
    if len(zero):
        raise InputError(
            f"{name} has all-zero rows, for which the cosine kernel is undefined: {_rows_text(zero, row_offset)}"
        )


MIN_SIGMA = 1e-100
"""Smaller bandwidths cannot be squared in float64 (σ² would underflow)."""


def check_sigma(sigma: float | None, *, name: str = "sigma") -> float:
    """Return ``sigma`` as a float, or raise InputError if it is missing, not a number, non-finite or ≤ 0."""
    if sigma is None:
        raise InputError(f"{name} is required for the Gaussian kernel (a bandwidth > 0, in embedding units)")
    if isinstance(sigma, (bool, np.bool_)) or not isinstance(sigma, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number > 0; got {sigma!r}")
    value = float(sigma)
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{name} must be a finite number > 0; got {sigma!r}")
    if value < MIN_SIGMA:
        raise InputError(f"{name} = {value:g} is below {MIN_SIGMA:g}: σ² underflows float64; rescale the embeddings")
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


ALPHA_SNAP = 1e-12
"""Orders within this of 1 are 1 (float noise: sum([0.1] * 10) == 0.9999999999999999)."""


def parse_alpha(alpha: float | str) -> float:
    """Return an entropy order α > 0 as a float; accepts math.inf and the strings 'inf'/'∞'."""
    if isinstance(alpha, str):
        text = alpha.strip().lower()
        value = math.inf if text in {"inf", "infinity", "∞", "+inf"} else _float_or_error(text, alpha)
    elif isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise InputError(f"alpha must be a number > 0 or 'inf'; got {alpha!r}")
    else:
        value = float(alpha)
    if math.isnan(value) or value <= 0:
        raise InputError(f"alpha must be > 0 (use inf for the min-entropy); got {alpha!r}")
    return 1.0 if abs(value - 1.0) <= ALPHA_SNAP else value


def _float_or_error(text: str, original: object) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"alpha must be a number > 0 or 'inf'; got {original!r}") from None


def check_alphas(alphas: float | str | Iterable[float | str]) -> tuple[float, ...]:
    """Return a non-empty tuple of distinct α > 0, in the order given."""
    if isinstance(alphas, (bytes, bytearray, dict)) or hasattr(alphas, "keys"):
        raise InputError(f"alphas must be a number, 'inf', or a list of them; got {type(alphas).__name__}")
    scalar = isinstance(alphas, (int, float, str, np.integer, np.floating))
    items: Sequence[float | str] = [alphas] if scalar else list(alphas)  # type: ignore[list-item, arg-type]
    if not items:
        raise InputError("alphas must list at least one entropy order α > 0")
    parsed: list[float] = []
    for a in items:
        value = parse_alpha(a)
        if value not in parsed:
            parsed.append(value)
    return tuple(parsed)


MEMORY_ENV = "T2IBENCH_MEMORY_LIMIT"
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
UNLIMITED = 2**60  # a limit at or above this (cgroup v1's "no limit" is 2^63 rounded to pages) limits nothing


@dataclass(frozen=True)
class MemoryLimit:
    """Bytes a single allocation may use, and which limit says so (for the refusal's message)."""

    nbytes: int
    source: str


def memory_limits(root: Path = Path("/")) -> list[MemoryLimit]:
    """Every limit on what this process may still allocate, in bytes: the memory available now (MemAvailable) or
    $T2IBENCH_MEMORY_LIMIT in its place; the address-space and data rlimits (``ulimit -v``/``-d``) less what the
    process already maps; the cgroup's limit less its use (v2 memory.max − memory.current along the process's cgroup
    and its parents; v1 memory.limit_in_bytes − memory.usage_in_bytes). ``root`` holds proc/ and sys/ (a test's fake
    ones)."""
    limits = [_available(root)]
    status = _proc_status(root / "proc" / "self" / "status")
    for name, resource_id, used, flag in (
        ("address-space", "RLIMIT_AS", "VmSize", "-v"),
        ("data", "RLIMIT_DATA", "VmData", "-d"),
    ):
        soft = _rlimit(resource_id)
        if soft is not None:
            left = max(0, soft - status.get(used, 0))
            limits.append(
                MemoryLimit(
                    left, f"the process's {name} limit, ulimit {flag}, less the {_size(status.get(used, 0))} it maps"
                )
            )
    limits.extend(_cgroup_limits(root))
    return limits


def memory_limit(root: Path = Path("/")) -> MemoryLimit:
    """The smallest of ``memory_limits``: what a single allocation may use, and which limit that is."""
    return min(memory_limits(root), key=lambda limit: limit.nbytes)


def _available(root: Path) -> MemoryLimit:
    """$T2IBENCH_MEMORY_LIMIT (e.g. '8G') when set, else the memory available now (else the machine's memory)."""
    text = os.environ.get(MEMORY_ENV, "").strip()
    if text:
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", text.lower())
        if not match:
            raise InputError(f"{MEMORY_ENV}={text!r}: give a size such as 8G or 512M")
        return MemoryLimit(int(float(match.group(1)) * _UNITS[match.group(2)]), f"${MEMORY_ENV}")
    available = _proc_status(root / "proc" / "meminfo").get("MemAvailable")
    if available is not None:
        return MemoryLimit(available, f"memory available now; ${MEMORY_ENV} sets another")
    try:
        return MemoryLimit(int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")), "the machine's memory")
    except (ValueError, OSError, AttributeError):
        return MemoryLimit(2**63, "no limit known")


def _proc_status(path: Path) -> dict[str, int]:
    """'Key: N kB' lines of a /proc file (meminfo, self/status) in bytes; {} when it cannot be read."""
    values: dict[str, int] = {}
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return values
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            values[key] = int(parts[0]) * 1024
    return values


def _rlimit(name: str) -> int | None:
    """The soft rlimit ``name`` in bytes, or None when there is none (or no ``resource`` module here)."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    soft, _ = resource.getrlimit(getattr(resource, name))
    return None if soft == resource.RLIM_INFINITY or soft >= UNLIMITED else int(soft)


def _read_int(path: Path) -> int | None:
    """The integer a cgroup file holds; None for 'max', a missing or unreadable file."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_limits(root: Path) -> list[MemoryLimit]:
    """The memory cgroup's limit less its use, for the cgroup this process is in (from /proc/self/cgroup) and each
    parent up to the mount (v2), or the v1 memory controller's; [] when there is none."""
    try:
        lines = (root / "proc" / "self" / "cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    limits = []
    mount = root / "sys" / "fs" / "cgroup"
    for line in lines:
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        relative = path.strip("/")
        if controllers == "":  # v2: the unified hierarchy
            files, limit_name, use_name, label = mount, "memory.max", "memory.current", "cgroup v2 memory.max"
        elif "memory" in controllers.split(","):
            files, limit_name, use_name, label = (
                mount / "memory",
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
                "cgroup v1 memory.limit_in_bytes",
            )
        else:
            continue
        # the process's cgroup as this namespace sees it, then each parent (a container sees its own as the root)
        parts = Path(relative).parts if relative else ()
        for depth in range(len(parts), -1, -1):
            folder = files.joinpath(*parts[:depth])
            limit, used = _read_int(folder / limit_name), _read_int(folder / use_name)
            if limit is not None and limit < UNLIMITED:
                where = "/" + "/".join(parts[:depth])
                limits.append(
                    MemoryLimit(max(0, limit - (used or 0)), f"{label} of {where}, less the {_size(used or 0)} it uses")
                )
    return limits


def _size(n: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n / 2**10:.3g} KiB"


def check_memory(nbytes: float, *, what: str) -> None:
    """Refuse, before allocating, work whose estimated memory ``nbytes`` exceeds memory_limit() (message: both, and
    which limit binds: memory available, $T2IBENCH_MEMORY_LIMIT, ulimit -v/-d, the cgroup's)."""
    limit = memory_limit()
    if not math.isfinite(nbytes) or nbytes > limit.nbytes:
        shown = "more than can be addressed" if not math.isfinite(nbytes) else f"~{_size(nbytes)}"
        raise InputError(
            f"{what} needs {shown} of memory; the limit is {_size(limit.nbytes)} ({limit.source}): reduce it"
        )
