"""The real-photograph truth set of the evaluator self-test, as data (``data/photo_truth.yaml``; its first comment
names this module's former home, ``t2ibench.suites.photos``: the file's bytes are the truth set's identity in every
stored self-test, so a move does not edit them).

Photos ship inside registry packages (``skimage:<name>`` is ``skimage.data.<name>()``, ``matplotlib:<file>`` a file
of matplotlib's sample data, ``sklearn:<file>`` one of scikit-learn's sample images). Each photo carries a reviewed
inventory: ``present`` (COCO class → count, every class plainly visible), ``unsure`` (classes a careful reader could
argue are there: never asked about, never used as an absent class), ``colours`` (class → GenEval colour where it is
plain) and the SHA-256 of its decoded RGB pixels, so a package that ships a different picture is refused rather
than judged against a review of another one.

An image is a grid of photos (``rows``; one photo alone is shown as it is, a composite fits each photo into an equal
white cell, rows centred). Every prompt is a GenEval template sentence with its stated truth and the reason; the
loader derives the truth again from the inventories and the layout (``derived_truth``) and refuses a file where the
two disagree, so the reviewed statement and the inventory check each other.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError, unknown_choice
from t2ibench.io import load_yaml, read_text_file

BUILTIN = "photo_truth.yaml"
CELL = 384  # px: the side of a composite's cell
GAP = 16  # px between cells
FILE_KEYS = ("name", "version", "photos", "images")
PHOTO_KEYS = ("source", "sha256", "present", "unsure", "colours", "note")
IMAGE_KEYS = ("rows", "prompts")
MAX_IMAGES = 10_000
PHOTO_ID = re.compile(r"[A-Za-z0-9_-]+")  # ids name an image's layout ('a+b/c'): no '+' or '/'
SHA256 = re.compile(r"[0-9a-f]{64}")
PACKAGES = ("skimage", "matplotlib", "sklearn")  # where bundled photos come from
BARE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # a photo's name in its package: no path


@dataclass(frozen=True)
class Photo:
    """One bundled photograph and its reviewed inventory."""

    id: str
    source: str
    sha256: str
    present: Mapping[str, int]
    unsure: frozenset[str]
    colours: Mapping[str, str]
    note: str


@dataclass(frozen=True)
class PhotoPrompt:
    """A GenEval prompt record about one image, its reviewed truth and why."""

    record: Mapping[str, Any]
    truth: bool
    reason: str


@dataclass(frozen=True)
class PhotoImage:
    """A photo or a grid of photos (``rows`` of photo ids) and the prompts asked about it."""

    id: str
    rows: tuple[tuple[str, ...], ...]
    prompts: tuple[PhotoPrompt, ...]

    @property
    def photos(self) -> tuple[str, ...]:
        """The photo ids in reading order."""
        return tuple(p for row in self.rows for p in row)


@dataclass(frozen=True)
class PhotoTruth:
    """The truth set: photos by id, images in file order, and the SHA-256 of the file's bytes."""

    name: str
    version: int
    photos: Mapping[str, Photo]
    images: tuple[PhotoImage, ...]
    sha256: str
    path: str

    def counts(self, image: PhotoImage) -> Counter[str]:
        """Class → instances in ``image`` (its photos' ``present`` counts summed)."""
        out: Counter[str] = Counter()
        for p in image.photos:
            out.update(self.photos[p].present)
        return out

    def not_absent(self, image: PhotoImage) -> frozenset[str]:
        """Classes that are or may be in ``image`` (present or unsure in one of its photos)."""
        return frozenset(c for p in image.photos for c in (*self.photos[p].present, *self.photos[p].unsure))

    @property
    def prompts(self) -> int:
        """How many (image, prompt) pairs the set asks about."""
        return sum(len(i.prompts) for i in self.images)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _keys(raw: Mapping[str, Any], known: tuple[str, ...], where: str, required: tuple[str, ...]) -> None:
    for key in raw:
        if key not in known:
            raise InputError(f"{where}: {unknown_choice('key', key, known)}")
    for key in required:
        if key not in raw:
            raise InputError(f"{where}: missing {key!r}")


