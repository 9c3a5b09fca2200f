"""GenEval's colour classifier: OpenCLIP zero-shot over ten colours on the masked, cropped object.

Every classifier names colours from the list its caller passes (``colors``: GenEval's ten, when GenEval builds
it). For each object the image is composited with a flat grey #999999 background outside the object's mask (or
the original background, ``background="original"``), cropped to the object's box, and classified with
open_clip's zero-shot classifier over those colours and three templates: "a photo of a {c} {object}",
"a photo of a {c}-colored {object}", "a photo of a {c} object". Classifier weights are built once per class.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError
from t2ibench.models._torch import loads_models
from t2ibench.specs import ColourConfig

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
    from t2ibench.models.hub import Resolved, cache_only, load_from
    from t2ibench.specs import open_clip_sources

    weights = Resolved(pretrained or "")  # the tiny model's checkpoint, or none
    if tiny_seed is None:  # a tag neither cached nor reachable, or a missing file, is refused before open_clip runs
        for source in open_clip_sources(arch, pretrained):
            weights = load_from(source, "open_clip")
    try:
        with cache_only(weights.local_files_only):
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


@runtime_checkable
class ColourClassifier(Protocol):
    """What the GenEval runner needs from a colour classifier (what ``COLOUR_CLASSIFIERS`` builds)."""

    name: str

    def describe(self) -> dict[str, Any]:
        """The model or rule and its settings, for provenance and cache keys."""

    def classify(
        self, image: Any, objects: Sequence[tuple[Sequence[float], NDArray[np.bool_] | None]], classname: str
    ) -> list[str]:
        """One of the caller's colour names per (box, mask) object of class ``classname`` in the PIL ``image``."""


class ClipColourClassifier:
    """Zero-shot colour of masked object crops with an OpenCLIP model: the spec's ``arch`` and ``pretrained``
    weights (default ViT-L-14 / openai), its ``background`` outside the mask."""

    name = "open-clip-colour"

    def __init__(
        self,
        spec: ColourConfig,
        *,
        colors: Sequence[str],
        device: str = "auto",
        precision: str = "fp32",
        crop: bool = True,
        batch_size: int = 16,
    ) -> None:
        self.spec = spec
        self.colors = tuple(colors)
        self.device_spec = device
        self.precision = precision
        self.crop = crop
        self.batch_size = batch_size
        self._loaded: tuple[Any, Any, Any, Any] | None = None
        self._weights: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        """Model, background rule and templates, for provenance and cache keys."""
        return {
            "backend": self.name,
            "arch": self.spec.arch,
            "pretrained": self.spec.pretrained,
            "background": self.spec.background,
            "crop": self.crop,
            "precision": self.precision,
            "colors": list(self.colors),
            "templates": [t.format(obj="{object}") for t in TEMPLATES],
        }

    @loads_models
    def _load(self) -> tuple[Any, Any, Any, Any]:
        if self._loaded is None:
            self._loaded = load_open_clip_on(self.device_spec, self.spec.arch, self.spec.pretrained, self.precision)
        return self._loaded

    def _classifier(self, classname: str) -> Any:
        if classname not in self._weights:
            import open_clip

            model, _, tokenizer, device = self._load()
            templates = [t.format(obj=classname) for t in TEMPLATES]
            self._weights[classname] = open_clip.build_zero_shot_classifier(
                model, tokenizer, list(self.colors), templates, num_classes_per_batch=None, device=device
            )
        return self._weights[classname]

    def crops(self, image: Any, objects: Sequence[tuple[Sequence[float], NDArray[np.bool_] | None]]) -> list[Any]:
        """The PIL crops the classifier sees: object pixels inside the mask, background outside, box-cropped."""
        from PIL import Image

        base = image.convert("RGB")
        background = self.spec.background
        blank = base.copy() if background == "original" else Image.new("RGB", base.size, background)
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
        """One of the classifier's colour names per (box, mask) object of class ``classname`` in the PIL ``image``."""
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
                names += [self.colors[int(i)] for i in logits.argmax(dim=1).cpu()]
        return names


# -- the lite colour namer ---------------------------------------------------------------------------------------

# sRGB colours the compositor paints with (and tests name back); each lies inside its name's region of the rule
COLOUR_ANCHORS: dict[str, tuple[int, int, int]] = {
    "red": (200, 30, 35),
    "orange": (240, 130, 20),
    "yellow": (245, 215, 40),
    "green": (50, 150, 60),
    "blue": (40, 80, 200),
    "purple": (120, 50, 160),
    "pink": (240, 140, 180),
    "brown": (120, 75, 40),
    "black": (25, 25, 25),
    "white": (240, 240, 240),
}
# CIELAB hue-angle sectors h = atan2(b*, a*) in degrees, [start, end), and their colour family
HUE_SECTORS: tuple[tuple[float, float, str], ...] = (
    (0.0, 42.0, "red"),
    (42.0, 75.0, "orange"),
    (75.0, 105.0, "yellow"),
    (105.0, 200.0, "green"),
    (200.0, 310.0, "blue"),
    (310.0, 340.0, "purple"),
    (340.0, 360.0, "pink"),
)


