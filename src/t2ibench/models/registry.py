"""Registries of the model backends: a name → a builder that makes the runtime object from its spec, whole.

The CLI, the pipeline and config validation all go through these registries, so a backend is added in one
place (a ``register`` call here, beside the others) and every entry point knows it, with did-you-mean errors for
typos. A registry is typed by the spec it reads and the object it builds (``Registry[SpecT, ProductT]``):

* ``GENERATORS``: ``build(name, spec, device=..., show_progress=..., source=...)`` → a ``Generator``
  (``spec``: a ``GeneratorConfig``; ``source`` is the folder backend's source folder, resolved).
* ``DETECTORS``: ``build(name, spec, device=..., label_space=...)`` → a ``Detector`` (``spec``: a ``DetectorConfig``;
  ``label_space``: the caller's ``t2ibench.vision.LabelSpace`` its labels are named in, None for the model's own).
* ``COLOUR_CLASSIFIERS``: ``build(name, spec, device=..., colors=...)`` → a ``ColourClassifier`` (``spec``:
  ``ColourConfig``; ``colors``: the colour names it chooses among, in the caller's order).
* ``EMBEDDERS``: ``build(name, spec, device=..., show_progress=...)`` → an ``Embedder`` (``EmbedderConfig``).
* ``VQA_JUDGES``: ``build(name, spec, device=...)`` → a ``VQAJudge`` (``VQAJudgeConfig``): a vision-language
  judge answering questions about images with next-token probabilities (GenEval 2's Qwen3-VL, T2I-CompBench++'s
  BLIP VQA).
* ``OPEN_DETECTORS``: ``build(name, spec, device=...)`` → an ``OpenVocabDetector`` (``OpenDetectorConfig``): boxes of
  objects named by text.
* ``DEPTH_MODELS``: ``build(name, spec, device=...)`` → a ``DepthModel`` (``DepthConfig``): relative depth maps.

At module level this imports only ``t2ibench.specs`` and ``t2ibench.errors``: ``t2ibench.config`` imports it to check
backend names without loading any adapter. Builders import their adapter module when called (the adapters never
import this module or the config, so there is no circle either way), and the adapters load torch only when a model
is loaded: importing this module never loads torch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Generic, TypeVar

from t2ibench.errors import InputError, unknown_choice
from t2ibench.specs import (
    ColourConfig,
    DepthConfig,
    DetectorConfig,
    EmbedderConfig,
    GeneratorConfig,
    OpenDetectorConfig,
    VQAJudgeConfig,
)

if TYPE_CHECKING:  # the protocols of what the registries build (their modules load when a builder runs)
    from t2ibench.models.colour import ColourClassifier
    from t2ibench.models.depth import DepthModel
    from t2ibench.models.detection import Detector
    from t2ibench.models.embedding import Embedder
    from t2ibench.models.generation import Generator
    from t2ibench.models.owl import OpenVocabDetector
    from t2ibench.models.vqa import VQAJudge
    from t2ibench.vision import LabelSpace

SpecT = TypeVar("SpecT")
ProductT = TypeVar("ProductT")
Builder = Callable[Concatenate[SpecT, ...], ProductT]  # (spec, **the registry's keyword options) → the object

_KEPT = threading.local()  # per thread: registry kind → [(arguments key, object)], most recent last


@dataclass
class Registry(Generic[SpecT, ProductT]):
    """Named builders of one kind of backend, each making a ``ProductT`` from a ``SpecT``; ``keep``: how many built
    objects ``reuse`` keeps per thread."""

    kind: str
    builders: dict[str, Builder[SpecT, ProductT]] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    keep: int = 1

    def register(self, name: str, description: str) -> Callable[[Builder[SpecT, ProductT]], Builder[SpecT, ProductT]]:
        """Decorator: register ``builder`` under ``name`` (a second registration of a name is an error)."""

        def add(builder: Builder[SpecT, ProductT]) -> Builder[SpecT, ProductT]:
            if name in self.builders:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self.builders[name] = builder
            self.descriptions[name] = description
            return builder

        return add

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self.builders)

    def check(self, name: str) -> str:
        """``name`` if registered, else an InputError with a did-you-mean suggestion."""
        if name not in self.builders:
            raise unknown_choice(self.kind, name, self.names())
        return name

    def build(self, name: str, spec: SpecT, /, **options: Any) -> ProductT:
        """The runtime object of backend ``name``, made from ``spec`` (whole) and the registry's keyword options."""
        return self.builders[self.check(name)](spec, **options)

    def reuse(self, name: str, spec: SpecT, /, **options: Any) -> ProductT:
        """As ``build``, but the calling thread gets the same object back for the same arguments while it is among
        the last ``keep`` it built here: consecutive prompt shards of one model on one worker load the weights
        once. Objects are never shared between threads (a diffusers pipeline is not safe to call concurrently);
        the oldest is dropped before a new one is built, so a thread holds at most ``keep`` models."""
        key = repr((name, spec, sorted(options.items())))
        kept: list[tuple[str, Any]] = getattr(_KEPT, self.kind, None) or []
        for i, (k, obj) in enumerate(kept):
            if k == key:
                kept.append(kept.pop(i))
                built: ProductT = obj
                return built
        while len(kept) >= self.keep:
            kept.pop(0)
        setattr(_KEPT, self.kind, kept)
        made = self.build(name, spec, **options)
        kept.append((key, made))
        return made


