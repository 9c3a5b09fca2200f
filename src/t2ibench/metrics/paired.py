"""Paired comparisons of two models judged on the same prompts: the difference of a score, its paired bootstrap
interval and a paired randomization test, with Holm's correction for many comparisons.

A model's results on one prompt are (successes, trials): correct images and images (GenEval), or a soft score
and 1. A prompt belongs to a stratum (GenEval's task); the score is the mean over strata of the stratum's pooled
rate Σ successes / Σ trials — GenEval's overall (the mean of its task accuracies), or one task's accuracy with one
stratum. Two models are compared on the prompts both have (the caller aligns them: row i of ``a`` and ``b`` is the
same prompt).

* **Interval**: prompts are resampled with replacement within each stratum, the same draw for both models (the
  pairing), and the difference recomputed; the percentile interval at ``level``.
* **Test**: under the null hypothesis the two models' results on a prompt are exchangeable, so each prompt's pair is
  swapped with probability 1/2 (a sign flip of its contribution), the difference recomputed; the two-sided p-value is
  (1 + #{|T*| ≥ |T|}) / (1 + R) over R random flips (never 0), or the exact share over all 2^m flips when there are
  few prompts. It uses what a per-model interval cannot: a prompt both models fail or both pass says nothing about
  their difference, so a small difference made on the same prompts every time is detected where two overlapping
  intervals would not separate it.
* **Holm** (step-down Bonferroni) adjusts a family of p-values so that the chance of any false flag stays ≤ α.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from t2ibench.errors import InputError
from t2ibench.metrics.checks import check_memory, check_positive_int, check_seed
from t2ibench.metrics.levels import CI_LEVEL

PAIRED_STREAM = 5
"""The draws come from ``default_rng(SeedSequence((seed, 5)))`` (bootstrap) and ``(seed, 6)`` (randomization): streams
apart from every other use of a seed here."""
DEFAULT_RESAMPLES = 2000
DEFAULT_FLIPS = 4000
EXACT_UP_TO = 16
"""Prompts up to which the randomization test enumerates every one of the 2^m flips (exact p-value)."""
METHOD = "paired bootstrap over prompts (percentile) and paired randomization test (sign flips of prompts)"


@dataclass(frozen=True)
class PairedDifference:
    """Score(b) − score(a) on the shared prompts, its paired percentile interval [low, high] at ``level``, the
    two-sided p-value of the paired randomization test, the number of prompts compared and each side's score there."""

    difference: float
    low: float
    high: float
    level: float
    p_value: float
    prompts: int
    exact: bool
    score_a: float
    score_b: float


def _results(values: ArrayLike, name: str, bounded: bool) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 2:
        raise InputError(f"{name}: expected (prompts, 2) rows of (successes, trials); got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{name}: successes and trials must be finite")
    if np.any(array[:, 1] <= 0):
        raise InputError(f"{name}: each prompt needs trials > 0")
    if bounded and (np.any(array[:, 0] < 0) or np.any(array[:, 0] > array[:, 1])):
        raise InputError(f"{name}: each prompt needs 0 ≤ successes ≤ trials and trials > 0")
    return array


def _score(successes: NDArray[np.float64], trials: NDArray[np.float64], onehot: NDArray[np.float64]) -> Any:
    """The mean over strata of Σ successes / Σ trials along the last axis (any leading axes: resamples; ``onehot``:
    prompts × strata, 1 where a prompt is in a stratum)."""
    return np.mean((successes @ onehot) / (trials @ onehot), axis=-1)


