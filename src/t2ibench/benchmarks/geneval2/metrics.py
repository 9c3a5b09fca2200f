"""GenEval 2's scores (Kamath et al. 2025, facebookresearch/GenEval2 at a6e82d2): Soft-TIFA, TIFA and VQAScore.

The judge (a VLM, Qwen3-VL-8B-Instruct in the reference) is asked one question per atom, ``'{question} Answer in
one word.'``, and gives one next-token distribution over its vocabulary. This module is what comes after that
distribution, as the reference ``evaluation.py`` and ``soft_tifa_analysis.py`` compute it:

* the answer variants of a question (``answer_variants``): for a question starting "How many", the answer word,
  its capitalisation, both with a leading space, the digit and the digit with a leading space
  (four → 'four', 'Four', ' four', ' Four', '4', ' 4'); every other question: 'Yes', 'yes', ' yes', ' Yes'
  (the data's answer is ignored: it is always 'Yes');
* the answer probability of a question (``answer_token_ids``, ``answer_probability``): the sum of the
  probabilities of each variant's *first* token, under the 'reference' rule duplicates kept (a shared first token
  is added twice) and bare-space first tokens included (Qwen splits ' 4' into ' ' and '4', so every counting
  question adds P(' ')); the 'unique' rule counts each distinct id once and leaves bare spaces out;
* TIFA's hard verdict (``tifa_correct``): the decoded top-1 token, lower-cased, is one of the variants;
* per image: Soft-TIFA AM = the mean of the question probabilities, Soft-TIFA GM = their geometric mean (0 when one
  is 0), TIFA = the fraction correct, VQAScore = the answer probability of 'Does this image show "{prompt}"? Answer
  the question with Yes or No.' with the Yes variants;
* the tables (``geneval2_tables``), in percent points: each method's mean over prompts; per skill the pooled
  Soft-TIFA AM over every question of that skill; per atom count the mean over its prompts of the per-prompt GM.

The reference scores one image per prompt. With k images a per-image score is averaged over the prompt's images,
then over prompts; with k = 1 every number is the reference's bit for bit: the sums are taken in the reference's
order (prompts by index, questions by position) with the same operations (the builtin ``sum`` where it calls
``sum``, a running ``+=`` where it accumulates; Python ≥ 3.12 compensates the builtin ``sum`` of floats). Intervals
are percentile cluster-bootstrap intervals over prompts (all images of a prompt drawn together).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError, unknown_choice
from t2ibench.metrics.checks import check_memory, check_positive_int, check_seed
from t2ibench.metrics.levels import BOOTSTRAP_RESAMPLES, CI_LEVEL

NUMBER_WORDS: Mapping[str, str] = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
}
"""The reference's ``return_numeric_string``: one..ten → '1'..'10'; any other word (zero included) → 'other'."""

YES_VARIANTS = ("Yes", "yes", " yes", " Yes")
"""The variants of every question not starting "How many", and of VQAScore, in the reference's order."""

COUNT_PREFIX = "How many"
QUESTION_SUFFIX = " Answer in one word."
QUESTION_TEMPLATE = "{question}" + QUESTION_SUFFIX
"""The reference's ``'{} Answer in one word.'.format(question)``."""
VQASCORE_TEMPLATE = 'Does this image show "{prompt}"? Answer the question with Yes or No.'
"""The reference's VQAScore question (the whole prompt in double quotes; 'image', not 'figure')."""

ANSWER_RULES = ("reference", "unique")
DEFAULT_ANSWER_RULE = "reference"
"""'reference' reproduces the published GenEval 2 numbers. On the real Qwen tokenizer and the GenEval 2 data no two
variants share a first token, but the first token of ' 4'-style variants is a bare space, whose probability the
reference adds to every counting question; 'unique' counts each distinct first token once and no bare space."""

METHODS = ("soft_tifa_am", "soft_tifa_gm", "tifa", "vqascore")
"""The reference's ``--method`` choices, in the order of the overall table."""
SKILLS = ("object", "attribute", "count", "position", "verb")
"""GenEval 2's skills, in the order ``soft_tifa_analysis.py`` prints them."""
PROBABILITY_SLACK = 1e-6
"""A float32 softmax sums to 1 within a few 1e-7: probabilities up to 1 + this are accepted."""


