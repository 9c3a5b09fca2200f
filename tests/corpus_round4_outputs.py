"""Bad-input corpus: the record beside a refresh's feature files (``embedding_spaces.json``, which names each file's
embedding space so ``t2ibench diversity FILE`` measures it under the leaderboard's σ) — broken, of the wrong shape,
naming an unknown embedder or reference set, or describing other bytes — and ``--sigma reference`` on a file that
names no embedding space."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.corpus import case

__all__: list[str] = []

EMBEDDER = {"backend": "dinov2", "model": "tiny-random", "pooling": "cls", "normalize": False, "dtype": "float32"}


def features(tmp: Path, entry: dict[str, Any] | None = None, *, record: str | None = None) -> Path:
    """A (30, 4) feature file with an embedding-space record beside it: ``record`` as text, else one listing the
    file with ``entry``'s keys over a valid entry's."""
    from t2ibench.hashing import file_digest

    path = tmp / "image_features.npy"
    np.save(path, np.random.default_rng(0).standard_normal((30, 4)).astype(np.float32))
    if record is None:
        valid = {"sha256": file_digest(path), "embedder": EMBEDDER, "identity": {}, "reference": "photos-v1"}
        files = {path.name: {**valid, **(entry or {})}}
        record = json.dumps({"format": "t2ibench embedding spaces 1", "files": files})
    (tmp / "embedding_spaces.json").write_text(record)
    return path


def measure(path: Path, **options: Any) -> str:
    """What `t2ibench diversity FILE` says about σ (its note)."""
    from t2ibench.diversity import diversity_of_file

    return diversity_of_file(path, method="exact", show_progress=False, **options).note


@case(
    "spaces-record-not-json",
    "embedding_spaces.json beside a feature file is not JSON",
    "refused in one line naming the record (never a number under a σ it cannot vouch for)",
    r"embedding_spaces\.json: not valid JSON",
)
def _(tmp: Path) -> str:
    return measure(features(tmp, record="{not json"))


@case(
    "spaces-record-wrong-format",
    "embedding_spaces.json without its format marker (another tool's file of that name)",
    "refused in one line naming the record and the marker it lacks",
    r"embedding_spaces\.json: not an embedding-space record \(expected 'format'",
)
def _(tmp: Path) -> str:
    return measure(features(tmp, record=json.dumps({"files": {}})))


@case(
    "spaces-record-missing-key",
    "embedding_spaces.json entry without the embedder's identity",
    "refused in one line naming the record, the file's entry and the keys it must have",
    r"embedding_spaces\.json: files\.image_features\.npy: expected an object with exactly the keys sha256, "
    r"embedder, identity, reference",
)
def _(tmp: Path) -> str:
    path = features(tmp)
    record = json.loads((tmp / "embedding_spaces.json").read_text())
    del record["files"][path.name]["identity"]
    (tmp / "embedding_spaces.json").write_text(json.dumps(record))
    return measure(path)


@case(
    "spaces-record-unknown-backend",
    "embedding_spaces.json naming an embedder backend that does not exist (misspelt)",
    "refused in one line naming the entry's key, with a did-you-mean",
    r"files\.image_features\.npy\.embedder\.backend: .*'dinov3'.*did you mean 'dinov2'",
)
def _(tmp: Path) -> str:
    return measure(features(tmp, {"embedder": {**EMBEDDER, "backend": "dinov3"}}))


@case(
    "spaces-record-unknown-reference",
    "embedding_spaces.json naming a reference set that does not exist",
    "refused in one line naming the entry's key and the sets there are",
    r"files\.image_features\.npy\.reference: 'photos-v9' is not a reference set \('photos-v1' or "
    r"'geneval-prompts-v1'\)",
)
def _(tmp: Path) -> str:
    return measure(features(tmp, {"reference": "photos-v9"}))


@case(
    "spaces-record-stale",
    "a feature file changed after the refresh recorded its embedding space",
    "measured under its own median, the note saying why and that it is not comparable with a leaderboard",
    r"sigma: median .* its bytes changed since embedding_spaces\.json recorded its embedding space\. Its numbers are "
    r"not comparable with a leaderboard's",
)
def _(tmp: Path) -> str:
    path = features(tmp, {"sha256": "0" * 16})
    return measure(path)


@case(
    "spaces-sigma-reference-without-record",
    "`t2ibench diversity FILE --sigma reference` on a file that names no embedding space",
    "refused in one line naming the file and that nothing beside it names its space",
    r"--sigma reference: .*emb\.npy: no embedding_spaces\.json beside it names its embedding space",
)
def _(tmp: Path) -> str:
    path = tmp / "emb.npy"
    np.save(path, np.ones((5, 3), np.float32) * np.arange(5)[:, None])
    return measure(path, sigma="reference")


@case(
    "spaces-embedder-identity-differs",
    "a feature file whose recorded embedder is not the one its spec builds here (other weights, preprocessing)",
    "measured under its own median, the note naming what differs and that it is not comparable with a leaderboard",
    r"not known here: the embedder dinov2 tiny-random here is not the one that made image_features\.npy \(its "
    r"identity differs in .*weights.*\)\. Its numbers are not comparable",
    needs_models=True,
)
def _(tmp: Path) -> str:
    return measure(features(tmp, {"identity": {"embedder": "dinov2", "weights": "facebook/dinov2-base@0123abc"}}))


@case(
    "spaces-json-over-the-record",
    "`t2ibench diversity FILE --json` naming the embedding-space record beside FILE",
    "refused in one line before anything is computed (exit 2): the record is an input, left as it was",
    r"exit 2: .*--json .*embedding_spaces\.json: is the embedding-space record beside EMBEDDINGS .*; write the "
    r"output elsewhere\n unchanged",
)
def _(tmp: Path) -> str:
    from tests.corpus_files import cli

    path = features(tmp)
    record = tmp / "embedding_spaces.json"
    before = record.read_bytes()
    said = cli("diversity", path, "--json", record, "--quiet")
    return said + (" unchanged" if record.read_bytes() == before else " OVERWRITTEN")
