"""The GenEval prompt suite: vocabulary and templates from data/geneval.yaml, the official generation procedure.

One ``numpy.random.default_rng(seed)`` drives everything, task by task in the order of the YAML:

* single_object: one permutation ``choice(80, size=80, replace=False)``; "a photo of a/an X".
* two_object (n): ``choice(80, size=2, replace=False)`` → A, B.
* counting (n): ``choice(80)`` class, ``integers(2, 4, endpoint=True)`` count N; include N, exclude N + 1.
* colors (n): class ``(choice(79) + 1 + i_person) mod 80`` (never the colourless class), colour ``choice(10)``.
* position (n): ``choice(80, size=2, replace=False)`` → A, B, relation ``choice(4)``; include [B, A at relation of 0].
* color_attr (n): classes ``(choice(79, size=2, replace=False) + 1 + i_person) mod 80``, colours
  ``choice(10, size=2, replace=False)``.

The article is "an" when the next word starts with a vowel letter; plurals add "es" after a final "s", else
"s". Records that repeat an earlier one (same tag, include, exclude and prompt) are dropped, keeping the first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.benchmarks import PromptStructure
from t2ibench.benchmarks.geneval.columns_protocol import REWRITTEN_REVISION
from t2ibench.benchmarks.geneval.columns_protocol import WORDINGS as WORDINGS  # re-exported
from t2ibench.benchmarks.geneval.columns_protocol import worded_suite as worded_suite  # re-exported
from t2ibench.benchmarks.geneval.columns_protocol import wording_of_suite as wording_of_suite  # re-exported
from t2ibench.errors import InputError, unknown_choice
from t2ibench.io import load_yaml, write_text_atomic
from t2ibench.metrics.checks import check_positive_int, check_seed
from t2ibench.suites import check_prompt_text, read_suite_lines
from t2ibench.suites.release import Release, ReleasedFile
from t2ibench.vision import LabelSpace

RELEASE = Release(
    name="geneval",
    title="GenEval's released prompts and annotations",
    repository="https://raw.githubusercontent.com/djghosh13/geneval",
    revision="main",
    env="T2IBENCH_GENEVAL_DATA",
    licence="MIT",
    files=(
        ReleasedFile(
            "evaluation_metadata.jsonl",
            "prompts/evaluation_metadata.jsonl",
            "5c48e0813e812e3c373fa5c8ed07a8f0a483be30272b4427b0559c8048e67c13",
        ),
        ReleasedFile(
            "annotations_clip.csv",
            "annotations/annotations_clip.csv",
            "84c5f364945543d15f5407ca1c2542cfaa571550dbf4922eff1399e7f91b7ce1",
        ),
        ReleasedFile(
            "annotations_sdv2.csv",
            "annotations/annotations_sdv2.csv",
            "973f029073f9b7f2ee7b3bbbff6a473db92486af94beebae1eb2bd2d01a5a6a7",
        ),
        ReleasedFile("LICENSE", "LICENSE", "e6082bfcbdf460dd19f8c55cc261055414df2a278768b4991c5382d65be2b52a"),
    ),
)
"""GenEval's released prompt metadata and the MTurk annotations of two of the paper's models (``t2ibench data fetch
geneval``): the official prompts' provenance and the human-agreement data."""

REWRITTEN_FILE = "evaluation_metadata_long.jsonl"
REWRITTEN = Release(
    name="geneval_rewritten",
    title="GenEval's prompts rewritten long by an LLM (BAGEL's evaluation_metadata_long.jsonl)",
    repository="https://raw.githubusercontent.com/ByteDance-Seed/Bagel",
    revision=REWRITTEN_REVISION,
    env="T2IBENCH_GENEVAL_REWRITTEN_DATA",
    licence="Apache-2.0",
    files=(
        ReleasedFile(
            REWRITTEN_FILE,
            "eval/gen/geneval/prompts/evaluation_metadata_long.jsonl",
            "09472cc9c24e225417b1d5df27e688e5f2a0fcac9ec772f33d9debe4e5d49f27",
        ),
        ReleasedFile("LICENSE", "LICENSE", "43070e2d4e532684de521b885f385d0841030efa2b1a20bafb76133a5e1379c1"),
    ),
)
"""GenEval's 553 official prompts rewritten into long descriptions, line for line (``t2ibench data fetch
geneval_rewritten``): the rewritten-prompt protocol several recent papers report GenEval with."""
RELEASES = (RELEASE, REWRITTEN)
"""Every release this suite reads (``t2ibench.datasets`` collects them)."""
REWRITTEN_DATA = "data/external/geneval_rewritten/" + REWRITTEN_FILE  # where `t2ibench data fetch` (DVC) puts it
# the released file's longest line has 902 bytes (its longest prompt 784 characters)
MAX_REWRITTEN_LINE_BYTES = 4096

