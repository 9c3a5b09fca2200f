"""GenEval 2's Soft-TIFA, TIFA and VQAScore arithmetic (t2ibench.benchmarks.geneval2.metrics).

The differential test drives ``tests/unit/geneval2_reference.py`` (a transcription of the reference's
evaluation.py and soft_tifa_analysis.py) and the project's functions with one scripted judge — fixed float32
next-token distributions over a small dictionary tokenizer — and requires the same numbers, with ==: with one
image per prompt the project sums in the reference's order with the reference's operations, so no tolerance is
needed anywhere. It runs on synthetic prompts with GenEval 2's structure and, when present, on the real
geneval2_data.jsonl (read in place, never copied: CC BY-NC 4.0).
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings

import numpy as np
import pytest
from scipy.stats import gmean

from t2ibench.benchmarks.geneval2.metrics import (
    ANSWER_RULES,
    DEFAULT_ANSWER_RULE,
    NUMBER_WORDS,
    QUESTION_SUFFIX,
    SKILLS,
    VQASCORE_TEMPLATE,
    YES_VARIANTS,
    QuestionScore,
    answer_probability,
    answer_token_ids,
    answer_variants,
    geneval2_tables,
    question_text,
    soft_tifa_am,
    soft_tifa_gm,
    tifa_correct,
    vqascore_text,
)
from t2ibench.errors import InputError
from t2ibench.metrics.bootstrap import cluster_draws
from tests.conftest import GENEVAL2_DATA as SHARED_GENEVAL2
from tests.unit import geneval2_reference as reference

GENEVAL2_DATA = SHARED_GENEVAL2 / "geneval2_data.jsonl"  # the documented override (tests/conftest.py)
WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


# -- a scripted judge ----------------------------------------------------------------------------------------------


class DictTokenizer:
    """Greedy longest-match over a fixed vocabulary; characters it has no token for become '<unk>'."""

    def __init__(self, tokens: list[str], *, lowercase: bool = False) -> None:
        self.vocab = list(dict.fromkeys(["<unk>", "<|im_end|>", *tokens]))
        self.ids = {t: i for i, t in enumerate(self.vocab)}
        self.lowercase = lowercase
        self.longest = max(map(len, self.vocab))

    def encode(self, text: str) -> list[int]:
        text = text.lower() if self.lowercase else text
        out, i = [], 0
        while i < len(text):
            for j in range(min(len(text), i + self.longest), i, -1):
                if text[i:j] in self.ids:
                    out.append(self.ids[text[i:j]])
                    i = j
                    break
            else:
                out.append(self.ids["<unk>"])
                i += 1
        return out

    def decode(self, token_id: int) -> str:
        return self.vocab[token_id]


def qwen_like() -> DictTokenizer:
    """Cased words with and without a leading space are single tokens; digits are split and never merged with a
    space, so ' 4' is [' ', '4'] (as Qwen's pre-tokenizer does)."""
    words = [w for word in WORDS for w in (word, word.capitalize(), " " + word, " " + word.capitalize())]
    return DictTokenizer([" ", *"0123456789", "Yes", "yes", " yes", " Yes", "No", " No", "the", " the", *words])


def uncased() -> DictTokenizer:
    """Lower-cases before encoding: 'Four' and 'four' (and ' Four', ' four'; 'Yes', 'yes') share their token."""
    words = [w for word in WORDS for w in (word, " " + word)]
    return DictTokenizer([" ", *"0123456789", "yes", " yes", "no", " no", "the", *words], lowercase=True)


def space_split() -> DictTokenizer:
    """No word carries its leading space: ' four', ' Four' and ' 4' all start with the bare space token."""
    words = [w for word in WORDS for w in (word, word.capitalize())]
    return DictTokenizer([" ", *"0123456789", "Yes", "yes", "No", "the", *words])


FILLERS = ("<|im_end|>", "the", " the", "No", " No", "no", " no")


class ScriptedJudge:
    """Fixed float32 next-token probabilities per (text, image), drawn from a hash of both: a mixture of scenarios
    (exactly zero on every answer token, the argmax a bare space, the argmax 'No', a peak on an answer-like token,
    a diffuse draw). ``answer_mass`` caps the mass outside FILLERS, so that duplicated first tokens summed by the
    reference rule stay within [0, 1]."""

    def __init__(self, tokenizer: DictTokenizer, *, seed: int = 0, answer_mass: float = 1.0) -> None:
        self.tokenizer = tokenizer
        self.seed = seed
        self.answer_mass = answer_mass
        self.cache: dict[tuple[str, str], np.ndarray] = {}
        vocab = tokenizer.vocab
        self.filler = np.array([t in FILLERS for t in vocab])
        self.unk, self.space = tokenizer.ids["<unk>"], tokenizer.ids[" "]
        self.no = tokenizer.ids["No" if "No" in tokenizer.ids else "no"]
        self.content = np.flatnonzero(~self.filler & (np.arange(len(vocab)) != self.unk))

    def __call__(self, text: str, image: str) -> np.ndarray:
        key = (text, image)
        if key not in self.cache:
            self.cache[key] = self._draw(text, image)
        return self.cache[key]

    def _draw(self, text: str, image: str) -> np.ndarray:
        digest = hashlib.sha256(f"{self.seed}|{image}|{text}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        scenario = rng.choice(["zero", "space", "no", "peak", "diffuse"], p=[0.04, 0.08, 0.08, 0.45, 0.35])
        p = rng.dirichlet(np.full(len(self.tokenizer.vocab), 0.3))
        p[self.unk] = 0.0
        if scenario == "zero":
            p[self.content] = 0.0
            p[self.no] += 1.0
        elif scenario == "space":
            p[self.space] = 0.0
            p *= 0.45 / p.sum()
            p[self.space] = 0.55
        elif scenario == "no":
            p *= 0.4 / p.sum()
            p[self.no] += 0.6
        elif scenario == "peak":
            p *= 0.2 / p.sum()
            p[rng.choice(self.content)] += 0.8
        p /= p.sum()
        mass = p[self.content].sum()
        if mass > self.answer_mass:
            p[self.content] *= self.answer_mass / mass
            p[self.filler] += (mass - self.answer_mass) / self.filler.sum()
        p32 = p.astype(np.float32)
        return p32 / p32.sum(dtype=np.float32)


JUDGES = {  # tokenizer, and the cap keeping the reference rule's duplicated sums ≤ 1
    "qwen-like": (qwen_like, 1.0),
    "uncased": (uncased, 0.5),
    "space-split": (space_split, 0.3),
}


# -- prompts with GenEval 2's structure ----------------------------------------------------------------------------

NOUNS = (("cat", "cats"), ("dog", "dogs"), ("cow", "cows"), ("bicycle", "bicycles"), ("pig", "pigs"), ("cup", "cups"))
ATTRIBUTES = ("green", "plastic", "red", "wooden")
RELATIONS = (("position", "in front of"), ("position", "to the left of"), ("verb", "chasing"), ("verb", "riding"))


def synthetic_benchmark(seed: int, per_atom_count: int) -> list[dict]:
    """GenEval 2-shaped lines: atom counts 3..10 (``per_atom_count`` prompts each), per object a count question
    ('How many X are in the image?', words one..seven; an 'a X' count is asked but is no atom), its attribute
    questions and its object question, relations after the first object's block; the five skills."""
    rng = np.random.default_rng(seed)
    lines, seen = [], set()
    for atom_count in range(3, 11):
        made = 0
        while made < per_atom_count:
            objects = []
            for j in rng.choice(len(NOUNS), size=int(rng.integers(1, 4)), replace=False):
                count = int(rng.integers(1, 8)) if rng.random() < 0.5 else 1
                attrs = list(rng.choice(ATTRIBUTES, size=int(rng.integers(0, 3)), replace=False))
                objects.append((NOUNS[j], count, attrs))
            relations = [RELATIONS[int(i)] for i in rng.integers(0, 4, size=int(rng.integers(0, len(objects))))]
            atoms = sum(1 + (count > 1) + len(attrs) for _, count, attrs in objects) + len(relations)
            if atoms != atom_count:
                continue
            words = " and ".join(f"{WORDS[c - 1]} {' '.join(a)} {n[c > 1]}" for n, c, a in objects)
            prompt = words + "".join(f" {r} the {objects[0][0][0]}" for _, r in relations)
            if prompt in seen:
                continue
            seen.add(prompt)
            vqa_list, skills = [], []
            for position, ((singular, plural), count, attrs) in enumerate(objects):
                vqa_list.append([f"How many {plural} are in the image?", WORDS[count - 1]])
                skills.append("count")
                for a in attrs:
                    vqa_list.append([f"Are the {plural} {a}?" if count > 1 else f"Is the {singular} {a}?", "Yes"])
                    skills.append("attribute")
                vqa_list.append([f"Are there any {plural} in the image?", "Yes"])
                skills.append("object")
                if position == 0:
                    for skill, r in relations:
                        vqa_list.append([f"Is the {singular} {r} the {objects[-1][0][0]}?", "Yes"])
                        skills.append(skill)
            lines.append({"prompt": prompt, "atom_count": atom_count, "vqa_list": vqa_list, "skills": skills})
            made += 1
    return lines


# -- the project's side: the functions a judge adapter calls -------------------------------------------------------


def project_scores(judge, data, *, rule=DEFAULT_ANSWER_RULE, samples=1):
    """(QuestionScore records, VQAScores by (prompt_index, sample)) as the product computes them."""
    tok = judge.tokenizer
    questions, vqascores = [], {}
    for index, line in enumerate(data):
        for sample in range(samples):
            image = f"image-{index}-{sample}"
            for position, ((question, answer), skill) in enumerate(zip(line["vqa_list"], line["skills"], strict=True)):
                variants = answer_variants(question, answer)
                where = f"line {index + 1} question {position + 1}"
                ids = answer_token_ids(variants, tok.encode, tok.decode, rule=rule, where=where)
                probs = judge(question_text(question), image)
                probability = answer_probability([probs[i].item() for i in ids])
                correct = tifa_correct(tok.decode(int(np.argmax(probs))), variants)
                questions.append(
                    QuestionScore(index, sample, position, line["atom_count"], skill, probability, correct)
                )
            ids = answer_token_ids(YES_VARIANTS, tok.encode, tok.decode, rule=rule, where=f"line {index + 1}")
            probs = judge(vqascore_text(line["prompt"]), image)
            vqascores[index, sample] = answer_probability([probs[i].item() for i in ids])
    return questions, vqascores


def reference_run(judge, data):
    """Everything the reference prints and writes, one image per prompt."""
    images = {line["prompt"]: f"image-{index}-0" for index, line in enumerate(data)}
    runs = {method: reference.evaluate(judge, data, images, method) for method in ("soft_tifa_am", "soft_tifa_gm")}
    runs |= {method: reference.evaluate(judge, data, images, method) for method in ("tifa", "vqascore")}
    skills, atomicity, printed = reference.analyse(data, runs["soft_tifa_am"][0])
    return runs, skills, atomicity, printed


def assert_same_as_reference(judge, data, resamples):
    runs, skills, atomicity, printed = reference_run(judge, data)
    questions, vqascores = project_scores(judge, data)
    # the score files, question by question (the soft scores and the 0/1 verdicts) and VQAScore per prompt
    by_prompt: dict[int, list[QuestionScore]] = {}
    for q in questions:
        by_prompt.setdefault(q.prompt_index, []).append(q)
    assert [[q.probability for q in by_prompt[i]] for i in range(len(data))] == runs["soft_tifa_am"][0]
    assert [[int(q.correct) for q in by_prompt[i]] for i in range(len(data))] == runs["tifa"][0]
    assert [[vqascores[i, 0]] for i in range(len(data))] == runs["vqascore"][0]

    tables = geneval2_tables(questions, vqascores, resamples=resamples)
    for method, (_, total, lines) in runs.items():
        assert tables.overall[method].estimate == total, method  # exact: the same sums in the same order
        assert lines == [f"Score: {tables.overall[method].estimate}"]
        assert round(tables.overall[method].estimate, 2) == round(total, 2)
    assert list(tables.skills) == list(SKILLS)
    assert {s: c.estimate for s, c in tables.skills.items()} == skills
    assert {a: c.estimate for a, c in tables.atom_counts.items()} == atomicity
    mine = ["Per Atom Type Analysis (Soft-TIFA AM)"]
    for skill, cell in tables.skills.items():
        mine += [f"{skill.capitalize()}:", str(round(cell.estimate, 2))]
    mine += ["", "Per Atomicity Analysis (Soft-TIFA GM)"]
    for a, cell in tables.atom_counts.items():
        mine += [f"Results for Atomicity={a}", str(round(cell.estimate, 2))]
    assert mine == printed
    return questions, tables


@pytest.mark.parametrize("name", list(JUDGES))
def test_the_tables_equal_the_reference_on_synthetic_prompts(name):
    make, cap = JUDGES[name]
    judge = ScriptedJudge(make(), seed=7, answer_mass=cap)
    data = synthetic_benchmark(seed=3, per_atom_count=6)
    assert {line["atom_count"] for line in data} == set(range(3, 11))
    assert {s for line in data for s in line["skills"]} == set(SKILLS)
    assert {a for line in data for (q, a) in line["vqa_list"] if q.startswith("How many")} == set(WORDS[:7])
    questions, tables = assert_same_as_reference(judge, data, resamples=200)
    # the script covers what matters: exact zeros (GM 0), argmax a bare space and 'No', and correct answers
    tops = [judge.tokenizer.decode(int(np.argmax(p))) for p in judge.cache.values()]
    assert {" ", "No" if name != "uncased" else "no"} <= set(tops)
    assert any(q.probability == 0.0 for q in questions)
    assert 0 < sum(q.correct for q in questions) < len(questions)
    assert 0 < tables.overall["soft_tifa_gm"].estimate < tables.overall["soft_tifa_am"].estimate


def test_the_shared_first_tokens_are_summed_twice_like_the_reference():
    """With the uncased tokenizer 'Four'/'four' share a token: the reference rule (and the reference) adds it twice,
    so the totals differ from the 'unique' rule's — and still equal the reference's."""
    judge = ScriptedJudge(uncased(), seed=1, answer_mass=0.5)
    data = synthetic_benchmark(seed=5, per_atom_count=2)
    assert_same_as_reference(judge, data, resamples=50)
    unique, _ = project_scores(judge, data, rule="unique")
    doubled, _ = project_scores(judge, data, rule="reference")
    assert sum(q.probability for q in doubled) > sum(q.probability for q in unique)


@pytest.mark.skipif(
    not GENEVAL2_DATA.is_file(),
    reason=f"GenEval 2's geneval2_data.jsonl not found at {GENEVAL2_DATA} ($T2IBENCH_GENEVAL2_DATA, default "
    "../shared/geneval2)",
)
def test_the_tables_equal_the_reference_on_the_real_data():
    data = [json.loads(line) for line in GENEVAL2_DATA.read_text(encoding="utf-8").splitlines()]
    assert len(data) == 800
    judge = ScriptedJudge(qwen_like(), seed=11)
    questions, tables = assert_same_as_reference(judge, data, resamples=1000)
    assert tables.prompts == 800
    assert tables.questions == 6012
    assert {a: c.prompts for a, c in tables.atom_counts.items()} == dict.fromkeys(range(3, 11), 100)
    assert {s: c.questions for s, c in tables.skills.items()} == {
        "object": 2025,
        "attribute": 1214,
        "count": 2025,
        "position": 662,
        "verb": 86,
    }
    # with a Qwen-like tokenizer the two rules differ by exactly P(' ') on each counting question (added last)
    unique, _ = project_scores(judge, data, rule="unique")
    for ref, uni in zip(questions, unique, strict=True):
        if ref.skill == "count":
            space = judge(
                question_text(data[ref.prompt_index]["vqa_list"][ref.question][0]), f"image-{ref.prompt_index}-0"
            )
            assert ref.probability == uni.probability + space[judge.space].item()
        else:
            assert ref.probability == uni.probability


# -- answers, tokens, rules -----------------------------------------------------------------------------------------


def test_answer_variants_and_texts_are_the_reference_strings():
    assert answer_variants("How many bicycles are in the image?", "four") == (
        "four",
        "Four",
        " four",
        " Four",
        "4",
        " 4",
    )
    assert answer_variants("How many cats are in the image?", "zero")[4:] == ("other", " other")
    assert answer_variants("how many cats are in the image?", "four") == ("Yes", "yes", " yes", " Yes")
    assert answer_variants("Is the backpack green?", "No") == ("Yes", "yes", " yes", " Yes")
    assert dict(NUMBER_WORDS) == {w: str(i) for i, w in enumerate(WORDS, start=1)}
    assert question_text("Is the pig red?") == "Is the pig red? Answer in one word."
    assert QUESTION_SUFFIX == " Answer in one word."
    assert vqascore_text("a green backpack and a pig") == (
        'Does this image show "a green backpack and a pig"? Answer the question with Yes or No.'
    )
    assert VQASCORE_TEMPLATE.format(prompt="x") == 'Does this image show "x"? Answer the question with Yes or No.'
    with pytest.raises(InputError, match="brace"):
        vqascore_text("a {cat}")


def probabilities(tok: DictTokenizer, values: dict[str, float]) -> np.ndarray:
    p = np.zeros(len(tok.vocab), dtype=np.float64)
    for token, value in values.items():
        p[tok.ids[token]] = value
    return p


@pytest.mark.parametrize(
    ("make", "expected_reference", "expected_unique"),
    [
        # P: four .1, Four .05, ' four' .2, ' Four' .02, '4' .03, ' ' .25 (' 4' = [' ', '4'])
        (qwen_like, 0.1 + 0.05 + 0.2 + 0.02 + 0.03 + 0.25, 0.1 + 0.05 + 0.2 + 0.02 + 0.03),
        # four ≡ Four and ' four' ≡ ' Four': the reference counts each twice
        (uncased, 2 * 0.1 + 2 * 0.2 + 0.03 + 0.25, 0.1 + 0.2 + 0.03),
        # ' four', ' Four' and ' 4' all begin with ' ': three times P(' ') in the reference, none in 'unique'
        (space_split, 0.1 + 0.05 + 3 * 0.25 + 0.03, 0.1 + 0.05 + 0.03),
    ],
)
def test_the_reference_and_unique_rules_on_shared_and_bare_space_tokens(make, expected_reference, expected_unique):
    tok = make()
    values = {"four": 0.1, "Four": 0.05, " four": 0.2, " Four": 0.02, "4": 0.03, " ": 0.25}
    p = probabilities(tok, {t: v for t, v in values.items() if t in tok.ids})
    variants = answer_variants("How many cows are in the image?", "four")
    for rule, expected in (("reference", expected_reference), ("unique", expected_unique)):
        ids = answer_token_ids(variants, tok.encode, tok.decode, rule=rule, where="q")
        assert answer_probability([p[i] for i in ids]) == pytest.approx(expected, abs=1e-15), rule
    unique = answer_token_ids(variants, tok.encode, tok.decode, rule="unique", where="q")
    assert len(set(unique)) == len(unique)
    assert tok.ids[" "] not in unique


def test_yes_variants_under_the_two_rules():
    tok = space_split()  # ' yes' and ' Yes' begin with the bare space
    ids = answer_token_ids(YES_VARIANTS, tok.encode, tok.decode, rule="reference", where="q")
    assert ids == (tok.ids["Yes"], tok.ids["yes"], tok.ids[" "], tok.ids[" "])
    assert answer_token_ids(YES_VARIANTS, tok.encode, tok.decode, rule="unique", where="q") == ids[:2]
    tok = qwen_like()
    assert answer_token_ids(YES_VARIANTS, tok.encode, tok.decode, rule="unique", where="q") == tuple(
        tok.ids[v] for v in YES_VARIANTS
    )
    assert ANSWER_RULES == ("reference", "unique")
    assert DEFAULT_ANSWER_RULE == "reference"


def test_answer_probability_sums_in_order_without_a_clamp():
    assert answer_probability([0.5, 0.25, 0.5]) == 1.25
    assert answer_probability([]) == 0.0
    values = [0.1, 0.2, 0.3, 1e-17]
    total = 0
    for v in values:
        total += v
    assert answer_probability(np.array(values, dtype=np.float64)) == total
    assert type(answer_probability(np.array([0.5], dtype=np.float32))) is float


def test_tifa_is_the_lower_cased_top_token_in_the_variants():
    count = answer_variants("How many cows are in the image?", "four")
    assert tifa_correct("Four", count)
    assert tifa_correct("4", count)
    assert not tifa_correct(" ", count)
    assert not tifa_correct("four ", count)  # no strip
    yes = YES_VARIANTS
    assert tifa_correct(" Yes", yes)
    assert tifa_correct("YES", yes)
    assert not tifa_correct("No", yes)
    assert not tifa_correct("<|im_end|>", yes)


def test_tokens_that_are_not_the_answer_are_refused_on_one_line():
    tok = DictTokenizer(["yes", " yes", "Yes"])  # no token for ' Y...'
    with pytest.raises(InputError) as err:
        answer_token_ids(YES_VARIANTS, tok.encode, tok.decode, rule="reference", where="geneval2_data.jsonl line 12")
    assert str(err.value).startswith(
        "geneval2_data.jsonl line 12: the judge's tokenizer has no token for answer ' Yes'"
    )
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match=r"line 3 question 2: the judge's tokenizer encodes answer 'Yes' to no tokens"):
        answer_token_ids(YES_VARIANTS, lambda t: [], tok.decode, rule="unique", where="line 3 question 2")
    qwen = qwen_like()
    with pytest.raises(InputError, match="no token for answer 'Yes'"):  # a BOS in front
        answer_token_ids(YES_VARIANTS, lambda t: [1, *qwen.encode(t)], qwen.decode, rule="reference", where="x")
    with pytest.raises(InputError, match=r"unknown answer rule 'uniq'; did you mean 'unique'\?"):
        answer_token_ids(YES_VARIANTS, qwen.encode, qwen.decode, rule="uniq", where="x")
    with pytest.raises(InputError, match="other than whitespace"):
        answer_token_ids([" 4"], qwen.encode, qwen.decode, rule="unique", where="x")


# -- aggregation ----------------------------------------------------------------------------------------------------


def test_the_geometric_mean_is_scipys_and_zero_without_a_warning():
    rng = np.random.default_rng(0)
    for n in range(1, 40):
        scores = list(rng.random(n))
        assert soft_tifa_gm(scores) == gmean(scores)
        assert soft_tifa_am(scores) == sum(scores) / len(scores)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert soft_tifa_gm([0.9, 0.0, 0.5]) == 0.0
        assert soft_tifa_gm([1e-300, 1e-300]) == pytest.approx(1e-300, rel=1e-12)
    for bad in ([], [float("nan")], [0.5, float("inf")]):
        with pytest.raises(InputError):
            soft_tifa_gm(bad)
        with pytest.raises(InputError):
            soft_tifa_am(bad)
    with pytest.raises(InputError, match="≥ 0"):
        soft_tifa_gm([0.5, -0.1])


def record(p, s, q, probability, *, skill="object", atom=3, correct=True):
    return QuestionScore(p, s, q, atom, skill, probability, correct)


def test_k_images_per_prompt_are_averaged_per_prompt_then_over_prompts():
    # prompt 0 (atom count 3): skills count, object; two images. prompt 1 (atom count 4): object, object, attribute.
    qs = [
        record(0, 0, 0, 0.5, skill="count", correct=False),
        record(0, 0, 1, 1.0),
        record(0, 1, 0, 0.25, skill="count"),
        record(0, 1, 1, 0.5),
        record(1, 0, 0, 0.8, atom=4),
        record(1, 0, 1, 0.6, atom=4, correct=False),
        record(1, 0, 2, 0.4, skill="attribute", atom=4),
    ]
    vqa = {(0, 0): 0.9, (0, 1): 0.5, (1, 0): 0.4}
    t = geneval2_tables(qs, vqa, resamples=20)
    gm0 = (math.sqrt(0.5 * 1.0) + math.sqrt(0.25 * 0.5)) / 2
    gm1 = (0.8 * 0.6 * 0.4) ** (1 / 3)
    assert t.overall["soft_tifa_am"].estimate == pytest.approx(100 * ((0.75 + 0.375) / 2 + 0.6) / 2, abs=1e-12)
    assert t.overall["soft_tifa_gm"].estimate == pytest.approx(100 * (gm0 + gm1) / 2, abs=1e-12)
    assert t.overall["tifa"].estimate == pytest.approx(100 * ((1 / 2 + 2 / 2) / 2 + 2 / 3) / 2, abs=1e-12)
    assert t.overall["vqascore"].estimate == pytest.approx(100 * ((0.9 + 0.5) / 2 + 0.4) / 2, abs=1e-12)
    # pooled: per prompt the image mean of the skill's sum, over the skill's questions
    assert t.skills["object"].estimate == pytest.approx(100 * ((1.0 + 0.5) / 2 + 0.8 + 0.6) / 3, abs=1e-12)
    assert t.skills["count"].estimate == pytest.approx(100 * 0.375, abs=1e-12)
    assert t.skills["attribute"].estimate == pytest.approx(40.0, abs=1e-12)
    assert list(t.skills) == ["object", "attribute", "count"]
    assert (t.skills["object"].prompts, t.skills["object"].questions) == (2, 3)
    assert t.atom_counts[3].estimate == pytest.approx(100 * gm0, abs=1e-12)
    assert t.atom_counts[4].estimate == pytest.approx(100 * gm1, abs=1e-12)
    assert (t.prompts, t.images, t.questions) == (2, 3, 5)
    assert t.overall["vqascore"].questions is None
    rows = json.loads(json.dumps(t.rows()))
    assert {(r["table"], r["key"]) for r in rows} >= {("overall", "tifa"), ("skill", "count"), ("atom_count", "4")}
    assert set(rows[0]) == {"table", "key", "estimate", "ci_low", "ci_high", "ci_level", "prompts", "questions"}
    assert json.loads(json.dumps(t.to_dict()))["ci_method"] == "percentile bootstrap over prompts, B=20"
    assert qs[0].to_dict()["probability"] == 0.5


def test_bad_records_are_refused_naming_the_prompt_and_sample():
    with pytest.raises(InputError, match=r"prompt 2, sample 1, question 0: unknown skill 'colour'"):
        record(2, 1, 0, 0.5, skill="colour")
    with pytest.raises(InputError, match=r"did you mean 'count'"):
        record(2, 1, 0, 0.5, skill="cont")
    for bad in (1.5, -0.01, float("nan"), float("inf")):
        with pytest.raises(InputError, match=r"prompt 4, sample 2, question 1: probability .* outside") as err:
            record(4, 2, 1, bad)
        assert "\n" not in str(err.value)
    assert record(0, 0, 0, 1.0 + 5e-7).probability == 1.0 + 5e-7  # float32 softmax slack
    with pytest.raises(InputError, match="counts twice"):
        record(0, 0, 0, 1.2)
    with pytest.raises(InputError, match="correct must be"):
        QuestionScore(0, 0, 0, 3, "object", 0.5, 1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="sample must be an integer"):
        QuestionScore(0, -1, 0, 3, "object", 0.5, True)
    with pytest.raises(InputError, match="sample 1 has 1 questions"):
        geneval2_tables([record(0, 0, 0, 0.5), record(0, 0, 1, 0.5), record(0, 1, 0, 0.5)])
    with pytest.raises(InputError, match="question 1: skill 'count', but 'object' in sample 0"):
        geneval2_tables([record(0, 0, 1, 0.5), record(0, 1, 1, 0.5, skill="count")])
    with pytest.raises(InputError, match="atom_count 4, but 3"):
        geneval2_tables([record(0, 0, 0, 0.5), record(0, 0, 1, 0.5, atom=4)])
    with pytest.raises(InputError, match="scored twice"):
        geneval2_tables([record(0, 0, 0, 0.5), record(0, 0, 0, 0.4)])
    with pytest.raises(InputError, match="empty"):
        geneval2_tables([])
    good = [record(0, 0, 0, 0.5), record(1, 0, 0, 0.5)]
    with pytest.raises(InputError, match="no score for prompt 1, sample 0"):
        geneval2_tables(good, {(0, 0): 0.5})
    with pytest.raises(InputError, match=r"\(5, 0\), which has no scored questions"):
        geneval2_tables(good, {(0, 0): 0.5, (1, 0): 0.5, (5, 0): 0.5})
    with pytest.raises(InputError, match=r"prompt 1, sample 0: VQAScore nan is outside"):
        geneval2_tables(good, {(0, 0): 0.5, (1, 0): float("nan")})


# -- the bootstrap --------------------------------------------------------------------------------------------------


def random_records(seed, prompts, *, samples=1, questions=(1, 6)):
    rng = np.random.default_rng(seed)
    out, vqa = [], {}
    for p in range(prompts):
        n = int(rng.integers(*questions, endpoint=True))
        skills = rng.choice(SKILLS, size=n)
        atom = int(rng.integers(3, 6))
        for s in range(samples):
            for q in range(n):
                out.append(
                    record(
                        p, s, q, float(rng.random()), skill=str(skills[q]), atom=atom, correct=bool(rng.random() < 0.6)
                    )
                )
            vqa[p, s] = float(rng.random())
    return out, vqa


def brute_estimates(prompts):
    """Every cell from its definition, for a list of prompts (each: atom, skills, probs (k, n), correct, vqa (k,))."""
    out = {}
    out["overall", "soft_tifa_am"] = 100 * np.mean([np.mean(p["probs"], axis=1).mean() for p in prompts])
    out["overall", "soft_tifa_gm"] = 100 * np.mean([np.mean([gmean(row) for row in p["probs"]]) for p in prompts])
    out["overall", "tifa"] = 100 * np.mean([np.mean(p["correct"], axis=1).mean() for p in prompts])
    out["overall", "vqascore"] = 100 * np.mean([np.mean(p["vqa"]) for p in prompts])
    for skill in SKILLS:
        num = sum(p["probs"][:, [s == skill for s in p["skills"]]].sum(axis=1).mean() for p in prompts)
        den = sum(sum(s == skill for s in p["skills"]) for p in prompts)
        out["skill", skill] = 100 * num / den if den else math.nan
    for atom in (3, 4, 5):
        inside = [np.mean([gmean(row) for row in p["probs"]]) for p in prompts if p["atom"] == atom]
        out["atom_count", atom] = 100 * np.mean(inside) if inside else math.nan
    return out


def as_prompts(records, vqa):
    grouped: dict[int, dict] = {}
    for r in sorted(records, key=lambda r: (r.prompt_index, r.sample, r.question)):
        g = grouped.setdefault(r.prompt_index, {"atom": r.atom_count, "skills": {}, "probs": {}, "correct": {}})
        g["skills"][r.question] = r.skill
        g["probs"].setdefault(r.sample, []).append(r.probability)
        g["correct"].setdefault(r.sample, []).append(r.correct)
    out = []
    for index in sorted(grouped):
        g = grouped[index]
        samples = sorted(g["probs"])
        out.append(
            {
                "atom": g["atom"],
                "skills": [g["skills"][q] for q in sorted(g["skills"])],
                "probs": np.array([g["probs"][s] for s in samples]),
                "correct": np.array([g["correct"][s] for s in samples], dtype=float),
                "vqa": np.array([vqa[index, s] for s in samples]),
            }
        )
    return out


def cells(tables):
    out = {("overall", k): c for k, c in tables.overall.items()}
    out |= {("skill", k): c for k, c in tables.skills.items()}
    out |= {("atom_count", k): c for k, c in tables.atom_counts.items()}
    return out


@pytest.mark.parametrize("case", range(12))
def test_the_tables_and_intervals_match_brute_force_resampling(case):
    rng = np.random.default_rng(100 + case)
    m, k, B, seed = int(rng.integers(2, 7)), int(rng.integers(1, 4)), 40, int(rng.integers(0, 1000))
    records, vqa = random_records(case, m, samples=k)
    tables = geneval2_tables(records, vqa, resamples=B, level=0.9, seed=seed)
    prompts = as_prompts(records, vqa)
    expected = brute_estimates(prompts)
    draws = cluster_draws(m, B, seed)
    replicates = [brute_estimates([prompts[j] for j in row]) for row in draws]
    got = cells(tables)
    assert set(got) == {key for key, value in expected.items() if not math.isnan(value)}
    for key, cell in got.items():
        assert cell.estimate == pytest.approx(expected[key], abs=1e-9), key
        values = [r[key] for r in replicates if not math.isnan(r[key])]
        low, high = np.percentile(values, [5, 95])
        assert (cell.ci_low, cell.ci_high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9)), key


