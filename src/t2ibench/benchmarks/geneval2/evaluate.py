"""GenEval 2 evaluation of an image folder or an image map: account for every image, ask the judge every atom's
question, write per-question results, summarise into the reference's tables.

Images come as GenEval's folder layout (``<dir>/<NNNNN>/metadata.jsonl`` holding the suite line of prompt NNNNN,
``<dir>/<NNNNN>/samples/<k>.png``: k images per prompt) or as the reference's image map, a JSON object
``{prompt: image path}`` (one image per prompt; a relative path is read from the map's folder). Every image is
accounted for, as for GenEval: missing prompts, prompts the suite does not have, unreadable images and links that
make one file two images are problems, and the command stops on any of them unless told to allow it.

Per image the judge answers each question (``'{question} Answer in one word.'``) and, for VQAScore, ``'Does this
image show "{prompt}"? …'``; a question's score is the judge's probability of the expected answer under the
recorded answer rule (``metrics`` beside this module), its TIFA verdict whether the judge's top token is one
of the answer's variants. ``results.jsonl`` holds one line per image with every question's probability and top
token, and the protocol (judge identity, answer rule) it was measured under; an interrupted run resumes from
``results.jsonl.partial`` when the protocol is unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from t2ibench.benchmarks import ImageScan
from t2ibench.benchmarks.geneval2.metrics import (
    PROBABILITY_SLACK,
    QuestionScore,
    answer_probability,
    answer_token_ids,
    answer_variants,
    check_answer_rule,
    geneval2_tables,
    question_text,
    tifa_correct,
    vqascore_text,
)
from t2ibench.benchmarks.geneval2.options import Geneval2Config
from t2ibench.benchmarks.geneval2.suite import Geneval2Prompt, Geneval2Suite, parse_line
from t2ibench.errors import InputError, note
from t2ibench.hashing import file_sha256
from t2ibench.images import image_problem
from t2ibench.io import loads_strict, read_text_file, write_text_atomic
from t2ibench.paths import file_key, regular_file, shown
from t2ibench.progress import progress

if TYPE_CHECKING:
    from t2ibench.benchmarks.geneval2.metrics import Geneval2Tables
    from t2ibench.models.vqa import VQAJudge

YES = "Yes"  # VQAScore's expected answer: its variants are the yes variants


@dataclass(frozen=True)
class Geneval2Image:
    """One image to judge: its prompt, its sample name (file stem; '0' for an image map) and path."""

    prompt: Geneval2Prompt
    sample: str
    path: Path


class Geneval2Scan(ImageScan[Geneval2Image]):
    """What an image folder or map holds against the suite (``missing_prompts``: prompt indices)."""


def scan_images(
    source: str | Path, suite: Geneval2Suite, *, images_per_prompt: int | None = None, verify_images: bool = True
) -> Geneval2Scan:
    """Scan a GenEval-layout folder or a ``{prompt: image path}`` JSON map against ``suite``; every departure
    listed (see the module docstring)."""
    base = Path(source)
    if base.is_dir():
        return _scan_folder(base, suite, images_per_prompt=images_per_prompt, verify_images=verify_images)
    if base.suffix.lower() == ".json":
        return _scan_map(base, suite, images_per_prompt=images_per_prompt, verify_images=verify_images)
    raise InputError(f"{base}: neither an image folder nor a .json image map ({{prompt: image path}})")


def _scan_folder(
    base: Path, suite: Geneval2Suite, *, images_per_prompt: int | None, verify_images: bool
) -> Geneval2Scan:
    from t2ibench.benchmarks.geneval.evaluate import scan_folder

    records = [p.record() for p in suite.prompts]
    scan = scan_folder(
        base, records, images_per_prompt=images_per_prompt, verify_images=verify_images, validate_metadata=_check_line
    )
    problems = list(scan.problems)
    problems += [f"{base / name}: prompt {name} is not in the suite ({suite.path})" for name in scan.extra_prompts]
    notes = list(scan.notes) + [f"ignored folder {name} (not a prompt number)" for name in scan.non_digit]
    items = tuple(Geneval2Image(suite.prompts[i.prompt_index], i.sample, i.path) for i in scan.items)
    return Geneval2Scan(
        source=base,
        items=items,
        expected_prompts=len(suite.prompts),
        found_prompts=scan.found_prompts,
        missing_prompts=scan.missing_prompts,
        problems=tuple(problems),
        notes=tuple(notes),
        names_from=base,
    )


def _check_line(record: Any, *, where: str) -> None:
    """A prompt folder's metadata record checked as a GenEval 2 suite line."""
    parse_line(record, index=0, where=where)