MAX_PER_TASK = 100_000
# bounds checked before a prompt-metadata file is read: the largest suite generate_suite makes (one single-object
# prompt per class, MAX_PER_TASK for each of the five other tasks), and bytes per line on average (the official
# suite's longest line has 223)
MAX_SUITE_RECORDS = 80 + 5 * MAX_PER_TASK
MAX_LINE_BYTES = 512
TASKS = ("single_object", "two_object", "counting", "colors", "position", "color_attr")


@dataclass(frozen=True)
class GenEvalVocabulary:
    """Classes, colours, relations, count words, detector aliases and templates of the GenEval suite."""

    classes: tuple[str, ...]
    colourless_class: str
    colors: tuple[str, ...]
    relations: tuple[str, ...]
    counts: Mapping[int, str]
    templates: Mapping[str, str]
    detector_aliases: Mapping[str, str] = field(default_factory=dict)
    official_seed: int = 43
    official_per_task: int = 100

    @property
    def labels(self) -> LabelSpace:
        """The label space GenEval's detectors label in: its 80 classes, with the detectors' aliases."""
        return LabelSpace(self.classes, self.detector_aliases, title="GenEval classes")

    def canonical_class(self, label: str) -> str:
        """GenEval's name for a detector label (aliases applied); InputError names unknown labels."""
        return self.labels.canonical(label)


@cache
def vocabulary() -> GenEvalVocabulary:
    """The suite's vocabulary, loaded once from the packaged data/geneval.yaml (safe_load)."""
    text = resources.files("t2ibench.benchmarks.geneval").joinpath("data/geneval.yaml").read_text(encoding="utf-8")
    source = "t2ibench/benchmarks/geneval/data/geneval.yaml"
    return parse_vocabulary(load_yaml(text, source=source), source=source)


def parse_vocabulary(raw: Any, *, source: str) -> GenEvalVocabulary:
    """Validate a parsed geneval.yaml mapping; InputError names the file and the offending key."""
    if not isinstance(raw, dict):
        raise InputError(f"{source}: expected a mapping at the top level")
    try:
        vocab = GenEvalVocabulary(
            classes=tuple(str(c) for c in raw["classes"]),
            colourless_class=str(raw["colourless_class"]),
            colors=tuple(str(c) for c in raw["colors"]),
            relations=tuple(str(r) for r in raw["relations"]),
            counts={int(k): str(v) for k, v in raw["counts"].items()},
            templates={str(k): str(v) for k, v in raw["tasks"].items()},
            detector_aliases={str(k): str(v) for k, v in raw.get("detector_aliases", {}).items()},
            official_seed=int(raw.get("official", {}).get("seed", 43)),
            official_per_task=int(raw.get("official", {}).get("per_task", 100)),
        )
    except KeyError as exc:
        raise InputError(f"{source}: missing key {exc.args[0]!r}") from None
    if len(vocab.classes) != 80 or len(set(vocab.classes)) != 80:
        raise InputError(f"{source}: 'classes' must list 80 distinct names; got {len(vocab.classes)}")
    if vocab.colourless_class not in vocab.classes:
        raise InputError(f"{source}: colourless_class {vocab.colourless_class!r} is not a class")
    if tuple(vocab.templates) != TASKS:
        raise InputError(f"{source}: 'tasks' must be {list(TASKS)} in this order; got {list(vocab.templates)}")
    return vocab


def article(word: str) -> str:
    """'an' before a vowel letter, else 'a'."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def plural(name: str) -> str:
    """GenEval's plural: name + 'es' after a final 's', else name + 's'."""
    return name + ("es" if name.endswith("s") else "s")