GENERATORS: Registry[GeneratorConfig, Generator] = Registry("generator backend")
DETECTORS: Registry[DetectorConfig, Detector] = Registry("detector backend")
COLOUR_CLASSIFIERS: Registry[ColourConfig, ColourClassifier] = Registry("colour classifier backend")
EMBEDDERS: Registry[EmbedderConfig, Embedder] = Registry("embedder backend", keep=2)  # image embedder and CLIP
VQA_JUDGES: Registry[VQAJudgeConfig, VQAJudge] = Registry("VQA judge backend")
OPEN_DETECTORS: Registry[OpenDetectorConfig, OpenVocabDetector] = Registry("open-vocabulary detector backend")
DEPTH_MODELS: Registry[DepthConfig, DepthModel] = Registry("depth model backend")


@GENERATORS.register("diffusers", "a diffusers pipeline by hub id or folder (SD 1.x/2.x, SD-XL, IF), or tiny-random")
def _diffusers(spec: GeneratorConfig, *, device: str, show_progress: bool, source: Path | None) -> Generator:
    from t2ibench.models.generation import DiffusersGenerator

    return DiffusersGenerator(spec, device=device, show_progress=show_progress)


@GENERATORS.register("folder", "import images made elsewhere, in GenEval's folder layout")
def _folder(spec: GeneratorConfig, *, device: str, show_progress: bool, source: Path | None) -> Generator:
    from t2ibench.models.generation import FolderImporter

    if source is None:
        raise InputError(f"generator.source {spec.source!r}: the folder backend needs its source folder")
    return FolderImporter(source, images_per_prompt=spec.images_per_prompt)


@GENERATORS.register(
    "compositor", "ground truth by construction: real cut-outs composed per prompt (faithful, sloppy:P, collapsed)"
)
def _compositor(spec: GeneratorConfig, *, device: str, show_progress: bool, source: Path | None) -> Generator:
    from t2ibench.models.compositor import CompositorGenerator

    return CompositorGenerator(spec, show_progress=show_progress)


@DETECTORS.register("hf", "Mask2Former through Hugging Face transformers (default: Swin-S COCO instance)")
def _hf_detector(spec: DetectorConfig, *, device: str, label_space: LabelSpace | None = None) -> Detector:
    from t2ibench.models.detection import HFMask2Former

    return HFMask2Former(spec, device=device, label_space=label_space)


@DETECTORS.register("mmdet", "GenEval's own mmdet 2.x Mask2Former (the optional 'mmdet' extra)")
def _mmdet_detector(spec: DetectorConfig, *, device: str, label_space: LabelSpace | None = None) -> Detector:
    from t2ibench.models.detection import MMDetMask2Former

    return MMDetMask2Former(spec, device=device, label_space=label_space)


@DETECTORS.register("opencv-ssd", "lite: SSD-MobileNet-v2 COCO through OpenCV DNN on CPU, GrabCut masks (offline)")
def _ssd_detector(spec: DetectorConfig, *, device: str, label_space: LabelSpace | None = None) -> Detector:
    from t2ibench.models.ssd import SSDMobileNetDetector

    return SSDMobileNetDetector(spec, label_space=label_space)