def answer_variants(question: str, answer: str) -> tuple[str, ...]:
    """The answer strings whose first tokens make a question's probability, in the reference's order."""
    if question.startswith(COUNT_PREFIX):
        number = NUMBER_WORDS.get(answer, "other")
        return (answer, answer.capitalize(), " " + answer, " " + answer.capitalize(), number, " " + number)
    return YES_VARIANTS


def question_text(question: str) -> str:
    """The text the judge is asked for one atom: the question and ' Answer in one word.'."""
    return QUESTION_TEMPLATE.format(question=question)


def vqascore_text(prompt: str) -> str:
    """VQAScore's question for a prompt; refuses braces (the reference ``.format``s the text a second time)."""
    if "{" in prompt or "}" in prompt:
        raise InputError(
            f"prompt {prompt!r} holds a brace: the reference formats VQAScore's question twice, so its text for "
            "such a prompt is undefined"
        )
    return VQASCORE_TEMPLATE.format(prompt=prompt)


def check_answer_rule(rule: str) -> str:
    """``rule`` if it is one of ANSWER_RULES, else an InputError with a did-you-mean suggestion."""
    if rule not in ANSWER_RULES:
        raise unknown_choice("answer rule", rule, ANSWER_RULES)
    return rule


def answer_token_ids(
    variants: Sequence[str],
    encode: Callable[[str], Sequence[int]],
    decode: Callable[[int], str],
    *,
    rule: str,
    where: str,
) -> tuple[int, ...]:
    """Token ids whose probabilities sum to a question's answer probability, from the variants' first tokens.

    ``encode`` maps text to token ids without special tokens (the reference's ``tokenizer.encode(v)``: Qwen adds
    none), ``decode`` one id to its text. 'reference': every variant's first id, duplicates kept (so a shared token
    is summed twice, as the reference does); 'unique': distinct ids, each once, leaving out first tokens that
    decode to whitespace only (a bare space is not the answer). A variant that encodes to nothing, or whose first
    token does not decode to a non-empty prefix of it (case-insensitive: an uncased tokenizer is fine; an unknown
    token or a BOS is not), raises InputError naming ``where`` (e.g. 'geneval2_data.jsonl line 12 question 3').
    """
    check_answer_rule(rule)
    ids: list[int] = []
    for variant in variants:
        tokens = list(encode(variant))
        if not tokens:
            raise InputError(f"{where}: the judge's tokenizer encodes answer {variant!r} to no tokens")
        first = int(tokens[0])
        text = decode(first)
        if not text or not variant.casefold().startswith(text.casefold()):
            raise InputError(
                f"{where}: the judge's tokenizer has no token for answer {variant!r} (its first token {first} "
                f"decodes to {text!r}, which does not begin the answer)"
            )
        if rule == "unique" and (not text.strip() or first in ids):
            continue
        ids.append(first)
    if not ids:
        raise InputError(f"{where}: no answer among {list(variants)!r} has a first token other than whitespace")
    return tuple(ids)


def answer_probability(token_probabilities: Sequence[float]) -> float:
    """The answer probability: the probabilities at ``answer_token_ids`` summed in order in float64 (no clamp: under
    'reference' a shared first token counts twice, so the sum may exceed 1 — the tables refuse that)."""
    total = 0.0
    for p in token_probabilities:
        total += float(p)
    return total


def tifa_correct(top_text: str, variants: Sequence[str]) -> bool:
    """TIFA's verdict: the decoded top-1 token, lower-cased and not stripped, is one of the variants."""
    return top_text.lower() in variants


def _scores_array(scores: Iterable[float], what: str) -> NDArray[np.float64]:
    arr = np.asarray(list(scores), dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"{what} needs at least one question's score; got {arr.size}")
    if not np.isfinite(arr).all():
        raise InputError(f"{what}: the scores hold NaN or inf")
    return arr


