"""T2I-CompBench++'s scoring rules against an independent transcription of the reference scripts
(tests/unit/t2i_compbench_reference.py), driven by scripted evaluators: chosen yes-probabilities, labelled boxes with
scores, depth maps and score lists, including ties, missing objects and values on every threshold. Every image score
and every category mean must agree exactly; each mutation of a rule must make them disagree somewhere."""

from __future__ import annotations

import math
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from t2ibench.benchmarks.t2i_compbench import metrics
from tests.conftest import pick
from tests.unit import t2i_compbench_reference as ref

LABELS = ("dog", "cat", "catfish", "person", "girl", "hot dog", "lamp", "desk", "fish", "boat", "sheep")
SINGULAR = ["dog", "cat", "catfish", "hot dog", "fish", "sheep", "person", "boy", "ship", "painting", "picture", "boat"]
PLURAL = ["dogs", "cats", "catfish", "hot dogs", "fish", "sheep", "people", "boys", "ships", "paintings", "pictures",
          "boats"]  # fmt: skip


def loop_mean(values: list[float]) -> float:
    """The scripts' mean: a float loop (their `avg_score += ...`; Python 3.9's sum() added the same way)."""
    total = 0.0
    for v in values:
        total += v
    return total / len(values)


def _boxes(rng: np.random.Generator, n: int, size: int = 480) -> list[list[float]]:
    """Boxes in a size × size frame: integers (ties and shared edges likely) or floats, some on the frame's edge."""
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            x1, y1 = (int(v) for v in rng.integers(0, size - 20, 2))
            w, h = (int(v) for v in rng.integers(1, 300, 2))
        else:
            x1, y1 = (float(v) for v in rng.uniform(0, size - 20, 2))
            w, h = (float(v) for v in rng.uniform(0.5, 300, 2))
        out.append([x1, y1, min(x1 + w, size), min(y1 + h, size)])
    return out


def _edge_pairs() -> list[tuple[list[float], list[float]]]:
    """Box pairs on the rules' edges: centres exactly 150 apart on an axis, |dx| = |dy|, the same box, IoU exactly
    0.1 and 0.5, touching boxes (IoU 0) and a box inside another."""
    return [
        ([0, 0, 10, 10], [150, 0, 160, 10]),  # dx = 150 exactly (the distance threshold)
        ([0, 0, 10, 10], [150, 150, 160, 160]),  # |dx| = |dy|: neither axis dominates
        ([5, 5, 50, 50], [5, 5, 50, 50]),  # the same box
        ([0, 0, 10, 10], [8, 0, 18, 10]),  # I = 20, U = 180: IoU = 1/9 (> 0.1)
        ([0, 0, 11, 10], [9, 0, 20, 10]),  # I = 20, U = 200: IoU = 0.1 exactly
        ([0, 0, 30, 10], [10, 0, 40, 10]),  # I = 200, U = 400: IoU = 0.5 exactly
        ([0, 0, 10, 10], [10, 0, 20, 10]),  # touching: IoU 0
        ([0, 0, 100, 100], [40, 40, 60, 60]),  # inside
        ([0, 0, 10, 10], [300, 10, 310, 20]),  # far right, dx > dy
        ([100, 300, 110, 310], [100, 0, 110, 10]),  # far above
    ]


def _scripted_detections(rng: np.random.Generator, n_max: int = 6) -> tuple[list[str], list[list[float]], list[float]]:
    """A detector's output for one image: labels, boxes and scores in descending score order (UniDet keeps ≥ 0.5),
    with repeated labels and exact 0.5 / 1.0 scores."""
    n = int(rng.integers(0, n_max + 1))
    labels = [pick(rng, LABELS) for _ in range(n)]
    scores = sorted((float(pick(rng, [0.5, 1.0, rng.uniform(0.5, 1.0)])) for _ in range(n)), reverse=True)
    return labels, _boxes(rng, n), scores


def _detections(labels: list[str], boxes: list[list[float]], scores: list[float]) -> list[Any]:
    return [metrics.Detection(lab, tuple(b), s) for lab, b, s in zip(labels, boxes, scores, strict=True)]  # type: ignore[arg-type]