def _scan_map(base: Path, suite: Geneval2Suite, *, images_per_prompt: int | None, verify_images: bool) -> Geneval2Scan:
    regular_file(base, what="image map")
    raw = loads_strict(read_text_file(base, what="image map"), where=str(base))
    if not isinstance(raw, dict):
        raise InputError(f"{base}: an image map must be a JSON object {{prompt: image path}}")
    if images_per_prompt not in (None, 1):
        raise InputError(
            f"{base}: an image map holds one image per prompt; got --images-per-prompt {images_per_prompt}"
        )
    by_prompt = suite.by_prompt()
    problems: list[str] = []
    items: list[Geneval2Image] = []
    seen: dict[tuple[int, int], str] = {}
    for prompt, value in raw.items():
        if prompt not in by_prompt:
            problems.append(f"{base}: prompt {prompt!r} is not in the suite ({suite.path})")
            continue
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{base}: the image of prompt {prompt!r} must be a path string; got {value!r}")
            continue
        path = Path(value) if Path(value).is_absolute() else base.parent / value
        problem = image_problem(path) if verify_images else None
        if problem is None:
            key = file_key(path)
            if key is not None and key in seen:
                problem = f"{shown(path)}: the same file as the image of prompt {seen[key]!r}; one image per prompt"
            elif key is not None:
                seen[key] = prompt
        if problem is not None:
            problems.append(f"{base}: prompt {prompt!r}: {problem}")
            continue
        items.append(Geneval2Image(by_prompt[prompt], "0", path))
    found = {i.prompt.index for i in items} | {by_prompt[p].index for p in raw if p in by_prompt}
    missing = tuple(p.index for p in suite.prompts if p.index not in found)
    items.sort(key=lambda i: i.prompt.index)
    return Geneval2Scan(
        source=base,
        items=tuple(items),
        expected_prompts=len(suite.prompts),
        found_prompts=len(found),
        missing_prompts=missing,
        problems=tuple(problems),
        names_from=base.parent,
    )


# -- results -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuestionResult:
    """One question asked of one image: the judge's probability of the expected answer (0..1, under the answer
    rule), its top token's text and whether that is one of the answer's variants (TIFA)."""

    index: int
    skill: str
    question: str
    answer: str
    probability: float
    top_text: str
    correct: bool


@dataclass(frozen=True)
class Geneval2Result:
    """Everything the judge said about one image, and the protocol it was asked under."""

    prompt_index: int
    sample: str
    filename: str
    prompt: str
    atom_count: int
    questions: tuple[QuestionResult, ...]
    vqascore: float
    vqascore_top_text: str
    protocol: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """One results.jsonl line: every field, questions as objects (NaN is refused: not JSON)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True, allow_nan=False)


def parse_result(record: Any, *, where: str) -> Geneval2Result:
    """A results.jsonl line back as a result; InputError names ``where`` on any missing or mistyped field."""
    try:
        questions = tuple(QuestionResult(**q) for q in record["questions"])
        return Geneval2Result(
            prompt_index=int(record["prompt_index"]),
            sample=str(record["sample"]),
            filename=str(record["filename"]),
            prompt=str(record["prompt"]),
            atom_count=int(record["atom_count"]),
            questions=questions,
            vqascore=float(record["vqascore"]),
            vqascore_top_text=str(record["vqascore_top_text"]),
            protocol=dict(record["protocol"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: not a GenEval 2 result line ({type(exc).__name__}: {exc})") from None


def read_results(path: str | Path) -> list[Geneval2Result]:
    """The results of a results.jsonl file; InputError names the file and line of a bad one."""
    from t2ibench.io import read_jsonl

    return [parse_result(record, where=where) for where, record in read_jsonl(path)]


def write_results(path: str | Path, results: Sequence[Geneval2Result]) -> Path:
    """Write results.jsonl atomically (one line per image, in prompt and sample order)."""
    return write_text_atomic(path, "".join(r.to_json() + "\n" for r in results))


# -- judging -----------------------------------------------------------------------------------------------------


def protocol(judge: VQAJudge, rule: str, suite: Geneval2Suite) -> dict[str, Any]:
    """What a score depends on, recorded with every result: the judge's identity, the answer rule, the suite file's
    SHA-256 and t2ibench's version (its scoring code)."""
    from t2ibench import __version__

    return {
        "judge": judge.describe(),
        "answer_rule": check_answer_rule(rule),
        "suite_sha256": suite.sha256,
        "t2ibench": __version__,
    }