def soft_tifa_am(scores: Iterable[float]) -> float:
    """Soft-TIFA AM of one image: the mean of its question probabilities (n,), as ``sum(s) / len(s)``."""
    values = [float(v) for v in _scores_array(scores, "soft_tifa_am")]
    return sum(values) / len(values)


def soft_tifa_gm(scores: Iterable[float]) -> float:
    """Soft-TIFA GM of one image: exp(mean(log p)) of its question probabilities (n,) ≥ 0 in float64, equal to
    ``scipy.stats.gmean``; 0.0 when one is exactly 0 (no epsilon, no warning)."""
    arr = _scores_array(scores, "soft_tifa_gm")
    if (arr < 0).any():
        raise InputError("soft_tifa_gm: the geometric mean needs scores ≥ 0")
    if (arr == 0).any():
        return 0.0
    return float(np.exp(np.mean(np.log(arr))))


# -- the tables ------------------------------------------------------------------------------------------------------


def _check_index(value: object, name: str, where: str, minimum: int = 0) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(f"{where}: {name} must be an integer ≥ {minimum}; got {value!r}")


def _check_probability(value: object, what: str, where: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{where}: {what} must be a number in [0, 1]; got {value!r}")
    p = float(value)
    if not 0.0 <= p <= 1.0 + PROBABILITY_SLACK:  # NaN fails both comparisons
        beyond = (
            " (under the 'reference' answer rule a first token shared by two variants counts twice; rule "
            "'unique' counts it once)"
            if p > 1.0
            else ""
        )
        raise InputError(f"{where}: {what} {p!r} is outside [0, 1 + {PROBABILITY_SLACK:g}]{beyond}")
    return p


@dataclass(frozen=True)
class QuestionScore:
    """The judge's answer to one question about one image: the answer probability in [0, 1] and TIFA's verdict.

    ``prompt_index`` is the prompt's 0-based position in geneval2_data.jsonl, ``sample`` the image of that prompt
    (any integer ≥ 0), ``question`` the 0-based position in the prompt's vqa_list, ``atom_count`` and ``skill`` the
    prompt's fields (skill one of SKILLS).
    """

    prompt_index: int
    sample: int
    question: int
    atom_count: int
    skill: str
    probability: float
    correct: bool

    def __post_init__(self) -> None:
        where = self.where()
        _check_index(self.prompt_index, "prompt_index", where)
        _check_index(self.sample, "sample", where)
        _check_index(self.question, "question", where)
        _check_index(self.atom_count, "atom_count", where, minimum=1)
        if self.skill not in SKILLS:
            raise InputError(f"{where}: {unknown_choice('skill', self.skill, SKILLS)}")
        _check_probability(self.probability, "probability", where)
        if not isinstance(self.correct, (bool, np.bool_)):
            raise InputError(f"{where}: correct must be True or False; got {self.correct!r}")

    def where(self) -> str:
        """'prompt 11, sample 0, question 3': the record's place, for messages."""
        return f"prompt {self.prompt_index}, sample {self.sample}, question {self.question}"

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON values."""
        return {**asdict(self), "probability": float(self.probability), "correct": bool(self.correct)}


@dataclass(frozen=True)
class TableCell:
    """One number of a GenEval 2 table, in percent points: the estimate, its percentile-bootstrap interval
    [ci_low, ci_high] (None when no resample could compute it), the prompts it averages and the questions it pools
    (distinct questions, not multiplied by images; None for VQAScore)."""

    estimate: float
    ci_low: float | None
    ci_high: float | None
    prompts: int
    questions: int | None


@dataclass(frozen=True)
class Geneval2Tables:
    """GenEval 2's tables in percent points: ``overall`` by method (METHODS order; 'vqascore' when scores were
    given), ``skills`` (Soft-TIFA AM pooled per skill, SKILLS order, skills that have questions) and
    ``atom_counts`` (mean per-prompt Soft-TIFA GM per atom count, ascending), with the bootstrap's settings."""

    overall: Mapping[str, TableCell]
    skills: Mapping[str, TableCell]
    atom_counts: Mapping[int, TableCell]
    level: float
    resamples: int
    seed: int
    prompts: int
    images: int
    questions: int

    def describe(self) -> str:
        """Short text for reports and a store's ci_method, e.g. 'percentile bootstrap over prompts, B=1000'."""
        return f"percentile bootstrap over prompts, B={self.resamples}"

    def rows(self) -> list[dict[str, Any]]:
        """Every cell as a flat JSON dict {table, key, estimate, ci_low, ci_high, ci_level, prompts, questions};
        table 'overall' (key: method), 'skill' (key: skill) or 'atom_count' (key: the count, as text)."""
        tables: tuple[tuple[str, Mapping[Any, TableCell]], ...] = (
            ("overall", self.overall),
            ("skill", self.skills),
            ("atom_count", self.atom_counts),
        )
        return [
            {
                "table": table,
                "key": str(key),
                "estimate": cell.estimate,
                "ci_low": cell.ci_low,
                "ci_high": cell.ci_high,
                "ci_level": self.level,
                "prompts": cell.prompts,
                "questions": cell.questions,
            }
            for table, cells in tables
            for key, cell in cells.items()
        ]

    def to_dict(self) -> dict[str, Any]:
        """The tables and the bootstrap's settings as JSON values (the cells as ``rows()``)."""
        return {
            "rows": self.rows(),
            "ci_level": self.level,
            "ci_method": self.describe(),
            "resamples": self.resamples,
            "seed": self.seed,
            "prompts": self.prompts,
            "images": self.images,
            "questions": self.questions,
        }


