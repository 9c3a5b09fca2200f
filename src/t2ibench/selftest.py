"""The evaluator self-test: how far to trust a GenEval evaluator, measured against construction truth.

Compositor models (``t2ibench.models.compositor``) render a GenEval suite over the classes that have cut-outs; a
faithful one is right on every image, a sloppy one wrong in a known way on a known fraction. The evaluator under
test (any detector and colour classifier from the registries) judges every image, and each verdict is compared with
the image's construction truth: per task, the agreement (accuracy of the verdicts), the false pass rate (images
wrong by construction that the evaluator passes) and the false fail rate (right images it fails), with counts.

``calibrate`` tunes GenEval's two score thresholds for a detector they were not tuned for, against construction
truth, as GenEval tuned them for Mask2Former against human labels: a grid search with k-fold cross-validation over
prompts. ``threshold`` is chosen on the five tasks that read it, ``counting_threshold`` on counting; the held-out
agreement is what the tuned values achieve on prompts they were not fitted on. Detections and colours are computed
once per image and re-judged for every candidate setting.

**Absent objects.** A verdict that matters most for a benchmark is a pass on a prompt whose object is not in the
image. For every judged image the self-test also asks about a class absent by construction: the image's prompt with
one of its objects replaced by a class it does not name (the compositor draws only the prompt's classes, over a
plain or texture background), drawn from all 80 GenEval classes with weight 1 + the number of images on which the
detector reports that class although the prompt does not name it (its own confusions on this image set), seeded.
The probe keeps everything else (count and its exclusion, colour, relation), so it exists in every task where
absence decides the verdict; its truth is "wrong", and a pass is a false pass on an absent object, reported per
task beside the construction agreement. Calibration counts these probes: it maximises correct verdicts on the
construction images and on the probes together (one probe per image, so refusing an absent object weighs as much as
judging the image itself), which punishes a threshold low enough to see objects that are not there.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from t2ibench.errors import InputError
from t2ibench.io import output_dir, write_text_atomic
from t2ibench.metrics.geneval import TASKS, GenEvalParams, evaluate_detections

THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(2, 19))  # 0.10 … 0.90
CONFUSION_FLOOR = THRESHOLD_GRID[0]  # a detection counts as the detector's confusion from the grid's lowest threshold
COUNTING_GRID = tuple(round(0.05 * i, 2) for i in range(4, 20))  # 0.20 … 0.95


@dataclass
class JudgedImage:
    """One compositor image with everything needed to re-judge it under other thresholds."""

    model: str
    prompt_index: int
    sample: int
    metadata: Mapping[str, Any]
    truth: bool
    error: str | None
    detections: Any  # DetectionSet
    image: Any  # PIL image (colours are classified lazily, once per detection)
    colours: dict[int, str] = field(default_factory=dict)
    probe: Mapping[str, Any] | None = None  # the prompt with one object replaced by an absent class (truth: wrong)


@dataclass(frozen=True)
class Agreement:
    """Verdicts against construction truth for one task (counts of images)."""

    task: str
    images: int
    agree: int
    truth_wrong: int
    false_pass: int
    truth_right: int
    false_fail: int
    absent: int = 0  # probes about an absent object (truth: wrong by construction)
    absent_pass: int = 0  # ... that the evaluator passed: false passes on absent objects

    @property
    def agreement(self) -> float:
        """Fraction of images whose verdict equals the truth (NaN without images)."""
        return self.agree / self.images if self.images else float("nan")

    @property
    def false_pass_rate(self) -> float:
        """Passed images among those wrong by construction (NaN when none is wrong)."""
        return self.false_pass / self.truth_wrong if self.truth_wrong else float("nan")

    @property
    def absent_pass_rate(self) -> float:
        """Passed probes among those about an absent object (NaN without probes)."""
        return self.absent_pass / self.absent if self.absent else float("nan")

    @property
    def false_fail_rate(self) -> float:
        """Failed images among those right by construction (NaN when none is right)."""
        return self.false_fail / self.truth_right if self.truth_right else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """Counts and rates (None for NaN), JSON-ready."""

        def num(x: float) -> float | None:
            return None if x != x else round(x, 4)

        return {
            "task": self.task,
            "images": self.images,
            "agreement": num(self.agreement),
            "false_pass_rate": num(self.false_pass_rate),
            "false_fail_rate": num(self.false_fail_rate),
            "agree": self.agree,
            "truth_wrong": self.truth_wrong,
            "false_pass": self.false_pass,
            "truth_right": self.truth_right,
            "false_fail": self.false_fail,
            "absent": self.absent,
            "absent_pass": self.absent_pass,
            "absent_pass_rate": num(self.absent_pass_rate),
        }


def prompt_classes(record: Mapping[str, Any]) -> set[str]:
    """The classes a GenEval prompt record names (include and exclude clauses)."""
    return {c["class"] for c in [*record.get("include", []), *record.get("exclude", [])]}


def confusions(items: Sequence[JudgedImage], floor: float = CONFUSION_FLOOR) -> Counter[str]:
    """Class → the number of images on which the detector reports it (score ≥ ``floor``) though the prompt does not
    name it: on compositor images, objects that are not there."""
    found: Counter[str] = Counter()
    for item in items:
        named = prompt_classes(item.metadata)
        found.update({d.label for d in item.detections.detections if d.score >= floor and d.label not in named})
    return found


def absent_probe(record: Mapping[str, Any], absent: str, clause: int) -> dict[str, Any]:
    """``record`` with include clause ``clause``'s class (and an exclude clause of the same class: counting's) replaced
    by ``absent``; count, colour and relation kept. Its truth on an image without ``absent`` is "wrong"."""
    from t2ibench.suites.geneval import article, plural

    old = record["include"][clause]["class"]
    if absent in prompt_classes(record):
        raise InputError(f"absent_probe: {absent!r} is named by the prompt {record.get('prompt')!r}")
    swap = [dict(c, **{"class": absent}) if c["class"] == old else dict(c) for c in record.get("exclude", [])]
    include = [dict(c, **{"class": absent}) if i == clause else dict(c) for i, c in enumerate(record["include"])]
    text = str(record.get("prompt", ""))
    text = text.replace(f"{article(old)} {old}", f"{article(absent)} {absent}").replace(plural(old), plural(absent))
    probe: dict[str, Any] = {"tag": record["tag"], "include": include, "prompt": text.replace(old, absent)}
    if "exclude" in record:
        probe["exclude"] = swap
    return probe


def add_probes(items: Sequence[JudgedImage], *, seed: int) -> Counter[str]:
    """Give every image an absent-object probe (``JudgedImage.probe``): one of its prompt's objects replaced by a
    class the prompt does not name, drawn from the 80 GenEval classes with weight 1 + the detector's confusions of
    that class on these images (seeded, in item order). Returns the confusion counts."""
    from t2ibench.suites.geneval import vocabulary

    counts = confusions(items)
    classes = vocabulary().classes
    rng = np.random.default_rng(seed)
    for item in items:
        named = prompt_classes(item.metadata)
        pool = [c for c in classes if c not in named]
        weights = np.array([1.0 + counts[c] for c in pool])
        absent = pool[int(rng.choice(len(pool), p=weights / weights.sum()))]
        clause = int(rng.integers(len(item.metadata["include"])))
        item.probe = absent_probe(item.metadata, absent, clause)
    return counts


def judge(item: JudgedImage, colour: Any, params: GenEvalParams, metadata: Mapping[str, Any] | None = None) -> bool:
    """The evaluator's verdict on one image under ``params`` (colours memoised per detection), for its own prompt or
    for ``metadata`` (an absent-object probe)."""

    def colour_of(requests: list[tuple[str, int]], kept: Mapping[str, Any]) -> dict[tuple[str, int], str]:
        out = {}
        for name, i in requests:
            det = kept[name][i]
            if det.ref not in item.colours:
                (item.colours[det.ref],) = colour.classify(item.image, [(det.box, item.detections.mask(det.ref))], name)
            out[(name, i)] = item.colours[det.ref]
        return out

    record = item.metadata if metadata is None else metadata
    return evaluate_detections(record, item.detections.detections, colour_of, params).correct


def probe_verdicts(items: Sequence[JudgedImage], colour: Any, params: GenEvalParams) -> list[bool | None]:
    """The evaluator's verdict on every image's absent-object probe under ``params`` (None: no probe)."""
    return [None if i.probe is None else judge(i, colour, params, i.probe) for i in items]


def agreement(
    items: Sequence[JudgedImage], verdicts: Sequence[bool], probes: Sequence[bool | None] | None = None
) -> tuple[Agreement, ...]:
    """Per task (TASKS order, tasks without images left out): verdicts against truth, and the probes' passes."""
    probes = list(probes) if probes is not None else [None] * len(items)
    rows = []
    for task in TASKS:
        pairs = [(i.truth, v) for i, v in zip(items, verdicts, strict=True) if i.metadata["tag"] == task]
        if not pairs:
            continue
        asked = [p for i, p in zip(items, probes, strict=True) if i.metadata["tag"] == task and p is not None]
        rows.append(
            Agreement(
                task=task,
                images=len(pairs),
                agree=sum(t == v for t, v in pairs),
                truth_wrong=sum(not t for t, _ in pairs),
                false_pass=sum(v and not t for t, v in pairs),
                truth_right=sum(t for t, _ in pairs),
                false_fail=sum(t and not v for t, v in pairs),
                absent=len(asked),
                absent_pass=sum(bool(p) for p in asked),
            )
        )
    return tuple(rows)


