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

Confidence intervals (``bootstrap_agreement``): a stratified cluster bootstrap. The unit of resampling is the
*cluster* the caller names — for GenEval's annotations the prompt, all its annotated images (and their five
annotations each) together, because the images of one prompt share its difficulty and are not independent; the
strata (GenEval's tasks) keep their number of clusters in every resample, as GenEval's fixed task mix does. Each
statistic is a function of per-image additive features (counts of votes, agreeing pairs, ...), so a resample only
re-sums the drawn clusters' feature totals; the sample's own totals reproduce the point estimates of
``human_agreement`` / ``auto_agreement`` exactly (tested). Intervals are percentiles of the resampled statistic.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from t2ibench.errors import InputError
from t2ibench.metrics.checks import check_memory, check_positive_int, check_seed
from t2ibench.metrics.levels import BOOTSTRAP_RESAMPLES, CI_LEVEL

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
    """Inter-annotator statistics over a set of images, and the human accuracy they come with.

    ``human_accuracy`` (the human score) rests on every annotation of every image (``score_images`` images,
    ``score_annotations`` annotations); the agreement statistics need two annotators of one image and rest on the
    ``images`` images with ≥ 2 annotations (``annotations`` annotations); ``single_annotation_images`` images enter
    the accuracy only.
    """

    images: int
    annotations: int
    human_accuracy: float
    pairwise_agreement: float
    vs_majority_of_others: float
    ties_excluded: int
    cohen_kappa: float
    fleiss_kappa: float
    unanimous_images: int
    score_images: int = 0
    score_annotations: int = 0
    single_annotation_images: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as null)."""
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def _kappa_safe(a: Sequence[bool], b: Sequence[bool]) -> float:
    from sklearn.metrics import cohen_kappa_score

    if len(a) == 0 or len(set(a) | set(b)) < 2:
        return math.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(cohen_kappa_score(np.asarray(a, dtype=int), np.asarray(b, dtype=int)))


def _pooled_pair_kappa(yes_yes: int, no_no: int, yes_no: int) -> float:
    """Cohen's κ of every ordered pair of annotators of one image, pooled over images, from its 2×2 table of pair
    counts (yes-yes, no-no, and yes-no = no-yes): scikit-learn's κ on the four cells, weighted — no pair is built."""
    from sklearn.metrics import cohen_kappa_score

    cells = [(1, 1, yes_yes), (0, 0, no_no), (1, 0, yes_no), (0, 1, yes_no)]
    present = [(a, b, w) for a, b, w in cells if w > 0]
    if not present or len({a for a, _, _ in present} | {b for _, b, _ in present}) < 2:
        return math.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(
            cohen_kappa_score(
                np.array([a for a, _, _ in present]),
                np.array([b for _, b, _ in present]),
                sample_weight=np.array([w for _, _, w in present], dtype=np.float64),
            )
        )


def _others_majority(n: int, y: int) -> tuple[int, int]:
    """(hits, ties) of each of an image's n voters (y of them 'correct') against the majority of the other n − 1."""
    hits = ties = 0
    for vote, others_yes in ((True, y - 1), (False, y)):
        voters = y if vote else n - y
        if 2 * others_yes == n - 1:
            ties += voters
        elif vote == (2 * others_yes > n - 1):
            hits += voters
    return hits, ties


