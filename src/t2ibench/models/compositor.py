"""Ground-truth "models": images composed from real cut-outs, so whether each image is correct is known by construction.

Cut-outs come from photographs that ship inside installed packages (scikit-image's astronaut, camera, chelsea,
coffee, stereo motorcycle and horse; matplotlib's Grace Hopper): the offline SSD-MobileNet-v2 detector finds the
objects, GrabCut cuts each one out of its box (``models.ssd``; the mask closed, hole-filled and reduced to its
largest piece), and a cut-out is kept only if the detector finds it again as the compositor draws it — alone,
and as two to four copies side by side (``usable_cutouts``). The classes that keep a
cut-out are the compositor's vocabulary; ``benchmarks.geneval.suite.generate_suite(classes=...)`` writes a GenEval
suite over them, so the number of prompts per task is known.

A compositor renders any GenEval prompt record over those classes: the requested number of instances, side by
side with wide gaps; a position prompt puts the two objects in opposite halves of the canvas (their centres half the
canvas apart, far beyond GenEval's 0.1 margin rule); colour prompts recolour each instance to the requested colour
(the cut-out's luminance shading kept, the hue replaced by ``COLOUR_ANCHORS``); the background is plain or a real
texture. Everything is drawn from ``numpy.random.default_rng([seed, prompt index, sample])``.

Variants (the generator ``model`` string):

* ``faithful``: every image is what the prompt asks.
* ``sloppy:P``: each image is wrong in one known way with probability P — a wrong count (counting, one more or one
  fewer), an object missing (single and two objects, position, colour attribution), swapped positions (position),
  swapped colours (colour attribution), another colour, or the colour leaked to the background (colours).
* ``collapsed``: always the same cut-out per class, same size, same place, same background: no variety.

Each image's construction truth (correct, and the error applied) is written to ``truth.jsonl`` in the output folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError, note
from t2ibench.io import PNG_COMPRESS_LEVEL, exclusive, write_text_atomic
from t2ibench.models.colour import COLOUR_ANCHORS
from t2ibench.models.generation import ImageRecord, MakesImages, OutputFolder
from t2ibench.progress import progress
from t2ibench.specs import SSD_MODEL, DetectorConfig, GeneratorConfig
from t2ibench.specs import Variant as Variant  # re-exported: the variants' home is t2ibench.specs
from t2ibench.specs import parse_variant as parse_variant

CUTOUT_VERSION = 9  # bump when the extraction rule changes: cached cut-outs are rebuilt
CANVAS = 512
# classes cut out of the bundled photos (others the detector finds there — dining table, bed, … — are scenery)
CUTOUT_CLASSES = ("person", "cat", "cup", "motorcycle", "horse", "tie")
MIN_SOURCE_SCORE = 0.5  # a detection in a source photo becomes a cut-out candidate above this score
MIN_REDETECT_SCORE = 0.7  # ... and is kept if the detector finds it again alone on a canvas
MIN_COPY_SCORE = 0.5  # ... and every one of 2-4 copies of it side by side


# -- source photos and cut-outs -------------------------------------------------------------------------------------


def source_photos() -> dict[str, NDArray[np.uint8]]:
    """The bundled real photographs, RGB uint8 (H, W, 3), by name."""
    import matplotlib
    import skimage.data as data
    from PIL import Image

    left, right, _ = data.stereo_motorcycle()
    horse = np.where(data.horse()[..., None], 255, 0).astype(np.uint8).repeat(3, axis=2)
    hopper = Image.open(Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg").convert("RGB")
    photos = {
        "astronaut": data.astronaut(),
        "camera": np.repeat(data.camera()[..., None], 3, axis=2),
        "chelsea": data.chelsea(),
        "coffee": data.coffee(),
        "motorcycle_left": left,
        "motorcycle_right": right,
        "horse": horse,
        "grace_hopper": np.asarray(hopper),
    }
    return {k: np.ascontiguousarray(v[..., :3], dtype=np.uint8) for k, v in photos.items()}


@dataclass(frozen=True)
class Cutout:
    """One object cut out of a photo: RGBA pixels (h, w, 4) and where it came from."""

    label: str
    source: str
    score: float
    rgba: NDArray[np.uint8]


def cache_dir() -> Path:
    """Where cut-outs are kept: $T2IBENCH_CACHE/cutouts, else ~/.cache/t2ibench/cutouts."""
    root = os.environ.get("T2IBENCH_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "t2ibench") / "cutouts"


def extract_cutouts(detector: Any) -> list[Cutout]:
    """Candidate cut-outs: detections of ``CUTOUT_CLASSES`` above ``MIN_SOURCE_SCORE`` in the bundled photos, each
    cut out of its box by GrabCut (RGBA, alpha = mask)."""
    from PIL import Image

    from t2ibench.models.ssd import grabcut_mask

    out = []
    for name, photo in source_photos().items():
        (found,) = detector.detect([Image.fromarray(photo)])
        for det in found.detections:
            if det.label not in CUTOUT_CLASSES or det.score < MIN_SOURCE_SCORE:
                continue
            # a silhouette's dark pixels are the object; a photo's object is cut out by GrabCut
            mask = photo[..., 0] < 128 if name == "horse" else solid(grabcut_mask(photo, det.box, side=4096))
            x1, y1, x2, y2 = (round(v) for v in det.box)
            rgba = np.dstack([photo, np.where(mask, 255, 0).astype(np.uint8)])[y1:y2, x1:x2]
            if rgba[..., 3].mean() < 255 * 0.1:
                continue
            out.append(Cutout(det.label, name, float(det.score), np.ascontiguousarray(rgba)))
    return out


def solid(mask: NDArray[np.bool_], radius: int = 12) -> NDArray[np.bool_]:
    """A cut-out mask made whole: closed with a disc of ``radius`` px (GrabCut often cuts through thin parts — a
    neck, a strap), holes filled, only the largest connected piece kept."""
    from scipy import ndimage

    yy, xx = np.mgrid[-radius : radius + 1, -radius : radius + 1]
    disc = xx**2 + yy**2 <= radius**2
    padded = np.pad(mask, radius)
    closed = ndimage.binary_closing(padded, structure=disc)[radius:-radius, radius:-radius]
    filled = ndimage.binary_fill_holes(closed)
    labels, count = ndimage.label(filled)
    if count <= 1:
        return np.asarray(filled, dtype=bool)
    sizes = ndimage.sum(filled, labels, range(1, count + 1))
    return np.asarray(labels == 1 + int(np.argmax(sizes)), dtype=bool)


def usable_cutouts(detector: Any, candidates: Sequence[Cutout]) -> list[Cutout]:
    """The candidates the detector finds again as the compositor will draw them, on a plain and on a textured canvas:
    alone at the single-object size (its class above ``MIN_REDETECT_SCORE``), and as 2, 3 and 4 copies at the
    multi-object size (every copy found above ``MIN_COPY_SCORE``)."""
    from PIL import Image

    def scores(cut: Cutout, plain: bool, size: float, n: int) -> list[float]:
        canvas = background(np.random.default_rng(0), plain=plain)
        for centre in _row(n) if n > 1 else [(CANVAS / 2, CANVAS / 2)]:
            paste(canvas, fit(cut.rgba, size * CANVAS), centre)
        (found,) = detector.detect([Image.fromarray(canvas)])
        return sorted((d.score for d in found.detections if d.label == cut.label), reverse=True)

    kept = []
    for cut in candidates:
        ok = True
        for plain in (True, False):
            alone = scores(cut, plain, SIZE_BY_COUNT[1], 1)
            ok = ok and bool(alone) and alone[0] >= MIN_REDETECT_SCORE
            for n in (2, 3, 4):
                found = scores(cut, plain, SIZE_BY_COUNT[n], n)
                ok = ok and len(found) >= n and found[n - 1] >= MIN_COPY_SCORE
        if ok:
            kept.append(cut)
    return kept


@cache
def load_cutouts(detector_model: str = SSD_MODEL) -> tuple[Cutout, ...]:
    """The usable cut-outs (built once with the SSD detector, then read from the cache folder). Processes sharing
    the cache folder build them one at a time: a second waits for the first (~20 s of GrabCut) and reads its files."""
    from t2ibench.models.ssd import SSDMobileNetDetector

    detector = SSDMobileNetDetector(DetectorConfig(backend="opencv-ssd", model=detector_model))
    key = {"version": CUTOUT_VERSION, "detector": detector.describe()}
    folder = cache_dir()
    found = _stored_cutouts(folder, key)
    if found is not None:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive(folder / ".build.lock"):
        found = _stored_cutouts(folder, key)  # built by another process while this one waited
        if found is not None:
            return found
        return _build_cutouts(detector, folder, key)


def _stored_cutouts(folder: Path, key: dict[str, Any]) -> tuple[Cutout, ...] | None:
    """The cut-outs the cache folder's index holds for ``key``, or None (no index, or one for another key)."""
    from PIL import Image

    index = folder / "index.json"
    if not index.is_file():
        return None
    stored = json.loads(index.read_text())
    if stored.get("key") != key:
        return None
    return tuple(
        Cutout(e["label"], e["source"], e["score"], np.asarray(Image.open(folder / e["file"]).convert("RGBA")))
        for e in stored["cutouts"]
    )