class _TokenIds:
    """Answer variants → token ids under one rule and tokenizer, computed once per distinct variant list."""

    def __init__(self, judge: VQAJudge, rule: str) -> None:
        self.judge, self.rule = judge, rule
        self.known: dict[tuple[str, ...], tuple[int, ...]] = {}

    def __call__(self, variants: tuple[str, ...], where: str) -> tuple[int, ...]:
        if variants not in self.known:
            self.known[variants] = answer_token_ids(
                variants, self.judge.encode, self.judge.decode, rule=self.rule, where=where
            )
        return self.known[variants]


def judge_images(
    items: Sequence[Geneval2Image],
    judge: VQAJudge,
    *,
    suite: Geneval2Suite,
    rule: str,
    name: Callable[[Geneval2Image], str] = lambda item: str(item.path),
    images_per_call: int = 8,
    on_result: Callable[[Geneval2Result], None] | None = None,
    show_progress: bool = True,
) -> list[Geneval2Result]:
    """Ask ``judge`` every question of each image (and VQAScore's), ``images_per_call`` images per ``ask`` (the
    judge batches them); results in ``items``' order, each passed to ``on_result`` as soon as it is complete."""
    from t2ibench.models.vqa import JudgeRequest

    settings = protocol(judge, rule, suite)
    ids = _TokenIds(judge, rule)
    yes = answer_variants("", YES)
    for item in items:  # every answer's tokens before any image is judged: a judge that cannot spell one stops here
        for i, q in enumerate(item.prompt.questions, start=1):
            ids(answer_variants(q.text, q.answer), f"{suite.path}:{item.prompt.line} question {i}")
    ids(yes, "VQAScore")
    # in float32 an answer does not depend on which images share a pass (tested); in lower precision it does
    # (rounding), so there each image's questions run alone: the answer depends on the image and batch_size only
    per_call = max(1, images_per_call) if settings["judge"].get("loaded_dtype", "float32") == "float32" else 1
    out: list[Geneval2Result] = []
    with progress(len(items), "geneval2", enabled=show_progress, unit="img") as bar:
        for start in range(0, len(items), per_call):
            chunk = items[start : start + per_call]
            requests: list[JudgeRequest] = []
            for item in chunk:
                line = f"{suite.path}:{item.prompt.line}"
                for i, q in enumerate(item.prompt.questions, start=1):
                    variants = answer_variants(q.text, q.answer)
                    token_ids = ids(variants, f"{line} question {i}")
                    requests.append(JudgeRequest(image=item.path, text=question_text(q.text), token_ids=token_ids))
                requests.append(
                    JudgeRequest(
                        image=item.path, text=vqascore_text(item.prompt.prompt), token_ids=ids(yes, "VQAScore")
                    )
                )
            answers = iter(_checked(judge.ask(requests), requests))
            for item in chunk:
                results = []
                for i, q in enumerate(item.prompt.questions):
                    answer = next(answers)
                    variants = answer_variants(q.text, q.answer)
                    results.append(
                        QuestionResult(
                            index=i,
                            skill=q.skill,
                            question=q.text,
                            answer=q.answer,
                            probability=answer_probability(answer.token_probabilities),
                            top_text=answer.top_text,
                            correct=tifa_correct(answer.top_text, variants),
                        )
                    )
                vqa = next(answers)
                result = Geneval2Result(
                    prompt_index=item.prompt.index,
                    sample=item.sample,
                    filename=name(item),
                    prompt=item.prompt.prompt,
                    atom_count=item.prompt.atom_count,
                    questions=tuple(results),
                    vqascore=answer_probability(vqa.token_probabilities),
                    vqascore_top_text=vqa.top_text,
                    protocol=settings,
                )
                out.append(result)
                if on_result is not None:
                    on_result(result)
                bar.update()
    return out


