"""GenEval evaluation of an image folder: account for every image, judge each, write results, summarise.

Folder layout (GenEval's): ``<dir>/<NNNNN>/metadata.jsonl`` (the prompt record of line NNNNN of the suite) and
``<dir>/<NNNNN>/samples/<k>.png``. Unlike the reference evaluator, nothing is skipped silently: a scan lists
missing and extra prompt folders, non-digit folders, folders without metadata or samples, metadata that
disagrees with the suite, unreadable images and image counts other than expected, and the command exits
non-zero on any of them unless told to allow it.

Results are GenEval's ``results.jsonl`` (one line per image: filename, tag, prompt, correct, reason,
metadata and details as JSON strings), so reference runs can be read back and compared. The summary is
GenEval's Table 2: accuracy over images per task, overall = unweighted mean of the six tasks.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval.metrics import (
    COLORS,
    TASKS,
    Detection,
    GenEvalParams,
    TaskScore,
    evaluate_detections,
    overall_score,
    table2,
    tasks_present,
)
from t2ibench.errors import InputError, note
from t2ibench.hashing import file_sha256
from t2ibench.io import loads_strict, read_jsonl, write_text_atomic
from t2ibench.paths import file_key, frame_count, is_within, kind_of, name_under, regular_file, resolved, shown
from t2ibench.progress import progress
from t2ibench.suites.layout import IMAGE_SUFFIXES, PROMPT_DIR, prompt_index_of, read_metadata


@dataclass(frozen=True)
class ImageItem:
    """One image to judge: prompt index (folder number), sample name (file stem), path and prompt record."""

    prompt_index: int
    sample: str
    path: Path
    metadata: Mapping[str, Any]


@dataclass(frozen=True)
class FolderScan:
    """What a GenEval image folder holds, and every way it departs from the expected suite."""

    root: Path
    items: tuple[ImageItem, ...]
    expected_prompts: int | None
    found_prompts: int
    expected_images: int | None
    missing_prompts: tuple[int, ...] = ()
    extra_prompts: tuple[str, ...] = ()
    non_digit: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # results name each image by its path relative to this folder (a workspace: byte-stable results files on any
    # machine and in any clone); None names it by its path as scanned
    names_from: Path | None = None

    def name(self, item: ImageItem) -> str:
        """The ``filename`` a result of ``item`` records."""
        if self.names_from is None:
            return str(item.path)
        return name_under(item.path, self.names_from)

    @property
    def ok(self) -> bool:
        """True when nothing is missing, extra or broken."""
        return not (self.missing_prompts or self.extra_prompts or self.non_digit or self.problems)

    def report(self, *, limit: int = 20) -> str:
        """Human-readable account: expected vs found prompts and images, then every problem."""
        exp_p = "?" if self.expected_prompts is None else str(self.expected_prompts)
        exp_i = "?" if self.expected_images is None else str(self.expected_images)
        lines = [
            f"{self.root}: prompts expected {exp_p}, found {self.found_prompts}; "
            f"images expected {exp_i}, found {len(self.items)} readable"
        ]

        def listing(title: str, values: Sequence[object]) -> None:
            if values:
                shown = ", ".join(str(v) for v in values[:limit])
                more = f" (+{len(values) - limit} more)" if len(values) > limit else ""
                lines.append(f"{title} ({len(values)}): {shown}{more}")

        listing("missing prompt folders", [f"{i:05d}" for i in self.missing_prompts])
        listing("extra prompt folders (beyond the suite)", self.extra_prompts)
        listing("non-digit folders", self.non_digit)
        for problem in self.problems[:limit]:
            lines.append(f"problem: {problem}")
        if len(self.problems) > limit:
            lines.append(f"(+{len(self.problems) - limit} more problems)")
        for remark in self.notes[:limit]:
            lines.append(f"note: {remark}")
        return "\n".join(shown(line) for line in lines)  # a name with a newline cannot forge a report line


def _check_image(path: Path, root: Path) -> tuple[str | None, str | None]:
    """(problem, note) for one image file: a problem if it cannot be used, a note if it was converted."""
    from t2ibench.images import load_rgb

    if not is_within(path, root):
        return f"escapes the image folder (resolves to {shown(resolved(path))})", None
    try:
        _, note = load_rgb(path)
    except InputError as exc:
        message = str(exc).removeprefix(f"{path}: ")
        return ("zero-byte file" if message == "zero-byte image" else message), None
    frames = frame_count(path)
    if frames > 1:
        return f"holds {frames} frames (an animated or multi-page image); only single-frame images are judged", None
    return None, note


def _outside(path: Path, root: Path, what: str) -> str | None:
    """A problem if ``path`` resolves outside the image folder ``root`` (it is then never read), else None."""
    if is_within(path, root):
        return None
    return f"{shown(path)}: {what} resolves outside the image folder (to {shown(resolved(path))}); not read"


class _Seen:
    """Files and folders of one scan by identity ((st_dev, st_ino) once resolved): the first path seen for each."""

    def __init__(self) -> None:
        self.first: dict[tuple[int, int], Path] = {}

    def again(self, path: Path) -> Path | None:
        """The path first seen for ``path``'s file, if it was seen before (else None, and ``path`` is recorded)."""
        key = file_key(path)
        if key is None:
            return None
        if key in self.first:
            return self.first[key]
        self.first[key] = path
        return None


