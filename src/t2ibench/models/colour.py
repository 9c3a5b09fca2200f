"""GenEval's colour classifier: OpenCLIP zero-shot over ten colours on the masked, cropped object.

For each object the image is composited with a flat grey #999999 background outside the object's mask (or
the original background, ``background="original"``), cropped to the object's box, and classified with
open_clip's zero-shot classifier over GenEval's ten colours and three templates: "a photo of a {c} {object}",
"a photo of a {c}-colored {object}", "a photo of a {c} object". Classifier weights are built once per class.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError
from t2ibench.metrics.geneval import COLORS
from t2ibench.models._torch import loads_models

DEFAULT_ARCH = "ViT-L-14"
DEFAULT_PRETRAINED = "openai"
TEMPLATES = ("a photo of a {{}} {obj}", "a photo of a {{}}-colored {obj}", "a photo of a {{}} object")


def load_open_clip_on(device_spec: str, arch: str, pretrained: str | None, precision: str) -> tuple[Any, Any, Any, Any]:
    """(model, preprocess, tokenizer, torch device): ``load_open_clip`` on the device ``device_spec`` resolves to."""
    from t2ibench.models._torch import resolve_device

    device = resolve_device(device_spec)
    model, preprocess, tokenizer = load_open_clip(arch, pretrained, device=device, precision=precision)
    return model, preprocess, tokenizer, device


def load_open_clip(
    arch: str = DEFAULT_ARCH,
    pretrained: str | None = DEFAULT_PRETRAINED,
    *,
    device: Any = "cpu",
    precision: str = "fp32",
) -> tuple[Any, Any, Any]:
    """(model, preprocess, tokenizer) from open_clip: ``pretrained`` is a tag ('openai') or a local checkpoint file.

    ``arch`` is an open_clip model name, or the path of a model-config JSON (registered under its file stem).

    Checkpoints load with ``weights_only=True`` (no pickle execution). Offline, a tag that needs a download fails
    with a message saying to pass a local file.
    """
    import open_clip

    from t2ibench.models.tiny import ensure_tiny_open_clip, parse_tiny

    tiny_seed = parse_tiny(arch)
    if tiny_seed is not None:
        config_file, checkpoint = ensure_tiny_open_clip(tiny_seed)
        arch, pretrained = str(config_file), str(checkpoint)
    if arch.endswith(".json"):
        config = Path(arch)
        if not config.is_file():
            raise InputError(f"{arch}: no such open_clip model config")
        open_clip.add_model_config(config)
        arch = config.stem
    if arch not in open_clip.list_models():
        known = "see open_clip.list_models(), or pass a model-config JSON"
        raise InputError(f"unknown open_clip architecture {arch!r} ({known})")
    try:
        model, _, preprocess = open_clip.create_model_and_transforms(
            arch, pretrained=pretrained, device=device, precision=precision, weights_only=True
        )
    except RuntimeError as exc:
        if pretrained and not Path(pretrained).exists():
            raise InputError(
                f"cannot load open_clip {arch}/{pretrained}: {exc}. "
                "Offline? Pass a local checkpoint file as pretrained."
            ) from None
        raise
    model.eval()
    return model, preprocess, open_clip.get_tokenizer(arch)


class ClipColourClassifier:
    """Zero-shot colour of masked object crops with an OpenCLIP model (default ViT-L-14 / openai)."""

    name = "open-clip-colour"

    def __init__(
        self,
        arch: str = DEFAULT_ARCH,
        pretrained: str | None = DEFAULT_PRETRAINED,
        *,
        device: str = "auto",
        precision: str = "fp32",
        background: str = "#999999",
        crop: bool = True,
        batch_size: int = 16,
    ) -> None:
        self.arch = arch
        self.pretrained = pretrained
        self.device_spec = device
        self.precision = precision
        self.background = background
        self.crop = crop
        self.batch_size = batch_size
        self._loaded: tuple[Any, Any, Any, Any] | None = None
        self._weights: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        """Model, background rule and templates, for provenance and cache keys."""
        return {
            "backend": self.name,
            "arch": self.arch,
            "pretrained": self.pretrained,
            "background": self.background,
            "crop": self.crop,
            "precision": self.precision,
            "colors": list(COLORS),
            "templates": [t.format(obj="{object}") for t in TEMPLATES],
        }

    @loads_models
    def _load(self) -> tuple[Any, Any, Any, Any]:
        if self._loaded is None:
            self._loaded = load_open_clip_on(self.device_spec, self.arch, self.pretrained, self.precision)
        return self._loaded

    def _classifier(self, classname: str) -> Any:
        if classname not in self._weights:
            import open_clip

            model, _, tokenizer, device = self._load()
            templates = [t.format(obj=classname) for t in TEMPLATES]
            self._weights[classname] = open_clip.build_zero_shot_classifier(
                model, tokenizer, list(COLORS), templates, num_classes_per_batch=None, device=device
            )
        return self._weights[classname]

    def crops(self, image: Any, objects: Sequence[tuple[Sequence[float], NDArray[np.bool_] | None]]) -> list[Any]:
        """The PIL crops the classifier sees: object pixels inside the mask, background outside, box-cropped."""
        from PIL import Image

        base = image.convert("RGB")
        blank = base.copy() if self.background == "original" else Image.new("RGB", base.size, self.background)
        out = []
        for box, mask in objects:
            if mask is not None:
                if tuple(mask.shape) != (base.height, base.width):
                    raise InputError(f"mask shape {mask.shape} does not match the image ({base.height}, {base.width})")
                composed = Image.composite(base, blank, Image.fromarray(np.asarray(mask, dtype=bool)))
            else:
                composed = base
            if self.crop:
                x1, y1, x2, y2 = (round(float(v)) for v in box[:4])
                composed = composed.crop((x1, y1, x2, y2))
            out.append(composed)
        return out

    def classify(
        self, image: Any, objects: Sequence[tuple[Sequence[float], NDArray[np.bool_] | None]], classname: str
    ) -> list[str]:
        """One of GenEval's ten colour names per (box, mask) object of class ``classname`` in the PIL ``image``."""
        import torch

        if not objects:
            return []
        model, preprocess, _, device = self._load()
        weights = self._classifier(classname)
        crops = self.crops(image, objects)
        names: list[str] = []
        with torch.inference_mode():
            for start in range(0, len(crops), self.batch_size):
                batch = torch.stack([preprocess(c) for c in crops[start : start + self.batch_size]]).to(device)
                features = model.encode_image(batch, normalize=True)
                logits = features @ weights.to(features.dtype)
                names += [COLORS[int(i)] for i in logits.argmax(dim=1).cpu()]
        return names