# -- the differential run: the project module ``m`` against the transcription, per category ------------------------


# answers whose float32 product rounds to another fourth decimal than the float64 one (found by search)
FLOAT32_EDGES = (
    ("0.9478", "0.7500"),
    ("0.4285", "0.7000"),
    ("0.4939", "0.6954", "0.4969", "0.7376", "0.8832", "0.7667", "0.9567"),
    ("0.4930", "0.5500"),
)


def attribute_mismatches(m: types.ModuleType, rng: np.random.Generator, images: int = 400) -> int:
    """BLIP-VQA: phrases per image 0..10 (beyond np_num, some with the characters pre_question removes), a scripted
    BLIP whose yes-probability depends on the image and the exact question it is asked, including values on
    4-decimal edges and products whose fourth decimal only float32 arithmetic gets right."""
    marks = ["", "", ".", ":", " (x)", "!", "  "]  # pre_question removes .!"()*#:; and trailing spaces
    phrases = [[f"P{j}{pick(rng, marks)}" for j in range(int(rng.integers(0, 11)))] +
               (["top"] if rng.random() < 0.2 else []) for _ in range(images)]  # fmt: skip
    edges = [0.00005, 0.99995, 0.12345, 0.5, 1.0, 0.0, 0.33335]
    scripted: dict[tuple[int, str], float] = {}

    def blip(k: int, question: str) -> tuple[np.float32, np.float32]:
        """The scripted softmax probabilities of 'yes' and 'no' for image k asked ``question``."""
        if (k, question) not in scripted:
            scripted[k, question] = float(pick(rng, edges)) if rng.random() < 0.3 else float(rng.random())
        p = scripted[k, question]
        return np.float32(p), np.float32(1 - p)

    for factors in FLOAT32_EDGES:  # products whose fourth decimal the float32 arithmetic decides
        k = len(phrases)
        phrases.append([f"e{j}" for j in range(len(factors))])
        scripted.update({(k, f"e{j}?"): float(f) for j, f in enumerate(factors)})
    images = len(phrases)
    np_index = metrics.NP_NUM
    questions = [ref.blip_questions(phrases, i) for i in range(np_index)]
    answers = [[ref.vqa_prob_answer(*blip(k, questions[i][k])) for k in range(images)] for i in range(np_index)]
    expected, expected_mean = ref.blip_vqa_run(answers, questions, np_index)
    got = []
    for k in range(images):
        replies = [None if q is None else blip(k, q) for q in m.phrase_questions(phrases[k])]
        got.append(m.attribute_score([None if r is None else m.vqa_answer(r[0] / np.float32(r[0] + r[1]))
                                      for r in replies]))  # fmt: skip
    bad = sum(g != float(e) for g, e in zip(got, expected, strict=True))
    return bad + (m.category_mean("color", got) != expected_mean)


