"""The typed values the pipeline's steps pass along: frozen, JSON-serialisable (Prefect caches them as JSON), and
small — paths and hashes, never arrays. The flow passes them from step to step; the store step turns them into
rows (``t2ibench.pipeline.rows``).

Every result has a ``digest()`` over what it holds — image bytes' hashes, a file's bytes, scores — and never over a
path, a count or the seconds it took: it is what a downstream step's cache key holds of it
(``t2ibench.pipeline.identity``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError
from t2ibench.hashing import content_hash, file_digest, to_plain
from t2ibench.pipeline.identity import Content


@dataclass(frozen=True)
class PromptSet:
    """The selected prompt records of a suite, as (index, record) pairs in suite order: a setting (what a model
    version is generated and judged for), identified by its records' content."""

    records: tuple[tuple[int, dict[str, Any]], ...]

    def digest(self) -> str:
        """Content hash of the (index, record) pairs."""
        return content_hash([[int(i), r] for i, r in self.records])

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return iter((int(i), dict(r)) for i, r in self.records)

    def __len__(self) -> int:
        return len(self.records)

    def by_index(self) -> dict[int, dict[str, Any]]:
        """Index → record."""
        return {int(i): dict(r) for i, r in self.records}

    def shard(self, start: int, stop: int) -> PromptSet:
        """The records at positions [start, stop) (a prompt shard)."""
        return PromptSet(self.records[start:stop])

    @classmethod
    def of(cls, pairs: Sequence[tuple[int, Mapping[str, Any]]]) -> PromptSet:
        """From (index, record) pairs."""
        return cls(tuple((int(i), dict(r)) for i, r in pairs))


@dataclass(frozen=True)
class LocalFiles(Content):
    """A stamp of the local files a step reads besides its results (an imported folder, local weights): their
    resolved path and a stat digest (relative path, size, mtime of every file); ``path`` '' for none."""

    path: str
    stamp: str

    def digest(self) -> str:
        """Hash of the path and the stamp: replacing or touching a file changes it."""
        return content_hash([self.path, self.stamp])


@dataclass(frozen=True)
class ReferenceStamp:
    """A fixed, named reference set (``t2ibench.suites.reference``) and the digest of what it holds now (the installed
    photos' bytes, the prompts' text): a setting — part of the evaluation version — so a package release that
    changed a photo makes a new σ and a new version."""

    name: str
    content: str


@dataclass(frozen=True)
class ImageInfo:
    """One generated (or imported) image: its prompt, sample number, file, content hash and seed."""

    prompt_index: int
    sample: int
    path: str
    sha256: str
    seed: int | None


@dataclass(frozen=True)
class Generated(Content):
    """A model's images for the selected prompts, in (prompt, sample) order, and the folder's manifest."""

    model: str
    folder: str
    images: tuple[ImageInfo, ...]
    manifest: dict[str, Any]
    elapsed_s: float = 0.0

    def images_hash(self) -> str:
        """Content hash of the images (their prompt, sample and bytes)."""
        return content_hash([[i.prompt_index, i.sample, i.sha256] for i in self.images])

    def digest(self) -> str:
        """The model's name, its images' content and the manifest's generation fingerprint (not the folder)."""
        return content_hash([self.model, self.images_hash(), self.manifest.get("fingerprint"), self.smoke])

    @property
    def smoke(self) -> bool:
        """True when the images came from a random-weight smoke model."""
        return bool(self.manifest.get("generator", {}).get("smoke"))

    def check_judged(self, judged: set[tuple[int, int]], what: str) -> None:
        """InputError '<model>: N images have no <what> (e.g. (prompt, sample))' unless every image has a record
        among the (prompt index, sample) keys ``judged``."""
        missing = [(i.prompt_index, i.sample) for i in self.images if (i.prompt_index, i.sample) not in judged]
        if missing:
            raise InputError(f"{self.model}: {len(missing)} images have no {what} (e.g. {missing[0]})")


@dataclass(frozen=True)
class Judged(Content):
    """A benchmark's judgement of a model's images: its results file (one record per image), the file's hash and a
    summary (GenEval's: the Table-2 counts)."""

    model: str
    results: str
    sha256: str
    summary: dict[str, Any]
    elapsed_s: float = 0.0

    def digest(self) -> str:
        """The model's name and the results file's bytes."""
        return content_hash([self.model, self.sha256])

    def checked(self) -> str:
        """The results file's path, refused (InputError) when it is missing or changed since it was judged."""
        if not Path(self.results).is_file() or file_digest(self.results) != self.sha256:
            raise InputError(f"{self.results}: the results file is missing or changed since it was judged")
        return self.results


@dataclass(frozen=True)
class SuiteFile(Content):
    """A benchmark's prompt file as it was read (a released suite file): its path and SHA-256; content,
    identified by its bytes (the prompts selected from it are a setting: ``PromptSet``)."""

    path: str
    sha256: str

    def digest(self) -> str:
        """The file's bytes."""
        return content_hash([self.sha256])