def scan_folder(
    root: str | Path,
    suite: Sequence[Mapping[str, Any]] | None = None,
    *,
    images_per_prompt: int | None = None,
    verify_images: bool = True,
    validate_metadata: Callable[..., None] | None = None,
) -> FolderScan:
    """Scan a GenEval image folder against ``suite`` (the prompt records, in order) and list every departure.

    Identity is decided after resolving (``t2ibench.paths``): a prompt folder, ``samples/`` folder or image that is
    the same file as one scanned before (a symlink, a hard link, a second spelling) is a problem naming both and is
    judged once; anything the scan would read that resolves outside ``root`` (a prompt folder, metadata.jsonl,
    ``samples/``, an image) is a problem and never read; entries that are not regular files (folders named
    ``x.png``, FIFOs, devices, dangling links) are problems, never opened; multi-frame images are problems.
    ``validate_metadata(record, where=...)`` checks each metadata record (default: GenEval's schema).
    """
    base = Path(root)
    if not base.is_dir():
        raise InputError(f"{base}: not a directory")
    items: list[ImageItem] = []
    problems: list[str] = []
    notes: list[str] = []
    non_digit: list[str] = []
    extra: list[str] = []
    found: set[int] = set()
    folders, files = _Seen(), _Seen()
    for entry in sorted(base.iterdir()):
        if not entry.is_dir():
            notes.append(f"ignored file {entry.name}")
            continue
        if not PROMPT_DIR.fullmatch(entry.name):
            non_digit.append(entry.name)
            continue
        index = int(entry.name)
        if suite is not None and index >= len(suite):
            extra.append(entry.name)
            continue
        if index in found:
            problems.append(f"{entry.name}: prompt {index} appears in more than one folder")
            continue
        escape = _outside(entry, base, "the prompt folder")
        if escape is not None:
            problems.append(escape)
            continue
        first = folders.again(entry)
        if first is not None:
            problems.append(f"{entry.name}: the same folder as {first.name} (a link); its images are judged once")
            continue
        found.add(index)
        meta_path = entry / "metadata.jsonl"
        problem = _outside(meta_path, base, "metadata.jsonl")
        kind = kind_of(meta_path) if problem is None else None
        if kind == "missing":
            problem = f"{entry.name}: missing metadata.jsonl"
        elif kind is not None:
            problem = f"{shown(meta_path)}: metadata.jsonl is {kind}, not a regular file; not read"
        if problem is not None:
            problems.append(problem)
            continue
        try:
            metadata = read_metadata(meta_path, validate_metadata)
        except InputError as exc:
            problems.append(shown(exc))
            continue
        if suite is not None and _canon(metadata) != _canon(suite[index]):
            problems.append(
                f"{meta_path}: metadata disagrees with suite prompt {index} "
                f"({metadata.get('prompt')!r} vs {suite[index].get('prompt')!r})"
            )
            continue
        samples_dir = entry / "samples"
        escape = _outside(samples_dir, base, "the samples folder") if samples_dir.is_dir() else None
        if escape is not None:
            problems.append(escape)
            continue
        first = folders.again(samples_dir) if samples_dir.is_dir() else None
        if first is not None:
            problems.append(
                f"{entry.name}/samples: the same folder as {first.relative_to(base)} (a link); "
                "its images are judged once"
            )
            continue
        entries = sorted(samples_dir.iterdir()) if samples_dir.is_dir() else []
        images: list[Path] = []
        for other in entries:
            kind = kind_of(other)
            if other.suffix.lower() not in IMAGE_SUFFIXES:
                if kind is None:
                    notes.append(f"{shown(entry.name)}/samples/{shown(other.name)}: not an image, ignored")
            elif kind is None:
                images.append(other)
            elif kind == "missing":
                problems.append(f"{shown(other)}: a dangling link (to {shown(os.readlink(other))}); not read")
            else:
                problems.append(f"{shown(other)}: is {kind}, not an image file; not read")
        if not images:
            problems.append(f"{entry.name}: no samples")
            continue
        by_sample: dict[str, list[str]] = {}
        for path in images:
            by_sample.setdefault(path.stem.lower(), []).append(path.name)
        twice = {stem: names for stem, names in by_sample.items() if len(names) > 1}
        for names in twice.values():
            problems.append(
                f"{entry.name}/samples: one sample in several files ({', '.join(map(shown, names))}); keep one"
            )
        images = [p for p in images if p.stem.lower() not in twice]
        if images_per_prompt is not None and len(images) != images_per_prompt:
            problems.append(f"{entry.name}: {len(images)} samples, expected {images_per_prompt}")
        for path in images:
            reason, note = _check_image(path, base) if verify_images else (None, None)
            if reason is None:
                first = files.again(path)
                if first is not None:
                    reason = f"the same file as {shown(first)} (a link); judged once, as {shown(first)}"
            if reason is not None:
                problems.append(f"{shown(path)}: {reason}")
                continue
            if note is not None:
                notes.append(f"{shown(path)}: {note}")
            items.append(ImageItem(prompt_index=index, sample=path.stem, path=path, metadata=metadata))
    missing = tuple(i for i in range(len(suite)) if i not in found) if suite is not None else ()
    expected_prompts = len(suite) if suite is not None else None
    expected_images = (
        expected_prompts * images_per_prompt if expected_prompts is not None and images_per_prompt is not None else None
    )
    return FolderScan(
        root=base,
        items=tuple(items),
        expected_prompts=expected_prompts,
        found_prompts=len(found),
        expected_images=expected_images,
        missing_prompts=missing,
        extra_prompts=tuple(extra),
        non_digit=tuple(non_digit),
        problems=tuple(problems),
        notes=tuple(notes),
    )