def calibrate(
    items: Sequence[JudgedImage], colour: Any, base: GenEvalParams, *, folds: int = 5, seed: int = 0
) -> tuple[GenEvalParams, tuple[Agreement, ...]]:
    """(thresholds fitted on all images, held-out agreement per task from k-fold cross-validation over prompts).

    The objective is the number of correct verdicts on the construction images *and* on their absent-object probes
    (``add_probes``; a probe is correct when it fails): a threshold that passes objects that are not there loses a
    point per probe it passes, as one that misses objects loses a point per image it fails. Ties go to the lowest
    value."""
    if folds < 2:
        raise InputError(f"folds must be ≥ 2; got {folds}")
    keys = sorted({(i.model, i.prompt_index) for i in items})
    rng = np.random.default_rng(seed)
    fold_of = {k: int(f) for k, f in zip(keys, rng.permutation(len(keys)) % folds, strict=True)}

    def verdicts_under(params: GenEvalParams, members: list[int]) -> list[tuple[bool, bool | None]]:
        """(verdict, probe verdict or None) of each member image under ``params``."""
        out = []
        for i in members:
            item = items[i]
            probe = None if item.probe is None else judge(item, colour, params, item.probe)
            out.append((judge(item, colour, params), probe))
        return out

    # verdict of every image under every candidate (each parameter only matters to its own tasks)
    counting = [i for i, item in enumerate(items) if item.metadata["tag"] == "counting"]
    other = [i for i, item in enumerate(items) if item.metadata["tag"] != "counting"]
    grid_t = {t: verdicts_under(replace(base, threshold=t), other) for t in THRESHOLD_GRID}
    grid_c = {c: verdicts_under(replace(base, counting_threshold=c), counting) for c in COUNTING_GRID}

    def points(verdict: tuple[bool, bool | None], truth: bool) -> int:
        ok, probe = verdict
        return int(ok == truth) + (0 if probe is None else int(not probe))

    def best(grid: Mapping[float, list[tuple[bool, bool | None]]], members: list[int], train: set[int]) -> float:
        scores = {
            v: sum(points(x, items[i].truth) for x, i in zip(verdicts, members, strict=True) if i in train)
            for v, verdicts in grid.items()
        }
        top = max(scores.values())
        return min(v for v, s in scores.items() if s == top)  # ties: the lowest value (fewest assumptions)

    held_out: dict[int, tuple[bool, bool | None]] = {}
    for f in range(folds):
        train = {i for i, item in enumerate(items) if fold_of[(item.model, item.prompt_index)] != f}
        t, c = best(grid_t, other, train), best(grid_c, counting, train)
        for pos, i in enumerate(other):
            if i not in train:
                held_out[i] = grid_t[t][pos]
        for pos, i in enumerate(counting):
            if i not in train:
                held_out[i] = grid_c[c][pos]
    everything = set(range(len(items)))
    fitted = replace(
        base, threshold=best(grid_t, other, everything), counting_threshold=best(grid_c, counting, everything)
    )
    order = range(len(items))
    return fitted, agreement(items, [held_out[i][0] for i in order], [held_out[i][1] for i in order])