def _checked(answers: Sequence[Any], requests: Sequence[Any]) -> Sequence[Any]:
    """The judge's answers, refused (one line naming the image and question) unless one per request, each
    probability finite and within [0, 1]."""
    import math

    if len(answers) != len(requests):
        raise InputError(f"the judge gave {len(answers)} answers to {len(requests)} questions")
    for answer, request in zip(answers, requests, strict=True):
        for p in answer.token_probabilities:
            if not (isinstance(p, float) and math.isfinite(p) and 0.0 <= p <= 1.0 + PROBABILITY_SLACK):
                raise InputError(
                    f"{shown(request.image)}: the judge's probability {p!r} for {shown(request.text)!r} is not a "
                    "probability (finite, in [0, 1]); nothing of this image is stored"
                )
    return answers


def judge_with(
    scan: Geneval2Scan,
    evaluator: Geneval2Config,
    *,
    suite: Geneval2Suite,
    out: str | Path | None,
    device: str,
    show_progress: bool,
) -> list[Geneval2Result]:
    """The one way GenEval 2's images are judged, by the refresh's step and by ``t2ibench evaluate`` alike: the judge
    ``VQA_JUDGES`` builds from ``evaluator.judge`` on ``device`` (kept for the next call of this thread), then
    ``evaluate_scan`` under ``evaluator.answer_rule``."""
    from t2ibench.models.registry import VQA_JUDGES

    judge = VQA_JUDGES.reuse(evaluator.judge.backend, evaluator.judge, device=device)
    return evaluate_scan(scan, judge, suite=suite, rule=evaluator.answer_rule, out=out, show_progress=show_progress)


def evaluate_scan(
    scan: Geneval2Scan,
    judge: VQAJudge,
    *,
    suite: Geneval2Suite,
    rule: str,
    out: str | Path | None = None,
    show_progress: bool = True,
) -> list[Geneval2Result]:
    """Judge every image of ``scan``; with ``out``, write results.jsonl there, resuming from ``out.partial`` (each
    finished image appended and flushed) when its protocol and the image's bytes are unchanged."""
    from t2ibench.resume import PartialResults

    done: dict[str, Geneval2Result] = {}
    current = {scan.name(i): i for i in scan.items}
    partial = None
    if out is not None:
        partial = PartialResults(out, protocol(judge, rule, suite), parse_result)
        stored, rows = partial.read()
        digests: dict[str, str] = {}
        if stored == partial.settings:
            stale = 0
            for row, digest in rows:
                item = current.get(row.filename)
                if item is not None and digest == file_sha256(item.path) and _same_prompt(row, item.prompt):
                    done[row.filename], digests[row.filename] = row, digest
                else:
                    stale += 1
            if done:
                note(f"{partial.path}: resuming, {len(done)} of {len(scan.items)} images already judged")
            if stale:
                note(f"{partial.path}: {stale} stored row(s) of images or prompts that changed; judged again")
        elif stored is not None or rows:
            note(
                f"{partial.path}: judged under another protocol (judge, answer rule, suite or t2ibench); starting over"
            )
        partial.start((json.loads(row.to_json()), digests[name]) for name, row in done.items())

    def keep(result: Geneval2Result) -> None:
        done[result.filename] = result
        if partial is not None:
            partial.add(json.loads(result.to_json()), file_sha256(current[result.filename].path))

    todo = [i for i in scan.items if scan.name(i) not in done]
    try:
        judge_images(todo, judge, suite=suite, rule=rule, name=scan.name, on_result=keep, show_progress=show_progress)
    finally:
        if partial is not None:
            partial.close()
    results = [done[scan.name(i)] for i in scan.items]
    if out is not None:
        write_results(out, results)
        assert partial is not None
        partial.remove()
    return results


def _same_prompt(row: Geneval2Result, prompt: Geneval2Prompt) -> bool:
    """Whether a stored row answered exactly this prompt's questions (text, answers, skills, in order)."""
    asked = [(q.question, q.answer, q.skill) for q in row.questions]
    return (
        row.prompt_index == prompt.index
        and row.prompt == prompt.prompt
        and row.atom_count == prompt.atom_count
        and asked == [(q.text, q.answer, q.skill) for q in prompt.questions]
    )


# -- summary -----------------------------------------------------------------------------------------------------


