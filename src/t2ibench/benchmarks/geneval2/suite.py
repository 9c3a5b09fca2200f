"""The GenEval 2 prompt suite (Kamath et al. 2025): 800 prompts of 3–10 atoms, each atom a yes/number question.

The suite is the publisher's ``geneval2_data.jsonl`` (CC BY-NC 4.0), fetched into the workspace by
``t2ibench data fetch geneval2`` (pinned commit and SHA-256: ``RELEASE`` below); t2ibench never ships
it. Each line: ``prompt`` (str), ``atom_count`` (int), ``vqa_list`` ([question, answer] per question) and
``skills`` (one of object / attribute / count / position / verb per question). A prompt has more questions than
atoms when it names "a X": the count question "How many X…?" (answer "one") is asked but not counted as an atom.

``read_geneval2`` checks every line and, for the released file, its shape: 800 prompts, 100 per atom count 3..10.
What the reference scorer silently assumes is refused here, naming the file and line: a count question (one that
starts "How many", the reference's test) whose skill is not ``count`` or whose answer is not a number word (the
reference would score it against 'other'), and a non-count question whose answer is not "Yes" (the reference scores
every other question against the Yes variants whatever its answer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval2.metrics import COUNT_PREFIX, NUMBER_WORDS, SKILLS
from t2ibench.errors import InputError, unknown_choice
from t2ibench.hashing import file_sha256
from t2ibench.paths import shown
from t2ibench.suites import check_prompt_text, read_suite_lines
from t2ibench.suites.release import Release, ReleasedFile

ATOM_COUNTS = tuple(range(3, 11))
PROMPTS_PER_ATOM_COUNT = 100
RELEASE_PROMPTS = PROMPTS_PER_ATOM_COUNT * len(ATOM_COUNTS)  # 800: the released file's prompts
RECORD_KEYS = ("prompt", "atom_count", "vqa_list", "skills")
DATA_FILE = "geneval2_data.jsonl"
RELEASE_COMMIT = "a6e82d2289e8d418f27f0adee77908b07060eea3"  # facebookresearch/GenEval2: the version t2ibench reads
# bounds checked before a suite file is parsed: lines (the release has 800), bytes per line on average (the release's
# longest line has 802), questions per prompt (the release's most: 11)
MAX_GENEVAL2_LINES = 100_000
MAX_GENEVAL2_LINE_BYTES = 1024
MAX_QUESTIONS = 100
RELEASE_SHA256 = "09233adbc9f877fba205f1a20efa4a8640e7e62a91dfd55893562bed8a928e43"  # its geneval2_data.jsonl
RELEASE = Release(
    name="geneval2",
    title="GenEval 2's benchmark file (Kamath et al. 2025)",
    repository="https://raw.githubusercontent.com/facebookresearch/GenEval2",
    revision=RELEASE_COMMIT,
    env="T2IBENCH_GENEVAL2_DATA",
    licence="CC BY-NC 4.0 (attribution, non-commercial use only; never shipped with t2ibench)",
    files=(
        ReleasedFile(DATA_FILE, DATA_FILE, RELEASE_SHA256),
        ReleasedFile("LICENSE", "LICENSE", "ee6c684e7f3c319ffed9964a27e334a469d7f01b32abf5530de067a488901f68"),
    ),
)
"""The pinned release `t2ibench data fetch geneval2` fetches and verifies (``t2ibench.datasets``)."""


@dataclass(frozen=True)
class Geneval2Question:
    """One atom's question, its expected answer ('Yes' or a number word) and its skill."""

    text: str
    answer: str
    skill: str

    @property
    def counting(self) -> bool:
        """Whether the reference scores this question against number variants (it starts 'How many')."""
        return self.text.startswith(COUNT_PREFIX)


@dataclass(frozen=True)
class Geneval2Prompt:
    """One prompt of the suite: its line index (0-based), text, atom count and questions in file order."""

    index: int
    prompt: str
    atom_count: int
    questions: tuple[Geneval2Question, ...]
    line: int = 0  # the 1-based line of the suite file it was read from (0: not read from a file)

    def record(self) -> dict[str, Any]:
        """The suite line as the publisher writes it (the prompt record an image folder's metadata.jsonl holds)."""
        return {
            "prompt": self.prompt,
            "atom_count": self.atom_count,
            "vqa_list": [[q.text, q.answer] for q in self.questions],
            "skills": [q.skill for q in self.questions],
        }


