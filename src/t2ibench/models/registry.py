"""Registries of the model backends: a name → a builder that makes the runtime object from its config section.

The CLI, the pipeline and config validation all go through these four registries, so a backend is added in one
place (a ``register`` call beside its class) and every entry point knows it, with did-you-mean errors for typos.
Builders import their model libraries lazily: importing this module never loads torch.

* ``GENERATORS``: ``build(name, spec, device=..., show_progress=..., source=...)`` → a ``Generator``
  (``spec`` is a ``GeneratorConfig``; ``source`` is the folder backend's source folder, resolved).
* ``DETECTORS``: ``build(name, cfg, device=...)`` → a ``Detector`` (``cfg`` is a ``DetectorConfig``).
* ``COLOUR_CLASSIFIERS``: ``build(name, cfg, device=...)`` → a colour classifier (``cfg``: ``ColourConfig``).
* ``EMBEDDERS``: ``build(name, cfg, device=..., show_progress=...)`` → an ``Embedder`` (``EmbedderConfig``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from t2ibench.errors import unknown_choice

_KEPT = threading.local()  # per thread: registry kind → [(arguments key, object)], most recent last


@dataclass
class Registry:
    """Named builders of one kind of backend; ``keep``: how many built objects ``reuse`` keeps per thread."""

    kind: str
    builders: dict[str, Callable[..., Any]] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    keep: int = 1

    def register(self, name: str, description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register ``builder`` under ``name`` (a second registration of a name is an error)."""

        def add(builder: Callable[..., Any]) -> Callable[..., Any]:
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

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The runtime object of backend ``name``."""
        return self.builders[self.check(name)](*args, **kwargs)

    def reuse(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """As ``build``, but the calling thread gets the same object back for the same arguments while it is among
        the last ``keep`` it built here: consecutive prompt shards of one model on one worker load the weights
        once. Objects are never shared between threads (a diffusers pipeline is not safe to call concurrently);
        the oldest is dropped before a new one is built, so a thread holds at most ``keep`` models."""
        key = repr((name, args, sorted(kwargs.items())))
        kept: list[tuple[str, Any]] = getattr(_KEPT, self.kind, None) or []
        for i, (k, obj) in enumerate(kept):
            if k == key:
                kept.append(kept.pop(i))
                return obj
        while len(kept) >= self.keep:
            kept.pop(0)
        setattr(_KEPT, self.kind, kept)
        obj = self.build(name, *args, **kwargs)
        kept.append((key, obj))
        return obj


GENERATORS = Registry("generator backend")
DETECTORS = Registry("detector backend")
COLOUR_CLASSIFIERS = Registry("colour classifier backend")
EMBEDDERS = Registry("embedder backend", keep=2)  # the image embedder and CLIP, used together


@GENERATORS.register("diffusers", "a diffusers pipeline by hub id or folder (SD 1.x/2.x, SD-XL, IF), or tiny-random")
def _diffusers(spec: Any, *, device: str, show_progress: bool, source: Path | None) -> Any:
    from t2ibench.models.generation import DiffusersGenerator

    return DiffusersGenerator(spec, device=device, show_progress=show_progress)


@GENERATORS.register("folder", "import images made elsewhere, in GenEval's folder layout")
def _folder(spec: Any, *, device: str, show_progress: bool, source: Path | None) -> Any:
    from t2ibench.errors import InputError
    from t2ibench.models.generation import FolderImporter

    if source is None:
        raise InputError(f"generator.source {spec.source!r}: the folder backend needs its source folder")
    return FolderImporter(source, images_per_prompt=spec.images_per_prompt)


@GENERATORS.register(
    "compositor", "ground truth by construction: real cut-outs composed per prompt (faithful, sloppy:P, collapsed)"
)
def _compositor(spec: Any, *, device: str, show_progress: bool, source: Path | None) -> Any:
    from t2ibench.models.compositor import CompositorGenerator

    return CompositorGenerator(spec, show_progress=show_progress)


@DETECTORS.register("hf", "Mask2Former through Hugging Face transformers (default: Swin-S COCO instance)")
def _hf_detector(cfg: Any, *, device: str) -> Any:
    from t2ibench.models.detection import HFMask2Former

    return HFMask2Former(cfg.model, revision=cfg.revision, device=device, resize=cfg.resize)


@DETECTORS.register("mmdet", "GenEval's own mmdet 2.x Mask2Former (the optional 'mmdet' extra)")
def _mmdet_detector(cfg: Any, *, device: str) -> Any:
    from t2ibench.models.detection import GENEVAL_MMDET_CHECKPOINT, MMDetMask2Former

    return MMDetMask2Former(cfg.mmdet_config, cfg.mmdet_checkpoint or GENEVAL_MMDET_CHECKPOINT, device=device)


@DETECTORS.register("opencv-ssd", "lite: SSD-MobileNet-v2 COCO through OpenCV DNN on CPU, GrabCut masks (offline)")
def _ssd_detector(cfg: Any, *, device: str) -> Any:
    from t2ibench.models.ssd import SSDMobileNetDetector

    return SSDMobileNetDetector(cfg.model)


@COLOUR_CLASSIFIERS.register("clip", "OpenCLIP zero-shot over GenEval's ten colours on the masked crop (reference)")
def _clip_colour(cfg: Any, *, device: str) -> Any:
    from t2ibench.models.colour import ClipColourClassifier

    return ClipColourClassifier(cfg.arch, cfg.pretrained, device=device, background=cfg.background)


@COLOUR_CLASSIFIERS.register("lite", "lite: the dominant CIELAB colour of the masked pixels by a fixed rule")
def _lite_colour(cfg: Any, *, device: str) -> Any:
    from t2ibench.models.colour import LabColourClassifier

    return LabColourClassifier()


@EMBEDDERS.register("open_clip", "OpenCLIP image and text embeddings")
def _open_clip(cfg: Any, *, device: str, show_progress: bool) -> Any:
    from t2ibench.models.embedding import OpenCLIPEmbedder

    return OpenCLIPEmbedder(
        cfg.model, cfg.pretrained, device=device, normalize=cfg.normalize, show_progress=show_progress
    )


@EMBEDDERS.register("dinov2", "DINOv2 image embeddings through transformers (CLS or mean pooling)")
def _dinov2(cfg: Any, *, device: str, show_progress: bool) -> Any:
    from t2ibench.models.embedding import DINOv2Embedder

    return DINOv2Embedder(
        cfg.model,
        pooling=cfg.pooling,
        device=device,
        dtype=cfg.dtype,
        normalize=cfg.normalize,
        show_progress=show_progress,
    )


@EMBEDDERS.register("mobilenet-ssd", "lite: SSD-MobileNet-v2's backbone features (1280-d, mean-pooled), offline")
def _mobilenet(cfg: Any, *, device: str, show_progress: bool) -> Any:
    from t2ibench.models.ssd import MobileNetFeatures

    return MobileNetFeatures(cfg.model, normalize=cfg.normalize, show_progress=show_progress)


@EMBEDDERS.register(
    "mobilenet+structure", "lite: MobileNet-SSD image features paired with the prompt's structure (no text encoder)"
)
def _mobilenet_structure(cfg: Any, *, device: str, show_progress: bool) -> Any:
    from t2ibench.models.ssd import MobileNetPromptStructure

    return MobileNetPromptStructure(cfg.model, normalize=cfg.normalize, show_progress=show_progress)


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
