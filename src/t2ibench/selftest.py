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
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from t2ibench.errors import InputError
from t2ibench.io import output_dir, write_text_atomic
from t2ibench.metrics.geneval import TASKS, GenEvalParams, evaluate_detections

THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(2, 19))  # 0.10 … 0.90
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

    @property
    def agreement(self) -> float:
        """Fraction of images whose verdict equals the truth (NaN without images)."""
        return self.agree / self.images if self.images else float("nan")

    @property
    def false_pass_rate(self) -> float:
        """Passed images among those wrong by construction (NaN when none is wrong)."""
        return self.false_pass / self.truth_wrong if self.truth_wrong else float("nan")

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
        }


def judge(item: JudgedImage, colour: Any, params: GenEvalParams) -> bool:
    """The evaluator's verdict on one image under ``params`` (colours memoised per detection)."""

    def colour_of(requests: list[tuple[str, int]], kept: Mapping[str, Any]) -> dict[tuple[str, int], str]:
        out = {}
        for name, i in requests:
            det = kept[name][i]
            if det.ref not in item.colours:
                (item.colours[det.ref],) = colour.classify(item.image, [(det.box, item.detections.mask(det.ref))], name)
            out[(name, i)] = item.colours[det.ref]
        return out

    return evaluate_detections(item.metadata, item.detections.detections, colour_of, params).correct


def agreement(items: Sequence[JudgedImage], verdicts: Sequence[bool]) -> tuple[Agreement, ...]:
    """Per task (TASKS order, tasks without images left out): verdicts against truth."""
    rows = []
    for task in TASKS:
        pairs = [(i.truth, v) for i, v in zip(items, verdicts, strict=True) if i.metadata["tag"] == task]
        if not pairs:
            continue
        rows.append(
            Agreement(
                task=task,
                images=len(pairs),
                agree=sum(t == v for t, v in pairs),
                truth_wrong=sum(not t for t, _ in pairs),
                false_pass=sum(v and not t for t, v in pairs),
                truth_right=sum(t for t, _ in pairs),
                false_fail=sum(t and not v for t, v in pairs),
            )
        )
    return tuple(rows)


def calibrate(
    items: Sequence[JudgedImage], colour: Any, base: GenEvalParams, *, folds: int = 5, seed: int = 0
) -> tuple[GenEvalParams, tuple[Agreement, ...]]:
    """(thresholds fitted on all images, held-out agreement per task from k-fold cross-validation over prompts)."""
    if folds < 2:
        raise InputError(f"folds must be ≥ 2; got {folds}")
    keys = sorted({(i.model, i.prompt_index) for i in items})
    rng = np.random.default_rng(seed)
    fold_of = {k: int(f) for k, f in zip(keys, rng.permutation(len(keys)) % folds, strict=True)}

    # verdict of every image under every candidate (each parameter only matters to its own tasks)
    counting = [i for i, item in enumerate(items) if item.metadata["tag"] == "counting"]
    other = [i for i, item in enumerate(items) if item.metadata["tag"] != "counting"]
    grid_t = {t: [judge(items[i], colour, replace(base, threshold=t)) for i in other] for t in THRESHOLD_GRID}
    grid_c = {
        c: [judge(items[i], colour, replace(base, counting_threshold=c)) for i in counting] for c in COUNTING_GRID
    }

    def best(grid: Mapping[float, list[bool]], members: list[int], train: set[int]) -> float:
        scores = {
            v: sum(ok == items[i].truth for ok, i in zip(verdicts, members, strict=True) if i in train)
            for v, verdicts in grid.items()
        }
        top = max(scores.values())
        return min(v for v, s in scores.items() if s == top)  # ties: the lowest value (fewest assumptions)

    held_out: dict[int, bool] = {}
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
    return fitted, agreement(items, [held_out[i] for i in range(len(items))])


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
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
    verdicts = [judge(i, colour, params) for i in items]
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
        agreement=agreement(items, verdicts),
        calibrated=calibrated,
        held_out=held_out,
    )


def render_selftest(report: SelfTestReport) -> str:
    """Markdown: the evaluator, per-task agreement with counts, and the calibrated thresholds if any."""

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:.1f}%"

    def table(rows: Sequence[Agreement]) -> list[str]:
        lines = [
            "| task | images | agreement | false pass | false fail |",
            "|---|---:|---:|---:|---:|",
        ]
        for a in rows:
            d = a.to_dict()
            lines.append(
                f"| {a.task} | {a.images} | {pct(d['agreement'])} ({a.agree}/{a.images}) "
                f"| {pct(d['false_pass_rate'])} ({a.false_pass}/{a.truth_wrong}) "
                f"| {pct(d['false_fail_rate'])} ({a.false_fail}/{a.truth_right}) |"
            )
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
        f"{', '.join(report.classes)}; truth by construction.",
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
            "Held-out agreement (cross-validated over prompts; the thresholds were fitted on the other folds):",
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
