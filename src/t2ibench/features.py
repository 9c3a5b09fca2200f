"""What a refresh's feature files are: the record beside them naming each file's embedding space.

A refresh writes a model's features as plain ``.npy`` matrices (``image_features.npy``, ``clip_image_features.npy``,
``clip_text_features.npy`` under ``<data>/embeddings/<model>/<hash>/``), which hold numbers only. Beside them it
writes ``embedding_spaces.json`` (``SPACES_FILE``): for each file, its bytes' digest, the embedder that made it (the
config's spec section, rebuildable through the ``EMBEDDERS`` registry, and the embedder's identity: the weights'
revision or checksum, preprocessing, dtype, pooling, normalisation) and the fixed reference set whose features set
that embedding space's bandwidth (``t2ibench.suites.reference``). ``t2ibench diversity FILE`` reads it to measure
the file under the leaderboard's σ (``t2ibench.diversity``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t2ibench.config import parse_section
from t2ibench.errors import InputError
from t2ibench.hashing import file_digest
from t2ibench.io import loads_strict, read_text_file, write_text_atomic
from t2ibench.specs import EmbedderConfig
from t2ibench.suites.reference import IMAGE_SET, TEXT_SET

SPACES_FILE = "embedding_spaces.json"
FORMAT = "t2ibench embedding spaces 1"
_ENTRY_KEYS = ("sha256", "embedder", "identity", "reference")


@dataclass(frozen=True)
class EmbeddingSpace:
    """One feature file's embedding space: the file's name and digest, the embedder (spec section and identity) that
    made its rows, and the reference set whose features set the space's bandwidth."""

    file: str
    sha256: str  # ``hashing.file_digest`` of the file's bytes when the refresh wrote it
    embedder: EmbedderConfig
    identity: Mapping[str, Any]
    reference: str

    def to_dict(self) -> dict[str, Any]:
        """The file's entry in ``embedding_spaces.json`` (its name is the key)."""
        return {
            "sha256": self.sha256,
            "embedder": dataclasses.asdict(self.embedder),
            "identity": dict(self.identity),
            "reference": self.reference,
        }

    def describe(self) -> str:
        """The embedder in a few words: backend, model (and pretrained tag)."""
        e = self.embedder
        return f"{e.backend} {e.model}" + (f" ({e.pretrained})" if e.pretrained else "")


@dataclass(frozen=True)
class SpaceLookup:
    """What ``space_of`` found for a file: its embedding space, or None and why not (a sentence)."""

    space: EmbeddingSpace | None
    why: str = ""


def write_spaces(folder: str | Path, spaces: Sequence[EmbeddingSpace]) -> Path:
    """``embedding_spaces.json`` in ``folder``, naming the embedding space of each of ``spaces``' files (atomic)."""
    record = {"format": FORMAT, "files": {s.file: s.to_dict() for s in spaces}}
    return write_text_atomic(Path(folder) / SPACES_FILE, json.dumps(record, indent=2, sort_keys=True) + "\n")


def space_of(path: str | Path) -> SpaceLookup:
    """The embedding space of the feature file ``path`` from the ``embedding_spaces.json`` beside it; none (and why)
    when there is no such record, it does not list the file or the file's bytes changed since it was recorded; an
    InputError naming the record when it is not one."""
    p = Path(path)
    record_path = p.parent / SPACES_FILE
    if not record_path.exists():
        return SpaceLookup(None, f"no {SPACES_FILE} beside it names its embedding space")
    where = str(record_path)
    record = loads_strict(read_text_file(record_path, what=f"{SPACES_FILE} record"), where=where)
    if not isinstance(record, dict) or record.get("format") != FORMAT or not isinstance(record.get("files"), dict):
        raise InputError(f"{where}: not an embedding-space record (expected 'format': {FORMAT!r} and 'files')")
    entry = record["files"].get(p.name)
    if entry is None:
        return SpaceLookup(None, f"{SPACES_FILE} beside it does not list {p.name}")
    space = _entry(entry, p.name, where)
    if file_digest(p) != space.sha256:
        return SpaceLookup(None, f"its bytes changed since {SPACES_FILE} recorded its embedding space")
    return SpaceLookup(space)


def _entry(entry: Any, name: str, where: str) -> EmbeddingSpace:
    """One file's entry, checked: every key present and of its type, the embedder a valid spec section."""
    at = f"{where}: files.{name}"
    if not isinstance(entry, dict) or sorted(entry) != sorted(_ENTRY_KEYS):
        raise InputError(f"{at}: expected an object with exactly the keys {', '.join(_ENTRY_KEYS)}")
    sha256, embedder, identity, reference = (entry[k] for k in _ENTRY_KEYS)
    if not isinstance(sha256, str) or not isinstance(identity, dict) or not isinstance(embedder, dict):
        raise InputError(f"{at}: 'sha256' must be a string, 'embedder' and 'identity' objects")
    if reference not in (IMAGE_SET, TEXT_SET):
        raise InputError(f"{at}.reference: {reference!r} is not a reference set ({IMAGE_SET!r} or {TEXT_SET!r})")
    spec = parse_section(EmbedderConfig, embedder, where=f"{at}.embedder")
    return EmbeddingSpace(file=name, sha256=sha256, embedder=spec, identity=identity, reference=reference)