@dataclass(frozen=True)
class SelfTestReport:
    """What a self-test measured: the evaluator, the suite, agreement with the given and the calibrated thresholds."""

    evaluator: dict[str, Any]
    classes: tuple[str, ...]
    variants: tuple[str, ...]
    images: int
    params: GenEvalParams
    agreement: tuple[Agreement, ...]
    calibrated: GenEvalParams | None = None
    held_out: tuple[Agreement, ...] = ()
    confusions: Mapping[str, int] = field(default_factory=dict)  # the detector's most frequent absent classes
    passed_absent: Mapping[str, int] = field(default_factory=dict)  # absent class → probes passed (given thresholds)

    @staticmethod
    def absent_pass(rows: Sequence[Agreement]) -> tuple[int, int]:
        """(false passes on absent objects, probes) over every task of ``rows``."""
        return sum(a.absent_pass for a in rows), sum(a.absent for a in rows)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        passed, asked = self.absent_pass(self.agreement)
        return {
            "absent_pass": passed,
            "absent": asked,
            "absent_pass_rate": round(passed / asked, 4) if asked else None,
            "confusions": dict(self.confusions),
            "passed_absent": dict(self.passed_absent),
            "evaluator": self.evaluator,
            "classes": list(self.classes),
            "variants": list(self.variants),
            "images": self.images,
            "params": vars(self.params),
            "agreement": [a.to_dict() for a in self.agreement],
            "calibrated": vars(self.calibrated) if self.calibrated else None,
            "held_out": [a.to_dict() for a in self.held_out],
        }


