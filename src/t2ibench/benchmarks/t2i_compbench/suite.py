"""T2I-CompBench++'s prompt suite: the eight ``<category>_val.txt`` files, the complex category's sub-lists and the
numeracy object list, shipped in the package (``data/``, MIT, the repository's licence beside them) and verified
against the SHA-256 pinned here on every load.

Why shipped rather than fetched (GenEval 2's suite is fetched): the files are MIT-licensed and 136 KB, the refresh and
``t2ibench evaluate`` then need no network or data stage on an offline cluster, and the numeracy object list
(``new_objects.txt``, which the reference's numeracy script reads) exists nowhere else. They are the files of
Karine-Huang/T2I-CompBench at ``COMMIT`` (folder ``examples/dataset``; the licence is its ``License.txt``), byte for
byte; tests compare them with a local copy named by
``$T2IBENCH_T2I_COMPBENCH_DATA`` where one is given.

Prompts are read as the reference's generation script reads them (text mode, ``splitlines``, the text before a tab):
the files end lines with CRLF, some without a final newline, and each holds 300 prompts. A prompt is refused when the
reference's file-name parse could not recover it (a '_' or '/'), or when it is empty or repeated in its file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from t2ibench.benchmarks.t2i_compbench.metrics import CATEGORIES, NumeracyRequest, numeracy_tokens, parse_numeracy
from t2ibench.errors import InputError, unknown_choice

REPOSITORY = "Karine-Huang/T2I-CompBench"
COMMIT = "1b7094991a57f3c22abdd4f6e8ba6c1a15517073"
PROMPTS_PER_CATEGORY = 300
ENV = "T2IBENCH_T2I_COMPBENCH_DATA"  # a local copy of the files (tests compare the shipped ones with it)

# file → its SHA-256 at COMMIT (the README of the shared copy lists the same digests)
SHA256 = {
    "color_val.txt": "1634259756dbc77d13093d907d414480080ec9790a8c97ad09efaea7b2534f2d",
    "shape_val.txt": "37e1a276906c7ea9516cbd7ac8501be896006c0c17ca7344f260562834455bae",
    "texture_val.txt": "fbb5363515b4a28009e360afaaaf389d2dd2289e50dbb0c6ef4ea0c7fe4f3d4f",
    "spatial_val.txt": "8707a1d7e42ce3002d95363cf55f74bd043c843ae27108f5125aaaa7840ca988",
    "3d_spatial_val.txt": "c9953597315f36a5fcb41291bb19bdc6ab5f64a0fa760d691b4854a73f5d1fe9",
    "non_spatial_val.txt": "04c56cc9ac441dc9ea6c5157652058bd1635b5308526dd31bb29a1caab9a758d",
    "numeracy_val.txt": "dad8df141604b70ba7554bec724e3db0a80023680769b5c514854ea2d2527bbe",
    "complex_val.txt": "1b808018b8d9916db3d47d5aa2ef18377a3549a56901a474156f799824cdf3b4",
    "complex_val_spatial.txt": "6c7ac0ab75c7c9080cfc7b421fb059b9b0febb98471707aeedf58771088abc02",
    "complex_val_action.txt": "d49ee4c7f99e3f3379fb8704a54ff5288b83bb412971edf616a4721c2473308e",
    "complex_val_spatialaction.txt": "e02ddc7fed812e6577e7386ec2137ce0a994a5ce19771661f68df7ac349a6ca9",
    "new_objects.txt": "f39a3d2ff6067d7738673cbf465dc659ccc750776162989a5d9916f1d5f3e231",
    "LICENSE": "905b2fb8de6611b855171c41985efc7a36698016c083f1b39485a6f9e9d4ae00",
}


@dataclass(frozen=True)
class Prompt:
    """One prompt of the suite: its category, its 0-based line in that category's file, its text, and its index in
    the whole suite (categories in the benchmark's order, 300 each: how results and stored rows key it)."""

    category: str
    line: int
    text: str
    index: int


@dataclass(frozen=True)
class Suite:
    """The suite as read (every category, every prompt) with what its rules need besides the prompts."""

    prompts: tuple[Prompt, ...]
    objects: tuple[tuple[str, str], ...]  # numeracy's (singular, plural) object names, lower case, in file order
    complex_spatial: tuple[str, ...]  # the complex prompts averaged with the spatial score (lines as read)
    complex_action: tuple[str, ...]  # ... with the action (CLIP) score; the rest average all three
    sha256: str  # the digest of every file read (name and bytes), the suite's identity

    def category(self, name: str) -> tuple[Prompt, ...]:
        """The prompts of category ``name``, in file order."""
        return tuple(p for p in self.prompts if p.category == name)

    def numeracy_request(self, prompt: Prompt) -> NumeracyRequest:
        """What a numeracy prompt asks for (objects and counts), by the reference's parse."""
        singular, plural = [s for s, _ in self.objects], [p for _, p in self.objects]
        return parse_numeracy(numeracy_tokens(prompt.text), singular, plural)


def _read(name: str, root: Path | None) -> bytes:
    """The bytes of suite file ``name`` (shipped, or under ``root``), refused unless they are the pinned ones."""
    shipped = resources.files(__package__) / "data" / name
    try:
        data = (root / name).read_bytes() if root is not None else shipped.read_bytes()
    except OSError as error:
        raise InputError(f"{root / name if root is not None else shipped}: cannot read it ({error.strerror})") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256[name]:
        where = root / name if root is not None else f"the packaged {name}"
        pinned = f"{SHA256[name][:16]}… ({REPOSITORY}@{COMMIT[:7]})"
        raise InputError(f"{where}: SHA-256 {digest[:16]}… is not the pinned {pinned}")
    return data


def read_lines(data: bytes, name: str) -> list[str]:
    """A prompt file's prompts as the reference's generation script reads them (universal newlines, the text before
    a tab), refused when one is empty, repeated, or could not survive its file-name round trip."""
    import io

    lines = [line.split("\t")[0] for line in io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read().splitlines()]
    seen: dict[str, int] = {}
    for i, line in enumerate(lines):
        if not line.strip():
            raise InputError(f"{name}:{i + 1}: an empty prompt")
        if "_" in line or "/" in line:
            raise InputError(f"{name}:{i + 1}: {line!r} holds '_' or '/', which the reference's image names cannot")
        if line in seen:
            raise InputError(f"{name}:{i + 1}: {line!r} repeats line {seen[line] + 1}")
        seen[line] = i
    return lines


def pinned_sha256() -> str:
    """The suite's identity as ``load_suite`` computes it (every file verified against ``SHA256`` as it is read),
    from the pinned digests alone: what a stored number's ``suite_sha256`` is compared with."""
    digest = hashlib.sha256()
    for name, sha in SHA256.items():
        digest.update(name.encode() + b"\0" + bytes.fromhex(sha))
    return digest.hexdigest()


def load_suite(root: Path | None = None) -> Suite:
    """The whole suite, from the shipped files (or the folder ``root`` holding the same files), every file verified
    and every numeracy prompt parsed (one the reference cannot score is refused, naming its line)."""
    digest = hashlib.sha256()
    texts: dict[str, list[str]] = {}
    for name in SHA256:
        data = _read(name, root)
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        if name.endswith(".txt") and name != "new_objects.txt":
            texts[name] = read_lines(data, name)
    objects_text = _read("new_objects.txt", root).decode("utf-8").splitlines()
    objects = tuple(
        (line.split(" - ")[0].strip().lower(), line.split(" - ")[1].strip().lower()) for line in objects_text
    )
    prompts: list[Prompt] = []
    for category in CATEGORIES:
        lines = texts[f"{category}_val.txt"]
        if len(lines) != PROMPTS_PER_CATEGORY:
            raise InputError(f"{category}_val.txt: {len(lines)} prompts, not {PROMPTS_PER_CATEGORY}")
        prompts += [Prompt(category, i, text, len(prompts) + i) for i, text in enumerate(lines)]
    suite = Suite(
        prompts=tuple(prompts),
        objects=objects,
        complex_spatial=tuple(texts["complex_val_spatial.txt"]),
        complex_action=tuple(texts["complex_val_action.txt"]),
        sha256=digest.hexdigest(),
    )
    for prompt in suite.category("numeracy"):
        try:
            request = suite.numeracy_request(prompt)
        except ValueError as error:
            raise InputError(f"numeracy_val.txt:{prompt.line + 1}: {prompt.text!r}: {error}") from None
        if not request.objects or len(request.counts) != len(request.objects):
            raise InputError(f"numeracy_val.txt:{prompt.line + 1}: {prompt.text!r}: the reference cannot score it")
    return suite


def select(suite: Suite, categories: Sequence[str] | None = None, per_category: int | None = None) -> list[Prompt]:
    """The prompts a run judges: those of ``categories`` (default: all eight, in the benchmark's order), the first
    ``per_category`` of each (default: all 300)."""
    chosen = list(CATEGORIES) if categories is None else list(categories)
    for name in chosen:
        if name not in CATEGORIES:
            raise unknown_choice("T2I-CompBench++ category", name, CATEGORIES)
    if len(set(chosen)) != len(chosen):
        raise InputError(f"categories {chosen}: a category is named twice")
    if per_category is not None and per_category < 1:
        raise InputError(f"per_category {per_category}: must be at least 1")
    return [p for name in chosen for p in suite.category(name)[:per_category]]


@dataclass(frozen=True)
class Selection:
    """The suite and the prompts a run judges (``select``'s), what ``t2ibench evaluate t2i_compbench`` reads."""

    suite: Suite
    prompts: tuple[Prompt, ...]
    categories: tuple[str, ...]
    per_category: int | None
