"""Human verdicts, agreement statistics, their bootstrap intervals and threshold tuning, on hand-built annotations
and synthetic data."""

import math
from itertools import combinations

import numpy as np
import pytest

from t2ibench.benchmarks.geneval.suite_annotations import Annotation
from t2ibench.errors import InputError
from t2ibench.metrics.agreement import (
    AUTO_N,
    HUMAN_N,
    auto_agreement,
    auto_features,
    auto_statistics,
    bootstrap_agreement,
    human_agreement,
    human_features,
    human_statistics,
    human_verdict,
    percentile_interval,
    stratified_cluster_totals,
    tune_threshold,
)


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


# -- bootstrap intervals --------------------------------------------------------------------------------------------


def _random_study(seed=3, prompts=24, images=4, raters=5):
    """Synthetic annotations: prompts with a latent difficulty, `images` per prompt, `raters` votes per image."""
    gen = np.random.default_rng(seed)
    votes, cluster, stratum, auto = {}, {}, {}, {}
    for p in range(prompts):
        difficulty = gen.random()
        for i in range(images):
            truth = gen.random() < difficulty
            key = ("m", p, i)
            votes[key] = [bool(truth) if gen.random() < 0.85 else not truth for _ in range(raters)]
            cluster[key] = p
            stratum[key] = ("colors", "position", "counting")[p % 3]
            auto[key] = bool(truth) if gen.random() < 0.8 else not truth
    return votes, cluster, stratum, auto


def test_features_reproduce_the_point_estimates_of_the_library_statistics():
    votes, cluster, stratum, auto = _random_study()
    boot = bootstrap_agreement(votes, cluster, stratum, resamples=5)
    h = human_agreement(votes)
    for name in HUMAN_N:
        assert boot.pooled[name].value == pytest.approx(getattr(h, name), abs=1e-12), name
    assert boot.pooled["human_accuracy"].n == h.annotations
    assert boot.pooled["pairwise_agreement"].n == h.images
    assert boot.pooled["vs_majority_of_others"].n == h.annotations - h.ties_excluded
    a = auto_agreement(votes, auto)
    auto_boot = bootstrap_agreement(votes, cluster, stratum, auto, resamples=5)
    for name in AUTO_N:
        assert auto_boot.pooled[name].value == pytest.approx(getattr(a, name), abs=1e-12), name
    assert auto_boot.pooled["vs_unanimous"].n == a.unanimous_images


def test_fleiss_needs_equal_raters_and_kappas_are_undefined_with_one_class():
    ragged = {"a": [True, False], "b": [True, True, False], "c": [False, False]}
    same = dict.fromkeys(ragged, "x")
    boot = bootstrap_agreement(ragged, {k: k for k in ragged}, same, resamples=20)
    assert math.isnan(boot.pooled["fleiss_kappa"].value)
    assert math.isnan(human_agreement(ragged).fleiss_kappa)
    unanimous = {k: [True] * 3 for k in "abcd"}
    boot = bootstrap_agreement(unanimous, {k: k for k in unanimous}, dict.fromkeys(unanimous, "x"), resamples=20)
    assert math.isnan(boot.pooled["cohen_kappa"].value)
    assert math.isnan(boot.pooled["cohen_kappa"].low)  # undefined in every resample: no interval
    assert boot.pooled["pairwise_agreement"].value == 1.0
    assert (boot.pooled["pairwise_agreement"].low, boot.pooled["pairwise_agreement"].high) == (1.0, 1.0)