def _canon(record: Mapping[str, Any]) -> str:
    return json.dumps(dict(record), sort_keys=True)


# -- results ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultRow:
    """One judged image, in GenEval's results.jsonl terms (metadata and details decoded)."""

    filename: str
    tag: str
    prompt: str
    correct: bool
    reason: str
    metadata: Mapping[str, Any]
    details: Mapping[str, Any] = field(default_factory=dict)
    # t2ibench's additions for failure analysis (absent from GenEval's own results.jsonl): the classified colour
    # of each kept object by class and rank (None where the rules needed none), and for position prompts the
    # relation found between the two objects (see metrics.observed_relation)
    colours: Mapping[str, Sequence[str | None]] = field(default_factory=dict)
    relation: str | None = None

    @property
    def prompt_index(self) -> int | None:
        """The prompt folder number parsed from the filename (``.../<NNNNN>/samples/...``), if present."""
        return prompt_index_of(self.filename)

    @property
    def sample(self) -> str:
        """The image's file stem (its sample id within the prompt)."""
        return Path(self.filename).stem

    def to_json(self) -> str:
        """GenEval's results.jsonl line: metadata and details as JSON strings."""
        return json.dumps(
            {
                "filename": self.filename,
                "tag": self.tag,
                "prompt": self.prompt,
                "correct": self.correct,
                "reason": self.reason,
                "metadata": json.dumps(dict(self.metadata)),
                "details": json.dumps(dict(self.details)),
                **({"colours": json.dumps(dict(self.colours))} if self.colours else {}),
                **({"relation": self.relation} if self.relation is not None else {}),
            }
        )