def _records(
    vocab: GenEvalVocabulary, seed: int, n: int, classes: tuple[str, ...] | None = None
) -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    colors, t = vocab.colors, vocab.templates
    classes = vocab.classes if classes is None else classes
    n_classes = len(classes)
    # colour prompts never ask for the colourless class: draw from the others (the official procedure draws an
    # index among 79 and shifts it past that class; a restricted pool without it shifts past nothing)
    skip = classes.index(vocab.colourless_class) if vocab.colourless_class in classes else None
    n_coloured = n_classes - 1 if skip is not None else n_classes

    def coloured(i: int) -> str:
        return classes[(i + 1 + skip) % n_classes] if skip is not None else classes[i]

    for i in rng.choice(n_classes, size=n_classes, replace=False):
        obj = classes[i]
        yield {
            "tag": "single_object",
            "include": [{"class": obj, "count": 1}],
            "prompt": t["single_object"].format(a_object=article(obj), object=obj),
        }
    for _ in range(n):
        a, b = (classes[i] for i in rng.choice(n_classes, size=2, replace=False))
        yield {
            "tag": "two_object",
            "include": [{"class": a, "count": 1}, {"class": b, "count": 1}],
            "prompt": t["two_object"].format(a_object1=article(a), object1=a, a_object2=article(b), object2=b),
        }
    for _ in range(n):
        obj = classes[rng.choice(n_classes)]
        count = int(rng.integers(2, 4, endpoint=True))
        yield {
            "tag": "counting",
            "include": [{"class": obj, "count": count}],
            "exclude": [{"class": obj, "count": count + 1}],
            "prompt": t["counting"].format(number=vocab.counts[count], plural=plural(obj)),
        }
    for _ in range(n):
        obj = coloured(rng.choice(n_coloured))
        color = colors[rng.choice(len(colors))]
        yield {
            "tag": "colors",
            "include": [{"class": obj, "count": 1, "color": color}],
            "prompt": t["colors"].format(a_color=article(color), color=color, object=obj),
        }
    for _ in range(n):
        a, b = (classes[i] for i in rng.choice(n_classes, size=2, replace=False))
        relation = vocab.relations[rng.choice(len(vocab.relations))]
        yield {
            "tag": "position",
            "include": [{"class": b, "count": 1}, {"class": a, "count": 1, "position": [relation, 0]}],
            "prompt": t["position"].format(
                a_object1=article(a), object1=a, relation=relation, a_object2=article(b), object2=b
            ),
        }
    for _ in range(n):
        a, b = (coloured(i) for i in rng.choice(n_coloured, size=2, replace=False))
        c1, c2 = (colors[i] for i in rng.choice(len(colors), size=2, replace=False))
        yield {
            "tag": "color_attr",
            "include": [{"class": a, "count": 1, "color": c1}, {"class": b, "count": 1, "color": c2}],
            "prompt": t["color_attr"].format(
                a_color1=article(c1), color1=c1, object1=a, a_color2=article(c2), color2=c2, object2=b
            ),
        }