def _photo(pid: str, raw: Any, where: str) -> Photo:
    from t2ibench.benchmarks.geneval.suite import vocabulary

    vocab = vocabulary()
    raw = _mapping(raw, where)
    _keys(raw, PHOTO_KEYS, where, ("source", "sha256", "present", "note"))
    present = _mapping(raw["present"] or {}, f"{where}.present")
    unsure = raw.get("unsure") or []
    if not (isinstance(unsure, list) and all(isinstance(c, str) for c in unsure)):
        raise InputError(f"{where}.unsure: expected a list of class names, got {unsure!r}")
    colours = _mapping(raw.get("colours") or {}, f"{where}.colours")
    for name in [*present, *unsure, *colours]:
        if name not in vocab.classes:
            raise InputError(f"{where}: {name!r} is not a GenEval class")
    for name, count in present.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InputError(f"{where}.present.{name}: expected a count ≥ 1, got {count!r}")
    if set(present) & set(unsure):
        raise InputError(f"{where}: {sorted(set(present) & set(unsure))} both present and unsure")
    for name, colour in colours.items():
        if name not in present:
            raise InputError(f"{where}.colours.{name}: not in present")
        if colour not in vocab.colors:
            raise InputError(f"{where}.colours.{name}: {colour!r} is not a GenEval colour ({', '.join(vocab.colors)})")
    if not isinstance(raw["source"], str) or ":" not in raw["source"]:
        raise InputError(f"{where}.source: expected 'skimage:NAME', 'matplotlib:FILE' or 'sklearn:FILE'")
    try:
        _source_parts(raw["source"])
    except InputError as exc:
        raise InputError(f"{where}.source: {exc}") from None
    if not (isinstance(raw["sha256"], str) and SHA256.fullmatch(raw["sha256"])):
        raise InputError(f"{where}.sha256: expected the 64 hex digits of its pixels' SHA-256, got {raw['sha256']!r}")
    return Photo(
        id=pid,
        source=raw["source"],
        sha256=str(raw["sha256"]),
        present=dict(present),
        unsure=frozenset(unsure),
        colours=dict(colours),
        note=str(raw["note"]),
    )


def _cells(rows: Sequence[Sequence[str]]) -> dict[str, list[tuple[float, float]]]:
    """Photo id → the centres (x, y, in cell units) of its cells: rows centred on the widest."""
    width = max(len(r) for r in rows)
    out: dict[str, list[tuple[float, float]]] = {}
    for y, row in enumerate(rows):
        offset = (width - len(row)) / 2
        for x, pid in enumerate(row):
            out.setdefault(pid, []).append((offset + x + 0.5, y + 0.5))
    return out


def derived_truth(record: Mapping[str, Any], image: PhotoImage, truth: PhotoTruth) -> bool:
    """Whether ``record`` holds on ``image`` by its photos' inventories and its layout (GenEval's semantics: include
    counts are minima, exclude counts maxima + 1, a colour holds when enough instances have it, a position holds
    between the two objects' cells). InputError when the inventory cannot decide (an unsure class, an unreviewed
    colour, a position between objects not in one cell each or not in one row / column)."""
    counts = truth.counts(image)
    unsure = {c for p in image.photos for c in truth.photos[p].unsure}
    cells = _cells(image.rows)
    named = [c["class"] for c in [*record["include"], *record.get("exclude", [])]]
    if unsure & set(named):
        raise InputError(f"asks about {sorted(unsure & set(named))}, listed as unsure in this image's photos")
    ok = True
    for clause in record["include"]:
        name, need = clause["class"], clause["count"]
        if "color" in clause:
            colours = []
            for p in image.photos:
                photo = truth.photos[p]
                if name in photo.present:
                    if name not in photo.colours:
                        raise InputError(f"asks the colour of {name!r}, not reviewed for photo {p!r}")
                    colours += [photo.colours[name]] * photo.present[name]
            # GenEval asks the colour of the top-`count` objects it keeps, whichever they are: decided only when
            # every instance has the colour (true) or too few do (false)
            matching = colours.count(clause["color"])
            if need <= matching < len(colours):
                raise InputError(f"{name!r} comes in several colours here: which {need} GenEval keeps decides")
            ok &= matching >= need
        else:
            ok &= counts[name] >= need
    for clause in record.get("exclude", []):
        ok &= counts[clause["class"]] < clause["count"]
    for clause in record["include"]:
        if "position" not in clause or not ok:
            continue
        relation, target = clause["position"]
        a, b = clause["class"], record["include"][target]["class"]
        where = [[(x, y) for p in image.photos if a_or_b in truth.photos[p].present for x, y in cells[p]]
                 for a_or_b in (a, b)]  # fmt: skip
        if any(len(w) != 1 or counts[n] != 1 for w, n in zip(where, (a, b), strict=True)):
            raise InputError(f"a position between {a!r} and {b!r} needs each in exactly one cell, once")
        (ax, ay), (bx, by) = where[0][0], where[1][0]
        if (ax != bx) == (ay != by):
            raise InputError(f"{a!r} and {b!r} are not in one row or one column: the relation is ambiguous")
        ok &= {"left of": ax < bx, "right of": ax > bx, "above": ay < by, "below": ay > by}[relation]
    return bool(ok)