def parse_result(record: Any, *, where: str) -> ResultRow:
    """A ResultRow from a decoded results.jsonl object (ours or the reference's); InputError names ``where``.

    Strict: ``correct`` must be a JSON boolean, text fields strings, ``metadata`` a valid prompt record whose tag
    and prompt agree with the line's, ``details``/``colours`` objects of the right shape.
    """
    from t2ibench.benchmarks.geneval.suite import validate_record

    if not isinstance(record, dict):
        raise InputError(f"{where}: a result must be a JSON object")
    missing = [k for k in ("filename", "tag", "prompt", "correct", "metadata") if k not in record]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")

    def decode(value: Any, name: str) -> Any:
        if isinstance(value, str):
            return loads_strict(value, where=f"{where}: {name}") if value else {}
        return {} if value is None else value

    for name in ("filename", "tag", "prompt"):
        if not isinstance(record[name], str) or (name == "filename" and not record[name]):
            raise InputError(f"{where}: {name} must be a non-empty string; got {record[name]!r}")
    if not isinstance(record["correct"], bool):
        raise InputError(f"{where}: correct must be a JSON boolean (true/false); got {record['correct']!r}")
    reason = record.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise InputError(f"{where}: reason must be a string; got {reason!r}")
    if record["tag"] not in TASKS:
        raise InputError(f"{where}: unknown tag {record['tag']!r}")
    metadata = decode(record["metadata"], "metadata")
    if not isinstance(metadata, dict):
        raise InputError(f"{where}: metadata must be a JSON object (a prompt record)")
    if metadata:
        validate_record(metadata, where=f"{where}: metadata")
        if metadata["tag"] != record["tag"]:
            raise InputError(f"{where}: tag {record['tag']!r} disagrees with its metadata's tag {metadata['tag']!r}")
        if metadata["prompt"] != record["prompt"]:
            raise InputError(f"{where}: prompt {record['prompt']!r} disagrees with its metadata's prompt")
    details = decode(record.get("details"), "details")
    if not isinstance(details, dict):
        raise InputError(f"{where}: details must be a JSON object")
    colours = decode(record.get("colours"), "colours")
    if not isinstance(colours, dict) or any(
        not isinstance(v, list) or any(c is not None and c not in COLORS for c in v) for v in colours.values()
    ):
        raise InputError(f"{where}: colours must map classes to lists of GenEval colour names (or null)")
    relation = record.get("relation")
    if relation is not None and not isinstance(relation, str):
        raise InputError(f"{where}: relation must be a string")
    return ResultRow(
        filename=record["filename"],
        tag=record["tag"],
        prompt=record["prompt"],
        correct=record["correct"],
        reason=reason or "",
        metadata=metadata,
        details=details,
        colours=colours,
        relation=relation,
    )


def image_identity(filename: str) -> tuple[object, ...]:
    """What makes two results' ``filename`` one image: the file they name ((st_dev, st_ino), links followed) when it
    exists here, else the name with '.', '..' and repeated separators folded (``a/./b.png`` is ``a/b.png``); an
    absent file in GenEval's layout (``<dir>/<prompt>/samples/<sample>.<ext>``) is its folder, prompt and sample
    numbers (``x/0/samples/0.png`` and ``x/00000/samples/00000.PNG`` are one sample)."""
    key = file_key(filename)
    if key is not None:
        return ("file", *key)
    name = posixpath.normpath(filename)
    layout = _LAYOUT_NAME.fullmatch(name)
    if layout:
        return ("sample", layout["root"], int(layout["prompt"]), int(layout["sample"]))
    return ("name", name)


_LAYOUT_NAME = re.compile(r"(?P<root>.*?)/?(?P<prompt>[0-9]{1,9})/samples/(?P<sample>[0-9]{1,9})\.[A-Za-z0-9]{1,5}")


def read_results(path: str | Path) -> list[ResultRow]:
    """Read a results.jsonl (t2ibench's or GenEval's reference output); an image judged twice is an error, however
    its ``filename`` is spelt (``image_identity``). The file must be a regular file (never a FIFO or a device)."""
    regular_file(path, what="results file")
    rows: list[ResultRow] = []
    first: dict[tuple[object, ...], tuple[str, str]] = {}
    for where, record in read_jsonl(path):
        row = parse_result(record, where=where)
        key = image_identity(row.filename)
        if key in first:
            line, name = first[key]
            also = "" if name == row.filename else f", as {name!r}: the same image"
            raise InputError(f"{where}: a second result for {shown(row.filename)} (first at {line}{also})")
        first[key] = (f"line {where.rsplit(':', 1)[-1]}", row.filename)
        rows.append(row)
    return rows


def write_results(path: str | Path, rows: Iterable[ResultRow]) -> Path:
    """Write results.jsonl atomically (temp file renamed into place)."""
    return write_text_atomic(path, "".join(r.to_json() + "\n" for r in rows))


# -- evaluation ---------------------------------------------------------------------------------------------------


