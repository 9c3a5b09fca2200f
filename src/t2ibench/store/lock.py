"""The run lock: one refresh of a store at a time (an exclusive ``flock`` on ``<store>.lock`` naming its holder)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from t2ibench.errors import InputError
from t2ibench.store.errors import StoreBusyError
from t2ibench.store.schema import LOCK_SUFFIX


def lock_path(store_path: str | Path) -> Path:
    """``<store>.lock`` beside the store file itself (symbolic links, '.' and '..' resolved): every alias of one
    store takes the same lock."""
    return Path(os.path.realpath(store_path) + LOCK_SUFFIX)


def _open_lock(lock: Path) -> int:
    """The lock file, opened without following a link; refused (one line) when it is a link, a folder, a special
    file or a hard link to another file: its content is truncated and rewritten, which must never reach another
    file."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            why = "is a symbolic link"
        elif exc.errno == errno.EISDIR:
            why = "is a folder"
        else:
            why = f"cannot be opened ({exc.strerror})"
        raise InputError(f"{lock}: {why}, not t2ibench's run lock; remove it (t2ibench creates it)") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        why = "a hard link to another file" if stat.S_ISREG(st.st_mode) else "not a regular file"
        raise InputError(f"{lock}: is {why}, not t2ibench's run lock; remove it (t2ibench creates it)")
    return fd


@contextlib.contextmanager
def run_lock(store_path: str | Path, *, wait: float = 0.0, holder: str = "") -> Iterator[Path]:
    """Exclusive lock for one refresh of a store: waits up to ``wait`` seconds, then raises StoreBusyError."""
    lock = lock_path(store_path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_lock(lock)
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
