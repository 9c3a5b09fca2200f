"""T2I-CompBench++ evaluation of an image folder or an image map: account for every image, judge each with its
category's evaluator, write per-image results, summarise per category.

Images come as the reference's folder (``<dir>/samples/<prompt>_<N>.png``, or the files directly in ``<dir>``: the
prompt is the name before its first '_', ``N`` the image's number, which orders a category's images as the
reference sorts them) or as a JSON map ``{prompt: image path or [paths]}`` (relative paths from the map's folder).
A prompt the suite does not have, an unreadable image, a name that is not ``<prompt>_<N>`` and one file reached
twice are problems; prompts of the chosen categories without images are listed; the command stops on any of them
unless told to allow it.

Per category (``metrics`` beside this module holds the rules): colour, shape and texture ask BLIP each noun phrase;
2-D spatial and numeracy detect the prompt's objects in the detection frame; 3-D spatial adds the depth map; non-
spatial is CLIPScore; complex averages BLIP's attribute score, the 2-D rule on its preposition's objects and CLIPScore
of its adjective-free text (3-in-1). ``results.jsonl`` holds one line per image (its score, what the models said, the
protocol); an interrupted run resumes from ``results.jsonl.partial`` for the images whose protocol is unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from t2ibench.benchmarks import ImageScan
from t2ibench.benchmarks.t2i_compbench import metrics as rules
from t2ibench.benchmarks.t2i_compbench.metrics_categories import USES
from t2ibench.benchmarks.t2i_compbench.options import DETECTION_FRAME, T2ICompBenchConfig
from t2ibench.benchmarks.t2i_compbench.suite import Prompt, Suite
from t2ibench.benchmarks.t2i_compbench.suite_phrases import NEEDS_PARSE, PhraseTable, read_table
from t2ibench.errors import InputError, note
from t2ibench.images import image_problem
from t2ibench.io import loads_strict, read_text_file, write_text_atomic
from t2ibench.paths import file_key, regular_file, shown
from t2ibench.progress import progress

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
YES_NO = (2748, 2053)  # BLIP's 'yes' and 'no' (bert-base-uncased ids): its vqa_prob reads them


@dataclass(frozen=True)
class CompImage:
    """One image to judge: its prompt, its number (the reference's image order) and path."""

    prompt: Prompt
    sample: int
    path: Path


class CompScan(ImageScan[CompImage]):
    """What an image folder or map holds against the chosen prompts (``missing_prompts``: 'category:line')."""


def _unchosen(where: str, text: str, known: set[str], problems: list[str], notes: list[str]) -> None:
    """An image of a prompt not chosen: noted when the suite has it (another category, or past per_category), a
    problem when it does not."""
    if text in known:
        notes.append(f"{where}: prompt {text!r} is not among the chosen ones")
    else:
        problems.append(f"{where}: prompt {text!r} is not in the suite")


def _scan_generated(
    base: Path, by_text: Mapping[str, Prompt], known: set[str], problems: list[str], notes: list[str]
) -> list[tuple[Prompt, int, Path]]:
    """The images of ``t2ibench generate t2i_compbench``'s folder (GenEval's layout: ``<NNNNN>/metadata.jsonl`` holding
    the prompt's record, ``<NNNNN>/samples/<k>.png``), each found by its record's prompt."""
    found = []
    for folder in sorted(d for d in base.iterdir() if d.is_dir() and d.name.isdigit()):
        meta = folder / "metadata.jsonl"
        try:
            record = loads_strict(read_text_file(meta, what="prompt record").strip(), where=str(meta))
            text = str(record["prompt"])
        except (InputError, KeyError, TypeError) as exc:
            problems.append(f"{shown(meta)}: no prompt record ({exc})")
            continue
        if text not in by_text:
            _unchosen(f"{shown(meta)}", text, known, problems, notes)
            continue
        for path in sorted((folder / "samples").glob("*")):
            if path.suffix.lower() in IMAGE_SUFFIXES and path.stem.isdigit():
                found.append((by_text[text], int(path.stem), path))
    return found


def scan_images(
    source: str | Path, suite: Suite, chosen: Sequence[Prompt], *, images_per_prompt: int | None = None
) -> CompScan:
    """Scan the reference's image folder, ``t2ibench generate``'s folder or a ``{prompt: path or [paths]}`` JSON map
    against the ``chosen`` prompts of ``suite``; every departure listed (module docstring)."""
    base = Path(source)
    by_text = {p.text: p for p in chosen}
    known = {p.text for p in suite.prompts}
    found: list[tuple[Prompt, int, Path]] = []
    problems: list[str] = []
    notes: list[str] = []
    if base.is_dir() and any(d.name.isdigit() and d.is_dir() for d in base.iterdir()):
        names_from = base
        found += _scan_generated(base, by_text, known, problems, notes)
    elif base.is_dir():
        folder = base / "samples" if (base / "samples").is_dir() else base
        names_from = base
        for path in sorted(folder.iterdir()):
            if path.suffix.lower() not in IMAGE_SUFFIXES:
                if not path.name.startswith("."):
                    notes.append(f"ignored {path.name} (not an image)")
                continue
            text, tail = path.stem.split("_")[0], path.stem.split("_")[-1]
            if "_" not in path.stem or not tail.isdigit():
                problems.append(f"{shown(path)}: not named <prompt>_<number>{path.suffix}")
                continue
            if text not in by_text:
                _unchosen(shown(path), text, known, problems, notes)
                continue
            found.append((by_text[text], int(tail), path))
    elif base.suffix.lower() == ".json":
        regular_file(base, what="image map")
        raw = loads_strict(read_text_file(base, what="image map"), where=str(base))
        if not isinstance(raw, dict):
            raise InputError(f"{base}: an image map must be a JSON object {{prompt: image path or [paths]}}")
        names_from = base.parent
        for text, value in raw.items():
            paths = [value] if isinstance(value, str) else value
            if not isinstance(paths, list) or not paths or not all(isinstance(v, str) and v.strip() for v in paths):
                problems.append(f"{base}: the images of prompt {text!r} must be a path or a list of paths")
                continue
            if text not in by_text:
                _unchosen(str(base), text, known, problems, notes)
                continue
            found += [
                (by_text[text], k, Path(v) if Path(v).is_absolute() else base.parent / v) for k, v in enumerate(paths)
            ]
    else:
        raise InputError(f"{base}: neither an image folder nor a .json image map ({{prompt: image path}})")
    items: list[CompImage] = []
    seen: dict[tuple[int, int], str] = {}
    numbered: dict[tuple[int, int], str] = {}  # (prompt, image number) → the file that has it
    for prompt, number, path in found:
        problem = image_problem(path)
        key = file_key(path) if problem is None else None
        if key is not None and key in seen:
            problem = f"{shown(path)}: the same file as {seen[key]}"
        elif (prompt.index, number) in numbered:  # x_1.png and x_01.png, or x_1.png and x_1.jpg: one image number
            problem = f"{shown(path)}: image {number} of its prompt again (also {numbered[(prompt.index, number)]})"
        if problem is not None:
            problems.append(problem)
            continue
        if key is not None:
            seen[key] = shown(path)
        numbered[(prompt.index, number)] = shown(path)
        items.append(CompImage(prompt, number, path))
    counts: dict[int, int] = {}
    for item in items:
        counts[item.prompt.index] = counts.get(item.prompt.index, 0) + 1
    if images_per_prompt is not None:
        lines = {p.index: f"{p.category}:{p.line + 1}" for p in chosen}
        problems += [f"{lines[i]}: {n} images, not {images_per_prompt}" for i, n in counts.items()
                     if n != images_per_prompt]  # fmt: skip
    missing = tuple(f"{p.category}:{p.line + 1}" for p in chosen if p.index not in counts)
    items.sort(key=lambda i: (i.prompt.index, i.sample))
    return CompScan(
        source=base,
        items=tuple(items),
        expected_prompts=len(chosen),
        found_prompts=len(counts),
        missing_prompts=missing,
        problems=tuple(problems),
        notes=tuple(notes),
        names_from=names_from,
    )


# -- results -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompResult:
    """One judged image: its category and prompt, its score in [0, 1] (CLIPScore: a cosine), what the models said
    (``details``) and the protocol it was judged under."""

    category: str
    prompt_index: int
    prompt: str
    sample: int
    filename: str
    score: float
    details: Mapping[str, Any]
    protocol: Mapping[str, Any]

    def to_json(self) -> str:
        """One results.jsonl line (NaN refused: not JSON)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True, allow_nan=False)


def parse_result(record: Any, *, where: str) -> CompResult:
    """A results.jsonl line back as a result; InputError names ``where`` on a missing or mistyped field."""
    try:
        return CompResult(
            category=str(record["category"]),
            prompt_index=int(record["prompt_index"]),
            prompt=str(record["prompt"]),
            sample=int(record["sample"]),
            filename=str(record["filename"]),
            score=float(record["score"]),
            details=dict(record["details"]),
            protocol=dict(record["protocol"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: not a T2I-CompBench++ result line ({type(exc).__name__}: {exc})") from None


def read_results(path: str | Path) -> list[CompResult]:
    """The results of a results.jsonl file; InputError names the file and line of a bad one."""
    from t2ibench.io import read_jsonl

    return [parse_result(record, where=where) for where, record in read_jsonl(path)]


# -- judging -----------------------------------------------------------------------------------------------------


def frame(image: Any) -> Any:
    """``image`` resized to the detection frame as the reference's Resize(479, max_size=480) does (PIL bilinear)."""
    from PIL import Image

    short_side, max_side = DETECTION_FRAME
    w, h = image.size
    short, long = min(w, h), max(w, h)
    new_short, new_long = short_side, int(short_side * long / short)
    if new_long > max_side:
        new_short, new_long = max(1, int(max_side * new_short / new_long)), max_side  # ≥ 1 pixel (PIL refuses 0)
    size = (new_short, new_long) if w <= h else (new_long, new_short)
    return image.resize(size, Image.Resampling.BILINEAR)


class Judges:
    """The evaluator's models, built from their registries on first use (a category that needs none loads none)."""

    def __init__(self, config: T2ICompBenchConfig, *, device: str, table: PhraseTable | None) -> None:
        self.config, self.device, self.table = config, device, table
        self._built: dict[str, Any] = {}

    def get(self, kind: str) -> Any:
        """The built ``vqa``, ``detector``, ``depth`` or ``clip`` model."""
        if kind not in self._built:
            from t2ibench.models.registry import DEPTH_MODELS, EMBEDDERS, OPEN_DETECTORS, VQA_JUDGES

            spec = self.config.models()[kind]
            if kind == "clip":
                self._built[kind] = EMBEDDERS.build(spec.backend, spec, device=self.device, show_progress=False)
            else:
                registry: Any = {"vqa": VQA_JUDGES, "detector": OPEN_DETECTORS, "depth": DEPTH_MODELS}[kind]
                self._built[kind] = registry.build(spec.backend, spec, device=self.device)
        return self._built[kind]

    def identity(self, kind: str) -> dict[str, Any]:
        """What the model of ``kind`` is, for the protocol."""
        model = self.get(kind)
        return dict(model.identity() if kind == "clip" else model.describe())


def protocol(category: str, judges: Judges, suite: Suite) -> dict[str, Any]:
    """What a score of ``category`` depends on: the rule, its models' identities, the phrase parser, the detection
    frame, the suite's digest and t2ibench's version."""
    from t2ibench import __version__

    config = judges.config
    out: dict[str, Any] = {"rule": config.rule, "suite_sha256": suite.sha256, "t2ibench": __version__}
    out["models"] = {kind: judges.identity(kind) for kind in USES[category]}
    if category in rules.ATTRIBUTE or category == "complex":
        out["np_num"] = config.np_num
    if "detector" in USES[category]:
        out["frame"] = list(DETECTION_FRAME)
    if category in NEEDS_PARSE:
        out["phrases"] = judges.table.describe() if judges.table is not None else None
    return out


def _attribute(item: CompImage, judges: Judges) -> tuple[float, dict[str, Any]]:
    from t2ibench.models.vqa import JudgeRequest

    chunks = judges.table.parse(item.prompt.text).chunks if judges.table is not None else ()
    questions = rules.phrase_questions(chunks, np_num=judges.config.np_num)
    asked = [q for q in questions if q is not None]
    replies = iter(judges.get("vqa").ask([JudgeRequest(item.path, q, YES_NO) for q in asked]))
    answers: list[str | None] = []
    for q in questions:
        if q is None:
            answers.append(None)
            continue
        p_yes, p_no = (np.float32(p) for p in next(replies).token_probabilities)
        total = np.float32(p_yes + p_no)
        if not (np.isfinite(total) and total > 0):
            raise InputError(f"{item.path}: BLIP gave no probability to 'yes' or 'no' for {q!r} (p = {p_yes}, {p_no})")
        answers.append(rules.vqa_answer(float(np.float32(p_yes / total))))
    score = rules.attribute_score(answers, np_num=judges.config.np_num)
    return score, {"questions": [q for q in questions if q], "answers": [a for a in answers if a is not None]}


def _detections(item: CompImage, names: Sequence[str], judges: Judges) -> tuple[list[rules.Detection], Any]:
    from PIL import Image

    with Image.open(item.path) as raw:
        framed = frame(raw.convert("RGB"))
    return judges.get("detector").detect(framed, [n for n in names if n]), framed


def _boxes(found: Sequence[rules.Detection]) -> list[list[Any]]:
    return [[d.label, [round(v, 3) for v in d.box], round(d.score, 6)] for d in found]


def _spatial(item: CompImage, obj1: str | None, obj2: str | None, judges: Judges) -> tuple[float, dict[str, Any]]:
    relation = rules.find_relation(item.prompt.text, rules.SPATIAL_2D)
    found, _ = _detections(item, [rules.person(obj1) or "", rules.person(obj2) or ""], judges)
    score = rules.spatial_2d_score(found, obj1, obj2, relation, rule=judges.config.rule)  # type: ignore[arg-type]
    return score, {"objects": [obj1, obj2], "relation": relation, "detections": _boxes(found)}


def _spatial_3d(item: CompImage, judges: Judges) -> tuple[float, dict[str, Any]]:
    from PIL import Image

    assert judges.table is not None
    obj1, obj2 = rules.first_last_nouns(judges.table.parse(item.prompt.text).tokens)
    relation = rules.find_relation(item.prompt.text, rules.SPATIAL_3D)
    found, framed = _detections(item, [rules.person(obj1) or "", rules.person(obj2) or ""], judges)
    with Image.open(item.path) as raw:
        depth_image = judges.get("depth").depth_image(raw.convert("RGB"))
    depth = np.asarray(depth_image.resize(framed.size, Image.Resampling.BILINEAR), dtype=np.float32) / 255.0
    score = rules.spatial_3d_score(found, obj1, obj2, relation, depth, rule=judges.config.rule)  # type: ignore[arg-type]
    return score, {"objects": [obj1, obj2], "relation": relation, "detections": _boxes(found)}


def _clip(item: CompImage, text: str, judges: Judges) -> tuple[float, dict[str, Any]]:
    clip = judges.get("clip")
    image = clip.embed_images([item.path])[0]
    texts = clip.embed_texts([text])
    return rules.clip_similarity(image, texts.vectors[0]), {"text": text, "truncated": bool(texts.truncated)}


def judge_one(item: CompImage, suite: Suite, judges: Judges) -> tuple[float, dict[str, Any]]:
    """One image's score and details by its category's rule."""
    category, text = item.prompt.category, item.prompt.text
    rule = judges.config.rule
    if category in rules.ATTRIBUTE:
        return _attribute(item, judges)
    if category == "spatial":
        assert judges.table is not None
        return _spatial(item, *rules.first_last_nouns(judges.table.parse(text).tokens), judges)
    if category == "3d_spatial":
        return _spatial_3d(item, judges)
    if category == "non_spatial":
        return _clip(item, text, judges)
    if category == "numeracy":
        request = suite.numeracy_request(item.prompt)
        names = [rules.NUMERACY_RENAMES.get(o, o) for o in request.objects]
        found, _ = _detections(item, names, judges)
        score = rules.numeracy_score(found, request, rule=rule)  # type: ignore[arg-type]
        return score, {"objects": list(request.objects), "counts": list(request.counts), "detections": _boxes(found)}
    assert judges.table is not None  # complex reads the parse (judge_images read the table)
    tokens = judges.table.parse(text).tokens
    attribute, a_details = _attribute(item, judges)
    spatial, s_details = _spatial(item, *rules.complex_objects(tokens), judges)
    action, c_details = _clip(item, rules.without_adjectives(tokens), judges)
    kind = rules.complex_kind(text, suite.complex_spatial, suite.complex_action)
    details = {"kind": kind, "attribute": attribute, "spatial": spatial, "action": action,
               "blip": a_details, "boxes": s_details, "clip": c_details}  # fmt: skip
    return rules.three_in_one(kind, attribute, spatial, action), details


def judge_images(
    items: Sequence[CompImage],
    config: T2ICompBenchConfig,
    *,
    suite: Suite,
    device: str = "auto",
    name: Callable[[CompImage], str] = lambda item: str(item.path),
    done: Mapping[str, CompResult] | None = None,
    on_result: Callable[[CompResult], None] | None = None,
    show_progress: bool = True,
) -> list[CompResult]:
    """Judge every image of ``items`` by its category's rule; a result in ``done`` (by filename) whose protocol is
    the current one is kept instead of judged again. Results in ``items``' order."""
    needs = sorted({i.prompt.category for i in items} & set(NEEDS_PARSE))
    table = None
    if needs:
        table = read_table(Path(config.phrases) if config.phrases else None, suite_sha256=suite.sha256)
    judges = Judges(config, device=device, table=table)
    protocols: dict[str, dict[str, Any]] = {}
    results = []
    with progress(len(items), "T2I-CompBench++", unit="image", enabled=show_progress) as bar:
        for item in items:
            category = item.prompt.category
            if category not in protocols:
                protocols[category] = json.loads(json.dumps(protocol(category, judges, suite)))
            filename = name(item)
            previous = (done or {}).get(filename)
            if previous is not None and previous.protocol == protocols[category]:
                results.append(previous)
                bar.update()
                continue
            try:
                score, details = judge_one(item, suite, judges)
            except ValueError as error:  # a rule that cannot score this image (e.g. a parse with no noun)
                raise InputError(f"{item.path}: {category}: {error}") from None
            if not np.isfinite(score):
                raise InputError(f"{item.path}: {category}: the score is not a number ({score}); nothing stored")
            result = CompResult(category, item.prompt.index, item.prompt.text, item.sample, filename, float(score),
                                json.loads(json.dumps(details)), protocols[category])  # fmt: skip
            if on_result is not None:
                on_result(result)
            results.append(result)
            bar.update()
    return results


def run_settings(config: T2ICompBenchConfig, suite: Suite) -> dict[str, Any]:
    """What every row of a run depends on, known before any model loads (the partial file's settings line): the
    evaluator's settings, the suite's digest and t2ibench's version; each row's protocol adds its models' identities
    and the phrase table's."""
    from t2ibench import __version__
    from t2ibench.hashing import to_plain

    return {"evaluator": to_plain(config), "suite_sha256": suite.sha256, "t2ibench": __version__}


def judge_with(
    scan: CompScan, config: T2ICompBenchConfig, *, suite: Suite, out: Path | None, device: str, show_progress: bool
) -> list[CompResult]:
    """Judge a scan; with ``out``, write results.jsonl there, resuming from ``out``.partial (``t2ibench.resume``:
    each finished image appended and fsynced) for the images whose bytes, prompt and protocol are unchanged."""
    from t2ibench.hashing import file_sha256
    from t2ibench.resume import PartialResults

    if out is None:
        return judge_images(scan.items, config, suite=suite, device=device, name=scan.name, show_progress=show_progress)
    current = {scan.name(i): i for i in scan.items}
    partial = PartialResults(out, run_settings(config, suite), parse_result)
    stored, rows = partial.read()
    done: dict[str, tuple[CompResult, str]] = {}
    if stored == partial.settings:
        for row, digest in rows:
            item = current.get(row.filename)
            same = item is not None and (row.category, row.prompt) == (item.prompt.category, item.prompt.text)
            if same and item is not None and digest == file_sha256(item.path):
                done[row.filename] = (row, digest)
        stale = len(rows) - len(done)
        if done:
            note(f"{partial.path}: resuming, {len(done)} of {len(scan.items)} images already judged")
        if stale:
            note(f"{partial.path}: {stale} stored row(s) of images or prompts that changed; judged again")
    elif stored is not None or rows:
        note(f"{partial.path}: judged under other settings (models, rule, suite or t2ibench); starting over")
    partial.start((json.loads(row.to_json()), digest) for row, digest in done.values())

    def keep(result: CompResult) -> None:
        partial.add(json.loads(result.to_json()), file_sha256(current[result.filename].path))

    try:
        results = judge_images(scan.items, config, suite=suite, device=device, name=scan.name,
                               done={k: row for k, (row, _) in done.items()}, on_result=keep,
                               show_progress=show_progress)  # fmt: skip
    finally:
        partial.close()
    write_text_atomic(Path(out), "".join(r.to_json() + "\n" for r in results))
    partial.remove()
    return results