class LabColourClassifier:
    """The dominant colour of an object's masked pixels among ten basic colour names (GenEval's), by a fixed CIELAB
    rule ("lite"); ties go to the earlier name of the caller's ``colors``, which must hold all ten.

    Every pixel inside the mask (and the box) is converted to CIELAB (D65). A pixel with chroma C* below
    ``chroma_floor`` is achromatic. A chromatic pixel is named by its hue angle h (``HUE_SECTORS``): red
    [0°, 42°), orange [42°, 75°), yellow [75°, 105°), green [105°, 200°), blue [200°, 310°), purple [310°, 340°),
    pink [340°, 360°); then by lightness and chroma: a light (L* ≥ 70) red of chroma below 50 or a light (L* ≥ 60)
    purple is pink, a dark (L* < 50) pink is red, a dark (L* < 50) or dull (C* < 35) orange is brown, as is a dark
    (L* < 45) yellow. (sRGB blue lies at h ≈ 306°, hot pink at ≈ 351°, CSS red at ≈ 40°.) When at least
    ``chromatic_share`` of the pixels are chromatic the object takes the most frequent chromatic name; otherwise
    white or black by the achromatic pixels' count with L* ≥ 50 against L* < 50. No weights, no CLIP: labelled
    "lite" wherever its numbers appear.
    """

    name = "lab-colour-lite"

    def __init__(self, *, colors: Sequence[str], chroma_floor: float = 15.0, chromatic_share: float = 0.25) -> None:
        names = {family for _, _, family in HUE_SECTORS} | {"brown", "white", "black"}  # + the lightness rules' names
        if sorted(names - set(colors)):
            raise InputError(f"the lite colour rule names {sorted(names - set(colors))}, which the colour list "
                             f"{list(colors)} lacks")  # fmt: skip
        self.colors = tuple(colors)
        self.chroma_floor = chroma_floor
        self.chromatic_share = chromatic_share

    def describe(self) -> dict[str, Any]:
        """The rule and its constants, for provenance and cache keys."""
        return {
            "backend": self.name,
            "rule": "cielab-hue-sectors-v1",
            "sectors": [list(s) for s in HUE_SECTORS],
            "chroma_floor": self.chroma_floor,
            "chromatic_share": self.chromatic_share,
            "evaluator": "lite",
        }

    def pixel_names(self, lab: NDArray[np.float64]) -> NDArray[np.str_]:
        """The colour name of each CIELAB pixel (n, 3) by the rule above ('' for achromatic pixels)."""
        lightness, chroma = lab[:, 0], np.hypot(lab[:, 1], lab[:, 2])
        hue = np.degrees(np.arctan2(lab[:, 2], lab[:, 1])) % 360.0
        names = np.full(len(lab), "", dtype="<U6")
        for start, end, family in HUE_SECTORS:
            names[(hue >= start) & (hue < end)] = family
        light_red = (names == "red") & (lightness >= 70) & (chroma < 50)
        dark_pink = (names == "pink") & (lightness < 50)
        names[light_red | ((names == "purple") & (lightness >= 60))] = "pink"
        names[dark_pink] = "red"
        names[(names == "orange") & ((lightness < 50) | (chroma < 35))] = "brown"
        names[(names == "yellow") & (lightness < 45)] = "brown"
        names[chroma < self.chroma_floor] = ""
        return names

    def name_pixels(self, rgb: NDArray[np.uint8]) -> str:
        """The colour name of pixels (n, 3) uint8 RGB by the rule above; InputError when there are none."""
        if rgb.size == 0:
            raise InputError("no pixels to name a colour from (empty mask)")
        lab = _lab(rgb.reshape(1, -1, 3).astype(np.uint8))[0]
        names = self.pixel_names(lab)
        chromatic = names != ""
        if chromatic.mean() >= self.chromatic_share:
            found, counts = np.unique(names[chromatic], return_counts=True)
            order = [self.colors.index(str(c)) for c in found]  # ties go to the earlier name in the colour list
            return str(found[min(range(len(found)), key=lambda i: (-counts[i], order[i]))])
        grey = lab[~chromatic, 0]
        white = int((grey >= 50).sum())
        return "white" if white >= grey.size - white else "black"

    def classify(
        self, image: Any, objects: Sequence[tuple[Sequence[float], NDArray[np.bool_] | None]], classname: str
    ) -> list[str]:
        """One of the rule's colour names per (box, mask) object in the PIL ``image`` (``classname`` unused)."""
        rgb = np.asarray(image.convert("RGB"), dtype=np.uint8)
        h, w = rgb.shape[:2]
        names = []
        for box, mask in objects:
            x1, y1 = max(0, int(np.floor(box[0]))), max(0, int(np.floor(box[1])))
            x2, y2 = min(w, int(np.ceil(box[2]))), min(h, int(np.ceil(box[3])))
            inside = np.zeros((h, w), dtype=bool)
            inside[y1:y2, x1:x2] = True
            if mask is not None:
                if tuple(mask.shape) != (h, w):
                    raise InputError(f"mask shape {mask.shape} does not match the image ({h}, {w})")
                inside &= np.asarray(mask, dtype=bool)
            names.append(self.name_pixels(rgb[inside]))
        return names


def _lab(rgb: NDArray[np.uint8]) -> NDArray[np.float64]:
    """CIELAB (D65, 2°) of an sRGB uint8 array (..., 3), by scikit-image."""
    from skimage.color import rgb2lab

    lab: NDArray[np.float64] = rgb2lab(rgb)
    return lab