def run_selftest(
    detector: Any,
    colour: Any,
    params: GenEvalParams,
    out: str | Path,
    *,
    per_task: int = 20,
    images_per_prompt: int = 2,
    variants: Sequence[str] = ("faithful", "sloppy:0.5"),
    seed: int = 0,
    suite_seed: int = 43,
    calibrate_folds: int | None = None,
    show_progress: bool = False,
) -> SelfTestReport:
    """Compose a suite over the compositor's classes with each variant into ``out``, judge every image with
    ``detector`` and ``colour``, compare with construction truth; with ``calibrate_folds``, also tune the thresholds."""
    from t2ibench.config import GeneratorConfig
    from t2ibench.images import load_rgb
    from t2ibench.models.compositor import CompositorGenerator, compositor_classes, read_truth
    from t2ibench.suites.geneval import generate_suite

    classes = compositor_classes()
    suite = list(enumerate(generate_suite(seed=suite_seed, per_task=per_task, classes=classes)))
    folder = output_dir(out)
    items: list[JudgedImage] = []
    for variant in variants:
        spec = GeneratorConfig(backend="compositor", model=variant, images_per_prompt=images_per_prompt, seed=seed)
        target = folder / variant.replace(":", "-")
        records = CompositorGenerator(spec, show_progress=show_progress).generate(suite, target)
        truth = read_truth(target)
        metadata = dict(suite)
        for record in records:
            image = load_rgb(record.path)[0]
            (found,) = detector.detect([image])
            t = truth[(record.prompt_index, record.sample)]
            items.append(
                JudgedImage(
                    variant, record.prompt_index, record.sample, metadata[record.prompt_index], t["correct"],
                    t["error"], found, image,
                )
            )  # fmt: skip
    confused = add_probes(items, seed=seed)
    verdicts = [judge(i, colour, params) for i in items]
    probes = probe_verdicts(items, colour, params)
    calibrated: GenEvalParams | None = None
    held_out: tuple[Agreement, ...] = ()
    if calibrate_folds:
        calibrated, held_out = calibrate(items, colour, params, folds=calibrate_folds, seed=seed)
    return SelfTestReport(
        evaluator={"detector": detector.describe(), "colour": colour.describe()},
        classes=classes,
        variants=tuple(variants),
        images=len(items),
        params=params,
        agreement=agreement(items, verdicts, probes),
        calibrated=calibrated,
        held_out=held_out,
        confusions=dict(confused.most_common(10)),
        passed_absent=dict(
            Counter(
                _replaced(i.metadata, i.probe) for i, ok in zip(items, probes, strict=True) if ok and i.probe
            ).most_common()
        ),
    )


