"""How the store fails: its error types, and how DuckDB's messages are read (a lock held elsewhere, a damaged file)."""

from __future__ import annotations

import re
from pathlib import Path

from t2ibench.errors import InputError


class StoreBusyError(InputError):
    """Another process holds the store (or the run lock) longer than the timeout."""


class StoreDamagedError(InputError):
    """The store file is not a DuckDB database, or its contents are damaged: t2ibench never writes into it."""


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


def _damaged(path: Path, exc: BaseException) -> StoreDamagedError:
    size = path.stat().st_size if path.is_file() else 0
    what = "an empty file" if size == 0 else "not a DuckDB database, or damaged"
    return StoreDamagedError(
        f"{path}: {what} ({_first_line(exc)}); t2ibench will not write into it — move it aside (a refresh then "
        "starts a new store) or restore it from a copy"
    )
