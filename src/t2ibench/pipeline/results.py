"""The typed results the pipeline's steps return: frozen, JSON-serialisable (Prefect caches them as JSON), and
small — paths and hashes, never arrays. The flow passes them from step to step; the store step turns them into
rows (``t2ibench.pipeline.rows``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from t2ibench.hashing import content_hash
from t2ibench.workspace import EmbeddingFiles


@dataclass(frozen=True)
class ImageInfo:
    """One generated (or imported) image: its prompt, sample number, file, content hash and seed."""

    prompt_index: int
    sample: int
    path: str
    sha256: str
    seed: int | None


@dataclass(frozen=True)
class Generated:
    """A model's images for the selected prompts, in (prompt, sample) order, and the folder's manifest."""

    model: str
    folder: str
    images: tuple[ImageInfo, ...]
    manifest: dict[str, Any]
    elapsed_s: float = 0.0

    def images_hash(self) -> str:
        """Content hash of the images (their prompt, sample and bytes): what every later step's cache key uses."""
        return content_hash([[i.prompt_index, i.sample, i.sha256] for i in self.images])

    @property
    def smoke(self) -> bool:
        """True when the images came from a random-weight smoke model."""
        return bool(self.manifest.get("generator", {}).get("smoke"))


@dataclass(frozen=True)
class Judged:
    """GenEval's verdicts of a model's images: the results file, its hash and the Table-2 summary."""

    model: str
    results: str
    sha256: str
    summary: dict[str, Any]
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Embedded:
    """A model's feature files, their hashes, which prompt and sample each row is, and truncated prompts."""

    model: str
    files: EmbeddingFiles
    sha256: EmbeddingFiles  # the same three names, holding each file's content hash
    image_prompt_ids: tuple[int, ...]
    samples: tuple[int, ...]
    text_prompt_ids: tuple[int, ...]
    truncated_prompts: tuple[int, ...] = ()
    image_embedder: str = ""  # section hashes of the two embedders
    clip: str = ""
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class ShardState:
    """The additive FKEA (or cosine) state of one shard of a model's image features; ``state`` None if empty."""

    shard: int
    shards: int
    n: int
    state: str | None
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class MetricRecord:
    """One stored score (a row of the ``metrics`` table, without the version columns)."""

    metric: str
    params_key: str
    kernel: str
    alpha: float | None
    sigma: float | None
    rff_dim: int | None
    n: int
    seed: int
    value: float
    error_bound: float | None
    details: dict[str, Any] = field(default_factory=dict)
    ci_low: float | None = None  # bootstrap interval (None where not computed; ci_method says which)
    ci_high: float | None = None
    ci_level: float | None = None
    ci_method: str | None = None


@dataclass(frozen=True)
class ModeRecord:
    """One stored mode (a row of the ``modes`` table): its share and the image positions at its extremes."""

    source: str
    mode_index: int
    eigenvalue: float
    share: float
    entropy_share: float
    top: tuple[int, ...]
    bottom: tuple[int, ...]
    mass: float = 0.0
    top_scores: tuple[float, ...] = ()
    bottom_scores: tuple[float, ...] = ()


@dataclass(frozen=True)
class Scores:
    """The scores and modes one metric step computed for a model (FKEA diversity, or Scendi)."""

    model: str
    metrics: tuple[MetricRecord, ...]
    modes: tuple[ModeRecord, ...]
    n: int
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Stored:
    """What the store step did for one model version."""

    model: str
    unchanged: bool
    model_hash: str
    evaluator_hash: str
    images: int
    verdicts: int
    metrics: int
