"""Human verdicts from annotations, agreement statistics, and honest (cross-validated) threshold tuning.

Human verdict rule (GenEval's correctness semantics applied to an annotator's answers; object k of the form is
include clause k of the prompt):

* every include clause: the annotator's count of that object is at least the clause's count (a missing count
  fails); an exclude clause on the same class fails the image when the count reaches it — for counting prompts
  this makes the count exact, with "5 or more" (5) failing any exclude of 5 or less;
* a clause with a colour: the colour is among those the annotator selected (none selected fails);
* a clause with a position [relation, 0]: the annotator's answer about object 1 relative to object 0 gives the
  relation — left of ↔ x = left, right of ↔ x = right, above ↔ y = above, below ↔ y = below (missing fails).

Statistics use scikit-learn (Cohen's κ) and statsmodels (Fleiss' κ); everything else is counting.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Protocol, TypeVar

import numpy as np

from t2ibench.errors import InputError
from t2ibench.metrics.checks import check_positive_int, check_seed

K = TypeVar("K", bound=Hashable)  # an image key, e.g. (source, prompt_id, image_id)
RELATION_ANSWER = {
    "left of": ("x", "left"),
    "right of": ("x", "right"),
    "above": ("y", "above"),
    "below": ("y", "below"),
}


class AnnotationLike(Protocol):
    """The fields of an annotation the verdict rule reads."""

    @property
    def counts(self) -> tuple[int | None, int | None]:
        """Counts of objects 0 and 1 (5 = "5 or more")."""

    @property
    def colors(self) -> tuple[frozenset[str] | None, frozenset[str] | None]:
        """Colours selected for objects 0 and 1."""

    @property
    def position_x(self) -> str | None:
        """left / right / neither_x: object 1 relative to object 0."""

    @property
    def position_y(self) -> str | None:
        """above / below / neither_y: object 1 relative to object 0."""


def human_verdict(metadata: Mapping[str, Any], answer: AnnotationLike) -> tuple[bool, str]:
    """(correct, reason) of one annotation under GenEval's semantics (see the module docstring)."""
    reasons: list[str] = []
    includes = list(metadata.get("include", []))
    if len(includes) > 2:
        raise InputError(f"the annotation form covers two objects; prompt has {len(includes)} include clauses")
    for k, clause in enumerate(includes):
        name, need = clause["class"], clause["count"]
        count = answer.counts[k]
        if count is None:
            reasons.append(f"no count given for {name}")
            continue
        if count < need:
            reasons.append(f"annotator counted {count} {name}, needed {need}")
            continue
        if "color" in clause:
            picked = answer.colors[k]
            if not picked or clause["color"] not in picked:
                chosen = "none" if not picked else "|".join(sorted(picked))
                reasons.append(f"annotator saw {name} as {chosen}, needed {clause['color']}")
        if "position" in clause:
            relation = clause["position"][0]
            axis, expected = RELATION_ANSWER[relation]
            given = answer.position_x if axis == "x" else answer.position_y
            if given != expected:
                reasons.append(f"annotator placed {name} {given or 'nowhere'}, needed {relation}")
    for clause in metadata.get("exclude", []):
        for k, inc in enumerate(includes):
            if inc["class"] == clause["class"]:
                count = answer.counts[k]
                if count is not None and count >= clause["count"]:
                    reasons.append(f"annotator counted {count} {clause['class']}, needed fewer than {clause['count']}")
    return not reasons, "\n".join(reasons)


# -- agreement ------------------------------------------------------------------------------------------------


def _majority(votes: Sequence[bool]) -> bool | None:
    """Strict majority of boolean votes; None on a tie."""
    yes = sum(votes)
    no = len(votes) - yes
    return None if yes == no else yes > no