def test_bootstrap_replicates_match_a_brute_force_resample_of_the_images():
    """Recompute each resample from scratch — draw prompts per stratum with the documented generator, duplicate
    their images, run human_agreement / auto_agreement — and compare with the feature-sum replicates."""
    votes, cluster, stratum, auto = _random_study(prompts=9)
    b = 40
    strata_order, _, totals = stratified_cluster_totals(
        np.stack([human_features(votes[k]) for k in votes]),
        [cluster[k] for k in votes],
        [stratum[k] for k in votes],
        resamples=b,
        seed=11,
    )
    fast = human_statistics(totals.sum(axis=1))
    auto_totals = stratified_cluster_totals(
        np.stack([auto_features(votes[k], auto[k]) for k in votes]),
        [cluster[k] for k in votes],
        [stratum[k] for k in votes],
        resamples=b,
        seed=11,
    )[2]
    fast_auto = auto_statistics(auto_totals.sum(axis=1))
    rng = np.random.default_rng(11)
    members = {
        s: sorted({cluster[k] for k in votes if stratum[k] == s}, key=repr)
        for s in sorted(set(stratum.values()), key=repr)
    }
    assert strata_order == list(members)
    draws = {s: rng.integers(0, len(c), size=(b, len(c))) for s, c in members.items()}
    for r in range(b):
        chosen = [members[s][j] for s in members for j in draws[s][r]]
        sample_votes, sample_auto = {}, {}
        for copy, prompt in enumerate(chosen):
            for k in votes:
                if cluster[k] == prompt:
                    sample_votes[(copy, k)] = votes[k]
                    sample_auto[(copy, k)] = auto[k]
        h = human_agreement(sample_votes)
        a = auto_agreement(sample_votes, sample_auto)
        for name in HUMAN_N:
            assert fast[name][r] == pytest.approx(getattr(h, name), abs=1e-12, nan_ok=True), (r, name)
        for name in AUTO_N:
            assert fast_auto[name][r] == pytest.approx(getattr(a, name), abs=1e-12, nan_ok=True), (r, name)


def test_interval_width_matches_the_binomial_standard_error_for_independent_images():
    """One vote per cluster-image pair, clusters iid: the 95 % interval of an accuracy is about p ± 1.96 √(p(1−p)/n)."""
    gen = np.random.default_rng(5)
    n = 2000
    votes = {i: [bool(gen.random() < 0.3)] * 2 for i in range(n)}
    boot = bootstrap_agreement(votes, {i: i for i in votes}, dict.fromkeys(votes, "t"), resamples=2000, seed=1)
    acc = boot.pooled["human_accuracy"]
    half = 1.96 * math.sqrt(acc.value * (1 - acc.value) / n)
    assert acc.low == pytest.approx(acc.value - half, abs=0.004)
    assert acc.high == pytest.approx(acc.value + half, abs=0.004)


def test_clusters_widen_the_interval_and_the_seed_and_level_are_honoured():
    votes, cluster, stratum, _ = _random_study(prompts=30)
    by_prompt = bootstrap_agreement(votes, cluster, stratum, resamples=500, seed=0).pooled["human_accuracy"]
    by_image = bootstrap_agreement(votes, {k: k for k in votes}, stratum, resamples=500, seed=0).pooled[
        "human_accuracy"
    ]
    assert by_prompt.high - by_prompt.low > 1.3 * (by_image.high - by_image.low)  # images of a prompt correlate
    again = bootstrap_agreement(votes, cluster, stratum, resamples=500, seed=0).pooled["human_accuracy"]
    assert again == by_prompt
    other = bootstrap_agreement(votes, cluster, stratum, resamples=500, seed=1).pooled["human_accuracy"]
    assert (other.low, other.high) != (by_prompt.low, by_prompt.high)
    narrow = bootstrap_agreement(votes, cluster, stratum, resamples=500, level=0.5).pooled["human_accuracy"]
    assert by_prompt.low < narrow.low <= narrow.high < by_prompt.high
    assert narrow.level == 0.5
    shuffled = dict(reversed(list(votes.items())))  # the draws do not depend on the order images come in
    assert bootstrap_agreement(shuffled, cluster, stratum, resamples=500).pooled["human_accuracy"] == by_prompt


def test_stratum_means_are_unweighted_means_of_the_per_stratum_statistics():
    votes, cluster, stratum, _ = _random_study(prompts=12)
    boot = bootstrap_agreement(votes, cluster, stratum, resamples=50)
    per = [
        human_agreement({k: v for k, v in votes.items() if stratum[k] == s}).human_accuracy
        for s in set(stratum.values())
    ]
    mean = boot.stratum_mean["human_accuracy"]
    assert mean.value == pytest.approx(np.mean(per))
    assert mean.n == 3
    assert mean.low <= mean.value <= mean.high
    one = bootstrap_agreement(votes, cluster, dict.fromkeys(votes, "x"), resamples=50)
    assert one.stratum_mean == {}


