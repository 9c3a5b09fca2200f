"""How the store fails: its error types, and how DuckDB's messages are read (a lock held elsewhere, a damaged file);
which store files this process has found damaged (never written again while they are the same file)."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError


class StoreBusyError(InputError):
    """Another process holds the store (or the run lock) longer than the timeout."""


class StoreRefusedError(InputError):
    """The store cannot be verified (damaged, a newer schema, a schema a user's SQL broke): nothing is written."""


class StoreDamagedError(StoreRefusedError):
    """The store file is not a DuckDB database, or its contents are damaged: t2ibench never writes into it.

    Constructed with ``path``, the file is remembered as damaged in this process (``found_damaged``), also when the
    error is unpickled in another process (a task's error re-raised by the flow), until the file is replaced."""

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        super().__init__(message)
        self.path = None if path is None else str(path)
        if path is not None:
            _remember(Path(path))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.path))


class StoreVersionError(StoreRefusedError):
    """The store was written by a newer t2ibench schema (or its version record is unreadable)."""


# files this process found damaged, by identity (device, inode, size, mtime): a store moved aside and replaced by a
# new file is a different file; the damaged one is never written into, whichever name or alias opens it
_DAMAGED: set[tuple[int, int, int, int]] = set()
_DAMAGED_LOCK = threading.Lock()


def file_identity(path: Path) -> tuple[int, int, int, int] | None:
    """(device, inode, size, mtime in ns) of the file at ``path`` (None: none there): a rewritten or replaced file
    has another."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _remember(path: Path) -> None:
    identity = file_identity(path)
    if identity is not None:
        with _DAMAGED_LOCK:
            _DAMAGED.add(identity)


def found_damaged(path: str | Path) -> bool:
    """Whether this process already found the file at ``path`` (the same file, unchanged since) damaged."""
    identity = file_identity(Path(path))
    with _DAMAGED_LOCK:
        return identity is not None and identity in _DAMAGED


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _lock_holder(message: str) -> str:
    """'pid 123: python -m flows.leaderboard_refresh ...' from DuckDB's lock message (best effort)."""
    match = re.search(r"\(PID (\d+)\)", message)
    if not match:
        return "another process"
    pid = match.group(1)
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        command = " ".join(a.decode(errors="replace") for a in argv if a)
    except OSError:
        command = ""
    return f"pid {pid}" + (f": {command[:160]}" if command else "")


DAMAGE_MARKERS = (
    "not a valid duckdb database file",
    "corrupt database file",
    "could not read enough bytes",
    "failure while replaying wal",
    "checksum",
)


def _is_damage(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(marker in text for marker in DAMAGE_MARKERS)


def _damaged(path: Path, exc: BaseException | str) -> StoreDamagedError:
    size = path.stat().st_size if path.is_file() else 0
    what = "an empty file" if size == 0 else "not a DuckDB database, or damaged"
    why = exc if isinstance(exc, str) else _first_line(exc)
    return StoreDamagedError(
        f"{path}: {what} ({why}); t2ibench will not write into it — move it aside (a refresh then "
        "starts a new store) or restore it from a copy",
        path,
    )
