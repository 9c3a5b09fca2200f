"""Paired comparisons (t2ibench.metrics.paired) against brute force: the difference is the two scores' difference,
the exact randomization p-value equals an independent enumeration of every flip, the Monte-Carlo one agrees with it,
the interval is the paired bootstrap's, and Holm's adjustment matches its textbook definition. Planted results show
what pairing buys: a real difference overlapping per-model intervals do not separate is detected, and identical
models stay unseparated."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from t2ibench.benchmarks.geneval.metrics import bootstrap_table2
from t2ibench.errors import InputError
from t2ibench.metrics.paired import holm, paired_difference


def score(rows, strata):
    """GenEval's overall by hand: per stratum Σ correct / Σ images, then their mean."""
    rates = []
    for s in dict.fromkeys(strata):
        chosen = [r for r, t in zip(rows, strata, strict=True) if t == s]
        rates.append(sum(c for c, _ in chosen) / sum(n for _, n in chosen))
    return sum(rates) / len(rates)


def brute_p(a, b, strata):
    """Two-sided randomization p-value by enumerating every swap pattern, written independently of the module."""
    observed = score(b, strata) - score(a, strata)
    hits = total = 0
    for pattern in itertools.product((0, 1), repeat=len(a)):
        xa = [bb if s else aa for aa, bb, s in zip(a, b, pattern, strict=True)]
        xb = [aa if s else bb for aa, bb, s in zip(a, b, pattern, strict=True)]
        total += 1
        hits += abs(score(xb, strata) - score(xa, strata)) >= abs(observed) - 1e-12
    return hits / total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_exact_test_is_the_enumeration_of_every_flip(seed):
    rng = np.random.default_rng(seed)
    m = 10
    strata = ["counting"] * 4 + ["colors"] * 6
    a = [(int(rng.integers(0, 5)), 4) for _ in range(m)]
    b = [(int(rng.integers(0, 5)), 4) for _ in range(m)]
    got = paired_difference(a, b, strata)
    assert got.exact
    assert got.difference == pytest.approx(score(b, strata) - score(a, strata))
    assert got.p_value == pytest.approx(brute_p(a, b, strata))
    assert got.prompts == m


def test_the_random_flips_agree_with_the_exact_p_value():
    rng = np.random.default_rng(7)
    a = [(int(rng.integers(0, 5)), 4) for _ in range(16)]
    b = [(min(4, c + int(rng.random() < 0.4)), 4) for c, _ in a]
    exact = paired_difference(a, b).p_value
    assert exact == pytest.approx(brute_p(a, b, [0] * 16))
    # 17+ prompts switch to random flips: the same data with one tied prompt added (it changes nothing)
    sampled = paired_difference([*a, (2, 4)], [*b, (2, 4)], flips=20_000).p_value
    assert abs(sampled - exact) < 0.01


def test_the_interval_is_the_paired_bootstrap_and_brackets_the_difference():
    rng = np.random.default_rng(3)
    m = 60
    a = [(int(rng.integers(0, 5)), 4) for _ in range(m)]
    b = [(int(rng.integers(0, 5)), 4) for _ in range(m)]
    got = paired_difference(a, b, resamples=4000)
    assert got.low < got.difference < got.high
    # the same draw for both models, by hand (the module's stream)
    draw = np.random.default_rng(np.random.SeedSequence((0, 5))).integers(0, m, size=(4000, m))
    x, y = np.array(a, float), np.array(b, float)
    diffs = y[draw, 0].sum(1) / y[draw, 1].sum(1) - x[draw, 0].sum(1) / x[draw, 1].sum(1)
    assert (got.low, got.high) == pytest.approx(tuple(np.percentile(diffs, [2.5, 97.5])))


def test_holm_is_the_step_down_bonferroni():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005 (×4 = 0.02), 0.01 (×3 = 0.03), 0.03 (×2 = 0.06), 0.04 (×1 = 0.04 → 0.06, monotone)
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([]) == []
    assert holm([0.9, 0.8]) == [1.0, 1.0]
    with pytest.raises(InputError):
        holm([1.2])


def planted(rng, m, accuracy, per_prompt=4):
    """Per-prompt (correct, images) of a model whose images are right with probability ``accuracy`` per prompt."""
    return [(int(rng.binomial(per_prompt, p)), per_prompt) for p in accuracy]


def test_a_real_difference_that_overlapping_intervals_miss_is_detected():
    """Model b is model a except on 10 % of the prompts, where it gets every image right: a real gain of ~0.06 that
    the per-model intervals (each ±~0.09) do not separate; the paired test does."""
    rng = np.random.default_rng(11)
    m = 120
    difficulty = rng.uniform(0.0, 1.0, m)  # prompts vary a lot: wide per-model intervals
    a = planted(rng, m, difficulty)
    b = [(n, n) if i % 10 == 0 else (c, n) for i, (c, n) in enumerate(a)]
    per_model = {
        name: bootstrap_table2([("counting", k < c, i) for i, (c, n) in enumerate(rows) for k in range(n)])["counting"]
        for name, rows in (("a", a), ("b", b))
    }
    assert per_model["a"][1] > per_model["b"][0]  # the intervals overlap: "≈"
    got = paired_difference(a, b)
    assert got.difference > 0.04
    assert got.p_value < 0.01
    assert got.low > 0


def test_a_gap_made_by_different_prompts_is_not_a_difference_of_the_models():
    """One model's per-prompt accuracies, measured twice: run a on prompts 0-79, run b on prompts 40-119, whose last
    40 are easy. Their intervals do not overlap (an interval rule reads a difference), but on the 40 prompts both
    have, the paired test finds none — the gap was the prompts, not the model."""
    rng = np.random.default_rng(4)
    truth = np.concatenate([rng.uniform(0.1, 0.6, 80), rng.uniform(0.9, 1.0, 40)])
    results = planted(rng, 120, truth)
    again = planted(rng, 120, truth)  # the same model's other images

    def interval(rows, prompts):
        verdicts = [("counting", k < rows[i][0], i) for i in prompts for k in range(rows[i][1])]
        return bootstrap_table2(verdicts)["counting"]

    a, b = interval(results, range(0, 80)), interval(again, range(40, 120))
    assert b[0] > a[1]  # not overlapping
    shared = range(40, 80)
    got = paired_difference([results[i] for i in shared], [again[i] for i in shared])
    assert got.p_value > 0.05
    assert got.low < 0 < got.high


def test_identical_models_are_rarely_separated():
    """Over 40 draws of two models with the same per-prompt accuracies, the paired test at 0.05 separates them in
    about 5 % of draws (its level), not more."""
    flagged = 0
    for seed in range(40):
        rng = np.random.default_rng(100 + seed)
        truth = rng.uniform(0.2, 0.8, 60)
        flagged += paired_difference(planted(rng, 60, truth), planted(rng, 60, truth), seed=seed).p_value <= 0.05
    assert flagged <= 5  # Binomial(40, 0.05): P(> 5) < 0.05


def test_bad_inputs_are_refused_in_one_line():
    with pytest.raises(InputError, match="same prompts"):
        paired_difference([(1, 2)], [(1, 2), (0, 2)])
    with pytest.raises(InputError, match="successes ≤ trials"):
        paired_difference([(3, 2)], [(1, 2)])
    with pytest.raises(InputError, match="no shared prompt"):
        paired_difference(np.zeros((0, 2)), np.zeros((0, 2)))
    with pytest.raises(InputError, match="strata has 1 labels for 2 prompts"):
        paired_difference([(1, 2), (1, 2)], [(1, 2), (0, 2)], ["x"])