def test_bootstrap_rejects_bad_input():
    votes, cluster, stratum, _ = _random_study(prompts=3)
    with pytest.raises(InputError, match="confidence level"):
        bootstrap_agreement(votes, cluster, stratum, level=1.0)
    with pytest.raises(InputError, match="resamples"):
        bootstrap_agreement(votes, cluster, stratum, resamples=0)
    with pytest.raises(InputError, match="seed"):
        bootstrap_agreement(votes, cluster, stratum, seed=-1)
    with pytest.raises(InputError, match="two strata"):
        bootstrap_agreement(votes, dict.fromkeys(votes, 0), stratum)
    with pytest.raises(InputError, match="no cluster or stratum"):
        bootstrap_agreement(votes, {}, stratum)
    with pytest.raises(InputError, match="two or more annotations"):
        bootstrap_agreement({"a": [True]}, {"a": 0}, {"a": "x"})
    assert percentile_interval(np.array([np.nan, np.nan, 1.0])) == (pytest.approx(math.nan, nan_ok=True),) * 2


# -- linear closed forms against the pair enumeration they replace ------------------------------------------------


def _pair_enumeration(verdicts):
    """The former implementation of human_agreement: every annotator pair of every image, built (quadratic)."""
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import fleiss_kappa

    groups = [list(v) for v in verdicts.values() if len(v) >= 2]
    pair_rates, left, right, vs_others, ties = [], [], [], [], 0
    for g in groups:
        pairs = list(combinations(g, 2))
        pair_rates.append(sum(a == b for a, b in pairs) / len(pairs))
        for a, b in pairs:
            left += [a, b]
            right += [b, a]
        for i, vote in enumerate(g):
            others = g[:i] + g[i + 1 :]
            if 2 * sum(others) == len(others):
                ties += 1
            else:
                vs_others.append(vote == (2 * sum(others) > len(others)))
    kappa = (
        float(cohen_kappa_score(np.array(left, dtype=int), np.array(right, dtype=int)))
        if len(set(left) | set(right)) >= 2
        else math.nan
    )
    counts = np.array([[len(g) - sum(g), sum(g)] for g in groups])
    with np.errstate(invalid="ignore", divide="ignore"):
        fleiss = float(fleiss_kappa(counts)) if len({len(g) for g in groups}) == 1 else math.nan
    votes = [v for g in groups for v in g]
    return {
        "images": len(groups),
        "annotations": len(votes),
        "human_accuracy": float(np.mean(votes)),
        "pairwise_agreement": float(np.mean(pair_rates)),
        "vs_majority_of_others": float(np.mean(vs_others)) if vs_others else math.nan,
        "ties_excluded": ties,
        "cohen_kappa": kappa,
        "fleiss_kappa": fleiss,
        "unanimous_images": sum(len(set(g)) == 1 for g in groups),
    }


@pytest.mark.parametrize("seed", range(40))
def test_closed_forms_equal_the_pair_enumeration(seed):
    gen = np.random.default_rng(seed)
    raters = [int(gen.integers(2, 8))] if seed % 3 == 0 else None  # equal raters (Fleiss defined) in a third
    p = (0.0, 1.0, 0.5, 0.9)[seed % 4]  # one-class cases make κ undefined
    votes = {
        i: list(gen.random(raters[0] if raters else int(gen.integers(2, 9))) < p)
        for i in range(int(gen.integers(1, 12)))
    }
    got = human_agreement(votes).to_dict()
    for name, expected in _pair_enumeration(votes).items():
        if isinstance(expected, float) and math.isnan(expected):
            assert got[name] is None, (seed, name)
        else:
            assert got[name] == pytest.approx(expected, abs=1e-12), (seed, name)


def test_an_image_with_many_annotations_costs_its_count_not_its_pairs():
    import time
    import tracemalloc

    votes = {"one": [i % 3 == 0 for i in range(200_000)]}  # 2·10^10 pairs: the enumeration could not finish
    tracemalloc.start()
    started = time.perf_counter()
    stats = human_agreement(votes)
    boot = bootstrap_agreement(votes, {"one": 0}, {"one": "t"}, resamples=50)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert (stats.images, stats.annotations) == (1, 200_000)
    y, n = 66_667, 200_000
    assert stats.pairwise_agreement == pytest.approx((y * (y - 1) + (n - y) * (n - y - 1)) / (n * (n - 1)))
    assert boot.pooled["pairwise_agreement"].value == pytest.approx(stats.pairwise_agreement)
    assert peak < 64 * 2**20
    assert elapsed < 20


