"""Stat stamps of local input files (weights, a source folder): below both the plan, which puts them into keys, and
the steps, which refuse files that changed since."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from t2ibench.errors import InputError
from t2ibench.hashing import content_hash, tree_digest
from t2ibench.pipeline.results import LocalFiles


def stamp_of(paths: Sequence[str | Path]) -> LocalFiles:
    """A stat stamp of the local files at ``paths`` (a folder: every file under it; each path resolved; those that do
    not exist, such as hub ids and built-in names, left out): replacing or touching a file changes it."""
    found = [Path(p).resolve() for p in paths if p and Path(p).exists()]
    if not found:
        return LocalFiles(path="", stamp="")
    parts = []
    for path in found:
        info = path.stat()
        parts.append([str(path), tree_digest(path) if path.is_dir() else [info.st_size, info.st_mtime_ns]])
    return LocalFiles(path=";".join(str(p) for p in found), stamp=content_hash(parts))


def check_stamp(local: LocalFiles) -> None:
    """Refuse local input files (weights, a source folder) that changed since their stamp was taken for this run's
    keys: the step would compute from other files than its key names."""
    if local.path and stamp_of(local.path.split(";")) != local:
        raise InputError(f"{local.path}: changed while this refresh ran (its stamp is part of the key); run it again")
