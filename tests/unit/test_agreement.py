"""Human verdicts, agreement statistics and threshold tuning, on hand-built annotations and synthetic scores."""

import math
from itertools import combinations

import numpy as np
import pytest

from t2ibench.errors import InputError
from t2ibench.metrics.agreement import (
    auto_agreement,
    human_agreement,
    human_verdict,
    tune_threshold,
)
from t2ibench.suites.annotations import Annotation


def ann(counts=(1, None), colors=(None, None), x=None, y=None):
    c = tuple(None if v is None else frozenset(v.split("|")) for v in colors)
    return Annotation("m", 0, 0, 0, "p", counts, c, x, y)


SINGLE = {"tag": "single_object", "include": [{"class": "cat", "count": 1}]}
TWO = {"tag": "two_object", "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1}]}
COUNT = {"tag": "counting", "include": [{"class": "cup", "count": 3}], "exclude": [{"class": "cup", "count": 4}]}
COLOR = {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}]}
ATTR = {
    "tag": "color_attr",
    "include": [{"class": "car", "count": 1, "color": "red"}, {"class": "bus", "count": 1, "color": "blue"}],
}


def position(relation):
    return {
        "tag": "position",
        "include": [{"class": "dog", "count": 1}, {"class": "cat", "count": 1, "position": [relation, 0]}],
    }


# -- the verdict rule ---------------------------------------------------------------------------------------------


def test_presence_and_missing_count():
    assert human_verdict(SINGLE, ann((1, None)))[0]
    assert human_verdict(SINGLE, ann((3, None)))[0]  # at least the count
    ok, reason = human_verdict(SINGLE, ann((0, None)))
    assert not ok
    assert reason == "annotator counted 0 cat, needed 1"
    assert human_verdict(SINGLE, ann((None, None))) == (False, "no count given for cat")


def test_two_objects_need_both():
    assert human_verdict(TWO, ann((1, 2)))[0]
    assert not human_verdict(TWO, ann((1, 0)))[0]
    assert not human_verdict(TWO, ann((1, None)))[0]


@pytest.mark.parametrize(("count", "ok"), [(2, False), (3, True), (4, False), (5, False)])
def test_counting_is_exact_because_of_the_exclude_clause(count, ok):
    assert human_verdict(COUNT, ann((count, None)))[0] is ok


def test_five_or_more_passes_only_when_no_exclude_reaches_it():
    four = {"tag": "counting", "include": [{"class": "cup", "count": 4}], "exclude": [{"class": "cup", "count": 5}]}
    assert human_verdict(four, ann((4, None)))[0]
    ok, reason = human_verdict(four, ann((5, None)))
    assert not ok
    assert "needed fewer than 5" in reason


def test_colour_must_be_among_the_selected():
    assert human_verdict(COLOR, ann((1, None), ("red", None)))[0]
    assert human_verdict(COLOR, ann((1, None), ("black|red", None)))[0]
    ok, reason = human_verdict(COLOR, ann((1, None), ("gray", None)))
    assert not ok
    assert reason == "annotator saw car as gray, needed red"
    assert human_verdict(COLOR, ann((1, None), (None, None))) == (False, "annotator saw car as none, needed red")


def test_colour_attribution_checks_each_object_separately():
    assert human_verdict(ATTR, ann((1, 1), ("red", "blue")))[0]
    assert not human_verdict(ATTR, ann((1, 1), ("blue", "red")))[0]  # swapped colours


@pytest.mark.parametrize(
    ("relation", "x", "y", "ok"),
    [
        ("left of", "left", "neither_y", True),
        ("left of", "right", "neither_y", False),
        ("right of", "right", "above", True),
        ("above", "neither_x", "above", True),
        ("above", "left", "below", False),
        ("below", "left", "below", True),
        ("below", None, None, False),
    ],
)
def test_position_answers_map_to_relations(relation, x, y, ok):
    assert human_verdict(position(relation), ann((1, 1), x=x, y=y))[0] is ok


def test_missing_position_answer_fails_with_reason():
    ok, reason = human_verdict(position("left of"), ann((1, 1)))
    assert not ok
    assert reason == "annotator placed cat nowhere, needed left of"