def _build_cutouts(detector: Any, folder: Path, key: dict[str, Any]) -> tuple[Cutout, ...]:
    """Cut the usable cut-outs out of the bundled photos and write them and their index to ``folder``."""
    from PIL import Image

    cutouts = usable_cutouts(detector, extract_cutouts(detector))
    if not cutouts:
        raise InputError("the detector re-found none of the bundled cut-outs; the compositor has no classes")
    entries = []
    for i, cut in enumerate(cutouts):
        file = f"{i:02d}-{cut.label.replace(' ', '_')}-{cut.source}.png"
        tmp = folder / f"{file}.{os.getpid()}.tmp"
        Image.fromarray(cut.rgba, "RGBA").save(tmp, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
        os.replace(tmp, folder / file)
        entries.append({"label": cut.label, "source": cut.source, "score": cut.score, "file": file})
    write_text_atomic(folder / "index.json", json.dumps({"key": key, "cutouts": entries}, indent=2) + "\n")
    return tuple(cutouts)


def compositor_classes(detector_model: str = SSD_MODEL) -> tuple[str, ...]:
    """The COCO classes the compositor can render (those with a usable cut-out), in COCO's order — COCO's names,
    which GenEval's equal for every class cut out (``CUTOUT_CLASSES``)."""
    from t2ibench.models.ssd import COCO90

    have = {c.label for c in load_cutouts(detector_model)}
    return tuple(c for c in COCO90.values() if c in have)


# -- drawing --------------------------------------------------------------------------------------------------------


def fit(rgba: NDArray[np.uint8], longest: float, *, flip: bool = False) -> NDArray[np.uint8]:
    """The cut-out scaled so its longer side is ``longest`` pixels (Lanczos), optionally mirrored."""
    from PIL import Image

    h, w = rgba.shape[:2]
    scale = longest / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    image = Image.fromarray(rgba, "RGBA").resize(size, Image.Resampling.LANCZOS)
    if flip:
        image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return np.asarray(image)


def recolour(rgba: NDArray[np.uint8], colour: str) -> NDArray[np.uint8]:
    """The cut-out painted ``colour`` in CIELAB. Painted pixels keep their own lightness L* (the shading and texture
    a detector reads), pulled 40 % towards the colour's L*, and take the colour's a*, b*; black and white compress
    L* towards their end of the scale with no chroma. An object with coloured parts (≥ 20 % of its pixels with
    chroma C* ≥ 15: a motorcycle's paint) has only those parts painted — tyres and chrome stay; an achromatic
    object (a silhouette, a greyscale photo) is painted whole, at the colour's L* with half its own shading."""
    from skimage.color import lab2rgb, rgb2lab

    lab = rgb2lab(rgba[..., :3])
    target = rgb2lab(np.asarray([[COLOUR_ANCHORS[colour]]], dtype=np.uint8))[0, 0]
    inside = rgba[..., 3] > 127
    chromatic = np.hypot(lab[..., 1], lab[..., 2]) >= 15
    paint = inside & chromatic if (chromatic & inside).sum() >= 0.2 * max(1, inside.sum()) else inside
    lightness = lab[..., 0]
    whole = paint is inside
    if whole:  # an achromatic object: the colour's own L*, with half of the object's shading around its mean
        lightness = target[0] + 0.5 * (lightness - lightness[inside].mean()) if inside.any() else lightness
    new = lab.copy()
    if colour == "black":
        new[..., 0] = 4 + 0.25 * np.clip(lab[..., 0], 0, 100)
    elif colour == "white":
        new[..., 0] = 82 + 0.17 * np.clip(lab[..., 0], 0, 100)
    else:
        new[..., 0] = np.clip(lightness if whole else 0.6 * lightness + 0.4 * target[0], 0, 100)
    new[..., 1], new[..., 2] = (0.0, 0.0) if colour in ("black", "white") else (target[1], target[2])
    lab[paint] = new[paint]
    rgb = np.clip(np.round(lab2rgb(lab) * 255), 0, 255).astype(np.uint8)
    return np.dstack([rgb, rgba[..., 3]])


def paste(canvas: NDArray[np.uint8], rgba: NDArray[np.uint8], centre: tuple[float, float]) -> tuple[int, ...]:
    """Alpha-composite ``rgba`` onto ``canvas`` (in place) centred at (x, y); returns its box (x1, y1, x2, y2)."""
    h, w = rgba.shape[:2]
    x1, y1 = round(centre[0] - w / 2), round(centre[1] - h / 2)
    cx1, cy1 = max(0, x1), max(0, y1)
    cx2, cy2 = min(canvas.shape[1], x1 + w), min(canvas.shape[0], y1 + h)
    if cx2 <= cx1 or cy2 <= cy1:
        return (cx1, cy1, cx1, cy1)
    part = rgba[cy1 - y1 : cy2 - y1, cx1 - x1 : cx2 - x1]
    a = part[..., 3:4].astype(np.float64) / 255.0
    region = canvas[cy1:cy2, cx1:cx2].astype(np.float64)
    canvas[cy1:cy2, cx1:cx2] = np.round(part[..., :3] * a + region * (1 - a)).astype(np.uint8)
    return (cx1, cy1, cx2, cy2)


def background(
    rng: np.random.Generator, *, plain: bool, tint: str | None = None, tone: int | None = None
) -> NDArray[np.uint8]:
    """A canvas: a light plain tone (``tone``, else drawn from ``rng``), or a real greyscale texture (scikit-image's
    grass, gravel or brick) lightened; ``tint`` paints it a light version of that colour (the leaked-colour error)."""
    import skimage.data as data

    if plain:
        canvas = np.full((CANVAS, CANVAS, 3), rng.integers(185, 230) if tone is None else tone, dtype=np.uint8)
    else:
        texture = (data.grass, data.gravel, data.brick)[int(rng.integers(3))]()[:CANVAS, :CANVAS]
        light = 150 + (texture.astype(np.float64) - texture.min()) / max(1, np.ptp(texture)) * 90
        canvas = np.repeat(light[..., None], 3, axis=2).astype(np.uint8)
    if tint is not None:
        colour = np.asarray(COLOUR_ANCHORS[tint], dtype=np.float64)
        canvas = np.clip(0.25 * canvas + 0.75 * colour, 0, 255).astype(np.uint8)
    return canvas


# -- what to draw -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What one image shows: instances (class, colour or None, centre, size), background, and the truth."""

    instances: tuple[tuple[str, str | None, tuple[float, float], float], ...]
    plain: bool
    tint: str | None
    correct: bool
    error: str | None


SIZE_BY_COUNT = {1: 0.6, 2: 0.4, 3: 0.4, 4: 0.4, 5: 0.3}  # longest side / canvas side


def _row(n: int) -> list[tuple[float, float]]:
    """Centres of n instances: side by side for 1–2, a 2 × 2 grid for 3–4, 3 + 2 for 5."""
    if n <= 2:
        return [((i + 0.5) * CANVAS / n, CANVAS / 2) for i in range(n)]
    cols = 2 if n <= 4 else 3
    return [((i % cols + 0.5) * CANVAS / cols, (i // cols + 0.5) * CANVAS / 2) for i in range(n)]


RELATION_CENTRES = {  # (object, target) centres: half the canvas apart along the relation's axis
    "left of": ((0.25, 0.5), (0.75, 0.5)),
    "right of": ((0.75, 0.5), (0.25, 0.5)),
    "above": ((0.5, 0.25), (0.5, 0.75)),
    "below": ((0.5, 0.75), (0.5, 0.25)),
}
OPPOSITE = {"left of": "right of", "right of": "left of", "above": "below", "below": "above"}
ERRORS = {
    "single_object": ("missing object",),
    "two_object": ("missing object",),
    "counting": ("wrong count",),
    "colors": ("wrong colour", "colour leaked to background"),
    "position": ("swapped position", "missing object"),
    "color_attr": ("swapped colours", "missing object"),
}


def plan(record: Mapping[str, Any], rng: np.random.Generator, variant: Variant) -> Plan:
    """The image for a GenEval prompt record under ``variant`` (draws from ``rng``)."""
    tag = record["tag"]
    include = record["include"]
    wrong = variant.kind == "sloppy" and rng.random() < variant.error_rate
    error = str(rng.choice(ERRORS[tag])) if wrong else None
    collapsed = variant.kind == "collapsed"
    plain = collapsed or tag in ("colors", "color_attr") or rng.random() < 0.5
    objects: list[tuple[str, str | None]] = []
    for clause in include:
        objects += [(clause["class"], clause.get("color"))] * clause["count"]
    tint = None
    centres: list[tuple[float, float]]
    if tag == "position":
        relation = include[1]["position"][0]
        if error == "swapped position":
            relation = OPPOSITE[relation]
        (ox, oy), (tx, ty) = RELATION_CENTRES[relation]
        objects = [(include[0]["class"], None), (include[1]["class"], None)]
        centres = [(tx * CANVAS, ty * CANVAS), (ox * CANVAS, oy * CANVAS)]
        size = 0.4
    else:
        if error == "wrong count":
            objects = objects[:1] * (len(objects) + (1 if rng.random() < 0.5 else -1))
        if error == "swapped colours":
            (a, ca), (b, cb) = objects
            objects = [(a, cb), (b, ca)]
        if error in ("wrong colour", "colour leaked to background"):
            ((name, asked),) = objects
            other = str(rng.choice([c for c in COLOUR_ANCHORS if c != asked]))  # the colours it can paint
            objects = [(name, other)]
            tint = asked if error == "colour leaked to background" else None
        if not collapsed and len(objects) > 1:
            order = rng.permutation(len(objects))
            objects = [objects[i] for i in order]
        centres = _row(len(objects))
        size = SIZE_BY_COUNT[min(len(objects), 5)]
    if error == "missing object":
        drop = int(rng.integers(len(objects)))
        objects, centres = objects[:drop] + objects[drop + 1 :], centres[:drop] + centres[drop + 1 :]
    if not collapsed:  # jitter inside the slot; never enough to reach GenEval's position margin
        centres = [(x + rng.uniform(-0.03, 0.03) * CANVAS, y + rng.uniform(-0.03, 0.03) * CANVAS) for x, y in centres]
    instances = tuple((n, c, xy, size * CANVAS) for (n, c), xy in zip(objects, centres, strict=True))
    return Plan(instances=instances, plain=plain, tint=tint, correct=error is None, error=error)


def render(
    record: Mapping[str, Any], rng: np.random.Generator, variant: Variant, cutouts: Sequence[Cutout]
) -> tuple[Any, Plan]:
    """(PIL image, plan) for one prompt record."""
    from PIL import Image

    the_plan = plan(record, rng, variant)
    by_class: dict[str, list[Cutout]] = {}
    for cut in cutouts:
        by_class.setdefault(cut.label, []).append(cut)
    collapsed = variant.kind == "collapsed"  # always the same grey canvas
    canvas = background(rng, plain=the_plan.plain, tint=the_plan.tint, tone=205 if collapsed else None)
    for name, colour, centre, size in the_plan.instances:
        options = by_class.get(name)
        if not options:
            raise InputError(f"the compositor has no cut-out of {name!r} (it can draw {', '.join(sorted(by_class))})")
        cut = options[0] if collapsed else options[int(rng.integers(len(options)))]
        scale = 1.0 if collapsed else float(rng.uniform(0.85, 1.1))
        sprite = fit(cut.rgba, size * scale, flip=not collapsed and bool(rng.random() < 0.5))
        if colour is not None:
            sprite = recolour(sprite, colour)
        paste(canvas, sprite, centre)
    return Image.fromarray(canvas), the_plan


class CompositorGenerator(MakesImages):
    """A ground-truth model (see the module docstring) behind the ``Generator`` protocol."""

    def __init__(self, spec: GeneratorConfig, *, show_progress: bool = True, detector_model: str | None = None):
        self.spec = spec
        self.variant = parse_variant(spec.model)
        self.show_progress = show_progress
        self.detector_model = detector_model or SSD_MODEL

    def describe(self) -> dict[str, Any]:
        """Variant, seed, canvas and the cut-outs used."""
        cutouts = load_cutouts(self.detector_model)
        return {
            "backend": "compositor",
            "variant": self.variant.name,
            "seed": self.spec.seed,
            "canvas": CANVAS,
            "cutouts": [f"{c.label}@{c.source}" for c in cutouts],
            "cutout_version": CUTOUT_VERSION,
            "smoke": False,
        }

    def classes(self) -> tuple[str, ...]:
        """The classes it can draw."""
        return compositor_classes(self.detector_model)

    def generate(
        self, prompts: Sequence[tuple[int, Mapping[str, Any]]], out: str | Path, *, overwrite: bool = False
    ) -> list[ImageRecord]:
        """Compose the missing images of each (index, record) and write truth.jsonl; returns all images in order."""
        cutouts = load_cutouts(self.detector_model)
        described = self.describe()
        # the images depend on the cut-outs too (a rebuilt set redraws every image, never mixes with old ones)
        identity = {"spec": self.spec.sampling(), "cutouts": described["cutouts"], "version": CUTOUT_VERSION}
        folder = OutputFolder(Path(out), identity=identity, extra={"generator": described})
        if folder.manifest_path.is_file() and not overwrite:
            made_with = json.loads(folder.manifest_path.read_text()).get("identity", {})
            if made_with.get("spec") == identity["spec"] and made_with != identity:
                # same model, other cut-outs (a new extraction rule, another detector build): the old images are
                # stale, and deterministic to redo — recompose them, saying so
                note(f"{out}: the compositor's cut-outs changed since these images were made; composing them again")
                overwrite = True
        folder.open(overwrite=overwrite)
        resume = folder.resume(dict(prompts))  # an image composed for another prompt record is composed again
        resume.note(folder.root, "composing")
        done = resume.done
        n = self.spec.images_per_prompt
        records: list[ImageRecord] = []
        truth = []
        with progress(len(prompts) * n, "compose", enabled=self.show_progress, unit="img") as bar:
            for index, metadata in prompts:
                folder.write_metadata(index, metadata)
                for k in range(n):
                    rng = np.random.default_rng([self.spec.seed, index, k])
                    if (index, k) in done:  # its truth is the plan, drawn first from the same stream
                        the_plan = plan(metadata, rng, self.variant)
                    else:
                        image, the_plan = render(metadata, rng, self.variant, cutouts)
                        done[(index, k)] = folder.save(index, k, image, self.spec.seed, metadata)
                    records.append(done[(index, k)])
                    truth.append(
                        {
                            "prompt_index": index,
                            "sample": k,
                            "tag": metadata["tag"],
                            "correct": the_plan.correct,
                            "error": the_plan.error,
                        }
                    )
                    bar.update(1)
        write_text_atomic(Path(out) / "truth.jsonl", "".join(json.dumps(t) + "\n" for t in truth))
        return records


def read_truth(folder: str | Path) -> dict[tuple[int, int], dict[str, Any]]:
    """(prompt index, sample) → construction truth from a compositor folder's truth.jsonl."""
    path = Path(folder) / "truth.jsonl"
    if not path.is_file():
        raise InputError(f"{path}: missing (only compositor folders carry construction truth)")
    out = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        entry = json.loads(line)
        if not isinstance(entry.get("correct"), bool):
            raise InputError(f"{path}:{number}: 'correct' must be true or false")
        out[(int(entry["prompt_index"]), int(entry["sample"]))] = entry
    return out