def judge_image(
    item: ImageItem,
    detector: Any,
    colour: Any | None,
    params: GenEvalParams | None = None,
) -> ResultRow:
    """Detect objects in one image, classify the colours the prompt needs, and apply GenEval's rules."""
    from t2ibench.benchmarks.geneval.suite import vocabulary
    from t2ibench.images import load_rgb

    image, _ = load_rgb(item.path)
    found = detector.detect([image])[0]
    outside = sorted({d.label for d in found.detections} - set(vocabulary().classes))
    if outside:  # a detector built without GenEval's label space (build_models passes it): never judged as absent
        raise InputError(f"{item.path}: the detector labels {outside[:3]} are not GenEval classes (build it with "
                         "GenEval's label space: benchmarks/geneval/evaluate.py:build_models)")  # fmt: skip

    def colour_of(
        requests: list[tuple[str, int]], kept: Mapping[str, Sequence[Detection]]
    ) -> dict[tuple[str, int], str]:
        if colour is None:
            raise InputError(f"{item.path}: the prompt needs colours but no colour classifier is configured")
        out: dict[tuple[str, int], str] = {}
        for classname in dict.fromkeys(c for c, _ in requests):
            indices = [i for c, i in requests if c == classname]
            objects = [(kept[classname][i].box, found.mask(kept[classname][i].ref)) for i in indices]
            for i, name in zip(indices, colour.classify(image, objects, classname), strict=True):
                if name not in COLORS:
                    raise InputError(f"{item.path}: the colour classifier named {name!r}, not one of GenEval's colours")
                out[(classname, i)] = name
        return out

    verdict = evaluate_detections(item.metadata, found.detections, colour_of, params or GenEvalParams())
    return ResultRow(
        filename=str(item.path),
        tag=str(item.metadata["tag"]),
        prompt=str(item.metadata["prompt"]),
        correct=verdict.correct,
        reason=verdict.reason,
        metadata=item.metadata,
        details=json.loads(verdict.details_json()),
        colours=verdict.colours_json(),
        relation=verdict.relation,
    )


def evaluation_fingerprint(detector: Any, colour: Any | None, params: GenEvalParams) -> dict[str, Any]:
    """What decides a verdict: the detector's and colour model's descriptions and every threshold."""
    from dataclasses import asdict

    from t2ibench import __version__

    def described(model: Any) -> Any:
        return model.describe() if model is not None and hasattr(model, "describe") else type(model).__name__

    return {
        "t2ibench": __version__,
        "detector": described(detector),
        "colour": described(colour),
        "params": asdict(params),
    }


def evaluate_scan(
    scan: FolderScan,
    detector: Any,
    colour: Any | None,
    *,
    params: GenEvalParams | None = None,
    out: str | Path | None = None,
    show_progress: bool = True,
) -> list[ResultRow]:
    """Judge every readable image of ``scan``; with ``out``, resume from and append to ``out``.partial.

    A run that is interrupted keeps the finished images in the .partial file, whose first line records the
    settings that made them (detector, colour model, thresholds); the next run with the same ``out`` and the
    same settings skips them, and one with other settings starts over (with a note), never mixing verdicts. A
    verdict is reused only for the same image bytes (its SHA-256) judged against the same prompt record (its
    metadata, compared as canonical JSON); the rest are judged again, counted by reason in one note. The
    final results.jsonl is written atomically, in folder order, and the .partial removed.
    """
    from t2ibench.resume import PartialResults

    params = params or GenEvalParams()
    done: dict[str, ResultRow] = {}
    partial = None
    if out is not None:
        partial = PartialResults(out, evaluation_fingerprint(detector, colour, params), parse_result)
        stored, rows_found = partial.read()
        digests: dict[str, str] = {}
        if stored == partial.settings:
            current = {scan.name(item): item for item in scan.items}
            stale = {"changed images": 0, "changed prompt records": 0, "images that left": 0}
            for row, digest in rows_found:
                item = current.get(row.filename)
                if item is None:
                    stale["images that left"] += 1
                elif digest is None or file_sha256(item.path) != digest:
                    stale["changed images"] += 1
                elif _canon(row.metadata) != _canon(item.metadata):  # judged against another prompt record
                    stale["changed prompt records"] += 1
                else:
                    done[row.filename], digests[row.filename] = row, digest
            if any(stale.values()):
                reasons = ", ".join(f"{n} for {reason}" for reason, n in stale.items() if n)
                note(
                    f"{partial.path}: {sum(stale.values())} partial verdicts are stale ({reasons}); judging them again"
                )
        elif stored is not None or rows_found:
            note(
                f"{partial.path}: {len(rows_found)} partial verdicts were made with other settings "
                f"({_changed(stored, partial.settings)}); judging every image again"
            )
        partial.start((json.loads(row.to_json()), digests[name]) for name, row in done.items())
    todo = [item for item in scan.items if scan.name(item) not in done]
    bar = progress(len(scan.items), "geneval", enabled=show_progress, unit="img")
    bar.update(len(scan.items) - len(todo))
    try:
        for item in todo:
            row = dataclasses.replace(judge_image(item, detector, colour, params), filename=scan.name(item))
            done[row.filename] = row
            if partial is not None:
                partial.add(json.loads(row.to_json()), file_sha256(item.path))
            bar.update()
    finally:
        bar.close()
        if partial is not None:
            partial.close()
    rows = [done[scan.name(item)] for item in scan.items]
    if out is not None:
        write_results(out, rows)
        assert partial is not None
        partial.remove()
    return rows