def spatial_2d_mismatches(m: types.ModuleType, rng: np.random.Generator, images: int = 1500) -> int:
    """2-D: every relation word (and none, and one inside another word), nouns found, missing, mapped to person."""
    prompts = [f"a {{}} {w} a {{}}" for w in metrics.SPATIAL_2D] + ["a {} beside a {}", "a {} linear a {}"]
    nouns = ["dog", "cat", "girl", "man", "lamp", "fish", None]
    bad, got, expected = 0, [], []
    for k in range(images):
        labels, boxes, scores = _scripted_detections(rng)
        if k % 5 == 0 and len(labels) >= 2:  # an edge pair as the first two boxes
            boxes[:2] = [list(b) for b in _edge_pairs()[k // 5 % len(_edge_pairs())]]
        obj1, obj2 = pick(rng, nouns), pick(rng, nouns)
        template = prompts[k % len(prompts)]
        prompt = template.format(obj1, obj2)
        relation = m.find_relation(prompt, m.SPATIAL_2D)
        g = m.spatial_2d_score(_detections(labels, boxes, scores), obj1, obj2, relation, rule="reference")
        e = ref.spatial_2d_image(labels, boxes, scores, prompt, obj1, obj2)
        bad += g != e
        got.append(g)
        expected.append(e)
    for relation in (*metrics.SPATIAL_2D, None):  # every edge pair under every relation, both orders
        for a, b in _edge_pairs():
            for first, second in ((a, b), (b, a)):
                labels, boxes, scores = ["dog", "lamp"], [first, second], [1.0, 1.0]
                prompt = f"a dog {relation} a lamp"
                g = m.spatial_2d_score(_detections(labels, boxes, scores), "dog", "lamp", relation, rule="reference")
                e = ref.spatial_2d_image(labels, boxes, scores, prompt, "dog", "lamp")
                bad += g != e
                got.append(g)
                expected.append(e)
    return bad + (m.category_mean("spatial", got) != loop_mean(expected))


def spatial_3d_mismatches(m: types.ModuleType, rng: np.random.Generator, images: int = 1500) -> int:
    """3-D: depth maps that are not symmetric (so the transposed slice matters), boxes past the map's edge (empty
    slices), labels that contain the noun as a substring, repeated labels."""
    bad, got, expected = 0, [], []
    for k in range(images):
        labels, boxes, scores = _scripted_detections(rng)
        if k % 4 == 0 and len(labels) >= 2:
            boxes[:2] = [list(b) for b in _edge_pairs()[k // 4 % len(_edge_pairs())]]
        size = int(pick(rng, [48, 160]))  # boxes reach 480: partial and empty slices too
        depth = rng.random((size, size)).astype(np.float32)
        if k % 7 == 0:
            depth[:] = 0.5  # equal depths: the strict comparisons decide
        obj1, obj2 = pick(rng, ["dog", "cat", "girl", "fish"]), pick(rng, ["desk", "dog", "lamp", "fish"])
        prompt = f"a {obj1} {pick(rng, (*metrics.SPATIAL_3D, 'next to'))} a {obj2}"
        relation = m.find_relation(prompt, m.SPATIAL_3D)
        g = m.spatial_3d_score(_detections(labels, boxes, scores), obj1, obj2, relation, depth, rule="reference")
        e = ref.spatial_3d_image(labels, boxes, scores, prompt, obj1, obj2, depth)
        bad += not (g == e or (math.isnan(g) and math.isnan(e)))
        got.append(g)
        expected.append(e)
    near = np.zeros((480, 480), dtype=np.float32)
    near[:, :12] = 1.0  # the left columns near: a box there is nearer whichever way the map is sliced
    for relation in metrics.SPATIAL_3D:
        for a, b in _edge_pairs():
            for first, second in ((a, b), (b, a)):
                for depth in (near, near.T.copy(), rng.random((480, 480)).astype(np.float32)):
                    labels, boxes, scores = ["dog", "lamp"], [first, second], [1.0, 1.0]
                    prompt = f"a dog {relation} a lamp"
                    found = _detections(labels, boxes, scores)
                    g = m.spatial_3d_score(found, "dog", "lamp", relation, depth, rule="reference")
                    e = ref.spatial_3d_image(labels, boxes, scores, prompt, "dog", "lamp", depth)
                    bad += g != e
                    got.append(g)
                    expected.append(e)
    return bad + (m.category_mean("3d_spatial", got) != float(np.mean(expected)))


def numeracy_mismatches(m: types.ModuleType, rng: np.random.Generator, images: int = 1500) -> int:
    """Numeracy: one- and two-word objects, singular = plural forms, a/an/one, renames (ship → boat, boy → person),
    labels that contain a requested object, overlapping duplicate boxes."""
    numbers = ["a", "one", "two", "three", "four", "eight"]
    bad, got, expected = 0, [], []
    for _ in range(images):
        parts = []
        for _ in range(int(rng.integers(1, 4))):
            n = str(pick(rng, numbers))
            i = int(rng.integers(0, len(SINGULAR)))
            parts.append(f"{n} {SINGULAR[i] if n in ('a', 'one') else PLURAL[i]}")
        prompt = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        labels, boxes, scores = _scripted_detections(rng, 8)
        if len(boxes) >= 2 and rng.random() < 0.4:  # a near-duplicate box of the first one's label
            labels[1] = labels[0]
            boxes[1] = [boxes[0][0] + 1, boxes[0][1], boxes[0][2] + 1, boxes[0][3]]
        tokens = m.numeracy_tokens(prompt)
        request = m.parse_numeracy(tokens, SINGULAR, PLURAL)
        g = m.numeracy_score(_detections(labels, boxes, scores), request, rule="reference")
        e = ref.numeracy_image(labels, boxes, tokens, SINGULAR, PLURAL)
        bad += g != e
        got.append(g)
        expected.append(e)
    return bad + (m.category_mean("numeracy", got) != loop_mean(expected))


def complex_mismatches(m: types.ModuleType, rng: np.random.Generator, prompts: int = 60) -> int:
    """3-in-1: ten images per prompt, prompts whose list entries differ in case and trailing sentence."""
    data = [f"The Thing {i} was near the other. More words.\n" for i in range(prompts)]
    spatial = [d.upper() for d in data[: prompts // 3]]
    action = [d.split(".")[0] + ".\n" for d in data[prompts // 3 : 2 * prompts // 3]]
    n = 10 * prompts
    a, s, c = (list(rng.random(n)) for _ in range(3))
    expected, expected_mean = ref.three_in_one_run(a, s, c, spatial, action, data)
    got = []
    for i in range(n):
        kind = m.complex_kind(
            data[i // 10].strip("\n"), [x.strip("\n") for x in spatial], [x.strip("\n") for x in action]
        )
        got.append(m.three_in_one(kind, a[i], s[i], c[i]))
    bad = sum(g != e for g, e in zip(got, expected, strict=True))
    return bad + (m.category_mean("complex", got) != expected_mean)


# -- the rules that read a prompt's parse --------------------------------------------------------------------------

WORDS = ("on", "top", "of", "the", "left", "right", "next", "to", "side", "near", "bottom", "cat", "Paris", "Eiffel",
         "Tower", "red", ",", ".", "a", "is")  # fmt: skip
POS = ("NOUN", "PROPN", "ADJ", "DET", "ADP", "VERB", "PUNCT")


def parse_mismatches(m: types.ModuleType, rng: np.random.Generator, prompts: int = 4000) -> int:
    """Scripted parses (words that make up every preposition, proper-noun runs, punctuation without a space before
    it): the complex objects, the first/last nouns and the adjective-free CLIP text."""
    bad = 0
    for _ in range(prompts):
        n = int(rng.integers(0, 14))
        raw = [(str(pick(rng, WORDS)), str(pick(rng, POS)), pick(rng, [" ", " ", ""])) for _ in range(n)]
        doc = ref.Doc(raw)
        tokens = [m.Token(*t) for t in raw]
        bad += m.complex_objects(tokens) != ref.complex_objects(doc)
        bad += m.without_adjectives(tokens) != ref.clip_complex_text(doc)
        try:
            expected = ref.simple_objects(doc)
        except IndexError:
            with pytest.raises(ValueError, match="has no NOUN"):
                m.first_last_nouns(tokens)
        else:
            bad += m.first_last_nouns(tokens) != expected
    return bad


CHECKS: dict[str, Callable[[types.ModuleType, np.random.Generator], int]] = {  # cheapest first
    "attribute": attribute_mismatches,
    "complex": complex_mismatches,
    "spatial_2d": spatial_2d_mismatches,
    "numeracy": numeracy_mismatches,
    "spatial_3d": spatial_3d_mismatches,
    "parse": parse_mismatches,
}


def differential(m: types.ModuleType) -> dict[str, int]:
    """Mismatches per category between module ``m``'s reference rule and the transcription (seeded)."""
    return {name: check(m, np.random.default_rng(20231113)) for name, check in CHECKS.items()}


def test_every_image_score_and_category_mean_equals_the_reference_transcription():
    assert differential(metrics) == dict.fromkeys(CHECKS, 0)


# -- mutations: each change to a rule must be caught by the differential run --------------------------------------

SOURCE = Path(metrics.__file__).read_text()
# (equivalent mutants are not listed: the IoU comparisons' own edges, iou < 0.1 → <= and 0 < iou → <=, since
# 0.1/0.1 = 1 and 0/0.5 = 0 give the same scores; and the order the complex walk tries preposition widths in, since
# no two of its prepositions start with the same word but 'on', whose are all three words long)
MUTATIONS = {
    "distance threshold 150 → 151": ("DISTANCE_THRESHOLD = 150.0", "DISTANCE_THRESHOLD = 151.0"),
    "IoU threshold 0.1 → 0.12": ("IOU_THRESHOLD = 0.1", "IOU_THRESHOLD = 0.12"),
    "2-D floor 0.5 → 0.49": ("SPATIAL_FLOOR = 0.5", "SPATIAL_FLOOR = 0.49"),
    "quarter weights → 0.3": (
        "score = 0.25 * first.score + 0.25 * second.score\n        score +=",
        "score = 0.3 * first.score + 0.25 * second.score\n        score +=",
    ),
    "nearby: or → and": (
        "if ax < distance_threshold or ay < distance_threshold:",
        "if ax < distance_threshold and ay < distance_threshold:",
    ),
    "dominant axis > → >=": (
        '"on the left of": (x_distance > 0, ax > ay)',
        '"on the left of": (x_distance > 0, ax >= ay)',
    ),
    "3-D IoU > → >=": ("if iou > iou_threshold_3d:", "if iou >= iou_threshold_3d:"),
    "3-D in front of ↔ behind": (
        'nearer = diff > 0 if relation == "in front of"',
        'nearer = diff < 0 if relation == "in front of"',
    ),
    "3-D depth not transposed": ("depth[x1:x2, y1:y2] if rule", "depth[y1:y2, x1:x2] if rule"),
    "3-D first match kept": (
        "            if obj1 in label:\n                pos1 = i",
        "            if obj1 in label and pos1 is None:\n                pos1 = i",
    ),
    "BLIP no rounding": ('return float(f"{final.item():.4f}")', "return float(final.item())"),
    "BLIP float64 product": (
        "final = np.float32(final * reward[i])",
        "final = np.float64(final) * np.float64(reward[i])",
    ),
    "BLIP without pre_question": ('return [vqa_question(f"{kept[i]}?")', 'return [(f"{kept[i]}?")'),
    "BLIP stop list ignored": ("kept = [p for p in phrases if p not in PHRASE_STOPLIST]", "kept = list(phrases)"),
    "numeracy no rename in place": ('if rule == "reference" and wanted not in found:', "if False:"),
    "numeracy duplicate overlap 0.9 → 0.8": ("DEDUP_OVERLAP = 0.9", "DEDUP_OVERLAP = 0.8"),
    "numeracy no de-duplication": ("        if not any(_same_object(", "        if True or not any(_same_object("),
    "numeracy half weights": ("score += 0.5 * weight\n            if", "score += 0.4 * weight\n            if"),
    "3-in-1 spatial → all": (
        'return "spatial" if key in keys_spatial else',
        'return "all" if key in keys_spatial else',
    ),
    "complex: a PROPN before does not count": (
        'tokens[j].pos in ("NOUN", "PROPN")), None)',
        'tokens[j].pos == "NOUN"), None)',
    ),
    "complex: no proper-noun fallback": ("        elif i + width < n:", "        elif False:"),
    "complex: a PROPN run's first word": ('and tokens[j + 1].pos != "PROPN"', 'and tokens[j - 1].pos != "PROPN"'),
    "3-in-1 case-sensitive": ('key = prompt.split(".")[0].lower()', 'key = prompt.split(".")[0]'),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_a_mutated_rule_disagrees_with_the_reference(name: str, monkeypatch: pytest.MonkeyPatch):
    old, new = MUTATIONS[name]
    assert SOURCE.count(old) == 1, f"mutation {name!r}: its text is not in metrics.py once"
    mutant = types.ModuleType("mutant")
    monkeypatch.setitem(sys.modules, "mutant", mutant)  # its dataclasses resolve their module there
    exec(compile(SOURCE.replace(old, new), "mutant", "exec"), mutant.__dict__)
    caught = any(check(mutant, np.random.default_rng(20231113)) for check in CHECKS.values())  # stops at the first
    assert caught, f"mutation {name!r} went unnoticed"


# -- the corrected rule, on hand-worked cases ------------------------------------------------------------------------


def test_on_top_of_is_scored_only_under_the_corrected_rule():
    above, below = (100, 0, 200, 100), (100, 300, 200, 400)  # object 1 over object 2, no overlap
    assert metrics.find_relation("a cup on top of a desk", metrics.SPATIAL_2D) == "on top of"
    assert metrics.position_score("on top of", above, below, rule="reference") == 0
    assert metrics.position_score("on top of", above, below, rule="corrected") == 1
    assert metrics.position_score("on the top of", above, below, rule="reference") == 1


def test_the_corrected_3d_rule_slices_depth_by_row_and_matches_labels_exactly():
    depth = np.zeros((100, 100), dtype=np.float32)
    depth[0:10, 50:60] = 1.0  # rows 0-9, columns 50-59: near (larger = nearer)
    near, far = (50, 0, 60, 10), (50, 5, 60, 15)  # x1, y1, x2, y2: near's box covers the bright block
    iou = 50 / 150
    assert metrics.position_score("in front of", near, far, rule="corrected", depth=depth) == iou / 0.5
    assert metrics.position_score("in front of", near, far, rule="reference", depth=depth) == 0  # slices [x, y]
    found = [metrics.Detection("hot dog", (0, 0, 10, 10), 0.9), metrics.Detection("dog", (20, 0, 30, 10), 0.8)]
    z = np.zeros((50, 50))
    assert metrics.spatial_3d_score(found, "dog", "dog", "behind", z, rule="reference") == 0.25 * 0.9 + 0.25 * 0.9
    assert metrics.spatial_3d_score(found, "dog", "dog", "behind", z, rule="corrected") == 0.25 * 0.8 + 0.25 * 0.8


def test_the_corrected_numeracy_rule_does_not_count_a_label_containing_the_object():
    request = metrics.parse_numeracy(metrics.numeracy_tokens("two cats"), SINGULAR, PLURAL)
    assert request == metrics.NumeracyRequest(("cat",), (2,))
    found = [metrics.Detection("catfish", (0, 0, 10, 10), 0.9), metrics.Detection("catfish", (50, 0, 60, 10), 0.9)]
    assert metrics.numeracy_score(found, request, rule="reference") == 1.0  # both catfish counted as cats
    assert metrics.numeracy_score(found, request, rule="corrected") == 0.0


def test_a_numeracy_prompt_the_reference_cannot_score_is_refused():
    with pytest.raises(ValueError, match="'two' ends the prompt"):
        metrics.parse_numeracy(["cats", "and", "two"], SINGULAR, PLURAL)
    broken = metrics.parse_numeracy(metrics.numeracy_tokens("a dogs"), SINGULAR, PLURAL)  # w2n('a') fails
    assert broken == metrics.NumeracyRequest(("dog",), ())
    with pytest.raises(ValueError, match="do not match its objects"):
        metrics.numeracy_score([], broken, rule="reference")


def test_the_parse_rules_equal_the_reference_transcription():
    assert parse_mismatches(metrics, np.random.default_rng(7)) == 0
    doc = [("The", "DET", " "), ("cat", "NOUN", " "), ("sat", "VERB", " "), ("on", "ADP", " "), ("top", "NOUN", " "),
           ("of", "ADP", " "), ("the", "DET", " "), ("mat", "NOUN", "")]  # fmt: skip
    assert metrics.complex_objects([metrics.Token(*t) for t in doc]) == ("cat", "mat")