def question_scores(results: Sequence[Geneval2Result]) -> tuple[list[QuestionScore], dict[tuple[int, int], float]]:
    """The per-question scores and per-image VQAScores of ``results``, samples numbered 0.. within each prompt."""
    samples: dict[int, dict[str, int]] = {}
    questions: list[QuestionScore] = []
    vqa: dict[tuple[int, int], float] = {}
    for r in results:
        numbers = samples.setdefault(r.prompt_index, {})
        sample = numbers.setdefault(r.sample, len(numbers))
        for q in r.questions:
            questions.append(
                QuestionScore(
                    prompt_index=r.prompt_index,
                    sample=sample,
                    question=q.index,
                    atom_count=r.atom_count,
                    skill=q.skill,
                    probability=q.probability,
                    correct=q.correct,
                )
            )
        vqa[(r.prompt_index, sample)] = r.vqascore
    return questions, vqa


def check_one_protocol(results: Sequence[Geneval2Result]) -> Mapping[str, Any]:
    """The one protocol all ``results`` were measured under (InputError if they mix judges or answer rules)."""
    protocols = {json.dumps(r.protocol, sort_keys=True) for r in results}
    if len(protocols) > 1:
        raise InputError(
            f"the results were measured under {len(protocols)} protocols (judge or answer rule differ); "
            "a table is of one protocol: judge them again or split them"
        )
    return json.loads(protocols.pop()) if protocols else {}


def summarise(
    results: Sequence[Geneval2Result], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> Geneval2Tables:
    """The reference's tables (×100) of ``results``, each cell with a bootstrap interval over prompts and its n."""
    if not results:
        raise InputError("no GenEval 2 results to summarise")
    check_one_protocol(results)
    questions, vqa = question_scores(results)
    return geneval2_tables(questions, vqa, resamples=resamples, level=level, seed=seed)


# -- the store ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredEvaluation:
    """Where an evaluation went in the store: the model name, the images' and the protocol's identities, rows."""

    model: str
    model_hash: str
    evaluator_hash: str
    answers: int
    scores: int


def prompt_set_digest(pairs: Sequence[tuple[int, Mapping[str, Any]]]) -> str:
    """The identity of the prompts judged: (index, suite line) pairs in suite order (a subset and the whole suite
    differ, so their tables are never taken for one protocol)."""
    from t2ibench.hashing import content_hash

    return content_hash([[int(i), dict(r)] for i, r in sorted(pairs, key=lambda pair: int(pair[0]))])


def images_identity(scan: Geneval2Scan, suite: Geneval2Suite) -> str:
    """The identity of what was judged (a model version's hash, for images made elsewhere): the suite file and every
    (prompt, sample, image SHA-256), in scan order."""
    from t2ibench.hashing import content_hash

    images = [[i.prompt.index, i.sample, file_sha256(i.path)] for i in scan.items]
    return content_hash({"suite": suite.sha256, "images": images})


def store_results(
    store_path: str | Path,
    *,
    model: str,
    results: Sequence[Geneval2Result],
    tables: Geneval2Tables,
    suite: Geneval2Suite,
    scan: Geneval2Scan,
) -> StoredEvaluation:
    """Write one model's GenEval 2 answers and tables into the store, in one transaction: its version is the images
    judged (``images_identity``) and the protocol (``benchmark_protocols`` gets its record); a re-evaluation of the same
    version replaces its rows, so no stale answer survives."""
    from t2ibench.benchmarks import evaluation_source
    from t2ibench.benchmarks.geneval2.rows import evaluation_rows
    from t2ibench.hashing import content_hash
    from t2ibench.store import Store

    if not model.strip():
        raise InputError("--model must name the model the images are of")
    settings = dict(check_one_protocol(results))
    judged = {r.prompt_index for r in results}
    settings["prompt_set"] = prompt_set_digest([(p.index, p.record()) for p in suite.prompts if p.index in judged])
    version = {"model": model, "model_hash": images_identity(scan, suite), "evaluator_hash": content_hash(settings)}
    rows = evaluation_rows(results, tables, settings, version["evaluator_hash"])
    source = evaluation_source(images=scan.source, names_from=scan.names_from, identity=version["model_hash"],
                               judged=len(judged), suite=str(suite.path), suite_prompts=len(suite.prompts),
                               released=suite.released)  # fmt: skip
    Store(store_path).write_evaluation(version, rows, source)
    return StoredEvaluation(
        model, version["model_hash"], version["evaluator_hash"], len(rows.answers), len(rows.scores)
    )