def parse_photo_truth(raw: Any, *, source: str, sha256: str) -> PhotoTruth:
    """A truth set from parsed YAML, every rule of the module docstring checked (errors name the entry)."""
    from t2ibench.benchmarks.geneval.suite import parse_prompt

    raw = _mapping(raw, source)
    _keys(raw, FILE_KEYS, source, FILE_KEYS)
    for photo_id in _mapping(raw["photos"], f"{source}: photos"):
        if not (isinstance(photo_id, str) and PHOTO_ID.fullmatch(photo_id)):
            raise InputError(f"{source}: photos: id {photo_id!r} must be letters, digits, '_' or '-'")
    photos = {k: _photo(k, v, f"{source}: photos.{k}") for k, v in raw["photos"].items()}
    version = raw["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputError(f"{source}: version: expected an integer, got {version!r}")
    if not isinstance(raw["images"], list) or not raw["images"]:
        raise InputError(f"{source}: images: expected a non-empty list")
    if len(raw["images"]) > MAX_IMAGES:
        raise InputError(f"{source}: images: {len(raw['images'])} entries, at most {MAX_IMAGES}")
    images: list[PhotoImage] = []
    seen: set[str] = set()
    partial = PhotoTruth(str(raw["name"]), version, photos, (), sha256, source)
    for n, entry in enumerate(raw["images"]):
        where = f"{source}: images[{n}]"
        entry = _mapping(entry, where)
        _keys(entry, IMAGE_KEYS, where, IMAGE_KEYS)
        rows = entry["rows"]
        if not isinstance(rows, list) or not rows or not all(isinstance(r, list) and r for r in rows):
            raise InputError(f"{where}.rows: expected a non-empty list of non-empty lists of photo ids")
        for pid in (p for r in rows for p in r):
            if not isinstance(pid, str) or pid not in photos:
                raise InputError(f"{where}.rows: unknown photo {pid!r}")
        image_id = "/".join("+".join(r) for r in rows)
        if image_id in seen:
            raise InputError(f"{where}: the layout {image_id!r} appears twice (merge its prompts)")
        seen.add(image_id)
        image = PhotoImage(image_id, tuple(tuple(r) for r in rows), ())
        prompts = []
        if not isinstance(entry["prompts"], list) or not entry["prompts"]:
            raise InputError(f"{where}.prompts: expected a non-empty list")
        for k, item in enumerate(entry["prompts"]):
            at = f"{where}.prompts[{k}]"
            if not (isinstance(item, list) and len(item) == 3 and isinstance(item[1], bool)):
                raise InputError(f"{at}: expected [prompt, true|false, reason]")
            text, stated, reason = item
            try:
                record = parse_prompt(str(text))
                derived = derived_truth(record, image, partial)
            except InputError as exc:
                raise InputError(f"{at} ({text!r}): {exc}") from None
            if derived != stated:
                raise InputError(
                    f"{at} ({text!r}): stated {str(stated).lower()}, but the photos' inventories and the layout "
                    f"make it {str(derived).lower()}"
                )
            prompts.append(PhotoPrompt(record, stated, str(reason)))
        images.append(PhotoImage(image_id, image.rows, tuple(prompts)))
    return PhotoTruth(partial.name, partial.version, photos, tuple(images), sha256, source)


def load_photo_truth(path: str | Path | None = None) -> PhotoTruth:
    """The built-in truth set, or a file of the same shape at ``path``: every rule checked and every photo's pixels
    decoded and checked against their reviewed SHA-256 now (≈ 0.4 s), before anything is judged."""
    if path is None:
        ref = resources.files("t2ibench.benchmarks.geneval") / "data" / BUILTIN
        text, source = ref.read_text(encoding="utf-8"), f"t2ibench/benchmarks/geneval/data/{BUILTIN}"
    else:
        text, source = read_text_file(path, what="photo truth set"), str(path)
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    truth = parse_photo_truth(load_yaml(text, source=source), source=source, sha256=sha)
    check_pixels(truth)
    return truth


def check_pixels(truth: PhotoTruth) -> None:
    """Decode every photo of ``truth`` and check its pixels' SHA-256 (cached per process); InputError naming the file
    and the photo otherwise."""
    for pid, photo in truth.photos.items():
        try:
            photo_pixels(photo.source, photo.sha256)
        except InputError as exc:
            raise InputError(f"{truth.path}: photos.{pid}: {exc}") from None


def _source_parts(source: str) -> tuple[str, str]:
    """(package, name) of a ``package:name`` photo source; InputError for another package or a name with a path."""
    package, _, name = source.partition(":")
    if package not in PACKAGES:
        raise InputError(f"photo source {source!r}: unknown package {package!r} ({', '.join(PACKAGES)})")
    if not BARE_NAME.fullmatch(name):
        raise InputError(f"photo source {source!r}: expected a bare name (no path)")
    return package, name


def _package_folder(package: str) -> Path:
    """Where an installed package's files are, without importing it (scikit-learn's import alone takes a second)."""
    from importlib.util import find_spec

    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"the package {package!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _decode(source: str) -> NDArray[np.uint8]:
    """The RGB pixels (H, W, 3) uint8 of a ``package:name`` photo source."""
    from PIL import Image

    package, name = _source_parts(source)
    if package == "skimage":
        import skimage.data as data

        if name not in getattr(data, "__all__", ()) or not callable(getattr(data, name, None)):
            raise InputError(f"photo source {source!r}: skimage.data has no image {name!r}")
        loaded = getattr(data, name)()
        array = np.asarray(loaded[0] if name == "stereo_motorcycle" else loaded)  # the stereo pair's left view
    else:  # matplotlib or sklearn: a file of its sample images
        if package == "matplotlib":
            import matplotlib

            file = Path(matplotlib.get_data_path()) / "sample_data" / name
        else:
            file = _package_folder("sklearn") / "datasets" / "images" / name
        if not file.is_file():
            raise InputError(f"photo source {source!r}: {file} is not installed")
        try:
            with Image.open(file) as im:
                array = np.asarray(im.convert("RGB"))
        except (OSError, ValueError) as exc:
            raise InputError(f"photo source {source!r}: {file} is not an image ({exc})") from None
    if array.dtype == bool:
        array = array.astype(np.uint8) * 255
    if array.ndim == 2:
        array = np.repeat(array[..., None], 3, axis=2)
    return np.ascontiguousarray(array[..., :3].astype(np.uint8))


def pixels_sha256(array: NDArray[np.uint8]) -> str:
    """SHA-256 of an (H, W, 3) uint8 array's shape and bytes."""
    return hashlib.sha256(f"{array.shape}".encode() + array.tobytes()).hexdigest()


@cache
def photo_pixels(source: str, sha256: str) -> NDArray[np.uint8]:
    """The reviewed photo's RGB pixels (H, W, 3) uint8; InputError when the installed package ships others."""
    array = _decode(source)
    found = pixels_sha256(array)
    if found != sha256:
        raise InputError(
            f"photo {source!r}: its pixels (sha256 {found[:12]}…) are not the ones reviewed ({sha256[:12]}…); "
            "review the inventory again before updating the checksum"
        )
    array.setflags(write=False)
    return array


def compose(image: PhotoImage, truth: PhotoTruth) -> Any:
    """The PIL image of ``image``: a single photo as it is; a grid fits each photo into a CELL × CELL white cell
    (aspect kept, centred), GAP px apart, rows centred on the widest."""
    from PIL import Image

    arrays = {p: photo_pixels(truth.photos[p].source, truth.photos[p].sha256) for p in image.photos}
    if len(image.photos) == 1:
        return Image.fromarray(arrays[image.photos[0]])
    width = max(len(r) for r in image.rows)
    size = (width * CELL + (width + 1) * GAP, len(image.rows) * CELL + (len(image.rows) + 1) * GAP)
    canvas = Image.new("RGB", size, "white")
    for pid, centres in _cells(image.rows).items():
        photo = Image.fromarray(arrays[pid])
        scale = CELL / max(photo.size)
        fitted = photo.resize((round(photo.width * scale), round(photo.height * scale)), Image.Resampling.LANCZOS)
        for cx, cy in centres:
            x = GAP + cx * (CELL + GAP) - (CELL + GAP) / 2 + (CELL - fitted.width) / 2
            y = GAP + cy * (CELL + GAP) - (CELL + GAP) / 2 + (CELL - fitted.height) / 2
            canvas.paste(fitted, (round(x), round(y)))
    return canvas