@dataclass
class _Prompt:
    """One prompt's scores: (k, n) probabilities and verdicts, images by sample, questions by position."""

    index: int
    atom_count: int
    skills: tuple[str, ...]
    samples: tuple[int, ...]
    probability: list[list[float]]
    correct: list[list[bool]]


def _gather(questions: Iterable[QuestionScore]) -> list[_Prompt]:
    """Group the records by prompt (ascending index), check that they form a table, order images and questions."""
    by_prompt: dict[int, dict[int, dict[int, QuestionScore]]] = {}
    for record in questions:
        if not isinstance(record, QuestionScore):
            raise InputError(f"questions must be QuestionScore records; got {type(record).__name__}")
        image = by_prompt.setdefault(int(record.prompt_index), {}).setdefault(int(record.sample), {})
        if int(record.question) in image:
            raise InputError(f"{record.where()}: the question is scored twice")
        image[int(record.question)] = record
    if not by_prompt:
        raise InputError("questions is empty: GenEval 2's tables need at least one scored question")
    prompts: list[_Prompt] = []
    for index in sorted(by_prompt):
        images = by_prompt[index]
        samples = tuple(sorted(images))
        first = images[samples[0]]
        positions = tuple(sorted(first))
        skills = tuple(first[q].skill for q in positions)
        atom_count = int(first[positions[0]].atom_count)
        for sample in samples:
            image = images[sample]
            if tuple(sorted(image)) != positions:
                raise InputError(
                    f"prompt {index}: sample {sample} has {len(image)} questions (positions {sorted(image)}) but "
                    f"sample {samples[0]} has {len(positions)} (positions {list(positions)}); every image of a "
                    "prompt answers the same questions"
                )
            for q in positions:
                record = image[q]
                if record.skill != skills[positions.index(q)]:
                    raise InputError(
                        f"{record.where()}: skill {record.skill!r}, but {skills[positions.index(q)]!r} in sample "
                        f"{samples[0]}"
                    )
                if int(record.atom_count) != atom_count:
                    raise InputError(
                        f"{record.where()}: atom_count {record.atom_count}, but {atom_count} elsewhere in the prompt"
                    )
        prompts.append(
            _Prompt(
                index=index,
                atom_count=atom_count,
                skills=skills,
                samples=samples,
                probability=[[float(images[s][q].probability) for q in positions] for s in samples],
                correct=[[bool(images[s][q].correct) for q in positions] for s in samples],
            )
        )
    return prompts