def build_models(cfg: Any, *, device: str, reuse: bool = False) -> tuple[Any, Any]:
    """(detector, colour classifier) of the specs a ``GenEvalConfig`` names (its ``detector`` and ``colour``, registry
    entries) on ``device``, labelling in GenEval's 80 classes and naming its ten colours; ``reuse``: the calling
    thread's kept objects (``Registry.reuse``) rather than new ones."""
    from t2ibench.benchmarks.geneval.suite import vocabulary
    from t2ibench.models.registry import COLOUR_CLASSIFIERS, DETECTORS

    detectors = DETECTORS.reuse if reuse else DETECTORS.build
    colours = COLOUR_CLASSIFIERS.reuse if reuse else COLOUR_CLASSIFIERS.build
    return (
        detectors(cfg.detector.backend, cfg.detector, device=device, label_space=vocabulary().labels),
        colours(cfg.colour.backend, cfg.colour, device=device, colors=COLORS),
    )


def judge_scan(
    scan: FolderScan, cfg: Any, *, out: str | Path | None, device: str = "auto", show_progress: bool = True
) -> list[ResultRow]:
    """Judge a scanned folder with the detector and colour classifier a ``GenEvalConfig`` names (registry entries)
    and its thresholds; the one path the CLI's ``evaluate`` and the pipeline's GenEval step share."""
    detector, colour = build_models(cfg, device=device, reuse=True)  # once per worker thread
    return evaluate_scan(scan, detector, colour, params=cfg.params, out=out, show_progress=show_progress)


def _changed(stored: Any, current: Mapping[str, Any]) -> str:
    if not isinstance(stored, dict):
        return "no settings recorded"
    keys = sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))
    return "changed: " + ", ".join(keys)


# -- summary ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """GenEval Table 2 numbers: per-task accuracy over images, overall = mean of the six, plus prompt-level."""

    tasks: tuple[TaskScore, ...]
    images: int
    prompts: int
    correct_images: int
    correct_prompts: int
    prompt_correct: Mapping[str, bool]

    @property
    def overall(self) -> float:
        """Unweighted mean of the accuracies of the tasks with images (NaN if none; see ``tasks_present``)."""
        return overall_score(self.tasks)

    @property
    def tasks_present(self) -> int:
        """How many of the six tasks the overall score covers."""
        return tasks_present(self.tasks)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (NaN as null)."""

        def num(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "overall": num(self.overall),
            "tasks_present": self.tasks_present,
            "tasks": {
                t.task: {"accuracy": num(t.accuracy), "correct": t.correct, "total": t.total} for t in self.tasks
            },
            "images": self.images,
            "prompts": self.prompts,
            "correct_images": self.correct_images,
            "correct_prompts": self.correct_prompts,
            "prompt_correct": dict(self.prompt_correct),
        }


def summarise(rows: Sequence[ResultRow]) -> Summary:
    """Per-task accuracy over images, overall mean of the six tasks, and per-prompt 'any image correct'."""
    tasks = table2((r.tag, r.correct) for r in rows)
    by_prompt: dict[str, bool] = {}
    for r in rows:
        key = f"{r.prompt_index:05d}" if r.prompt_index is not None else json.dumps(dict(r.metadata), sort_keys=True)
        by_prompt[key] = by_prompt.get(key, False) or r.correct
    return Summary(
        tasks=tasks,
        images=len(rows),
        prompts=len(by_prompt),
        correct_images=sum(r.correct for r in rows),
        correct_prompts=sum(by_prompt.values()),
        prompt_correct=by_prompt,
    )
