"""Content-keyed embedding cache: a vector is found again only for the same content under the same model.

Keys are SHA-256 digests of the item's content (an image file's bytes, or a text's UTF-8), stored under the
embedder's *fingerprint*: a hash of the model id, its revision or weights checksum, the preprocessing, dtype,
pooling and normalisation. Changing any of them changes the fingerprint, so a changed model or preprocessing
never returns a stale vector (unlike caches keyed by file names).

Layout: ``<root>/<fingerprint>/`` holds ``fingerprint.json`` (what the fingerprint stands for), ``shard-*.npy``
(float32 rows) and ``index.jsonl`` (``{"key", "shard", "row"}`` lines). Shards are written atomically before
their index lines are appended, so a crash leaves at worst an unindexed shard, never an index entry without data.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError
from t2ibench.io import append_line, clean_stale_tmp


def fingerprint(identity: Mapping[str, Any]) -> str:
    """A stable 16-hex-digit hash of a JSON-serialisable description of an embedder."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]


def content_key(item: str | bytes | Path) -> str:
    """SHA-256 of the content: a Path's file bytes, bytes as given, or a string's UTF-8."""
    digest = hashlib.sha256()
    if isinstance(item, Path):
        with open(item, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    elif isinstance(item, bytes):
        digest.update(item)
    else:
        digest.update(b"text:" + item.encode("utf-8"))
    return digest.hexdigest()


def weights_checksum(path: str | Path, *, memo: Path | None = None) -> str:
    """SHA-256 over a weights file or a directory's files (sorted), memoised by (path, size, mtime) in ``memo``."""
    p = Path(path)
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    stamp = json.dumps([[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files])
    cache: dict[str, str] = {}
    if memo is not None and memo.exists():
        try:
            cache = json.loads(memo.read_text())
        except json.JSONDecodeError:
            cache = {}
    if stamp in cache:
        return cache[stamp]
    digest = hashlib.sha256()
    for f in files:
        digest.update(str(f.relative_to(p) if p.is_dir() else f.name).encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    value = digest.hexdigest()
    if memo is not None:
        cache[stamp] = value
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(memo.name + f".{uuid.uuid4().hex}.tmp")
        tmp.write_text(json.dumps(cache))
        os.replace(tmp, memo)
    return value


class EmbeddingCache:
    """Vectors by content key under one embedder fingerprint (see the module docstring for the layout)."""

    def __init__(self, root: str | Path, identity: Mapping[str, Any]) -> None:
        self.identity = dict(identity)
        self.fingerprint = fingerprint(identity)
        self.folder = Path(root) / self.fingerprint
        self.hits = 0
        self.misses = 0
        self._index: dict[str, tuple[str, int]] | None = None
        self._shards: dict[str, NDArray[np.float32]] = {}

    def _load_index(self) -> dict[str, tuple[str, int]]:
        if self._index is None:
            self._index = {}
            path = self.folder / "index.jsonl"
            if path.exists():
                for line in path.read_text(encoding="utf-8").splitlines():
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a torn last line
                    if (self.folder / entry["shard"]).exists():
                        self._index[entry["key"]] = (entry["shard"], int(entry["row"]))
        return self._index

    def __contains__(self, key: str) -> bool:
        return key in self._load_index()

    def __len__(self) -> int:
        return len(self._load_index())

    def get(self, keys: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """The cached vectors among ``keys``."""
        index = self._load_index()
        out = {}
        for key in keys:
            if key in index:
                shard, row = index[key]
                if shard not in self._shards:
                    self._shards[shard] = np.load(self.folder / shard, allow_pickle=False)
                out[key] = self._shards[shard][row]
        return out

    def put(self, keys: Sequence[str], vectors: NDArray[np.floating]) -> None:
        """Store rows of ``vectors`` (len(keys), d) under ``keys``: one new shard, then its index lines."""
        if len(keys) != len(vectors):
            raise InputError(f"{len(keys)} keys for {len(vectors)} vectors")
        if not len(keys):
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        ident = self.folder / "fingerprint.json"
        if not ident.exists():
            ident.write_text(json.dumps(self.identity, indent=2, sort_keys=True, default=str) + "\n")
        clean_stale_tmp(self.folder)
        name = f"shard-{uuid.uuid4().hex}.npy"
        tmp = self.folder / f"{name}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            np.save(fh, np.asarray(vectors, dtype=np.float32), allow_pickle=False)
        os.replace(tmp, self.folder / name)
        # one locked write: two models' embeddings filling one cache at once never interleave their index lines
        lines = "\n".join(json.dumps({"key": k, "shard": name, "row": i}) for i, k in enumerate(keys))
        append_line(self.folder / "index.jsonl", lines, sync=False)
        index = self._load_index()
        for i, key in enumerate(keys):
            index[key] = (name, i)

    def fetch(
        self,
        keys: Sequence[str],
        compute: Callable[[list[int]], NDArray[np.floating]],
    ) -> NDArray[np.float32]:
        """Vectors for ``keys`` in order: cached rows reused, the rest computed by ``compute(positions)`` and stored."""
        found = self.get(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing:
            new = np.asarray(compute(missing), dtype=np.float32)
            unique: dict[str, int] = {}
            for j, i in enumerate(missing):
                unique.setdefault(keys[i], j)
            self.put(list(unique), new[list(unique.values())])
            for j, i in enumerate(missing):
                found[keys[i]] = new[j]
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)
