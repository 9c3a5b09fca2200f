"""Fixed, named reference sets that set a Gaussian bandwidth per embedding space (``sigma: reference``).

VENDI, RKE and Scendi under a Gaussian kernel are comparable across models only under one bandwidth σ: a model's
own median pairwise distance rescales each model to its own spread (a model with spread-out images gets a wider
kernel that shrinks its diversity). The FKEA and Vendi papers fix σ per embedding space for all models compared.
t2ibench derives that σ mechanically: the median pairwise distance of the embedder's features of a fixed set, the
same for every model, run and leaderboard that uses the embedder (normalisation included). Two sets:

* ``photos-v1`` (images): 22 photographs that install with scikit-image, scikit-learn and matplotlib (no download),
  each whole and as its four quadrants — 110 views. The set's digest covers the files' bytes, so a package release
  that changes a photo changes the set's name in every stored σ source.
* ``geneval-prompts-v1`` (texts): GenEval's official 553 prompts (seed 43, 100 per task), generated from the
  templates in this package.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from t2ibench.errors import InputError, unknown_choice

IMAGE_SET = "photos-v1"
TEXT_SET = "geneval-prompts-v1"

# (package, path inside the package): photographs only (no charts, logos or synthetic patterns)
PHOTOS: tuple[tuple[str, str], ...] = (
    ("skimage", "data/astronaut.png"),
    ("skimage", "data/brick.png"),
    ("skimage", "data/camera.png"),
    ("skimage", "data/cell.png"),
    ("skimage", "data/chelsea.png"),
    ("skimage", "data/clock_motion.png"),
    ("skimage", "data/coffee.png"),
    ("skimage", "data/coins.png"),
    ("skimage", "data/grass.png"),
    ("skimage", "data/gravel.png"),
    ("skimage", "data/hubble_deep_field.jpg"),
    ("skimage", "data/ihc.png"),
    ("skimage", "data/microaneurysms.png"),
    ("skimage", "data/moon.png"),
    ("skimage", "data/motorcycle_left.png"),
    ("skimage", "data/page.png"),
    ("skimage", "data/retina.jpg"),
    ("skimage", "data/rocket.jpg"),
    ("skimage", "data/text.png"),
    ("sklearn", "datasets/images/china.jpg"),
    ("sklearn", "datasets/images/flower.jpg"),
    ("matplotlib", "mpl-data/sample_data/grace_hopper.jpg"),
)


@dataclass(frozen=True)
class ReferenceSet:
    """A loaded reference set: its name, kind, content digest (16 hex digits) and its images or texts."""

    name: str
    kind: Literal["image", "text"]
    digest: str
    images: tuple[Any, ...] = ()  # PIL RGB images
    texts: tuple[str, ...] = ()


def _package_file(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"the reference photo set {IMAGE_SET} needs the package {package!r} (pip install '.[models]'), or set "
            "the bandwidth to a number"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise InputError(f"{path}: a photo of the reference set {IMAGE_SET} is missing from the installed {package}")
    return path


def photo_files() -> list[Path]:
    """The files of ``photos-v1``, in set order."""
    return [_package_file(package, relative) for package, relative in PHOTOS]


def views(image: Any) -> list[Any]:
    """A photo whole and its four quadrants (top-left, top-right, bottom-left, bottom-right), RGB."""
    rgb = image.convert("RGB")
    w, h = rgb.size
    boxes = [(0, 0, w // 2, h // 2), (w // 2, 0, w, h // 2), (0, h // 2, w // 2, h), (w // 2, h // 2, w, h)]
    return [rgb, *(rgb.crop(box) for box in boxes)]


def reference_digest(name: str) -> str:
    """The content digest (16 hex digits) of the reference set ``name`` as installed now, without decoding it."""
    if name == IMAGE_SET:
        digest = hashlib.sha256()
        for path in photo_files():
            digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()[:16]
    return load_reference(name).digest


def reference_source(ref: ReferenceSet) -> str:
    """Where a σ taken on ``ref`` comes from, as stored beside every score measured under it:
    ``reference:<set>@<digest>``."""
    return f"reference:{ref.name}@{ref.digest}"


def load_reference(name: str) -> ReferenceSet:
    """The reference set called ``name`` (``photos-v1`` or ``geneval-prompts-v1``), loaded."""
    if name == IMAGE_SET:
        from PIL import Image

        digest = hashlib.sha256()
        images: list[Any] = []
        for path in photo_files():
            data = path.read_bytes()
            digest.update(path.name.encode() + b"\0" + hashlib.sha256(data).digest())
            with Image.open(path) as im:
                images += views(im)
        return ReferenceSet(name=name, kind="image", digest=digest.hexdigest()[:16], images=tuple(images))
    if name == TEXT_SET:
        from t2ibench.benchmarks.geneval.suite import generate_suite
        from t2ibench.hashing import content_hash

        texts = tuple(str(r["prompt"]) for r in generate_suite(seed=43, per_task=100))
        return ReferenceSet(name=name, kind="text", digest=content_hash(list(texts)), texts=texts)
    raise unknown_choice("reference set", name, (IMAGE_SET, TEXT_SET))