def _vqascore_table(vqascores: Mapping[tuple[int, int], float], prompts: list[_Prompt]) -> list[list[float]]:
    """Each prompt's VQAScores by sample, checked against the images that have questions."""
    images = {(p.index, s) for p in prompts for s in p.samples}
    for key in vqascores:
        if key not in images:
            raise InputError(f"vqascores has a score for prompt/sample {key!r}, which has no scored questions")
    table: list[list[float]] = []
    for p in prompts:
        row = []
        for s in p.samples:
            if (p.index, s) not in vqascores:
                raise InputError(f"vqascores has no score for prompt {p.index}, sample {s}")
            row.append(_check_probability(vqascores[(p.index, s)], "VQAScore", f"prompt {p.index}, sample {s}"))
        table.append(row)
    return table


def _interval(replicates: NDArray[np.float64], level: float) -> tuple[float | None, float | None]:
    """Percentile interval of one column of replicates, over the resamples where the cell is defined."""
    defined = replicates[np.isfinite(replicates)]
    if defined.size == 0:
        return None, None
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(defined, [tail, 100.0 - tail])
    return float(low), float(high)


def geneval2_tables(
    questions: Iterable[QuestionScore],
    vqascores: Mapping[tuple[int, int], float] | None = None,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = CI_LEVEL,
    seed: int = 0,
) -> Geneval2Tables:
    """GenEval 2's overall, per-skill and per-atom-count tables in percent points, with percentile bootstrap intervals.

    ``questions``: one record per (prompt, image, question), any order; ``vqascores``: the VQAScore in [0, 1] of
    each image, keyed (prompt_index, sample), for exactly the images that have questions. Per image, Soft-TIFA AM,
    GM, TIFA and VQAScore; per prompt their mean over its images; overall the mean over prompts (×100). Skill s:
    Σ_p mean_images(Σ_{q of skill s} p_q) / Σ_p (questions of skill s in p), ×100 (the reference's pooled average
    when k = 1). Atom count a: the mean per-prompt GM over prompts with atom count a, ×100. With one image per
    prompt every estimate equals the reference's. Intervals: ``resamples`` draws of the prompts with replacement
    (``metrics.bootstrap.cluster_draws`` on the prompts sorted by index: independent of input order), all of a
    prompt's images together; percentile interval at ``level``; a resample without any prompt of a cell does not
    count for that cell. Cost O(resamples · prompts · cells).
    """
    B = check_positive_int(resamples, name="resamples")
    from t2ibench.metrics.bootstrap import check_level, cluster_draws  # scipy.linalg: loaded when tables are made

    lvl = check_level(level)
    seed = check_seed(seed)
    prompts = _gather(questions)
    vqa = None if vqascores is None else _vqascore_table(vqascores, prompts)
    m = len(prompts)

    # per prompt, in the reference's operations: mean over the images of each image's score
    am: list[float] = []
    gm: list[np.float64] = []
    tifa: list[float] = []
    for p in prompts:
        k, n = len(p.samples), len(p.skills)
        am.append(sum([sum(s) / len(s) for s in p.probability]) / k)
        gm.append(np.float64(sum([np.float64(soft_tifa_gm(s)) for s in p.probability]) / k))
        tifa.append(sum([sum([int(c) for c in v]) / n for v in p.correct]) / k)
    estimates: dict[tuple[str, Any], float] = {
        ("overall", "soft_tifa_am"): 100 * sum(am) / m,
        ("overall", "soft_tifa_gm"): float(100 * sum(gm) / m),
        ("overall", "tifa"): 100 * sum(tifa) / m,
    }
    vqa_prompt: list[float] = []
    if vqa is not None:
        vqa_prompt = [sum(row) / len(row) for row in vqa]
        estimates["overall", "vqascore"] = 100 * sum(vqa_prompt) / m

    # skills: the reference's running sums over (prompt, question), of each question's mean over the images
    skill_sum: dict[str, float] = dict.fromkeys(SKILLS, 0)
    skill_count = dict.fromkeys(SKILLS, 0)
    skill_prompts = dict.fromkeys(SKILLS, 0)
    per_prompt_skill = np.zeros((m, len(SKILLS)), dtype=np.float64)
    per_prompt_skill_n = np.zeros((m, len(SKILLS)), dtype=np.float64)
    for j, p in enumerate(prompts):
        k = len(p.samples)
        for q, skill in enumerate(p.skills):
            value = sum([image[q] for image in p.probability]) / k
            skill_sum[skill] += value
            skill_count[skill] += 1
            per_prompt_skill[j, SKILLS.index(skill)] += value
            per_prompt_skill_n[j, SKILLS.index(skill)] += 1
        for skill in set(p.skills):
            skill_prompts[skill] += 1
    present = [s for s in SKILLS if skill_count[s]]
    for skill in present:
        estimates["skill", skill] = 100 * skill_sum[skill] / skill_count[skill]

    # atom counts: the reference's running sum of per-prompt GMs
    atoms = sorted({p.atom_count for p in prompts})
    for a in atoms:
        correct: np.float64 | int = 0
        total = 0
        for p, g in zip(prompts, gm, strict=True):
            if p.atom_count == a:
                correct += g
                total += 1
        estimates["atom_count", a] = float(correct * 100 / total)

    # the bootstrap: each cell is a ratio Σ_p w_p value_p / Σ_p w_p weight_p over the prompts' draw counts w
    columns: list[tuple[str, Any]] = [("overall", "soft_tifa_am"), ("overall", "soft_tifa_gm"), ("overall", "tifa")]
    values = [np.array(am), np.array(gm, dtype=np.float64), np.array(tifa)]
    weights = [np.ones(m)] * 3
    if vqa is not None:
        columns.append(("overall", "vqascore"))
        values.append(np.array(vqa_prompt))
        weights.append(np.ones(m))
    for skill in present:
        columns.append(("skill", skill))
        values.append(per_prompt_skill[:, SKILLS.index(skill)])
        weights.append(per_prompt_skill_n[:, SKILLS.index(skill)])
    atom_of = np.array([p.atom_count for p in prompts])
    for a in atoms:
        columns.append(("atom_count", a))
        inside = (atom_of == a).astype(np.float64)
        values.append(np.array(gm, dtype=np.float64) * inside)
        weights.append(inside)
    V, D = np.column_stack(values), np.column_stack(weights)
    check_memory(  # draws and their counts (B, m), the two products (B, cells)
        8.0 * B * (4 * m + 3 * len(columns)),
        what=f"the GenEval 2 bootstrap ({B} resamples of {m} prompts)",
    )
    draws = cluster_draws(m, B, seed)
    counts = np.bincount((draws + m * np.arange(B)[:, None]).ravel(), minlength=B * m).reshape(B, m)
    W = counts.astype(np.float64)
    del draws, counts
    numerator, denominator = W @ V, W @ D
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = 100.0 * numerator / denominator  # NaN where a resample drew no prompt of the cell

    n_questions = [len(p.skills) for p in prompts]
    cells: dict[tuple[str, Any], TableCell] = {}
    for c, key in enumerate(columns):
        low, high = _interval(replicates[:, c], lvl)
        table, name = key
        if table == "overall":
            prompts_n, questions_n = m, (None if name == "vqascore" else sum(n_questions))
        elif table == "skill":
            prompts_n, questions_n = skill_prompts[name], skill_count[name]
        else:
            inside_bucket = [n for p, n in zip(prompts, n_questions, strict=True) if p.atom_count == name]
            prompts_n, questions_n = len(inside_bucket), sum(inside_bucket)
        cells[key] = TableCell(float(estimates[key]), low, high, prompts_n, questions_n)
    return Geneval2Tables(
        overall={name: cells["overall", name] for name in METHODS if ("overall", name) in cells},
        skills={skill: cells["skill", skill] for skill in present},
        atom_counts={a: cells["atom_count", a] for a in atoms},
        level=lvl,
        resamples=B,
        seed=seed,
        prompts=m,
        images=sum(len(p.samples) for p in prompts),
        questions=sum(n_questions),
    )