def test_single_annotations_count_in_the_accuracy_only():
    votes = {"a": [True], "b": [True, False], "c": [False, False], "d": [True]}
    h = human_agreement(votes)
    assert (h.images, h.annotations) == (2, 4)
    assert (h.score_images, h.score_annotations, h.single_annotation_images) == (4, 6, 2)
    assert h.human_accuracy == pytest.approx(3 / 6)  # every annotation, the single ones included
    assert h.pairwise_agreement == pytest.approx(0.5)  # (0 + 1) / 2: images with a pair only
    boot = bootstrap_agreement(votes, {k: k for k in votes}, dict.fromkeys(votes, "t"), resamples=30)
    assert boot.pooled["human_accuracy"].value == pytest.approx(3 / 6)
    assert boot.pooled["human_accuracy"].n == 6
    assert boot.pooled["pairwise_agreement"].n == 2
    for name in HUMAN_N:  # the interval's point estimates are the library statistics, singles and all
        assert boot.pooled[name].value == pytest.approx(getattr(h, name), nan_ok=True), name
    only = human_agreement({"a": [True], "b": [False]}, require_pairs=False)
    assert (only.images, only.score_images, only.human_accuracy) == (0, 2, 0.5)
    assert math.isnan(only.pairwise_agreement)
    assert math.isnan(only.cohen_kappa)


def _threshold_scan(scores, labels):
    """The former O(n²) tuning: every candidate threshold against every score."""
    order = np.sort(np.unique(scores))
    candidates = np.concatenate([[order[0] - 1.0], (order[:-1] + order[1:]) / 2, [order[-1] + 1.0]])
    agreements = [float(np.mean(labels == (scores > t))) for t in candidates]
    best = int(np.argmax(agreements))
    return float(candidates[best]), agreements[best]


@pytest.mark.parametrize("seed", range(30))
def test_sorted_threshold_search_equals_the_scan(seed):
    from t2ibench.metrics.agreement import _best_threshold

    gen = np.random.default_rng(seed)
    n = int(gen.integers(1, 60))
    scores = np.round(gen.random(n), int(gen.integers(1, 3)))  # ties among scores
    if seed % 5 == 0:
        scores = scores * 1e300  # midpoints where x - 1 == x
    labels = gen.random(n) < 0.5
    assert _best_threshold(scores, labels) == _threshold_scan(scores, labels)


def test_bootstrap_gathers_in_bounded_chunks_with_identical_totals(monkeypatch):
    import t2ibench.metrics.agreement as agreement

    votes, cluster, stratum, _ = _random_study(prompts=15)
    features = np.stack([human_features(votes[k]) for k in votes])
    args = ([cluster[k] for k in votes], [stratum[k] for k in votes])
    whole = stratified_cluster_totals(features, *args, resamples=300, seed=4)
    monkeypatch.setattr(agreement, "_GATHER_BYTES", 1)  # one resample at a time
    chunked = stratified_cluster_totals(features, *args, resamples=300, seed=4)
    assert whole[0] == chunked[0]
    np.testing.assert_array_equal(whole[1], chunked[1])
    np.testing.assert_array_equal(whole[2], chunked[2])  # bit for bit: the published intervals do not move


def test_bootstrap_is_refused_before_allocating_beyond_the_memory_limit(monkeypatch):
    votes, cluster, stratum, _ = _random_study(prompts=6)
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "1M")
    with pytest.raises(InputError, match=r"a bootstrap of 100000 resamples over 6 clusters in 3 strata needs ~"):
        bootstrap_agreement(votes, cluster, stratum, resamples=100_000)


def test_agreement_flow_checks_its_input_files_before_starting_the_flow(tmp_path, monkeypatch, capsys):
    """`agreement --flow` read its annotations only in the flow, after its start-up; now a bad file is refused
    first, in one line, and no flow starts."""
    from pathlib import Path

    import t2ibench.cli as cli
    from t2ibench.benchmarks.geneval.suite import generate_suite, write_suite

    started = []
    monkeypatch.setattr("t2ibench.benchmarks.geneval.commands.run_flow", lambda *a, **k: started.append(a) or 0)
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # a checkout: flows/human_agreement.py is there
    write_suite(tmp_path / "meta.jsonl", generate_suite(seed=0, per_task=1))
    bad = tmp_path / "annotations_bad.csv"
    bad.write_text("HITId,Input.prompt_id\nH,0\n")
    argv = ["agreement", "--flow", "--annotations", str(bad), "--metadata", str(tmp_path / "meta.jsonl")]
    assert cli.main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert "annotations_bad.csv" in capsys.readouterr().err
    assert started == []