@dataclass(frozen=True)
class HumanAgreement:
    """Inter-annotator statistics over a set of images (each with ≥ 2 human verdicts)."""

    images: int
    annotations: int
    human_accuracy: float
    pairwise_agreement: float
    vs_majority_of_others: float
    ties_excluded: int
    cohen_kappa: float
    fleiss_kappa: float
    unanimous_images: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as null)."""
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def _kappa_safe(a: Sequence[bool], b: Sequence[bool]) -> float:
    from sklearn.metrics import cohen_kappa_score

    if len(a) == 0 or len(set(a) | set(b)) < 2:
        return math.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(cohen_kappa_score(np.asarray(a, dtype=int), np.asarray(b, dtype=int)))


def human_agreement(verdicts: Mapping[K, Sequence[bool]]) -> HumanAgreement:
    """Inter-annotator agreement of human verdicts grouped by image (image → list of annotators' verdicts)."""
    from statsmodels.stats.inter_rater import fleiss_kappa

    groups = [list(v) for v in verdicts.values() if len(v) >= 2]
    if not groups:
        raise InputError("no image has two or more annotations: agreement is undefined")
    all_votes = [v for g in groups for v in g]
    pair_rates, left, right = [], [], []
    vs_others, ties = [], 0
    for g in groups:
        pairs = list(combinations(g, 2))
        pair_rates.append(sum(a == b for a, b in pairs) / len(pairs))
        for a, b in pairs:  # both orders: the pooled κ does not depend on which annotator is "first"
            left += [a, b]
            right += [b, a]
        for i, vote in enumerate(g):
            majority = _majority(g[:i] + g[i + 1 :])
            if majority is None:
                ties += 1
            else:
                vs_others.append(vote == majority)
    counts = np.array([[len(g) - sum(g), sum(g)] for g in groups])
    equal_raters = len({len(g) for g in groups}) == 1
    with np.errstate(invalid="ignore", divide="ignore"):
        fleiss = float(fleiss_kappa(counts, method="fleiss")) if equal_raters else math.nan
    return HumanAgreement(
        images=len(groups),
        annotations=len(all_votes),
        human_accuracy=float(np.mean(all_votes)),
        pairwise_agreement=float(np.mean(pair_rates)),
        vs_majority_of_others=float(np.mean(vs_others)) if vs_others else math.nan,
        ties_excluded=ties,
        cohen_kappa=_kappa_safe(left, right),
        fleiss_kappa=fleiss,
        unanimous_images=sum(len(set(g)) == 1 for g in groups),
    )


@dataclass(frozen=True)
class AutoAgreement:
    """Agreement of automatic verdicts with human ones over the images both cover."""

    images: int
    annotations: int
    vs_annotators: float
    vs_majority: float
    kappa_vs_majority: float
    unanimous_images: int
    vs_unanimous: float
    auto_accuracy: float
    human_majority_accuracy: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as null)."""
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def auto_agreement(human: Mapping[K, Sequence[bool]], auto: Mapping[K, bool]) -> AutoAgreement:
    """Automatic vs human verdicts joined on the image key: vs each annotator, vs the majority, κ, unanimous subset."""
    keys = [k for k in human if k in auto and human[k]]
    if not keys:
        raise InputError("no image has both human and automatic verdicts")
    per_annotation = [auto[k] == v for k in keys for v in human[k]]
    majority_keys = [k for k in keys if _majority(list(human[k])) is not None]
    maj = [bool(_majority(list(human[k]))) for k in majority_keys]
    aut = [auto[k] for k in majority_keys]
    unanimous = [k for k in keys if len(set(human[k])) == 1]
    return AutoAgreement(
        images=len(keys),
        annotations=len(per_annotation),
        vs_annotators=float(np.mean(per_annotation)),
        vs_majority=float(np.mean([a == m for a, m in zip(aut, maj, strict=True)])) if maj else math.nan,
        kappa_vs_majority=_kappa_safe(aut, maj),
        unanimous_images=len(unanimous),
        vs_unanimous=float(np.mean([auto[k] == human[k][0] for k in unanimous])) if unanimous else math.nan,
        auto_accuracy=float(np.mean([auto[k] for k in keys])),
        human_majority_accuracy=float(np.mean(maj)) if maj else math.nan,
    )


# -- threshold tuning -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TunedThreshold:
    """A per-task threshold chosen to maximise agreement with human majorities, and its honest estimate."""

    task: str
    threshold: float
    in_sample_agreement: float
    cv_agreement: float
    folds: int
    images: int


def _best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(threshold, agreement) maximising mean(labels == (scores > threshold)); midpoints between sorted scores."""
    order = np.sort(np.unique(scores))
    candidates = np.concatenate([[order[0] - 1.0], (order[:-1] + order[1:]) / 2, [order[-1] + 1.0]])
    agreements = [float(np.mean(labels == (scores > t))) for t in candidates]
    best = int(np.argmax(agreements))
    return float(candidates[best]), agreements[best]


def tune_threshold(
    scores: Mapping[K, float],
    human: Mapping[K, Sequence[bool]],
    tasks: Mapping[K, str],
    *,
    folds: int = 5,
    seed: int = 0,
) -> dict[str, TunedThreshold]:
    """Per task, the score threshold maximising agreement with the human majority, with k-fold CV agreement.

    An image counts as judged correct when its score exceeds the threshold. The CV agreement fits the threshold
    on k−1 folds and scores the held-out fold (folds drawn with ``numpy.random.default_rng(seed)``), so the
    tuned number is not flattered by selecting on the data it reports.
    """
    check_positive_int(folds, name="folds", minimum=2)
    rng = np.random.default_rng(check_seed(seed))
    by_task: dict[str, list[K]] = defaultdict(list)
    for key in scores:
        if key in human and key in tasks and _majority(list(human[key])) is not None:
            by_task[tasks[key]].append(key)
    out = {}
    for task, keys in sorted(by_task.items()):
        s = np.array([float(scores[k]) for k in keys])
        y = np.array([bool(_majority(list(human[k]))) for k in keys])
        threshold, in_sample = _best_threshold(s, y)
        k = min(folds, len(keys))
        assignment = rng.permutation(len(keys)) % k
        correct = 0
        for f in range(k):
            train, test = assignment != f, assignment == f
            if not train.any() or not test.any():
                continue
            t, _ = _best_threshold(s[train], y[train])
            correct += int(np.sum(y[test] == (s[test] > t)))
        out[task] = TunedThreshold(task, threshold, in_sample, correct / len(keys), k, len(keys))
    return out
