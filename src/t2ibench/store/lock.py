"""The run lock: one refresh of a store at a time (an exclusive ``flock`` on ``<store>.lock`` naming its holder)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from t2ibench.store.errors import StoreBusyError


@contextlib.contextmanager
def run_lock(store_path: str | Path, *, wait: float = 0.0, holder: str = "") -> Iterator[Path]:
    """Exclusive lock for one refresh of a store: waits up to ``wait`` seconds, then raises StoreBusyError."""
    lock = Path(str(store_path) + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    current = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                    raise StoreBusyError(
                        f"{store_path}: another refresh is running ({current}); wait for it or use --wait SECONDS"
                    ) from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} {holder}".encode(), 0)
        yield lock
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
