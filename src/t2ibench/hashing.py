"""Content identities: the hashes that key caches, name output versions and say which code made a result.

Every hash is SHA-256 over a canonical form (JSON with sorted keys for values, bytes for files), truncated to 16
hex digits where it names a folder or a cache entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from t2ibench import __version__


def to_plain(value: Any) -> Any:
    """Dataclasses, tuples, paths and infinities as plain JSON-ready values (the canonical form of a config)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return value


def content_hash(value: Any) -> str:
    """16-hex-digit SHA-256 of a JSON-serialisable value (dataclasses and tuples allowed)."""
    return hashlib.sha256(json.dumps(to_plain(value), sort_keys=True, default=str).encode()).hexdigest()[:16]


def section_hash(section: Any) -> str:
    """16-hex-digit SHA-256 of a config section's canonical JSON (the same as ``content_hash``)."""
    return content_hash(section)


@cache
def code_version() -> str:
    """Package version plus a hash of the library's Python sources (a code change invalidates caches)."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def file_sha256(path: str | Path) -> str:
    """SHA-256 (64 hex digits) of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def record_sha256(record: Mapping[str, Any]) -> str:
    """SHA-256 (64 hex digits) of a record's canonical JSON (sorted keys): a prompt record (what an image or verdict
    was for), or a resumable results row with its settings (``t2ibench.resume``)."""
    return hashlib.sha256(json.dumps(dict(record), sort_keys=True).encode()).hexdigest()


def file_digest(path: str | Path) -> str:
    """SHA-256 (16 hex digits) of a file's bytes."""
    return file_sha256(path)[:16]


def tree_digest(folder: str | Path) -> str:
    """A stat digest (relative path, size, mtime) of every file under ``folder``; '' if it is not a folder."""
    where = Path(folder)
    if not where.is_dir():
        return ""
    stamps = []
    for path in sorted(where.rglob("*")):
        if path.is_file():
            info = path.stat()
            stamps.append([str(path.relative_to(where)), info.st_size, info.st_mtime_ns])
    return content_hash(stamps)