def _replaced(record: Mapping[str, Any], probe: Mapping[str, Any]) -> str:
    """The absent class a probe put in place of one of ``record``'s objects."""
    named = prompt_classes(record)
    return str(next(c["class"] for c in probe["include"] if c["class"] not in named))


def render_selftest(report: SelfTestReport) -> str:
    """Markdown: the evaluator, per-task agreement with counts, and the calibrated thresholds if any."""

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:.1f}%"

    def table(rows: Sequence[Agreement]) -> list[str]:
        lines = [
            "| task | images | agreement | false pass | false fail | false pass, absent object |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for a in rows:
            d = a.to_dict()
            lines.append(
                f"| {a.task} | {a.images} | {pct(d['agreement'])} ({a.agree}/{a.images}) "
                f"| {pct(d['false_pass_rate'])} ({a.false_pass}/{a.truth_wrong}) "
                f"| {pct(d['false_fail_rate'])} ({a.false_fail}/{a.truth_right}) "
                f"| {pct(d['absent_pass_rate'])} ({a.absent_pass}/{a.absent}) |"
            )
        passed, asked = SelfTestReport.absent_pass(rows)
        lines += ["", f"False passes on absent objects, all tasks: {pct(passed / asked if asked else None)} "
                  f"({passed}/{asked} probes)."]  # fmt: skip
        return lines

    det, col = report.evaluator["detector"], report.evaluator["colour"]
    lite = "lite" in (det.get("evaluator"), col.get("evaluator"))
    p = report.params
    md = [
        "# Evaluator self-test",
        "",
        f"Detector `{det.get('backend')}`, colour `{col.get('backend')}`"
        + (" — **lite evaluator, not comparable with published GenEval**" if lite else "")
        + f". {report.images} compositor images ({', '.join(report.variants)}) over "
        f"{', '.join(report.classes)}; truth by construction. Each image is also asked about an absent object: its "
        "prompt with one object replaced by a class it does not name (weighted toward the detector's own "
        "confusions: " + (", ".join(f"{k} {v}" for k, v in report.confusions.items()) or "none") + " images); "
        "a pass there is a false pass on an absent object"
        + (
            " (passed with the given thresholds: "
            + ", ".join(f"{k} {v}" for k, v in report.passed_absent.items())
            + ")"
            if report.passed_absent
            else ""
        )
        + ".",
        "",
        f"## With threshold {p.threshold:g}, counting threshold {p.counting_threshold:g}",
        "",
        *table(report.agreement),
    ]
    if report.calibrated is not None:
        c = report.calibrated
        md += [
            "",
            f"## Calibrated: threshold {c.threshold:g}, counting threshold {c.counting_threshold:g}",
            "",
            "Held-out agreement (cross-validated over prompts; the thresholds were fitted on the other folds, "
            "maximising correct verdicts on the images and on their absent-object probes together):",
            "",
            *table(report.held_out),
        ]
    return "\n".join(md) + "\n"


def write_selftest(report: SelfTestReport, out: str | Path) -> list[Path]:
    """selftest.json, selftest.md and, when calibrated, calibrated.yaml (a geneval thresholds block to paste into
    a config, labelled with the evaluator it was calibrated for)."""
    folder = output_dir(out)
    files = [
        write_text_atomic(folder / "selftest.json", json.dumps(report.to_dict(), indent=2) + "\n"),
        write_text_atomic(folder / "selftest.md", render_selftest(report)),
    ]
    if report.calibrated is not None:
        det, col = report.evaluator["detector"]["backend"], report.evaluator["colour"]["backend"]
        c = report.calibrated
        text = (
            f"# GenEval thresholds calibrated by `t2ibench selftest --calibrate` for detector {det} + colour {col}\n"
            f"# against compositor construction truth ({report.images} images); see selftest.md for held-out "
            "agreement.\n"
            f"threshold: {c.threshold}\ncounting_threshold: {c.counting_threshold}\n"
        )
        files.append(write_text_atomic(folder / "calibrated.yaml", text))
    return files
