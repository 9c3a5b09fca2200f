"""Bootstrap confidence intervals of GenEval scores: prompts resampled with all their images, seeded."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from t2ibench.benchmarks.geneval.metrics import bootstrap_table2
from t2ibench.errors import InputError


def verdicts(rates: dict[str, float], prompts: int, images: int, seed: int = 0) -> list[tuple[str, bool, int]]:
    rng = np.random.default_rng(seed)
    out = []
    for task, rate in rates.items():
        for p in range(prompts):
            right = rng.random() < rate  # one outcome per prompt, shared by its images: prompt-level correlation
            out += [(task, bool(right), p) for _ in range(images)]
    return out


def test_the_interval_matches_scipy_s_percentile_bootstrap_over_prompts():
    data = verdicts({"counting": 0.6}, prompts=80, images=4)
    ours = bootstrap_table2(data, resamples=4000, seed=1)["counting"]
    correct = np.array([sum(ok for _, ok, p in data if p == q) for q in range(80)], dtype=float)
    images = np.full(80, 4.0)
    ref = stats.bootstrap(
        (correct, images),
        lambda c, n, axis: c.sum(axis=axis) / n.sum(axis=axis),
        paired=True,
        vectorized=True,
        method="percentile",
        n_resamples=4000,
        random_state=2,
    ).confidence_interval
    assert ours[0] == pytest.approx(ref.low, abs=0.02)
    assert ours[1] == pytest.approx(ref.high, abs=0.02)


def test_images_of_a_prompt_move_together():
    """Four identical images per prompt carry no more information than one: the interval must not shrink."""
    one = bootstrap_table2(verdicts({"colors": 0.5}, prompts=60, images=1, seed=3), seed=0)["colors"]
    four = bootstrap_table2(verdicts({"colors": 0.5}, prompts=60, images=4, seed=3), seed=0)["colors"]
    assert four == pytest.approx(one, abs=1e-12)


def test_overall_interval_covers_the_task_mean_and_is_seeded_and_order_free():
    data = verdicts({"single_object": 0.9, "two_object": 0.5, "position": 0.2}, prompts=40, images=2)
    a = bootstrap_table2(data, seed=5)
    assert set(a) == {"single_object", "two_object", "position", "overall"}
    mean = np.mean(
        [np.mean([ok for t, ok, _ in data if t == task]) for task in ("single_object", "two_object", "position")]
    )
    assert a["overall"][0] < mean < a["overall"][1]
    assert bootstrap_table2(list(reversed(data)), seed=5) == a
    assert bootstrap_table2(data, seed=6) != a
    assert bootstrap_table2([("counting", True, i) for i in range(10)])["counting"] == (1.0, 1.0)


def test_bad_arguments_are_refused():
    with pytest.raises(InputError, match="confidence level"):
        bootstrap_table2([("colors", True, 0)], level=1.0)
    with pytest.raises(InputError, match="unknown GenEval task"):
        bootstrap_table2([("colour", True, 0)])