@COLOUR_CLASSIFIERS.register(
    "clip", "OpenCLIP zero-shot over the caller's colours on the masked crop (GenEval's reference)"
)
def _clip_colour(spec: ColourConfig, *, device: str, colors: Sequence[str]) -> ColourClassifier:
    from t2ibench.models.colour import ClipColourClassifier

    return ClipColourClassifier(spec, colors=colors, device=device)


@COLOUR_CLASSIFIERS.register("lite", "lite: the dominant CIELAB colour of the masked pixels by a fixed rule")
def _lite_colour(spec: ColourConfig, *, device: str, colors: Sequence[str]) -> ColourClassifier:
    from t2ibench.models.colour import LabColourClassifier

    return LabColourClassifier(colors=colors)  # a fixed rule: the spec names no model and no setting it reads


@EMBEDDERS.register("open_clip", "OpenCLIP image and text embeddings")
def _open_clip(spec: EmbedderConfig, *, device: str, show_progress: bool) -> Embedder:
    from t2ibench.models.embedding import OpenCLIPEmbedder

    # open_clip's names; 'auto' is the weights' own precision as open_clip loads them: fp32
    precision = {"auto": "fp32", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[spec.dtype]
    return OpenCLIPEmbedder(spec, device=device, precision=precision, show_progress=show_progress)


@EMBEDDERS.register("dinov2", "DINOv2 image embeddings through transformers (CLS or mean pooling)")
def _dinov2(spec: EmbedderConfig, *, device: str, show_progress: bool) -> Embedder:
    from t2ibench.models.embedding import DINOv2Embedder

    return DINOv2Embedder(spec, device=device, show_progress=show_progress)


@EMBEDDERS.register("mobilenet-ssd", "lite: SSD-MobileNet-v2's backbone features (1280-d, mean-pooled), offline")
def _mobilenet(spec: EmbedderConfig, *, device: str, show_progress: bool) -> Embedder:
    from t2ibench.models.ssd import MobileNetFeatures

    return MobileNetFeatures(spec, show_progress=show_progress)


@EMBEDDERS.register(
    "mobilenet+structure", "lite: MobileNet-SSD image features paired with the prompt's structure (no text encoder)"
)
def _mobilenet_structure(spec: EmbedderConfig, *, device: str, show_progress: bool) -> Embedder:
    from t2ibench.models.ssd import MobileNetPromptStructure

    return MobileNetPromptStructure(spec, show_progress=show_progress)


@VQA_JUDGES.register("qwen3-vl", "Qwen3-VL through transformers (GenEval 2's judge: Qwen/Qwen3-VL-8B-Instruct)")
def _qwen3_vl(spec: VQAJudgeConfig, *, device: str) -> VQAJudge:
    from t2ibench.models.vqa import Qwen3VLJudge

    return Qwen3VLJudge(spec, device=device)


@VQA_JUDGES.register("blip-vqa", "BLIP VQA's yes-probability through transformers (T2I-CompBench++'s attribute judge)")
def _blip_vqa(spec: VQAJudgeConfig, *, device: str) -> VQAJudge:
    from t2ibench.models.blip import BlipVQAJudge

    return BlipVQAJudge(spec, device=device)


@OPEN_DETECTORS.register("owlv2", "OWLv2 through transformers, queried with each object's name")
def _owlv2(spec: OpenDetectorConfig, *, device: str) -> OpenVocabDetector:
    from t2ibench.models.owl import Owlv2Detector

    return Owlv2Detector(spec, device=device)


@DEPTH_MODELS.register("dpt", "DPT (MiDaS) relative depth through transformers")
def _dpt(spec: DepthConfig, *, device: str) -> DepthModel:
    from t2ibench.models.depth import DPTDepth

    return DPTDepth(spec, device=device)


def device_name(setting: str) -> str:
    """What ``runtime.device`` resolves to here, by name: 'cuda:0 NVIDIA H200', 'mps', or 'cpu: <CPU model>' (torch
    is imported only when it is installed and the setting may pick an accelerator)."""
    import importlib.util
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    if setting == "cpu" or importlib.util.find_spec("torch") is None:
        return f"cpu: {cpu}"
    import torch

    if setting.startswith("cuda") or (setting == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            return f"{setting} requested, none available (cpu: {cpu})"
        index = int(setting.split(":")[1]) if ":" in setting else 0
        return f"cuda:{index} {torch.cuda.get_device_name(index)}"
    if setting in ("mps", "auto") and torch.backends.mps.is_available():
        return "mps"
    return f"cpu: {cpu}"
