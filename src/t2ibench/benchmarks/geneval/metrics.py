"""GenEval's verdict engine (pure): detections and colour labels in, a verdict with its reason out.

Semantics of the reference evaluator (Ghosh et al. 2023), with its defaults as parameters:

1. Keep, per class, the detections scoring above ``threshold`` (``counting_threshold`` for counting
   prompts), highest score first, at most ``max_objects``; optionally greedy IoU de-duplication
   (``max_overlap`` < 1; off by default). IoU uses the reference's inclusive-pixel box areas (w + 1)(h + 1).
2. Include clauses are ANDed in order. For each, take the first ``count`` kept objects of its class;
   fewer → "expected {class}>={count}, found {k}". Else, if a colour is required, fewer than ``count`` of
   those objects with that colour → "expected {colour} {class}>={count}, found {j} {colour}; and " + the
   colours found ("{n} {c}", in colour-list order). Only if the clause still holds and a position
   [relation, g] is required: if clause g failed → "no target for {class} to be {relation}"; else every object
   of this clause must stand in that relation to every object of clause g, and the first failing pair gives
   "expected {class} {relation} target, found {relations} target" (relations in the fixed order left of,
   right of, above, below, joined by " and ").
3. Exclude clauses are ORed: ``count`` or more kept objects of the class fail the image with
   "expected {class}<{count}, found {k}".
4. Reasons are joined by newlines; the image is correct when there are none.

Relation of A to B from boxes: offset = centre_A − centre_B; per axis shrink |offset| by
``position_margin`` × (width_A + width_B) (resp. heights), clamp at 0 and keep the sign; if both shrunk
components are below 1e-3 there is no relation, else divide the shrunk offset by the *unshrunk* ‖offset‖ and
read "left of" x < −0.5, "right of" x > 0.5, "above" y < −0.5, "below" y > 0.5 (image y grows downward).

Arithmetic is float32, as the reference's: its detector returns float32 arrays and numpy keeps array arithmetic
with Python scalars in float32. So a score is compared with float32(threshold) (a score of exactly
float32(0.3) does not pass 0.3), and centres, sizes, offsets, the shrunk offset, its norm and the 1e-3 and ±0.5
comparisons are float32 operations in the reference's order. The reference orders equal scores by numpy's
unstable argsort, reversed (an order that changes between numpy versions); here equal scores keep detection
order. The optional IoU de-duplication is computed in float64.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from t2ibench.benchmarks.geneval.metrics_tasks import TASKS as TASKS  # re-exported: the metrics' task order
from t2ibench.benchmarks.geneval.metrics_tasks import GenEvalParams as GenEvalParams  # re-exported: its thresholds
from t2ibench.errors import InputError
from t2ibench.metrics.checks import check_memory
from t2ibench.metrics.levels import BOOTSTRAP_RESAMPLES, CI_LEVEL
from t2ibench.vision import Box as Box  # re-exported: the detections the engine reads
from t2ibench.vision import Detection as Detection

DEFAULT_PARAMS = GenEvalParams()  # the reference evaluator's thresholds (each function's default)
COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white")
RELATIONS = ("left of", "right of", "above", "below")


@dataclass(frozen=True)
class Verdict:
    """The engine's answer for one image: correct or not, the reason (newline-joined), the kept objects."""

    correct: bool
    reason: str
    kept: Mapping[str, tuple[Detection, ...]] = field(default_factory=dict)
    colours: Mapping[tuple[str, int], str] = field(default_factory=dict)
    relation: str | None = None

    def colours_json(self) -> dict[str, list[str | None]]:
        """Classified colour per kept object, by class and rank (None where the rules needed no colour)."""
        return {
            c: [self.colours.get((c, i)) for i in range(len(objs))]
            for c, objs in self.kept.items()
            if any((c, i) in self.colours for i in range(len(objs)))
        }

    def details_json(self) -> str:
        """The reference's ``details`` field: kept boxes per class as [x1, y1, x2, y2, score] lists."""
        return json.dumps({c: [[*d.box, d.score] for d in objs] for c, objs in self.kept.items()})