def generate_suite(
    seed: int | None = None, per_task: int | None = None, classes: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """GenEval prompt records (tag, include, [exclude], prompt) for ``seed`` and ``per_task`` samples per task,
    drawn by GenEval's procedure from all 80 classes or from ``classes`` (a subset, in GenEval's class order).

    The defaults (seed 43, 100 per task, all classes) give the official 553-prompt suite.
    """
    vocab = vocabulary()
    pool = None
    if classes is not None:
        unknown = [c for c in classes if c not in vocab.classes]
        if unknown:
            raise InputError(f"classes: {unknown_choice('class', unknown[0], vocab.classes)}")
        pool = tuple(c for c in vocab.classes if c in set(classes))
        if len(pool) - (vocab.colourless_class in pool) < 2:
            raise InputError(f"classes: need at least two classes that colour prompts may use; got {list(pool)}")
    s = check_seed(vocab.official_seed if seed is None else seed)
    n = check_positive_int(vocab.official_per_task if per_task is None else per_task, name="per_task")
    if n > MAX_PER_TASK:
        raise InputError(f"per_task must be ≤ {MAX_PER_TASK} (the official suite has 100); got {n}")
    return [json.loads(line) for line in _drawn(s, n, pool)]  # fresh dicts: a caller may change its records


@cache
def _drawn(seed: int, per_task: int, pool: tuple[str, ...] | None) -> tuple[str, ...]:
    """The distinct records drawn for (seed, per_task, pool), as JSON text: a pure function of the bundled
    vocabulary, drawn once per process (a refresh and its plan ask for the same draw several times)."""
    seen: set[str] = set()
    out = []
    for record in _records(vocabulary(), seed, per_task, pool):
        key = json.dumps(record, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(json.dumps(record))
    return tuple(out)


def suite_jsonl(records: Sequence[Mapping[str, Any]]) -> str:
    """The records as JSON lines in the official format (key order kept, ', ' and ': ' separators)."""
    return "".join(json.dumps(r) + "\n" for r in records)


def write_suite(path: str | Path, records: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``evaluation_metadata.jsonl``-style JSON lines to ``path`` (atomic rename)."""
    return write_text_atomic(path, suite_jsonl(records))


def read_suite(path: str | Path) -> list[dict[str, Any]]:
    """Read GenEval prompt metadata (JSON lines); InputError names the file and line of a bad record (and a path
    that is not a regular file: a FIFO or a device is never opened)."""
    from t2ibench.paths import regular_file

    regular_file(path, what="prompt suite")
    records = []
    seen: dict[str, str] = {}
    lines = read_suite_lines(path, what="prompt suite", max_lines=MAX_SUITE_RECORDS, max_line_bytes=MAX_LINE_BYTES)
    for where, record in lines:
        validate_record(record, where=where)
        key = json.dumps(record, sort_keys=True)
        if key in seen:
            raise InputError(f"{where}: repeats the prompt record of {seen[key]} (each prompt once)")
        seen[key] = f"line {where.rsplit(':', 1)[-1]}"
        records.append(record)
    return records


def read_rewritten(path: str | Path) -> dict[int, str]:
    """The rewritten prompts of a ``REWRITTEN`` file by official prompt index, each line checked against the official
    suite's record at that index (same tag, include and exclude: only the wording may differ); InputError names the
    file and line of a line that is not a rewrite of its official record, and a file of another length."""
    official = generate_suite(seed=vocabulary().official_seed, per_task=vocabulary().official_per_task)
    found: dict[int, str] = {}
    lines = read_suite_lines(path, what="rewritten prompt file", max_lines=len(official) + 1,
                             max_line_bytes=MAX_REWRITTEN_LINE_BYTES)  # fmt: skip
    for index, (where, record) in enumerate(lines):
        validate_record(record, where=where)
        if index >= len(official):
            raise InputError(f"{where}: GenEval's official suite has {len(official)} prompts; this file has more")
        if _judged(record) != _judged(official[index]):
            raise InputError(
                f"{where}: not a rewrite of GenEval's prompt {index} ({official[index]['prompt']!r}): its tag, include "
                "or exclude differ, so GenEval's verdict for it would be about another prompt"
            )
        found[index] = record["prompt"]
    if len(found) != len(official):
        raise InputError(f"{path}: {len(found)} rewritten prompts; GenEval's official suite has {len(official)}")
    return found


def reword_records(
    records: Sequence[Mapping[str, Any]], wording: str, path: str | Path, *, where: str
) -> list[dict[str, Any]]:
    """``records`` (a whole suite, in order) with each prompt's text in ``wording`` (``WORDINGS``): the first as they
    are; 'rewritten' read from the rewritten file ``path`` (``read_rewritten``), for GenEval's official suite only
    (same records in the same order, their texts aside). InputError naming ``where`` otherwise."""
    if wording == WORDINGS[0]:
        return [dict(r) for r in records]
    if wording not in WORDINGS:
        raise InputError(f"{where}: GenEval has no {wording!r} prompts (choose from: {', '.join(WORDINGS)})")
    official = generate_suite(seed=vocabulary().official_seed, per_task=vocabulary().official_per_task)
    if len(records) != len(official) or any(_judged(r) != _judged(o) for r, o in zip(records, official, strict=False)):
        raise InputError(
            f"{where}: {wording} prompts exist for GenEval's official suite only (seed 43, 100 per task, all classes, "
            f"or its released evaluation_metadata.jsonl); this suite has {len(records)} prompts that are not it"
        )
    if not Path(path).is_file():
        raise InputError(
            f"{where}: {path}: no rewritten prompt file; `t2ibench data fetch {REWRITTEN.name} --out "
            f"{Path(REWRITTEN_DATA).parent}` fetches the pinned one"
        )
    texts = read_rewritten(path)
    return [{**r, "prompt": texts[i]} for i, r in enumerate(records)]


def templated(records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every record's prompt is GenEval's templated wording (``parse_prompt`` reads it back as its record):
    False for a suite given in other words (rewritten: another protocol, marked †)."""
    for record in records:
        try:
            parsed = parse_prompt(str(record["prompt"]))
        except InputError:
            return False
        if _judged(parsed) != _judged(record):
            return False
    return True


def _judged(record: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """What GenEval's verdict rules read of a record: its tag, include and exclude (none: an empty list)."""
    return record["tag"], record["include"], record.get("exclude", [])


RECORD_KEYS = ("tag", "include", "exclude", "prompt")
CLAUSE_KEYS = ("class", "count", "color", "position")


def _count(value: Any, *, where: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{where}: {what} count must be a positive integer; got {value!r}")
    return value


def validate_record(record: Any, *, where: str) -> None:
    """Check one prompt record's structure and types against the GenEval schema; InputError names ``where``.

    Unknown keys are refused (a misspelt 'colour' would otherwise be ignored and change the verdict).
    """
    vocab = vocabulary()
    if not isinstance(record, dict):
        raise InputError(f"{where}: a prompt record must be a JSON object")
    for key in record:
        if key not in RECORD_KEYS:
            raise InputError(f"{where}: {unknown_choice('key', key, RECORD_KEYS)}")
    for key in ("tag", "include", "prompt"):
        if key not in record:
            raise InputError(f"{where}: missing {key!r}")
    if not isinstance(record["tag"], str) or record["tag"] not in TASKS:
        raise InputError(f"{where}: unknown tag {record['tag']!r} (choose from {', '.join(TASKS)})")
    if not isinstance(record["prompt"], str) or not record["prompt"].strip():
        raise InputError(f"{where}: prompt must be a non-empty string; got {record['prompt']!r}")
    check_prompt_text(record["prompt"], where=where)
    include = record["include"]
    exclude = record.get("exclude", [])
    for name, clauses in (("include", include), ("exclude", exclude)):
        if not isinstance(clauses, list) or (name == "include" and not clauses):
            raise InputError(f"{where}: {name} must be a {'non-empty ' if name == 'include' else ''}list of clauses")
    for name, clauses in (("include", include), ("exclude", exclude)):
        for i, clause in enumerate(clauses):
            at = f"{name}[{i}]"
            if not isinstance(clause, dict) or "class" not in clause or "count" not in clause:
                raise InputError(f"{where}: every include/exclude clause needs 'class' and 'count' ({at})")
            for key in clause:
                if key not in CLAUSE_KEYS:
                    raise InputError(f"{where}: {at}: {unknown_choice('key', key, CLAUSE_KEYS)}")
            if not isinstance(clause["class"], str) or clause["class"] not in vocab.classes:
                raise InputError(f"{where}: unknown class {clause['class']!r}")
            _count(clause["count"], where=where, what=at)
            if "color" in clause and (not isinstance(clause["color"], str) or clause["color"] not in vocab.colors):
                raise InputError(f"{where}: unknown color {clause['color']!r}")
            if "position" in clause:
                position = clause["position"]
                if name == "exclude":
                    raise InputError(f"{where}: {at}: position is only meaningful in include clauses")
                if not isinstance(position, list) or len(position) != 2:
                    raise InputError(f"{where}: {at}: position must be [relation, index]; got {position!r}")
                rel, target = position
                if not isinstance(rel, str) or rel not in vocab.relations:
                    raise InputError(f"{where}: unknown relation {rel!r}")
                if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < i:
                    raise InputError(f"{where}: position target {target!r} must index an earlier include clause")


# -- reading a templated prompt back (an honest text representation when no text encoder is available) -----------


@cache
def _template_patterns() -> tuple[tuple[str, Any], ...]:
    import re

    vocab = vocabulary()

    def alt(words: Sequence[str]) -> str:
        return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))

    pieces = {
        "a_object": "(?:a|an)", "a_object1": "(?:a|an)", "a_object2": "(?:a|an)", "a_color": "(?:a|an)",
        "a_color1": "(?:a|an)", "a_color2": "(?:a|an)",
        "object": f"(?P<object>{alt(vocab.classes)})", "object1": f"(?P<object1>{alt(vocab.classes)})",
        "object2": f"(?P<object2>{alt(vocab.classes)})",
        "plural": f"(?P<plural>{alt([plural(c) for c in vocab.classes])})",
        "number": f"(?P<number>{alt(list(vocab.counts.values()))})",
        "color": f"(?P<color>{alt(vocab.colors)})", "color1": f"(?P<color1>{alt(vocab.colors)})",
        "color2": f"(?P<color2>{alt(vocab.colors)})", "relation": f"(?P<relation>{alt(vocab.relations)})",
    }  # fmt: skip
    out = []
    for task, template in vocab.templates.items():
        pattern = re.escape(template)
        for key, value in pieces.items():
            pattern = pattern.replace(re.escape("{" + key + "}"), value)
        out.append((task, re.compile(pattern + r"\Z")))
    return tuple(out)


def parse_prompt(text: str) -> dict[str, Any]:
    """The prompt record (tag, include, [exclude], prompt) a GenEval-templated prompt was generated from;
    InputError for text no template produces."""
    vocab = vocabulary()
    by_plural = {plural(c): c for c in vocab.classes}
    by_number = {v: k for k, v in vocab.counts.items()}
    for task, pattern in _template_patterns():
        m = pattern.match(text)
        if m is None:
            continue
        g = m.groupdict()
        record: dict[str, Any] = {"tag": task}
        if task == "single_object":
            record["include"] = [{"class": g["object"], "count": 1}]
        elif task == "two_object":
            record["include"] = [{"class": g["object1"], "count": 1}, {"class": g["object2"], "count": 1}]
        elif task == "counting":
            name, count = by_plural[g["plural"]], by_number[g["number"]]
            record["include"] = [{"class": name, "count": count}]
            record["exclude"] = [{"class": name, "count": count + 1}]
        elif task == "colors":
            record["include"] = [{"class": g["object"], "count": 1, "color": g["color"]}]
        elif task == "position":
            record["include"] = [
                {"class": g["object2"], "count": 1},
                {"class": g["object1"], "count": 1, "position": [g["relation"], 0]},
            ]
        else:
            record["include"] = [
                {"class": g["object1"], "count": 1, "color": g["color1"]},
                {"class": g["object2"], "count": 1, "color": g["color2"]},
            ]
        record["prompt"] = text
        return record
    raise InputError(
        f"prompt {text!r} is not one of GenEval's templates (the structure representation reads only those)"
    )


STRUCTURE_DIM = 80 + 80 * 10 + 4


def structure_vector(text: str) -> NDArray[np.float32]:
    """A GenEval prompt as a unit vector (884,): per class its requested count (80), one-hot colour of each class
    (80 × 10), one-hot relation (4) — what the prompt asks, with no text encoder."""
    vocab = vocabulary()
    record = parse_prompt(text)
    v = np.zeros(STRUCTURE_DIM, dtype=np.float64)
    for clause in record["include"]:
        c = vocab.classes.index(clause["class"])
        v[c] += clause["count"]
        if "color" in clause:
            v[80 + 10 * c + vocab.colors.index(clause["color"])] = 1.0
        if "position" in clause:
            v[880 + vocab.relations.index(clause["position"][0])] = 1.0
    out: NDArray[np.float32] = (v / np.linalg.norm(v)).astype(np.float32)
    return out


PROMPT_STRUCTURE = PromptStructure("geneval-structure-v1", STRUCTURE_DIM, parse_prompt, structure_vector)
"""GenEval's prompts read by their templates: the text side of the ``mobilenet+structure`` embedder."""