def test_intervals_contain_the_estimate_are_seeded_ignore_input_order_and_narrow_with_prompts():
    records, vqa = random_records(1, 60, samples=2)
    tables = geneval2_tables(records, vqa, resamples=500, seed=3)
    for key, cell in cells(tables).items():
        assert cell.ci_low <= cell.estimate <= cell.ci_high, key
    assert geneval2_tables(records, vqa, resamples=500, seed=3) == tables
    assert geneval2_tables(records, vqa, resamples=500, seed=4) != tables
    shuffled = [records[i] for i in np.random.default_rng(0).permutation(len(records))]
    assert geneval2_tables(shuffled, dict(reversed(vqa.items())), resamples=500, seed=3) == tables
    many, many_vqa = random_records(2, 960, samples=2)
    wide = tables.overall["soft_tifa_am"]
    narrow = geneval2_tables(many, many_vqa, resamples=500, seed=3).overall["soft_tifa_am"]
    assert (narrow.ci_high - narrow.ci_low) < 0.5 * (wide.ci_high - wide.ci_low)


def test_a_huge_bootstrap_is_refused_before_allocating(monkeypatch):
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "1M")
    records, _ = random_records(0, 50)
    with pytest.raises(InputError, match=r"GenEval 2 bootstrap .* needs"):
        geneval2_tables(records, resamples=100_000)
