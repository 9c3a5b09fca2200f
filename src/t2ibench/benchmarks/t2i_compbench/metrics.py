"""T2I-CompBench++'s scoring rules, per image and per category (numpy only): the attribute-binding product of BLIP-VQA
yes-probabilities, the 2-D and 3-D box rules (``determine_position``), numeracy's parse and counts, the 3-in-1 mean
of the complex category, and the category mean.

Each rule is the reference scripts' arithmetic (Karine-Huang/T2I-CompBench at commit 1b70949, read and re-written
here), under the rule ``reference`` — the default, the only one comparable with published numbers. Where a script
has a defect, ``reference`` keeps it and the rule ``corrected`` fixes it; docs/t2i_compbench.md lists each point:

* 2-D spatial: ``on top of`` is a relation word the script finds but no branch scores (0 always); ``corrected``
  scores it as ``on the top of``.
* 3-D spatial: object labels are matched as substrings of the joined label string, the first object's box is the
  last match seen before the second is found, and the depth map is sliced ``[x, y]`` (transposed); ``corrected``
  matches labels exactly, takes each object's first (highest-scoring) box and slices ``[y, x]``.
* numeracy: a requested object missing from the detections renames in place every detected label containing it as
  a substring (so "cat" counts "catfish"); ``corrected`` counts exact labels only.

Box coordinates are in the detection frame of the protocol (the reference resizes each image to a shorter side of
479, longest 480, before detecting: its 150-pixel distance threshold is in that frame). Scores keep the reference's
number types: BLIP answers are float32 tensors formatted to four decimals, detector scores Python floats.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from t2ibench.benchmarks.t2i_compbench.metrics_categories import ATTRIBUTE as ATTRIBUTE  # the rules' names, re-exported
from t2ibench.benchmarks.t2i_compbench.metrics_categories import CATEGORIES as CATEGORIES
from t2ibench.benchmarks.t2i_compbench.metrics_categories import MEAN as MEAN

Rule = Literal["reference", "corrected"]
RULES: tuple[Rule, ...] = ("reference", "corrected")


NP_NUM = 8
"""How many noun phrases BLIP-VQA asks about per prompt (the reference's ``--np_num`` default)."""
PHRASE_STOPLIST = ("top", "the side", "the left", "the right")
"""Noun chunks the reference drops before asking (BLIP_vqa.py)."""

# 2-D relations in the order the reference searches the prompt for them (the first substring found wins)
SPATIAL_2D = ("on side of", "next to", "near", "on the left of", "on the right of", "on the bottom of", "on the top of",
              "on top of")  # fmt: skip
SPATIAL_3D = ("in front of", "behind", "hidden")
NEARBY = ("next to", "on side of", "near")
PERSON = ("girl", "boy", "man", "woman")
"""Prompt nouns the reference maps to the detector label 'person' before matching."""
IOU_THRESHOLD = 0.1
DISTANCE_THRESHOLD = 150.0  # pixels of the detection frame
IOU_THRESHOLD_3D = 0.5
SPATIAL_FLOOR = 0.5  # a 2-D image score below this is 0

NUMBER_WORDS = ("a", "an", "one", "two", "three", "four", "five", "six", "seven", "eight")
_NUMBER_VALUES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
_SINGULAR = ("a", "an", "one")
# the reference's renames of a requested object before matching detector labels (numeracy_eval.py)
NUMERACY_RENAMES = {"boy": "person", "girl": "person", "man": "person", "woman": "person", "ship": "boat",
                    "telivision": "tv", "goldfish": "fish", "painting": "picture"}  # fmt: skip
DEDUP_OVERLAP = 0.9  # numeracy: a box overlapping a kept box of its label by more than this is the same object


@dataclass(frozen=True)
class Detection:
    """One detected object: its label, box (x1, y1, x2, y2 in pixels of the detection frame) and score in [0, 1]."""

    label: str
    box: tuple[float, float, float, float]
    score: float


# -- attribute binding: BLIP-VQA ---------------------------------------------------------------------------------


def vqa_answer(probability: float) -> str:
    """The reference's stored answer: the float32 yes-probability ``p_yes / (p_yes + p_no)`` as '{:.4f}'."""
    return f"{float(np.float32(probability)):.4f}"


def attribute_score(answers: Sequence[str | None], *, np_num: int = NP_NUM) -> float:
    """One image's BLIP-VQA score: the float32 product of its first ``np_num`` phrases' answers (``vqa_answer``
    strings; None: no phrase at that index, counted 1), formatted to four decimals and read back."""
    reward = np.ones(np_num, dtype=np.float32)
    for i, answer in enumerate(answers[:np_num]):
        if answer is not None:
            reward[i] = np.float32(float(answer))
    final = reward[0]
    for i in range(1, np_num):
        final = np.float32(final * reward[i])
    return float(f"{final.item():.4f}")


def vqa_question(text: str, max_words: int = 50) -> str:
    """A question as BLIP's VQA dataset passes it to the model (``pre_question``): lower case, the characters
    ``.!"()*#:;~`` removed, trailing spaces dropped, at most ``max_words`` space-separated words."""
    question = re.sub(r"([.!\"()*#:;~])", "", text.lower()).rstrip(" ")
    words = question.split(" ")
    return " ".join(words[:max_words]) if len(words) > max_words else question


def phrase_questions(phrases: Sequence[str], *, np_num: int = NP_NUM) -> list[str | None]:
    """The questions asked of one image: '<phrase>?' (as ``vqa_question`` passes it on) for each of the first
    ``np_num`` noun chunks not in the stop list (None where the prompt has fewer: that factor is 1)."""
    kept = [p for p in phrases if p not in PHRASE_STOPLIST]
    return [vqa_question(f"{kept[i]}?") if i < len(kept) else None for i in range(np_num)]


# -- what the rules read off a prompt's parse (tokens with their part of speech, noun chunks) ------------------------


@dataclass(frozen=True)
class Token:
    """One token of a prompt's parse: its text, coarse part of speech (spaCy's ``pos_``: NOUN, PROPN, ADJ, ...) and
    the whitespace that follows it ('' or ' ')."""

    text: str
    pos: str
    space: str = " "


def span_text(tokens: Sequence[Token], start: int, stop: int) -> str:
    """The text of tokens[start:stop] as spaCy's ``Span.text`` gives it (inner whitespace kept, none trailing)."""
    span = tokens[start:stop]
    return "".join(t.text + t.space for t in span[:-1]) + (span[-1].text if span else "")


def first_last_nouns(tokens: Sequence[Token]) -> tuple[str, str]:
    """The 2-D and 3-D rules' two objects: the prompt's first and last NOUN tokens (ValueError: it has none, where
    the reference's script stops with an IndexError)."""
    nouns = [t.text for t in tokens if t.pos == "NOUN"]
    if not nouns:
        raise ValueError(f"the parse of {span_text(tokens, 0, len(tokens))!r} has no NOUN")
    return nouns[0], nouns[-1]


COMPLEX_PREPOSITIONS = ("on top of", "on bottom of", "on the left", "on the right", "next to", "on side of", "near")


def complex_objects(tokens: Sequence[Token]) -> tuple[str | None, str | None]:
    """The complex category's two spatial objects (2D_spatial_eval.py with --complex): around each preposition the
    nearest NOUN/PROPN before it and the first NOUN after it (or, with none after it, the last of a PROPN run); the
    pair only when exactly two objects were found, else (None, None)."""
    objects: list[str] = []
    n = len(tokens)
    for i in range(n):
        width = next((w for w in (3, 2, 1) if span_text(tokens, i, i + w) in COMPLEX_PREPOSITIONS), None)
        if width is None:
            continue
        before = next((tokens[j].text for j in range(i - 1, -1, -1) if tokens[j].pos in ("NOUN", "PROPN")), None)
        if before is not None:
            objects.append(before)
        after = next((tokens[j].text for j in range(i + width, n) if tokens[j].pos == "NOUN"), None)
        if after is not None:
            objects.append(after)
        elif i + width < n:  # the walk reached the end without a NOUN: a proper noun ending its run instead
            proper = (tokens[j].text for j in range(i + width, n - 1)
                      if tokens[j].pos == "PROPN" and tokens[j + 1].pos != "PROPN")  # fmt: skip
            found = next(proper, None)
            if found is not None:
                objects.append(found)
    return (objects[0], objects[1]) if len(objects) == 2 else (None, None)


def without_adjectives(tokens: Sequence[Token]) -> str:
    """The complex category's CLIP text: the prompt's tokens but its adjectives, joined by single spaces."""
    return " ".join(t.text for t in tokens if t.pos != "ADJ")


# -- 2-D and 3-D spatial: determine_position -----------------------------------------------------------------------


def find_relation(prompt: str, words: Sequence[str]) -> str | None:
    """The first of ``words`` (in their order) in ``prompt`` as a substring, else None (the reference's search)."""
    return next((w for w in words if w in prompt), None)


def _iou(box1: Sequence[float], box2: Sequence[float]) -> float:
    """Intersection over union of two (x1, y1, x2, y2) boxes without the +1 pixel convention (0 for an empty union)."""
    x_overlap = max(0, min(box1[2], box2[2]) - max(box1[0], box2[0]))
    y_overlap = max(0, min(box1[3], box2[3]) - max(box1[1], box2[1]))
    intersection = x_overlap * y_overlap
    area1 = (box1[2] - box1[0]) * (box1[3] - box1[1])
    area2 = (box2[2] - box2[0]) * (box2[3] - box2[1])
    union = area1 + area2 - intersection
    return intersection / union if union else 0.0


def _depth_mean(depth: NDArray[np.floating], box: Sequence[float], rule: Rule) -> float:
    """Mean depth inside ``box``: the reference slices the (height, width) map as [x, y] (transposed), the corrected
    rule as [y, x]; an empty slice is NaN (every comparison with it false)."""
    x1, y1, x2, y2 = (int(v) for v in box)
    region = depth[x1:x2, y1:y2] if rule == "reference" else depth[y1:y2, x1:x2]
    return float(region.mean(dtype=np.float64)) if region.size else math.nan


def position_score(
    relation: str | None,
    box1: Sequence[float],
    box2: Sequence[float],
    *,
    rule: Rule = "reference",
    depth: NDArray[np.floating] | None = None,
    iou_threshold: float = IOU_THRESHOLD,
    distance_threshold: float = DISTANCE_THRESHOLD,
    iou_threshold_3d: float = IOU_THRESHOLD_3D,
) -> float:
    """How well object 1's box (x1, y1, x2, y2) stands in ``relation`` to object 2's, in [0, 1] (the reference's
    ``determine_position``; 3-D relations compare mean ``depth``, larger = nearer, inside the boxes)."""
    if rule == "corrected" and relation == "on top of":
        relation = "on the top of"
    x_distance = (box2[0] + box2[2]) / 2 - (box1[0] + box1[2]) / 2
    y_distance = (box2[1] + box2[3]) / 2 - (box1[1] + box1[3]) / 2
    iou = _iou(box1, box2)
    ax, ay = abs(x_distance), abs(y_distance)
    if relation in NEARBY:
        if ax < distance_threshold or ay < distance_threshold:
            return 1
        return distance_threshold / max(ax, ay)
    directional = {  # relation → (is object 2 on the far side, does that axis dominate)
        "on the right of": (x_distance < 0, ax > ay),
        "on the left of": (x_distance > 0, ax > ay),
        "on the bottom of": (y_distance < 0, ay > ax),
        "on the top of": (y_distance > 0, ay > ax),
    }
    if relation in directional:
        side, dominant = directional[relation]
        if not (side and dominant):
            return 0
        return 1 if iou < iou_threshold else iou_threshold / iou
    if relation in SPATIAL_3D:
        if depth is None:
            raise ValueError(f"relation {relation!r} needs a depth map")
        diff = _depth_mean(depth, box1, rule) - _depth_mean(depth, box2, rule)
        nearer = diff > 0 if relation == "in front of" else diff < 0
        if iou > iou_threshold_3d:
            return 1 if nearer else 0
        if 0 < iou < iou_threshold_3d:
            return iou / iou_threshold_3d if nearer else 0
        return 0
    return 0  # no relation word, or one no branch scores (the reference's 'on top of')


def person(noun: str | None) -> str | None:
    """The detector label a prompt noun is matched as: 'person' for girl/boy/man/woman, else itself."""
    return "person" if noun in PERSON else noun


def spatial_2d_score(
    detections: Sequence[Detection], obj1: str | None, obj2: str | None, relation: str | None, *, rule: Rule
) -> float:
    """One image's 2-D spatial score: a quarter of each found object's score (its first box of that exact label)
    plus half the position score when both are found, 0 below ``SPATIAL_FLOOR``."""
    labels = [d.label for d in detections]
    obj1, obj2 = person(obj1), person(obj2)
    if obj1 in labels and obj2 in labels:
        first, second = detections[labels.index(obj1)], detections[labels.index(obj2)]
        score = 0.25 * first.score + 0.25 * second.score
        score += position_score(relation, first.box, second.box, rule=rule) / 2
    elif obj1 in labels:
        score = 0.25 * detections[labels.index(obj1)].score
    elif obj2 in labels:
        score = 0.25 * detections[labels.index(obj2)].score
    else:
        score = 0
    return 0 if score < SPATIAL_FLOOR else score


def _find_3d(labels: Sequence[str], obj1: str, obj2: str, rule: Rule) -> tuple[int | None, int | None]:
    """The boxes the 3-D rule takes for the two objects (None: not found)."""
    if rule == "corrected":
        return (labels.index(obj1) if obj1 in labels else None, labels.index(obj2) if obj2 in labels else None)
    joined = " ".join(labels)
    found1, found2 = obj1 in joined, obj2 in joined
    pos1 = pos2 = None
    if found1 and found2:
        for i, label in enumerate(labels):  # the first box is overwritten until both are seen (the reference's loop)
            if obj1 in label:
                pos1 = i
            if obj2 in label:
                pos2 = i
            if pos1 is not None and pos2 is not None:
                break
        return pos1, pos2
    if found1:
        return next((i for i, label in enumerate(labels) if obj1 in label), None), None
    if found2:
        return None, next((i for i, label in enumerate(labels) if obj2 in label), None)
    return None, None


def spatial_3d_score(
    detections: Sequence[Detection],
    obj1: str,
    obj2: str,
    relation: str | None,
    depth: NDArray[np.floating],
    *,
    rule: Rule,
) -> float:
    """One image's 3-D spatial score: as the 2-D one (no floor) with depth relations, ``depth`` the (height, width)
    map of the detection frame (larger = nearer)."""
    labels = [d.label for d in detections]
    pos1, pos2 = _find_3d(labels, person(obj1) or "", person(obj2) or "", rule)
    if pos1 is not None and pos2 is not None:
        first, second = detections[pos1], detections[pos2]
        score = 0.25 * first.score + 0.25 * second.score
        return score + position_score(relation, first.box, second.box, rule=rule, depth=depth) / 2
    if pos1 is not None:
        return 0.25 * detections[pos1].score
    if pos2 is not None:
        return 0.25 * detections[pos2].score
    return 0


# -- numeracy ------------------------------------------------------------------------------------------------------


_TOKEN = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?|[^\sA-Za-z0-9]")


def numeracy_tokens(prompt: str) -> list[str]:
    """The prompt's tokens as the reference's tokenizer splits these prompts: words, and each punctuation mark apart."""
    return _TOKEN.findall(prompt)


def number_value(word: str) -> int | None:
    """The count a number word means for the reference's ``w2n.word_to_num`` (None: it raises, as for 'a'/'an')."""
    return _NUMBER_VALUES.get(word)


@dataclass(frozen=True)
class NumeracyRequest:
    """What a numeracy prompt asks for: each object (singular, as matched against labels) and its count; ``counts``
    may be shorter than ``objects`` where the reference's number parse failed (a prompt the suite refuses)."""

    objects: tuple[str, ...]
    counts: tuple[int, ...]


def parse_numeracy(tokens: Sequence[str], singular: Sequence[str], plural: Sequence[str]) -> NumeracyRequest:
    """The objects and counts a numeracy prompt asks for, by the reference's token walk over its object list
    (``singular``/``plural`` forms, one- and two-word, lower case)."""
    objects: list[str] = []
    counts: list[int] = []

    def count(word: str) -> None:
        value = number_value(word)
        if value is not None:  # the reference's try/except around w2n drops a failed count
            counts.append(value)

    n = len(tokens)
    for i, token in enumerate(tokens):
        if token not in NUMBER_WORDS:
            continue
        pair = f"{tokens[i + 1]} {tokens[i + 2]}" if i < n - 2 else None
        if pair is not None and (pair in singular or pair in plural):
            if pair in plural and token not in _SINGULAR:
                objects.append(singular[list(plural).index(pair)])
                count(token)
            else:
                counts.append(1)
                objects.append(pair)
        elif i + 1 == n:  # the reference indexes past the end here (IndexError): refused, never scored
            raise ValueError(f"number word {token!r} ends the prompt")
        elif tokens[i + 1] in singular or tokens[i + 1] in plural:
            word = tokens[i + 1]
            if word in singular and token in _SINGULAR:
                counts.append(1)
                objects.append(word)
            else:
                objects.append(singular[list(plural).index(word)])
                count(token)
    return NumeracyRequest(tuple(objects), tuple(counts))


def _same_object(box1: Sequence[float], box2: Sequence[float]) -> bool:
    """The reference's duplicate test (``calculate_iou``, +1 pixel areas): IoU or either box's covered share > 0.9."""
    x1, y1 = max(box1[0], box2[0]), max(box1[1], box2[1])
    x2, y2 = min(box1[2], box2[2]), min(box1[3], box2[3])
    intersection = max(0, x2 - x1 + 1) * max(0, y2 - y1 + 1)
    area1 = (box1[2] - box1[0] + 1) * (box1[3] - box1[1] + 1)
    area2 = (box2[2] - box2[0] + 1) * (box2[3] - box2[1] + 1)
    iou = intersection / float(area1 + area2 - intersection)
    return (
        iou > DEDUP_OVERLAP
        or intersection / float(area1) > DEDUP_OVERLAP
        or intersection / float(area2) > DEDUP_OVERLAP
    )


def distinct_labels(detections: Sequence[Detection]) -> list[str]:
    """The labels of the detections left after dropping each box that duplicates an earlier kept box of its label."""
    labels: list[str] = []
    boxes: list[tuple[float, float, float, float]] = []
    for d in detections:
        if not any(_same_object(d.box, kept) and d.label == label for label, kept in zip(labels, boxes, strict=True)):
            labels.append(d.label)
            boxes.append(d.box)
    return labels


def numeracy_score(detections: Sequence[Detection], request: NumeracyRequest, *, rule: Rule) -> float:
    """One image's numeracy score: per requested object (weight 1/k), half for being detected and half more for its
    de-duplicated count equalling the requested one."""
    if not request.objects:
        raise ValueError("a numeracy prompt that asks for no object")
    if len(request.counts) < len(request.objects):
        raise ValueError(f"a numeracy prompt whose counts {request.counts} do not match its objects {request.objects}")
    found = distinct_labels(detections)
    weight = 1.0 / len(request.objects)
    score = 0.0
    for wanted, number in zip(request.objects, request.counts, strict=False):
        wanted = NUMERACY_RENAMES.get(wanted, wanted)
        if rule == "reference" and wanted not in found:
            found = [wanted if wanted in label else label for label in found]  # renamed in place, by substring
        if wanted in found:
            score += 0.5 * weight
            if found.count(wanted) == number:
                score += 0.5 * weight
    return score


# -- complex: 3-in-1, and the category mean --------------------------------------------------------------------------


def complex_kind(prompt: str, spatial: Sequence[str], action: Sequence[str]) -> Literal["spatial", "action", "all"]:
    """Which scores a complex prompt averages (the reference's lists, compared by the text before the first '.',
    lower-cased): attribute with spatial, attribute with action, or all three."""
    key = prompt.split(".")[0].lower()
    keys_spatial = {p.split(".")[0].lower() for p in spatial}
    keys_action = {p.split(".")[0].lower() for p in action}
    return "spatial" if key in keys_spatial else "action" if key in keys_action else "all"


def three_in_one(kind: str, attribute: float, spatial: float, action: float) -> float:
    """One complex image's 3-in-1 score: the mean of the scores its prompt's kind names (float64 arithmetic)."""
    values = np.array([attribute, spatial, action], dtype=np.float64)
    if kind == "spatial":
        return float((values[1] + values[0]) * 0.5)
    if kind == "action":
        return float((values[2] + values[0]) * 0.5)
    return float((values[0] + values[1] + values[2]) / 3)


PAIRWISE_MEAN = ("3d_spatial",)
"""Categories whose script averages with ``np.mean`` (pairwise summation); the others sum in a Python loop. The two
can differ in the last bits, so each category keeps its script's."""


def category_mean(category: str, scores: Sequence[float]) -> float:
    """A category's score: the plain mean of its image scores, summed as its reference script sums them."""
    if not scores:
        raise ValueError(f"{category}: no image scores")
    if category in PAIRWISE_MEAN:
        return float(np.mean(np.asarray(scores, dtype=np.float64)))
    total = 0.0
    for s in scores:
        total += float(s)
    return total / len(scores)


def clip_similarity(image: NDArray[np.floating], text: NDArray[np.floating]) -> float:
    """The non-spatial CLIPScore of one image: the cosine of its (d,) image and text embeddings (no rescaling)."""
    i = np.asarray(image, dtype=np.float64)
    t = np.asarray(text, dtype=np.float64)
    return float(i @ t / (np.linalg.norm(i) * np.linalg.norm(t)))


@dataclass(frozen=True)
class CategoryScore:
    """One category's score (``category_mean`` of its images, the reference's number) with a percentile bootstrap
    interval over its prompts (all of a prompt's images drawn together) and how many images and prompts it has."""

    category: str
    score: float
    ci_low: float
    ci_high: float
    images: int
    prompts: int


def _replicates(
    rows: Sequence[tuple[str, int, float]], category: str, resamples: int, seed: int
) -> tuple[list[float], int, NDArray[np.float64]]:
    """A category's image scores, prompt count and bootstrap replicates of its mean: ``resamples`` draws of its
    prompts (sorted by index) with replacement (``metrics.bootstrap.cluster_draws``, seeded), each the mean of the
    drawn prompts' images."""
    from t2ibench.metrics.bootstrap import cluster_draws

    scores = [float(s) for c, _, s in rows if c == category]
    prompts = sorted({p for c, p, _ in rows if c == category})
    position = {p: j for j, p in enumerate(prompts)}
    sums = np.zeros(len(prompts))
    counts = np.zeros(len(prompts))
    for c, p, s in rows:
        if c == category:
            sums[position[p]] += s
            counts[position[p]] += 1
    draws = cluster_draws(len(prompts), resamples, seed)
    replicates: NDArray[np.float64] = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return scores, len(prompts), replicates


def _percentiles(replicates: NDArray[np.float64], level: float) -> tuple[float, float]:
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return float(low), float(high)


def category_scores(
    rows: Sequence[tuple[str, int, float]], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> list[CategoryScore]:
    """Each category's score and interval from (category, prompt index, image score) rows in the reference's image
    order, categories in the benchmark's order. The interval: the percentile interval at ``level`` of ``resamples``
    draws of the category's prompts (``_replicates``, each category drawn with ``seed``). Cost O(resamples ·
    prompts) per category."""
    from t2ibench.metrics.bootstrap import check_level

    lvl = check_level(level)
    out = []
    for category in [c for c in CATEGORIES if any(r[0] == c for r in rows)]:
        scores, prompts, replicates = _replicates(rows, category, resamples, seed)
        low, high = _percentiles(replicates, lvl)
        out.append(CategoryScore(category, category_mean(category, scores), low, high, len(scores), prompts))
    return out


def mean_score(
    rows: Sequence[tuple[str, int, float]], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> CategoryScore:
    """The unweighted mean of the judged categories' scores (``category_scores``' numbers), with a stratified
    percentile bootstrap interval: each category's prompts drawn apart (category k of ``CATEGORIES`` with seed
    ``seed + 1 + k``, so no two categories share draws) and the replicates averaged. Its ``images`` and ``prompts``
    are the totals. Not a number the paper reports (it publishes per-category scores only)."""
    from t2ibench.metrics.bootstrap import check_level

    lvl = check_level(level)
    judged = [c for c in CATEGORIES if any(r[0] == c for r in rows)]
    if not judged:
        raise ValueError("no image scores")
    estimates, replicates, images, prompts = [], [], 0, 0
    for category in judged:
        scores, n, draws = _replicates(rows, category, resamples, seed + 1 + CATEGORIES.index(category))
        estimates.append(category_mean(category, scores))
        replicates.append(draws)
        images, prompts = images + len(scores), prompts + n
    low, high = _percentiles(np.mean(np.stack(replicates), axis=0), lvl)
    return CategoryScore(MEAN, float(np.mean(estimates)), low, high, images, prompts)