def paired_difference(
    a: ArrayLike,
    b: ArrayLike,
    strata: Sequence[Hashable] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    flips: int = DEFAULT_FLIPS,
    level: float = CI_LEVEL,
    seed: int = 0,
    bounded: bool = True,
) -> PairedDifference:
    """Model b's score minus model a's on the same m prompts (``a``, ``b``: (m, 2) successes and trials per prompt,
    row i the same prompt; ``strata``: each prompt's stratum, None: one), with its paired percentile bootstrap
    interval at ``level`` (``resamples`` draws) and the paired randomization test's two-sided p-value (exact over all
    2^m flips for m ≤ ``EXACT_UP_TO``, else ``flips`` random ones); seeded, so the same inputs give the same answer.
    ``bounded``: successes are counts in [0, trials] (False: any finite soft score, e.g. a sum of cosines)."""
    x, y = _results(a, "a", bounded), _results(b, "b", bounded)
    if x.shape != y.shape:
        raise InputError(f"a and b must hold the same prompts; got {len(x)} and {len(y)} rows")
    m = len(x)
    if m == 0:
        raise InputError("no shared prompt to compare")
    labels = [0] * m if strata is None else list(strata)
    if len(labels) != m:
        raise InputError(f"strata has {len(labels)} labels for {m} prompts")
    if not 0.0 < level < 1.0:
        raise InputError(f"level must be in (0, 1); got {level!r}")
    check_positive_int(resamples, name="resamples")
    check_positive_int(flips, name="flips")
    check_seed(seed)
    order = list(dict.fromkeys(labels))
    groups = [np.flatnonzero([lab == s for lab in labels]) for s in order]
    onehot = np.zeros((m, len(groups)))
    for j, g in enumerate(groups):
        onehot[g, j] = 1.0
    score_a, score_b = float(_score(x[:, 0], x[:, 1], onehot)), float(_score(y[:, 0], y[:, 1], onehot))
    observed = score_b - score_a

    check_memory(8.0 * 5 * resamples * m, what=f"the paired bootstrap ({resamples} resamples of {m} prompts)")
    rng = np.random.default_rng(np.random.SeedSequence((seed, PAIRED_STREAM)))
    draw = np.empty((resamples, m), dtype=np.intp)
    for g in groups:  # within each stratum, its own prompts with replacement: the same draw for both models
        draw[:, g] = g[rng.integers(0, len(g), size=(resamples, len(g)))]
    diffs = _score(y[draw, 0], y[draw, 1], onehot) - _score(x[draw, 0], x[draw, 1], onehot)
    tail = 100 * (1 - level) / 2
    low, high = (float(v) for v in np.percentile(diffs, [tail, 100 - tail]))

    exact = m <= EXACT_UP_TO
    if exact:
        swap = np.array(list(itertools.product((False, True), repeat=m)), dtype=bool)
    else:
        check_memory(8.0 * 5 * flips * m, what=f"the randomization test ({flips} flips of {m} prompts)")
        flip_rng = np.random.default_rng(np.random.SeedSequence((seed, PAIRED_STREAM + 1)))
        swap = flip_rng.random((flips, m)) < 0.5
    xs, xt = np.where(swap, y[:, 0], x[:, 0]), np.where(swap, y[:, 1], x[:, 1])
    ys, yt = np.where(swap, x[:, 0], y[:, 0]), np.where(swap, x[:, 1], y[:, 1])
    null = _score(ys, yt, onehot) - _score(xs, xt, onehot)
    tolerance = 1e-12 * max(1.0, abs(observed))  # the observed flip pattern itself must count
    extreme = int(np.count_nonzero(np.abs(null) >= abs(observed) - tolerance))
    p_value = extreme / len(swap) if exact else (1 + extreme) / (1 + len(swap))
    return PairedDifference(observed, low, high, level, min(1.0, p_value), m, exact, score_a, score_b)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values of a family (same order as given): the k-th smallest times (n − k + 1),
    made monotone and capped at 1; a comparison is flagged at α when its adjusted p-value is ≤ α."""
    values = [float(p) for p in p_values]
    for p in values:
        if not (0.0 <= p <= 1.0) or math.isnan(p):
            raise InputError(f"p-values must be in [0, 1]; got {p!r}")
    n = len(values)
    order = sorted(range(n), key=lambda i: values[i])
    adjusted = [0.0] * n
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (n - k) * values[i]))
        adjusted[i] = running
    return adjusted