def box_iou(a: Box, b: Box) -> float:
    """IoU of two (x1, y1, x2, y2) boxes with the reference's inclusive-pixel areas (w + 1)(h + 1)."""

    def area(x1: float, y1: float, x2: float, y2: float) -> float:
        return max(x2 - x1 + 1, 0.0) * max(y2 - y1 + 1, 0.0)

    inter = area(max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
    union = area(*a) + area(*b) - inter
    return inter / union if union else 0.0


def keep_detections(
    detections: Sequence[Detection], tag: str, params: GenEvalParams = DEFAULT_PARAMS
) -> dict[str, tuple[Detection, ...]]:
    """Per class: above the threshold for ``tag``, highest score first, capped, optionally de-duplicated."""
    threshold = np.float32(params.counting_threshold if tag == "counting" else params.threshold)
    by_class: dict[str, list[Detection]] = {}
    for det in detections:
        by_class.setdefault(det.label, []).append(det)
    kept: dict[str, tuple[Detection, ...]] = {}
    for label, dets in by_class.items():
        passing = (d for d in dets if np.float32(d.score) > threshold)  # float32, as the reference compares
        ordered = sorted(passing, key=lambda d: -np.float32(d.score))[: params.max_objects]
        chosen: list[Detection] = []
        while ordered:
            best = ordered.pop(0)
            chosen.append(best)
            if params.max_overlap < 1.0:
                ordered = [d for d in ordered if box_iou(best.box, d.box) < params.max_overlap]
        if chosen:
            kept[label] = tuple(chosen)
    return kept


def relations(a: Box, b: Box, margin: float = 0.1) -> tuple[str, ...]:
    """Relations of box A to box B, in the fixed order (left of, right of, above, below); () if none.

    float32 throughout, operation for operation as the reference (see the module docstring)."""
    f = np.float32
    a32, b32 = [f(v) for v in a[:4]], [f(v) for v in b[:4]]
    two, m = f(2), f(margin)
    ax, ay = (a32[0] + a32[2]) / two, (a32[1] + a32[3]) / two
    bx, by = (b32[0] + b32[2]) / two, (b32[1] + b32[3]) / two
    dx, dy = ax - bx, ay - by
    wsum = abs(a32[2] - a32[0]) + abs(b32[2] - b32[0])
    hsum = abs(a32[3] - a32[1]) + abs(b32[3] - b32[1])
    rx = max(abs(dx) - m * wsum, f(0)) * np.sign(dx)
    ry = max(abs(dy) - m * hsum, f(0)) * np.sign(dy)
    tiny = f(1e-3)
    if abs(rx) < tiny and abs(ry) < tiny:
        return ()
    norm = np.sqrt(dx * dx + dy * dy)
    x, y = rx / norm, ry / norm
    found = {"left of": x < f(-0.5), "right of": x > f(0.5), "above": y < f(-0.5), "below": y > f(0.5)}
    return tuple(r for r in RELATIONS if found[r])


def observed_relation(
    metadata: Mapping[str, Any], kept: Mapping[str, Sequence[Detection]], margin: float = 0.1
) -> str | None:
    """For a prompt with a position clause: the relation found between its first objects, for failure analysis.

    Returns the relations of the positioned class's top object to its target's top object joined by "+" (in
    the fixed order, e.g. "left of+above"), "no relation" when the centres are too close, "object missing" when
    either class was not kept, and None when the prompt asks for no position.
    """
    include = metadata.get("include", [])
    for clause in include:
        if "position" not in clause:
            continue
        target = include[clause["position"][1]]["class"]
        objects, targets = kept.get(clause["class"], ()), kept.get(target, ())
        if not objects or not targets:
            return "object missing"
        found = relations(objects[0].box, targets[0].box, margin)
        return "+".join(found) if found else "no relation"
    return None


def colour_requests(metadata: Mapping[str, Any], kept: Mapping[str, Sequence[Detection]]) -> list[tuple[str, int]]:
    """(class, index into kept[class]) of every object whose colour the verdict will need."""
    wanted: list[tuple[str, int]] = []
    for clause in metadata.get("include", []):
        objects = kept.get(clause["class"], ())
        if "color" in clause and len(objects) >= clause["count"]:
            wanted += [(clause["class"], i) for i in range(clause["count"]) if (clause["class"], i) not in wanted]
    return wanted


def judge(
    metadata: Mapping[str, Any],
    kept: Mapping[str, Sequence[Detection]],
    colours: Mapping[tuple[str, int], str] | None = None,
    params: GenEvalParams = DEFAULT_PARAMS,
) -> Verdict:
    """Apply the include/exclude rules to kept objects; ``colours`` must cover ``colour_requests``."""
    colours = colours or {}
    reasons: list[str] = []
    groups: list[Sequence[Detection] | None] = []
    for clause in metadata.get("include", []):
        name, count = clause["class"], clause["count"]
        found = list(kept.get(name, ()))[:count]
        matched = True
        if len(found) < count:
            matched = False
            reasons.append(f"expected {name}>={count}, found {len(found)}")
        else:
            if "color" in clause:
                try:
                    seen = [colours[(name, i)] for i in range(count)]
                except KeyError as exc:
                    raise InputError(f"no colour given for {exc.args[0]} (see colour_requests)") from None
                target = clause["color"]
                if seen.count(target) < count:
                    matched = False
                    tally = ", ".join(f"{seen.count(c)} {c}" for c in COLORS if c in seen)
                    reasons.append(
                        f"expected {target} {name}>={count}, found {seen.count(target)} {target}; and {tally}"
                    )
            if "position" in clause and matched:
                relation, target_group = clause["position"]
                targets = groups[target_group] if target_group < len(groups) else None
                if targets is None:
                    matched = False
                    reasons.append(f"no target for {name} to be {relation}")
                else:
                    failure = _first_failing_pair(found, targets, relation, params.position_margin)
                    if failure is not None:
                        matched = False
                        reasons.append(f"expected {name} {relation} target, found {' and '.join(failure)} target")
        groups.append(found if matched else None)
    for clause in metadata.get("exclude", []):
        name, count = clause["class"], clause["count"]
        present = len(kept.get(name, ()))
        if present >= count:
            reasons.append(f"expected {name}<{count}, found {present}")
    kept_tuples = {label: tuple(objs) for label, objs in kept.items()}
    return Verdict(
        correct=not reasons,
        reason="\n".join(reasons),
        kept=kept_tuples,
        colours=dict(colours),
        relation=observed_relation(metadata, kept, params.position_margin),
    )


def _first_failing_pair(
    objects: Sequence[Detection], targets: Sequence[Detection], relation: str, margin: float
) -> tuple[str, ...] | None:
    for obj in objects:
        for target in targets:
            found = relations(obj.box, target.box, margin)
            if relation not in found:
                return found
    return None


def evaluate_detections(
    metadata: Mapping[str, Any],
    detections: Sequence[Detection],
    colour_of: Callable[[list[tuple[str, int]], Mapping[str, Sequence[Detection]]], Mapping[tuple[str, int], str]]
    | None = None,
    params: GenEvalParams = DEFAULT_PARAMS,
) -> Verdict:
    """Keep detections, ask ``colour_of`` for the colours the rules need, and judge the image."""
    kept = keep_detections(detections, metadata["tag"], params)
    requests = colour_requests(metadata, kept)
    colours: Mapping[tuple[str, int], str] = {}
    if requests:
        if colour_of is None:
            raise InputError(f"the prompt {metadata.get('prompt')!r} needs colours but no colour classifier was given")
        colours = colour_of(requests, kept)
    return judge(metadata, kept, colours, params)


# -- Table 2 (the one place its arithmetic lives: summaries, the store and the SQL views all read it) ------------


@dataclass(frozen=True)
class TaskScore:
    """Correct and total images of one task (GenEval Table 2 counts images, not prompts)."""

    task: str
    correct: int
    total: int

    @property
    def accuracy(self) -> float:
        """Fraction of correct images (NaN without images)."""
        return self.correct / self.total if self.total else math.nan


def table2(verdicts: Iterable[tuple[str, bool]]) -> tuple[TaskScore, ...]:
    """Per-task correct/total over (task, correct) verdicts of images, in TASKS order (every task listed)."""
    correct = dict.fromkeys(TASKS, 0)
    total = dict.fromkeys(TASKS, 0)
    for task, ok in verdicts:
        if task not in total:
            raise InputError(f"unknown GenEval task {task!r}")
        total[task] += 1
        correct[task] += bool(ok)
    return tuple(TaskScore(t, correct[t], total[t]) for t in TASKS)


def overall_score(scores: Sequence[TaskScore]) -> float:
    """GenEval's overall score: the unweighted mean of the accuracies of the tasks that have images, as the
    reference ``summary_scores.py`` computes it (NaN without any); say how many tasks it covers next to it."""
    values = [s.accuracy for s in scores if s.total]
    return sum(values) / len(values) if values else math.nan


def tasks_present(scores: Sequence[TaskScore]) -> int:
    """How many tasks the overall score averages (tasks with at least one image)."""
    return sum(1 for s in scores if s.total)


def bootstrap_table2(
    verdicts: Iterable[tuple[str, bool, Any]],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = CI_LEVEL,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals (low, high) at ``level`` of each task's accuracy and of the overall score, from
    (task, correct, prompt) image verdicts: prompts are resampled with replacement within each task, all images of a
    prompt together (``numpy.random.default_rng(seed)``); tasks without images are absent."""
    import numpy as np

    if not 0.0 < level < 1.0:
        raise InputError(f"the confidence level must be in (0, 1); got {level!r}")
    if resamples < 1:
        raise InputError(f"resamples must be ≥ 1; got {resamples!r}")
    per_prompt: dict[str, dict[Any, list[int]]] = {}
    for task, ok, prompt in verdicts:
        if task not in TASKS:
            raise InputError(f"unknown GenEval task {task!r}")
        counts = per_prompt.setdefault(task, {}).setdefault(prompt, [0, 0])
        counts[0] += bool(ok)
        counts[1] += 1
    rng = np.random.default_rng(seed)
    tail = 100 * (1 - level) / 2
    out: dict[str, tuple[float, float]] = {}
    samples = []
    for task in TASKS:  # a fixed task order: the draws do not depend on the order verdicts came in
        if task not in per_prompt:
            continue
        table = np.array([per_prompt[task][p] for p in sorted(per_prompt[task], key=repr)], dtype=np.float64)
        check_memory(  # the draws (int64) and the two gathered columns (float64), each (resamples, prompts)
            24.0 * resamples * len(table),
            what=f"the {task} bootstrap ({resamples} resamples of {len(table)} prompts)",
        )
        draw = rng.integers(0, len(table), size=(resamples, len(table)))
        accuracy = table[draw, 0].sum(axis=1) / table[draw, 1].sum(axis=1)
        samples.append(accuracy)
        low, high = np.percentile(accuracy, [tail, 100 - tail])
        out[task] = (float(low), float(high))
    if samples:
        overall = np.mean(samples, axis=0)
        low, high = np.percentile(overall, [tail, 100 - tail])
        out["overall"] = (float(low), float(high))
    return out


def table2_rows(verdicts: Iterable[tuple[str, bool, Any]], *, level: float = CI_LEVEL) -> list[dict[str, Any]]:
    """``geneval_scores`` rows (task, accuracy, correct, images, tasks, prompts, bootstrap CI) of (task, correct,
    prompt) image verdicts, from ``table2``, ``overall_score`` and ``bootstrap_table2`` (this module is the one place
    Table 2's arithmetic lives); the overall score as task 'overall'. The pipeline and the store's backfill both
    write these rows."""
    items = list(verdicts)
    scores = table2((t, ok) for t, ok, _ in items)
    overall = overall_score(scores)
    intervals = bootstrap_table2(items, level=level)
    prompts = {t: len({p for task, _, p in items if task == t}) for t in TASKS}
    rows: list[dict[str, Any]] = []
    for t in scores:
        low, high = intervals.get(t.task, (None, None))
        rows.append(
            {
                "task": t.task,
                "accuracy": t.accuracy if t.total else None,
                "correct": t.correct,
                "images": t.total,
                "tasks": 1,
                "prompts": prompts[t.task],
                "ci_low": low,
                "ci_high": high,
                "ci_level": level,
            }
        )
    low, high = intervals.get("overall", (None, None))
    rows.append(
        {
            "task": "overall",
            "accuracy": None if overall != overall else overall,
            "correct": sum(t.correct for t in scores),
            "images": sum(t.total for t in scores),
            "tasks": tasks_present(scores),
            "prompts": sum(prompts.values()),
            "ci_low": low,
            "ci_high": high,
            "ci_level": level,
        }
    )
    return rows