# -- agreement statistics ----------------------------------------------------------------------------------------


GROUPS = {
    "a": [True, True, True, True, True],
    "b": [True, True, True, False, False],
    "c": [False, False, False, False, True],
    "d": [False, False, False, False, False],
}


def test_human_agreement_against_brute_force():
    stats = human_agreement(GROUPS)
    pairs = [np.mean([x == y for x, y in combinations(g, 2)]) for g in GROUPS.values()]
    assert stats.pairwise_agreement == pytest.approx(np.mean(pairs))
    assert stats.human_accuracy == pytest.approx(9 / 20)
    assert stats.unanimous_images == 2
    assert (stats.images, stats.annotations) == (4, 20)
    # each annotator vs the majority of the other four (2–2 ties excluded)
    hits, ties = [], 0
    for g in GROUPS.values():
        for i, v in enumerate(g):
            others = g[:i] + g[i + 1 :]
            if sum(others) * 2 == len(others):
                ties += 1
            else:
                hits.append(v == (sum(others) * 2 > len(others)))
    assert stats.vs_majority_of_others == pytest.approx(np.mean(hits))
    assert stats.ties_excluded == ties


def test_fleiss_kappa_matches_the_textbook_formula():
    counts = np.array([[len(g) - sum(g), sum(g)] for g in GROUPS.values()], dtype=float)
    n = counts.sum(axis=1)[0]
    p_j = counts.sum(axis=0) / counts.sum()
    p_i = ((counts**2).sum(axis=1) - n) / (n * (n - 1))
    expected = (p_i.mean() - (p_j**2).sum()) / (1 - (p_j**2).sum())
    assert human_agreement(GROUPS).fleiss_kappa == pytest.approx(expected)


def test_perfect_and_random_annotators():
    perfect = {i: [i % 2 == 0] * 5 for i in range(40)}
    assert human_agreement(perfect).fleiss_kappa == pytest.approx(1.0)
    gen = np.random.default_rng(0)
    noise = {i: list(gen.random(5) < 0.5) for i in range(400)}
    assert abs(human_agreement(noise).fleiss_kappa) < 0.05


def test_single_annotations_are_not_agreement():
    with pytest.raises(InputError, match="no image has two or more annotations"):
        human_agreement({"a": [True]})


def test_auto_agreement_with_annotators_majority_and_unanimous_subset():
    auto = {"a": True, "b": False, "c": False, "d": True, "not annotated": True}
    stats = auto_agreement(GROUPS, auto)
    assert stats.images == 4
    assert stats.vs_annotators == pytest.approx((5 + 2 + 4 + 0) / 20)
    assert stats.vs_majority == pytest.approx(2 / 4)  # majorities T, T, F, F against T, F, F, T
    assert stats.unanimous_images == 2
    assert stats.vs_unanimous == pytest.approx(1 / 2)
    assert stats.auto_accuracy == pytest.approx(2 / 4)
    assert not math.isnan(stats.kappa_vs_majority)
    with pytest.raises(InputError, match="no image has both"):
        auto_agreement(GROUPS, {"zzz": True})


# -- tuning ---------------------------------------------------------------------------------------------------------


def test_tuned_threshold_recovers_a_separating_cut_and_cv_is_honest():
    gen = np.random.default_rng(1)
    keys = list(range(300))
    truth = {k: bool(gen.random() < 0.5) for k in keys}
    human = {k: [truth[k]] * 3 for k in keys}
    tasks = {k: "colors" if k % 2 else "position" for k in keys}
    informative = {k: (0.7 if truth[k] else 0.3) + 0.05 * gen.standard_normal() for k in keys}
    tuned = tune_threshold(informative, human, tasks, folds=5, seed=0)
    for result in tuned.values():
        assert 0.4 < result.threshold < 0.6
        assert result.cv_agreement > 0.97
    random_scores = {k: float(gen.random()) for k in keys}
    noisy = tune_threshold(random_scores, human, tasks, folds=5, seed=0)
    for result in noisy.values():
        assert result.in_sample_agreement > result.cv_agreement  # selection on the same data flatters
        assert result.cv_agreement < 0.62