@dataclass(frozen=True)
class Geneval2Suite:
    """The prompts of a GenEval 2 file, the file's SHA-256 and whether it is the pinned release."""

    path: Path
    sha256: str
    prompts: tuple[Geneval2Prompt, ...]

    @property
    def released(self) -> bool:
        """True when the file is byte for byte the pinned GenEval 2 release."""
        return self.sha256 == RELEASE_SHA256

    @property
    def questions(self) -> int:
        """The number of questions over all prompts."""
        return sum(len(p.questions) for p in self.prompts)

    def by_prompt(self) -> dict[str, Geneval2Prompt]:
        """Prompt text → prompt (texts are unique: checked on reading)."""
        return {p.prompt: p for p in self.prompts}


SHOWN = 80  # characters of a bad value an error message quotes


def _quoted(value: Any) -> str:
    """``repr(value)`` on one line, at most SHOWN characters (a huge or multi-line value is cut, its size given)."""
    text = shown(repr(value))
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}… ({len(text)} characters)"


def _text(value: Any, *, where: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: {what} must be a non-empty string; got {_quoted(value)}")
    return value


def parse_line(record: Any, *, index: int, where: str, line: int = 0) -> Geneval2Prompt:
    """One suite line as a prompt, every field checked; InputError names ``where`` (file:line) and the field."""
    if not isinstance(record, dict):
        raise InputError(f"{where}: a GenEval 2 line must be a JSON object")
    for key in record:
        if key not in RECORD_KEYS:
            raise InputError(
                f"{where}: {unknown_choice('key', key if len(repr(key)) <= SHOWN else _quoted(key), RECORD_KEYS)}"
            )
    for key in RECORD_KEYS:
        if key not in record:
            raise InputError(f"{where}: missing {key!r}")
    prompt = check_prompt_text(_text(record["prompt"], where=where, what="prompt"), where=where)
    if "{" in prompt or "}" in prompt:
        raise InputError(
            f"{where}: the prompt holds a brace ({_quoted(prompt)}): the reference formats VQAScore's question with it "
            "twice, so its text would change; no GenEval 2 prompt has one"
        )
    atoms = record["atom_count"]
    if isinstance(atoms, bool) or not isinstance(atoms, int) or atoms < 1:
        raise InputError(f"{where}: atom_count must be a positive integer; got {_quoted(atoms)}")
    pairs, skills = record["vqa_list"], record["skills"]
    if not isinstance(pairs, list) or not pairs:
        raise InputError(f"{where}: vqa_list must be a non-empty list of [question, answer] pairs")
    if len(pairs) > MAX_QUESTIONS:
        raise InputError(
            f"{where}: vqa_list has {len(pairs):,} questions; at most {MAX_QUESTIONS} (the release's most: 11)"
        )
    if not isinstance(skills, list) or len(skills) != len(pairs):
        count = len(skills) if isinstance(skills, list) else "no list of"
        raise InputError(f"{where}: skills has {count} entries for {len(pairs)} questions (one skill per question)")
    questions = []
    for i, (pair, skill) in enumerate(zip(pairs, skills, strict=True), start=1):
        at = f"{where}: question {i}"
        if not isinstance(pair, list) or len(pair) != 2:
            raise InputError(f"{at}: must be a [question, answer] pair; got {_quoted(pair)}")
        text = check_prompt_text(_text(pair[0], where=at, what="the question"), where=at, what="the question")
        answer = _text(pair[1], where=at, what="the answer")
        if not isinstance(skill, str) or skill not in SKILLS:
            raise InputError(
                f"{at}: {unknown_choice('skill', skill if len(repr(skill)) <= SHOWN else _quoted(skill), SKILLS)}"
            )
        question = Geneval2Question(text, answer, skill)
        if question.counting != (skill == "count"):
            raise InputError(
                f"{at}: skill {skill!r} but the question {'starts' if question.counting else 'does not start'} "
                f"with {COUNT_PREFIX!r} (the scorer decides number or yes answers by that start)"
            )
        if question.counting and answer not in NUMBER_WORDS:
            raise InputError(f"{at}: a count answer must be a number word (one..ten); got {_quoted(answer)}")
        if not question.counting and answer != "Yes":
            raise InputError(
                f"{at}: the answer to a {skill} question must be 'Yes' (the scorer asks for yes); got {_quoted(answer)}"
            )
        questions.append(question)
    if atoms > len(questions):
        raise InputError(f"{where}: atom_count {atoms} exceeds its {len(questions)} questions")
    return Geneval2Prompt(index=index, prompt=prompt, atom_count=atoms, questions=tuple(questions), line=line)


def read_geneval2(path: str | Path, *, full: bool = True) -> Geneval2Suite:
    """Read a GenEval 2 file; every line checked, prompts unique, and (``full``) the release's shape: 800 prompts,
    100 per atom count 3..10. InputError names the file and line (or the count that is off). The file is bounded
    before it is read (``suites.read_suite_lines``: MAX_GENEVAL2_LINES lines, the memory limit), each prompt's and
    question's length (MAX_PROMPT_CHARS) and questions per prompt (MAX_QUESTIONS) as it is parsed."""
    from t2ibench.paths import regular_file

    p = regular_file(path, what="GenEval 2 suite")
    prompts: list[Geneval2Prompt] = []
    seen: dict[str, str] = {}
    lines = read_suite_lines(
        p, what="GenEval 2 suite", max_lines=MAX_GENEVAL2_LINES, max_line_bytes=MAX_GENEVAL2_LINE_BYTES
    )
    for where, record in lines:
        item = parse_line(record, index=len(prompts), where=where, line=int(where.rsplit(":", 1)[-1]))
        if item.prompt in seen:
            raise InputError(f"{where}: repeats the prompt of {seen[item.prompt]} (each prompt once)")
        seen[item.prompt] = f"line {where.rsplit(':', 1)[-1]}"
        prompts.append(item)
    if not prompts:
        raise InputError(f"{p}: no prompts")
    if full:
        counts = Counter(item.atom_count for item in prompts)
        expected = {k: PROMPTS_PER_ATOM_COUNT for k in ATOM_COUNTS}
        if dict(counts) != expected:
            off = ", ".join(
                f"{k} atoms: {counts.get(k, 0)}"
                for k in sorted(set(counts) | set(expected))
                if counts.get(k) != expected.get(k)
            )
            raise InputError(
                f"{p}: {len(prompts)} prompts, not GenEval 2's 800 with 100 per atom count 3..10 ({off}); "
                "pass a subset only where one is meant (full=False)"
            )
    return Geneval2Suite(path=p, sha256=file_sha256(p), prompts=tuple(prompts))


def subset(suite: Geneval2Suite, indices: Sequence[int]) -> Geneval2Suite:
    """The prompts at ``indices`` (their indices kept), e.g. a smoke run's first prompts of each atom count."""
    chosen = []
    for i in indices:
        if not 0 <= i < len(suite.prompts):
            raise InputError(f"prompt index {i} is outside the suite's 0..{len(suite.prompts) - 1}")
        chosen.append(suite.prompts[i])
    return Geneval2Suite(path=suite.path, sha256=suite.sha256, prompts=tuple(chosen))


def first_per_atom_count(suite: Geneval2Suite, per_count: int) -> list[int]:
    """The indices of the first ``per_count`` prompts of each atom count, in suite order (a balanced small run)."""
    taken: Counter[int] = Counter()
    out = []
    for item in suite.prompts:
        if taken[item.atom_count] < per_count:
            taken[item.atom_count] += 1
            out.append(item.index)
    return out


def skill_counts(prompts: Sequence[Geneval2Prompt]) -> Mapping[str, int]:
    """Questions per skill over ``prompts``, in SKILLS order."""
    counts = Counter(q.skill for p in prompts for q in p.questions)
    return {s: counts.get(s, 0) for s in SKILLS}