@dataclass(frozen=True)
class BenchmarkScores(Content):
    """A VQA-judged benchmark's tables of one model version (GenEval 2: overall, per skill, per atom count):
    ``benchmark_scores`` rows with bootstrap intervals at ``level``, and the protocol its answers were measured
    under (the judge as loaded, the answer rule, the suite file and the prompts judged)."""

    model: str
    benchmark: str
    rows: tuple[dict[str, Any], ...]
    protocol: dict[str, Any]
    level: float
    elapsed_s: float = 0.0

    def digest(self) -> str:
        """Every row and the protocol."""
        return content_hash([self.model, self.benchmark, list(self.rows), self.protocol, self.level])


@dataclass(frozen=True)
class SelfTest(Content):
    """The GenEval evaluator's self-test (``benchmarks.geneval.selftest.SelfTestReport.to_dict()``): per truth set
    (compositor, photos) the per-task agreement, false passes, false fails and false passes on absent objects."""

    report: dict[str, Any]
    elapsed_s: float = 0.0

    def digest(self) -> str:
        """The whole report."""
        return content_hash(self.report)


@dataclass(frozen=True)
class EmbeddingFiles:
    """The three feature matrices of one model version (paths as strings, so results serialise as JSON)."""

    image: str
    clip_image: str
    clip_text: str

    def paths(self) -> list[str]:
        """The three files."""
        return [self.image, self.clip_image, self.clip_text]


@dataclass(frozen=True)
class Embedded(Content):
    """A model's feature files, their hashes, which prompt and sample each row is, and truncated prompts."""

    model: str
    files: EmbeddingFiles
    sha256: EmbeddingFiles  # the same three names, holding each file's content hash
    image_prompt_ids: tuple[int, ...]
    samples: tuple[int, ...]
    text_prompt_ids: tuple[int, ...]
    truncated_prompts: tuple[int, ...] = ()
    elapsed_s: float = 0.0

    def digest(self) -> str:
        """The model's name, the three files' bytes and which prompt and sample each row is."""
        ids = [self.image_prompt_ids, self.samples, self.text_prompt_ids, self.truncated_prompts]
        return content_hash([self.model, to_plain(self.sha256), to_plain(ids)])


@dataclass(frozen=True)
class Bandwidth(Content):
    """A Gaussian bandwidth σ (embedding units) and where it comes from: ``source`` 'fixed' (a configured number),
    'reference:<set>@<digest>' (the median pairwise distance of the embedder's features of a fixed, named
    reference set: the same for every model) or 'median:<model>' (this model's own median: not comparable)."""

    value: float
    source: str
    n: int = 0  # vectors the median was taken over (0 for a fixed σ)

    def digest(self) -> str:
        """The value and its source."""
        return content_hash([self.value, self.source, self.n])

    @property
    def per_model(self) -> bool:
        """True for a model's own median: its scores are not comparable with another model's."""
        return self.source.startswith("median:")

    @property
    def kind(self) -> str:
        """'fixed', 'reference' or 'median' (the part of ``source`` before the colon)."""
        return self.source.split(":", 1)[0]


@dataclass(frozen=True)
class ShardState(Content):
    """The additive FKEA (or cosine) state of one shard of a model's image features; ``state`` None if empty."""

    shard: int
    shards: int
    n: int
    state: str | None
    sha256: str = ""  # of the state file's bytes ('' when empty)
    elapsed_s: float = 0.0

    def digest(self) -> str:
        """The shard's place and its state file's bytes."""
        return content_hash([self.shard, self.shards, self.sha256])


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
    # where σ came from: 'fixed', 'reference:<set>@<digest>' or 'median:<model>' (None: no Gaussian kernel)
    sigma_source: str | None = None


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
class Scores(Content):
    """The scores and modes one metric step computed for a model (FKEA diversity, or Scendi)."""

    model: str
    metrics: tuple[MetricRecord, ...]
    modes: tuple[ModeRecord, ...]
    n: int
    elapsed_s: float = 0.0

    def digest(self) -> str:
        """Every score and mode."""
        return content_hash([self.model, to_plain(self.metrics), to_plain(self.modes)])


@dataclass(frozen=True)
class TaskScores(Content):
    """GenEval's Table 2 of one model version: ``geneval_scores`` rows (per task and 'overall', with bootstrap
    intervals at ``level``), computed from its verdicts."""

    model: str
    rows: tuple[dict[str, Any], ...]
    level: float
    elapsed_s: float = 0.0

    def digest(self) -> str:
        """Every row."""
        return content_hash([self.model, list(self.rows), self.level])


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
    answers: int = 0  # VQA-judged benchmarks' stored answers (GenEval 2's questions)