def human_agreement(verdicts: Mapping[K, Sequence[bool]], *, require_pairs: bool = True) -> HumanAgreement:
    """Inter-annotator agreement of human verdicts grouped by image (image → list of annotators' verdicts).

    Linear in the number of annotations: every statistic comes from each image's count of votes and of 'correct'
    votes (agreeing pairs, the pooled pair table of Cohen's κ, each voter against the others' majority), so an
    image with thousands of annotations costs no more than its count. Images with one annotation enter the human
    accuracy only (``score_images``), the agreement statistics need two: without any such image it is an
    InputError, or (``require_pairs=False``) the accuracy alone with the agreement statistics NaN.
    """
    from statsmodels.stats.inter_rater import fleiss_kappa

    tallies = [(len(v), sum(bool(x) for x in v)) for v in verdicts.values() if len(v) >= 1]
    groups = [(n, y) for n, y in tallies if n >= 2]
    if not groups and (require_pairs or not tallies):
        raise InputError("no image has two or more annotations: agreement is undefined")
    pair_rates: list[float] = []
    yes_yes = no_no = yes_no = 0
    hits = ties = 0
    for n, y in groups:
        agree = y * (y - 1) // 2 + (n - y) * (n - y - 1) // 2
        pair_rates.append(agree / (n * (n - 1) // 2))
        yes_yes += y * (y - 1)  # ordered pairs: both orders, as the pooled κ does not depend on who is "first"
        no_no += (n - y) * (n - y - 1)
        yes_no += y * (n - y)
        h, t = _others_majority(n, y)
        hits, ties = hits + h, ties + t
    annotations = sum(n for n, _ in groups)
    counts = np.array([[n - y, y] for n, y in groups], dtype=np.float64)
    equal_raters = len({n for n, _ in groups}) == 1
    with np.errstate(invalid="ignore", divide="ignore"):
        fleiss = float(fleiss_kappa(counts, method="fleiss")) if equal_raters else math.nan
    score_annotations = sum(n for n, _ in tallies)
    return HumanAgreement(
        images=len(groups),
        annotations=annotations,
        human_accuracy=sum(y for _, y in tallies) / score_annotations,
        pairwise_agreement=float(np.mean(pair_rates)) if pair_rates else math.nan,
        vs_majority_of_others=hits / (annotations - ties) if annotations > ties else math.nan,
        ties_excluded=ties,
        cohen_kappa=_pooled_pair_kappa(yes_yes, no_no, yes_no),
        fleiss_kappa=fleiss,
        unanimous_images=sum(y in (0, n) for n, y in groups),
        score_images=len(tallies),
        score_annotations=score_annotations,
        single_annotation_images=len(tallies) - len(groups),
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


# -- confidence intervals -------------------------------------------------------------------------------------

HUMAN_FEATURES = (
    "images",
    "annotations",
    "correct",
    "pair_rate",
    "pairs",
    "agree_pairs",
    "yes_in_pairs",
    "in_pairs",
    "others_hits",
    "others_n",
    "fleiss_p",
    "pair_images",
    "pair_annotations",
    "pair_correct",
)
AUTO_FEATURES = (
    "images",
    "annotations",
    "auto_hits",
    "has_majority",
    "majority_hits",
    "majority_true",
    "auto_true_majority",
    "unanimous",
    "unanimous_hits",
    "auto_true",
)
_H = {name: i for i, name in enumerate(HUMAN_FEATURES)}
_A = {name: i for i, name in enumerate(AUTO_FEATURES)}

# statistic -> the feature whose total is its n (the count the statistic is a share or average of)
HUMAN_N = {
    "human_accuracy": "annotations",
    "pairwise_agreement": "pair_images",
    "vs_majority_of_others": "others_n",
    "cohen_kappa": "pair_images",
    "fleiss_kappa": "pair_images",
}
AUTO_N = {
    "vs_annotators": "annotations",
    "vs_majority": "has_majority",
    "kappa_vs_majority": "has_majority",
    "vs_unanimous": "unanimous",
    "auto_accuracy": "images",
    "human_majority_accuracy": "has_majority",
}


def human_features(votes: Sequence[bool]) -> NDArray[np.float64]:
    """The additive features (len(HUMAN_FEATURES),) of one image's human verdicts (≥ 1 vote), in that order.

    An image with one vote adds to the accuracy features only (images, annotations, correct); every pair feature
    (and the ``pair_*`` counts the agreement statistics rest on) needs two votes.
    """
    n = len(votes)
    if n < 1:
        raise InputError("an image needs a human verdict for agreement features; got none")
    y = int(sum(bool(v) for v in votes))
    if n == 1:
        return np.array([1, 1, y] + [0] * (len(HUMAN_FEATURES) - 3), dtype=np.float64)
    pairs = n * (n - 1) / 2
    agree = (y * (y - 1) + (n - y) * (n - y - 1)) / 2
    hits, ties = _others_majority(n, y)
    fleiss = (y * y + (n - y) * (n - y) - n) / (n * (n - 1))
    values = [1, n, y, agree / pairs, pairs, agree, y * (n - 1), n * (n - 1), hits, n - ties, fleiss, 1, n, y]
    return np.array(values, dtype=np.float64)


def auto_features(votes: Sequence[bool], auto: bool) -> NDArray[np.float64]:
    """The additive features (len(AUTO_FEATURES),) of one image's human verdicts (≥ 1) and its automatic one."""
    n = len(votes)
    if n < 1:
        raise InputError("an image needs a human verdict to compare an automatic one with")
    y = int(sum(bool(v) for v in votes))
    a = bool(auto)
    has_majority = 2 * y != n
    majority = 2 * y > n
    unanimous = y in (0, n)
    values = [
        1,
        n,
        y if a else n - y,
        has_majority,
        has_majority and a == majority,
        has_majority and majority,
        has_majority and a,
        unanimous,
        unanimous and a == bool(votes[0]),
        a,
    ]
    return np.array(values, dtype=np.float64)


def _ratio(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        out: NDArray[np.float64] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return out


def _kappa(observed: NDArray[np.float64], expected: NDArray[np.float64]) -> NDArray[np.float64]:
    """(p_o − p_e) / (1 − p_e); NaN where p_e = 1 (one class only: κ undefined, as scikit-learn's)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out: NDArray[np.float64] = np.where(expected < 1.0, (observed - expected) / (1.0 - expected), np.nan)
    return out


def human_statistics(totals: NDArray[np.float64], *, fleiss: bool = True) -> dict[str, NDArray[np.float64]]:
    """Inter-annotator statistics from summed ``human_features`` (..., len(HUMAN_FEATURES)); shape (...) each.

    Same definitions as ``human_agreement``: pooled accuracy over every annotation, per-image pairwise agreement
    averaged over the images with ≥ 2 annotations, each annotator vs the majority of the others (ties left out),
    Cohen's κ over all annotator pairs in both orders, Fleiss' κ (``fleiss=False``: NaN, for images with unequal
    numbers of annotators).
    """
    t = np.asarray(totals, dtype=np.float64)
    f = {name: t[..., i] for name, i in _H.items()}
    p_pairs = _ratio(f["yes_in_pairs"], f["in_pairs"])
    p_votes = _ratio(f["correct"], f["annotations"])
    p_paired = _ratio(f["pair_correct"], f["pair_annotations"])  # the votes of images with ≥ 2
    out = {
        "human_accuracy": p_votes,
        "pairwise_agreement": _ratio(f["pair_rate"], f["pair_images"]),
        "vs_majority_of_others": _ratio(f["others_hits"], f["others_n"]),
        "cohen_kappa": _kappa(_ratio(f["agree_pairs"], f["pairs"]), p_pairs**2 + (1 - p_pairs) ** 2),
        "fleiss_kappa": _kappa(_ratio(f["fleiss_p"], f["pair_images"]), p_paired**2 + (1 - p_paired) ** 2),
    }
    if not fleiss:
        out["fleiss_kappa"] = np.full_like(p_votes, np.nan)
    return out


def auto_statistics(totals: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Automatic-vs-human statistics from summed ``auto_features`` (..., len(AUTO_FEATURES)); shape (...) each,
    with ``auto_agreement``'s definitions (κ against the majority over the images that have one)."""
    t = np.asarray(totals, dtype=np.float64)
    f = {name: t[..., i] for name, i in _A.items()}
    p_auto = _ratio(f["auto_true_majority"], f["has_majority"])
    p_major = _ratio(f["majority_true"], f["has_majority"])
    observed = _ratio(f["majority_hits"], f["has_majority"])
    return {
        "vs_annotators": _ratio(f["auto_hits"], f["annotations"]),
        "vs_majority": observed,
        "kappa_vs_majority": _kappa(observed, p_auto * p_major + (1 - p_auto) * (1 - p_major)),
        "vs_unanimous": _ratio(f["unanimous_hits"], f["unanimous"]),
        "auto_accuracy": _ratio(f["auto_true"], f["images"]),
        "human_majority_accuracy": p_major,
    }


def stratified_cluster_totals(
    features: NDArray[np.float64],
    clusters: Sequence[Hashable],
    strata: Sequence[Hashable],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[list[Hashable], NDArray[np.float64], NDArray[np.float64]]:
    """(strata, sample totals (S, d), resample totals (resamples, S, d)) of additive unit features (n, d).

    Within each stratum its m clusters are drawn m times with replacement, every unit of a drawn cluster with it
    (``numpy.random.default_rng(seed)``; strata and clusters in sorted-repr order, so the draws do not depend on the
    order units come in). A cluster must lie in one stratum.
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2 or len(clusters) != x.shape[0] or len(strata) != x.shape[0]:
        raise InputError(f"features {x.shape} need one cluster and one stratum per row")
    if x.shape[0] == 0:
        raise InputError("no units to bootstrap")
    b = check_positive_int(resamples, name="resamples")
    rng = np.random.default_rng(check_seed(seed))
    home: dict[Hashable, Hashable] = {}
    for c, s in zip(clusters, strata, strict=True):
        if home.setdefault(c, s) != s:
            raise InputError(f"cluster {c!r} lies in two strata ({home[c]!r}, {s!r}); clusters must nest in strata")
    order = sorted(set(strata), key=repr)
    members: dict[Hashable, list[Hashable]] = defaultdict(list)
    for c, s in home.items():
        members[s].append(c)
    units: dict[Hashable, list[int]] = defaultdict(list)  # one pass: strata × units would be quadratic
    for i, s in enumerate(strata):
        units[s].append(i)
    d = x.shape[1]
    widest = max(len(members[s]) for s in order)
    check_memory(
        bootstrap_bytes(b, len(order), widest, d),
        what=f"a bootstrap of {b} resamples over {len(home)} clusters in {len(order)} strata",
    )
    sample = np.zeros((len(order), d))
    replicates = np.zeros((b, len(order), d))
    for j, stratum in enumerate(order):
        names = sorted(members[stratum], key=repr)
        index = {c: i for i, c in enumerate(names)}
        rows = units[stratum]
        sums = np.zeros((len(names), d))
        np.add.at(sums, [index[clusters[i]] for i in rows], x[rows])
        draw = rng.integers(0, len(names), size=(b, len(names)))
        sample[j] = sums.sum(axis=0)
        step = max(1, _GATHER_BYTES // (8 * len(names) * d))  # resamples gathered at a time: bounded memory
        for start in range(0, b, step):
            replicates[start : start + step, j] = sums[draw[start : start + step]].sum(axis=1)
    return order, sample, replicates


_GATHER_BYTES = 32 * 2**20


def bootstrap_bytes(resamples: int, strata: int, widest: int, features: int) -> int:
    """Bytes ``stratified_cluster_totals`` holds at once: the resample totals (resamples × strata × features), one
    stratum's draws (resamples × its clusters) and a bounded gather, plus the statistics of every resample and
    stratum computed from them (about two dozen arrays of resamples × strata)."""
    totals = resamples * strata * features * 8
    draws = resamples * widest * 8
    gather = min(_GATHER_BYTES, resamples * widest * features * 8) + widest * features * 8
    return totals + draws + gather + 24 * resamples * (strata + 1) * 8


def percentile_interval(replicates: NDArray[np.float64], level: float = CI_LEVEL) -> tuple[float, float]:
    """Percentile interval (low, high) at ``level`` of bootstrap replicates; resamples in which the statistic is
    undefined (NaN) are left out, and with more than half of them undefined there is no interval (NaN, NaN)."""
    if not 0.0 < level < 1.0:
        raise InputError(f"the confidence level must be in (0, 1); got {level!r}")
    r = np.asarray(replicates, dtype=np.float64).ravel()
    finite = r[np.isfinite(r)]
    if finite.size == 0 or 2 * finite.size < r.size:
        return math.nan, math.nan
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class Estimate:
    """A statistic's value on the sample, its bootstrap interval [low, high] at ``level`` (NaN where it has none)
    and n, the count it is a share or mean of (annotations, images, ..., or strata for a mean over strata)."""

    value: float
    low: float
    high: float
    level: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready with the store's column names (NaN as null)."""
        clean = {"value": self.value, "ci_low": self.low, "ci_high": self.high, "ci_level": self.level}
        return {k: None if math.isnan(v) else v for k, v in clean.items()} | {"n": self.n}


@dataclass(frozen=True)
class AgreementIntervals:
    """Bootstrap estimates of one slice: ``pooled`` (the statistics over all its images) and ``stratum_mean``
    (the unweighted mean over strata of each statistic, as GenEval averages its tasks; only with ≥ 2 strata)."""

    pooled: dict[str, Estimate]
    stratum_mean: dict[str, Estimate]
    clusters: int
    strata: int
    resamples: int
    level: float
    seed: int


def bootstrap_agreement(
    human: Mapping[K, Sequence[bool]],
    clusters: Mapping[K, Hashable],
    strata: Mapping[K, Hashable],
    auto: Mapping[K, bool] | None = None,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = CI_LEVEL,
    seed: int = 0,
    require_pairs: bool = True,
) -> AgreementIntervals:
    """Stratified cluster-bootstrap intervals of the ``human_agreement`` statistics (``auto`` None: the accuracy
    over every image with a verdict, the agreement statistics over images with ≥ 2) or of the ``auto_agreement``
    statistics (images with human and automatic verdicts).

    ``clusters[k]`` is the resampling unit of image k (e.g. its prompt), ``strata[k]`` its stratum (e.g. its task);
    percentile intervals at ``level`` from ``resamples`` draws of ``numpy.random.default_rng(seed)``.
    ``require_pairs=False``: images with one annotation each are the accuracy's interval alone (the agreement
    statistics NaN) instead of an InputError.
    """
    percentile_interval(np.zeros(1), level)  # validates the level before any work
    if auto is None:
        keys = [k for k, v in human.items() if len(v) >= 1]  # one annotation counts towards the accuracy
        if not keys or (require_pairs and not any(len(human[k]) >= 2 for k in keys)):
            raise InputError("no image has two or more annotations: agreement is undefined")
        rows = [human_features(human[k]) for k in keys]
    else:
        keys = [k for k in human if k in auto and human[k]]
        if not keys:
            raise InputError("no image has both human and automatic verdicts")
        rows = [auto_features(human[k], auto[k]) for k in keys]
    missing = [k for k in keys if k not in clusters or k not in strata]
    if missing:
        raise InputError(f"image {missing[0]!r} has no cluster or stratum for the bootstrap")
    names, sample, replicates = stratified_cluster_totals(
        np.stack(rows), [clusters[k] for k in keys], [strata[k] for k in keys], resamples=resamples, seed=seed
    )
    stats: Callable[[NDArray[np.float64]], dict[str, NDArray[np.float64]]]
    if auto is None:
        stats = partial(human_statistics, fleiss=len({len(human[k]) for k in keys if len(human[k]) >= 2}) == 1)
        n_of, index = HUMAN_N, _H
    else:
        stats, n_of, index = auto_statistics, AUTO_N, _A
    total = sample.sum(axis=0)
    point, draws = stats(total), stats(replicates.sum(axis=1))
    pooled = {
        name: Estimate(float(point[name]), *percentile_interval(draws[name], level), level, int(total[index[n]]))
        for name, n in n_of.items()
    }
    means: dict[str, Estimate] = {}
    if len(names) >= 2:
        per_point, per_draw = stats(sample), stats(replicates)  # (S,) and (resamples, S)
        for name in n_of:
            with np.errstate(invalid="ignore"):
                value = float(np.mean(per_point[name]))
                draw_means = np.mean(per_draw[name], axis=1)
            means[name] = Estimate(value, *percentile_interval(draw_means, level), level, len(names))
    return AgreementIntervals(
        pooled=pooled,
        stratum_mean=means,
        clusters=len(set(clusters[k] for k in keys)),
        strata=len(names),
        resamples=resamples,
        level=level,
        seed=seed,
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
    """(threshold, agreement) maximising mean(labels == (scores > threshold)); midpoints between sorted scores.

    O(n log n): the scores are sorted once and each candidate's agreement counted from cumulative label counts
    (``scores > t`` is every score after the ``searchsorted`` position of t), not by rescanning all scores.
    """
    order = np.sort(np.unique(scores))
    candidates = np.concatenate([[order[0] - 1.0], (order[:-1] + order[1:]) / 2, [order[-1] + 1.0]])
    ranked = np.argsort(scores, kind="stable")
    sorted_scores = scores[ranked]
    true_before = np.concatenate([[0], np.cumsum(labels[ranked].astype(np.int64))])  # labels True among the first k
    at_most = np.searchsorted(sorted_scores, candidates, side="right")  # scores ≤ t: judged not correct
    hits = (true_before[-1] - true_before[at_most]) + (at_most - true_before[at_most])
    best = int(np.argmax(hits))
    return float(candidates[best]), float(hits[best] / len(scores))


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
