"""GenEval's trust numbers from its released annotations: human verdicts, inter-annotator and auto-vs-human
agreement per source and task, each with a bootstrap interval, and tuned baselines — the glue between annotations,
suite and results.

Intervals: percentile bootstrap over *prompts* (every annotated image of a prompt, with all its annotations,
drawn together), stratified by GenEval task; for the pooled source ``all`` a prompt's images of every source are
one cluster. GenEval annotated all four samples of each of 100 prompts per source, and a prompt's samples share
its difficulty, so images are not independent draws (``t2ibench.metrics.agreement.bootstrap_agreement``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from t2ibench import artifacts
from t2ibench.benchmarks.geneval.evaluate import ResultRow
from t2ibench.benchmarks.geneval.metrics import TASKS
from t2ibench.benchmarks.geneval.suite_annotations import Annotation, LoadReport
from t2ibench.errors import InputError, unknown_choice
from t2ibench.io import read_jsonl
from t2ibench.metrics.agreement import (
    AgreementIntervals,
    AutoAgreement,
    Estimate,
    HumanAgreement,
    TunedThreshold,
    auto_agreement,
    bootstrap_agreement,
    human_agreement,
    human_verdict,
    tune_threshold,
)
from t2ibench.metrics.levels import BOOTSTRAP_RESAMPLES, CI_LEVEL

ALL = "all"
ImageKey = tuple[str, int, int]
HUMAN_SCOPE = "human"
# statistics also reported as the unweighted mean over GenEval's tasks (row '<name>_task_mean', task 'all')
TASK_MEANS = {HUMAN_SCOPE: ("human_accuracy", "pairwise_agreement"), "auto": ("vs_annotators", "vs_majority")}
TASK_MEAN_SUFFIX = "_task_mean"


@dataclass
class HumanVerdicts:
    """Human verdicts per image (one per annotator), each image's task, and the reasons of failed annotations."""

    verdicts: dict[ImageKey, list[bool]] = field(default_factory=dict)
    tasks: dict[ImageKey, str] = field(default_factory=dict)
    reasons: dict[tuple[ImageKey, int], str] = field(default_factory=dict)

    @property
    def sources(self) -> list[str]:
        """Sources (models) present, in first-seen order."""
        return list(dict.fromkeys(k[0] for k in self.verdicts))


def human_verdicts(annotations: Sequence[Annotation], suite: Sequence[Mapping[str, Any]]) -> HumanVerdicts:
    """Apply the human verdict rule to every annotation (prompt records looked up by prompt_id)."""
    out = HumanVerdicts()
    for a in annotations:
        if not 0 <= a.prompt_id < len(suite):
            raise InputError(f"annotation line {a.line}: prompt_id {a.prompt_id} outside the suite")
        metadata = suite[a.prompt_id]
        correct, reason = human_verdict(metadata, a)
        out.verdicts.setdefault(a.image_key, []).append(correct)
        out.tasks[a.image_key] = metadata["tag"]
        if not correct:
            out.reasons[(a.image_key, a.slot)] = reason
    return out


def load_all_annotations(
    paths: Sequence[str | Path], suite: Sequence[Mapping[str, Any]]
) -> tuple[list[Annotation], list[LoadReport]]:
    """Annotations of several CSV files; a file given twice, or two files annotating one image, is an error."""
    from t2ibench.benchmarks.geneval.suite_annotations import load_annotations

    seen: dict[Path, str] = {}
    owner: dict[ImageKey, str] = {}
    annotations: list[Annotation] = []
    reports: list[LoadReport] = []
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise InputError(f"{path}: given twice (also as {seen[resolved]}); each annotation file once")
        seen[resolved] = str(path)
        found, report = load_annotations(path, suite)
        for a in found:
            other = owner.get(a.image_key)
            if other is not None and other != str(path):
                raise InputError(
                    f"{path}: annotates image {a.source} {a.prompt_id:05d}/{a.image_id} that {other} also annotates; "
                    "merge the files or keep one (its annotators would be counted twice)"
                )
            owner[a.image_key] = str(path)
        annotations += found
        reports.append(report)
    if not annotations:
        raise InputError("no usable annotations were loaded (see the load reports)")
    return annotations, reports


def parse_auto_spec(spec: str, sources: Sequence[str]) -> tuple[str, str]:
    """(source, results path) of '--auto [SOURCE=]RESULTS'; SOURCE may be left out only with one source."""
    source, _, path = spec.rpartition("=")
    if not source:
        if len(sources) != 1:
            raise InputError(f"--auto {spec}: name the source (SOURCE=PATH); annotations cover {', '.join(sources)}")
        source = sources[0]
    if source not in sources:
        raise unknown_choice("annotated source", source, sources)
    return source, path


def auto_verdicts(rows: Sequence[ResultRow], source: str) -> dict[ImageKey, bool]:
    """Automatic verdicts keyed like annotations: (source, prompt folder number, sample number)."""
    out: dict[ImageKey, bool] = {}
    for row in rows:
        if row.prompt_index is None or not (row.sample.isascii() and row.sample.isdigit()):
            raise InputError(
                f"{row.filename}: cannot read prompt and image ids from the path (<NNNNN>/samples/<k>.png)"
            )
        key = (source, row.prompt_index, int(row.sample))
        if key in out:
            raise InputError(f"{row.filename}: a second verdict for image {row.prompt_index:05d}/{int(row.sample)}")
        out[key] = row.correct
    return out


def read_scores(path: str | Path) -> dict[ImageKey, float]:
    """Scalar scores per image from JSON lines {"source", "prompt_id", "image_id", "score"} (e.g. CLIPScore)."""
    out: dict[ImageKey, float] = {}
    for where, r in read_jsonl(path):
        ok = isinstance(r, dict) and isinstance(r.get("source"), str)
        ok = ok and all(isinstance(r.get(k), int) and not isinstance(r.get(k), bool) for k in ("prompt_id", "image_id"))
        score = r.get("score") if isinstance(r, dict) else None
        ok = ok and isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score)
        if not ok or not isinstance(score, (int, float)):
            raise InputError(f"{where}: expected {{source: str, prompt_id: int, image_id: int, score: finite number}}")
        key = (r["source"], r["prompt_id"], r["image_id"])
        if key in out:
            raise InputError(f"{where}: a second score for image {key[0]} {key[1]:05d}/{key[2]}")
        out[key] = float(score)
    return out


@dataclass
class AgreementReport:
    """Every table of the analysis, keyed by (source or 'all', task or 'all')."""

    human: dict[tuple[str, str], HumanAgreement] = field(default_factory=dict)
    auto: dict[str, dict[tuple[str, str], AutoAgreement]] = field(default_factory=dict)
    tuned: dict[str, TunedThreshold] = field(default_factory=dict)
    coverage: dict[str, str] = field(default_factory=dict)
    # (scope, source, task) -> statistic -> estimate with interval; scope 'human' or 'auto:<label>'; task 'all'
    # also holds the '<statistic>_task_mean' rows
    intervals: dict[tuple[str, str, str], dict[str, Estimate]] = field(default_factory=dict)
    ci: dict[str, Any] = field(default_factory=dict)

    def estimate(self, scope: str, source: str, task: str, statistic: str) -> Estimate | None:
        """The interval estimate of one statistic, or None where none was computed."""
        return self.intervals.get((scope, source, task), {}).get(statistic)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready nested dict."""
        return {
            "human": {f"{s}/{t}": v.to_dict() for (s, t), v in self.human.items()},
            "auto": {
                name: {f"{s}/{t}": v.to_dict() for (s, t), v in table.items()} for name, table in self.auto.items()
            },
            "intervals": {
                f"{scope}|{s}/{t}": {k: e.to_dict() for k, e in stats.items()}
                for (scope, s, t), stats in self.intervals.items()
            },
            "ci": self.ci,
            "tuned_thresholds": {t: v.__dict__ for t, v in self.tuned.items()},
            "coverage": self.coverage,
        }


def _slices(hv: HumanVerdicts) -> list[tuple[str, str, list[ImageKey]]]:
    """(source or 'all', task or 'all', its images) of every non-empty slice, in one pass over the images (a
    scan per source would be quadratic in the number of sources an annotation file's URLs name)."""
    members: dict[tuple[str, str], list[ImageKey]] = {}
    for k in hv.verdicts:
        for source in (k[0], ALL):
            for task in (hv.tasks[k], ALL):
                members.setdefault((source, task), []).append(k)
    slices = []
    for source in [*hv.sources, ALL]:
        for task in [*TASKS, ALL]:
            keys = members.get((source, task))
            if keys:
                slices.append((source, task, keys))
    return slices


def _intervals(
    report: AgreementReport, scope: str, source: str, task: str, boot: AgreementIntervals, means: Sequence[str]
) -> None:
    stats = dict(boot.pooled)
    if task == ALL:
        stats |= {f"{name}{TASK_MEAN_SUFFIX}": boot.stratum_mean[name] for name in means if name in boot.stratum_mean}
    report.intervals[(scope, source, task)] = stats


def agreement_report(
    hv: HumanVerdicts,
    auto: Mapping[str, Mapping[ImageKey, bool]] | None = None,
    scores: Mapping[ImageKey, float] | None = None,
    *,
    folds: int = 5,
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
    ci_level: float = CI_LEVEL,
    ci_seed: int = 0,
) -> AgreementReport:
    """Human agreement per (source, task), auto-vs-human for each automatic verdict set, each statistic with a
    percentile-bootstrap interval at ``ci_level`` (``resamples`` draws over prompts, stratified by task, seeded
    ``ci_seed``), and tuned score thresholds (``folds``-fold CV, seeded ``seed``)."""
    report = AgreementReport()
    report.ci = {
        "level": ci_level,
        "resamples": resamples,
        "seed": ci_seed,
        "method": "percentile bootstrap over prompts (all images of a prompt together), stratified by task",
    }
    if not any(len(v) >= 2 for v in hv.verdicts.values()):
        raise InputError("no image has two or more annotations in any source: agreement is undefined")
    prompt = {k: k[1] for k in hv.verdicts}  # the cluster: a prompt's images (of every source, for 'all')
    for source, task, keys in _slices(hv):
        subset = {k: hv.verdicts[k] for k in keys}
        # the human accuracy needs one annotation of an image, agreement two: a slice without any image of 2+
        # annotations has its accuracy alone, and says so
        single = sum(len(v) == 1 for v in subset.values())
        if single:
            report.coverage[f"human {source}/{task}"] = (
                f"{single} of its {len(keys)} images have a single annotation: in the human accuracy, in no "
                "agreement statistic"
            )
        report.human[(source, task)] = human_agreement(subset, require_pairs=False)
        found = bootstrap_agreement(
            subset, prompt, hv.tasks, resamples=resamples, level=ci_level, seed=ci_seed, require_pairs=False
        )
        _intervals(report, HUMAN_SCOPE, source, task, found, TASK_MEANS[HUMAN_SCOPE])
    for name, verdicts in (auto or {}).items():
        table: dict[tuple[str, str], AutoAgreement] = {}
        for source, task, keys in _slices(hv):
            subset = {k: hv.verdicts[k] for k in keys if k in verdicts}
            if subset:
                table[(source, task)] = auto_agreement(subset, verdicts)
                found = bootstrap_agreement(
                    subset, prompt, hv.tasks, verdicts, resamples=resamples, level=ci_level, seed=ci_seed
                )
                _intervals(report, f"auto:{name}", source, task, found, TASK_MEANS["auto"])
        report.auto[name] = table
        annotated = set(hv.verdicts)
        judged = annotated & set(verdicts)
        report.coverage[name] = f"{len(judged)} of {len(annotated)} annotated images have automatic verdicts"
    if scores:
        report.tuned = tune_threshold(scores, hv.verdicts, hv.tasks, folds=folds, seed=seed)
        covered = len(set(scores) & set(hv.verdicts))
        report.coverage["scores"] = f"{covered} of {len(hv.verdicts)} annotated images have scores"
    return report


@dataclass
class AgreementRun:
    """Everything one agreement analysis produced: the tables, the human verdicts and what loading did."""

    report: AgreementReport
    verdicts: HumanVerdicts
    annotations: list[Annotation]
    loads: list[LoadReport]
    suite: Sequence[Mapping[str, Any]]


@dataclass
class AgreementInputs:
    """Every input of an agreement analysis, read and checked: the annotations (and what loading each file did),
    the human verdicts, the automatic verdicts of ``--auto`` results files and the ``--scores``, if given."""

    annotations: list[Annotation]
    loads: list[LoadReport]
    verdicts: HumanVerdicts
    automatic: dict[ImageKey, bool]
    scores: dict[ImageKey, float] | None


def load_agreement_inputs(
    annotation_paths: Sequence[str | Path],
    suite: Sequence[Mapping[str, Any]],
    *,
    auto: Sequence[str] = (),
    scores: str | Path | None = None,
) -> AgreementInputs:
    """Read and check every input file of the analysis (annotations, each once; ``auto``: ``[SOURCE=]results.jsonl``
    each; ``scores``) — under a second for GenEval's files; ``agreement --flow`` calls it before starting the flow."""
    from t2ibench.benchmarks.geneval.evaluate import read_results

    annotations, loads = load_all_annotations(annotation_paths, suite)
    verdicts = human_verdicts(annotations, suite)
    automatic: dict[ImageKey, bool] = {}
    for spec in auto:
        source, path = parse_auto_spec(spec, verdicts.sources)
        for key, value in auto_verdicts(read_results(path), source).items():
            if key in automatic:
                raise InputError(f"--auto {spec}: image {key[0]} {key[1]:05d}/{key[2]} already has a verdict")
            automatic[key] = value
    return AgreementInputs(annotations, loads, verdicts, automatic, read_scores(scores) if scores else None)


def run_agreement(
    annotation_paths: Sequence[str | Path],
    suite: Sequence[Mapping[str, Any]],
    *,
    auto: Sequence[str] = (),
    auto_label: str = "geneval",
    scores: str | Path | None = None,
    folds: int = 5,
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
    ci_level: float = CI_LEVEL,
    ci_seed: int = 0,
) -> AgreementRun:
    """The whole analysis: load annotations (each file once), human verdicts, automatic verdicts from results files
    (``auto``: ``[SOURCE=]results.jsonl`` each), agreement tables with bootstrap intervals (``resamples``,
    ``ci_level``, ``ci_seed``) and, with ``scores``, tuned thresholds (``folds``, ``seed``)."""
    found = load_agreement_inputs(annotation_paths, suite, auto=auto, scores=scores)
    annotations, loads, verdicts, automatic = found.annotations, found.loads, found.verdicts, found.automatic
    report = agreement_report(
        verdicts,
        {auto_label: automatic} if automatic else None,
        found.scores,
        folds=folds,
        seed=seed,
        resamples=resamples,
        ci_level=ci_level,
        ci_seed=ci_seed,
    )
    return AgreementRun(report=report, verdicts=verdicts, annotations=annotations, loads=loads, suite=suite)


def _ci_numbers(report: AgreementReport, key: str, source: str, statistic: str) -> dict[str, Any]:
    found = report.estimate(HUMAN_SCOPE, source, ALL, statistic)
    if found is None:
        return {}
    return {f"{key}_ci_{side}": None if math.isnan(v) else v for side, v in (("low", found.low), ("high", found.high))}


def headline(run: AgreementRun) -> dict[str, Any]:
    """The numbers DVC tracks (metrics.json): pooled inter-annotator agreement and each source's human score, with
    their bootstrap intervals (``*_ci_low`` / ``*_ci_high`` at ``ci_level``) and the images and annotations each
    rests on (the agreement: images with 2+ annotations; the human score: every annotation), at the paper artifacts'
    stated precision (``t2ibench.artifacts``)."""
    report = run.report
    pooled = report.human[(ALL, ALL)]
    numbers: dict[str, Any] = {
        "inter_annotator_pairwise": pooled.pairwise_agreement,
        **_ci_numbers(report, "inter_annotator_pairwise", ALL, "pairwise_agreement"),
        "fleiss_kappa": pooled.fleiss_kappa,
        "annotations": pooled.annotations,  # what the agreement statistics rest on (images with 2+ annotations)
        "images": pooled.images,
        "single_annotation_images": pooled.single_annotation_images,
    }
    if report.ci:
        numbers["ci_level"] = report.ci["level"]
    mean = report.estimate(HUMAN_SCOPE, ALL, ALL, f"pairwise_agreement{TASK_MEAN_SUFFIX}")
    if mean is not None:
        numbers["inter_annotator_pairwise_task_mean"] = mean.value
    for source in run.verdicts.sources:
        numbers[f"human_score_{source}"] = human_score(run.verdicts, source)
        rests = [v for k, v in run.verdicts.verdicts.items() if k[0] == source]
        numbers[f"human_score_images_{source}"] = len(rests)  # what the human score rests on
        numbers[f"human_score_annotations_{source}"] = sum(len(v) for v in rests)
        numbers |= _ci_numbers(report, f"human_score_{source}", source, "human_accuracy")
        accuracies = [h.human_accuracy for (s, t), h in report.human.items() if s == source and t != ALL]
        numbers[f"human_score_task_mean_{source}"] = sum(accuracies) / len(accuracies)
        numbers |= _ci_numbers(report, f"human_score_task_mean_{source}", source, f"human_accuracy{TASK_MEAN_SUFFIX}")
    return artifacts.stated(numbers)


def human_score(verdicts: HumanVerdicts, source: str) -> float:
    """GenEval Table 2's "Human" figure for a source: the share of *annotations* (each annotator's verdict on each
    image) that find the image correct, pooled over every task — the aggregation that reproduces the paper's 0.42
    (CLIP retrieval) and 0.57 (SD v2.1) on the released annotations at two decimals. The unweighted mean of the six
    per-task accuracies (0.43 / 0.58) is reported beside it as ``human_score_task_mean``. An image with a single
    annotation counts (a verdict needs one annotator; agreement needs two), as in the per-source tables."""
    votes = [ok for key, vs in verdicts.verdicts.items() if key[0] == source for ok in vs]
    if not votes:
        raise InputError(f"no annotations of source {source!r}")
    return sum(votes) / len(votes)


def _row(scope: str, source: str, task: str, statistic: str, value: float, found: Estimate | None) -> dict[str, Any]:
    interval = found.to_dict() if found is not None else {}
    return {
        "scope": scope,
        "source": source,
        "task": task,
        "statistic": statistic,
        "value": float(value),
        "ci_low": interval.get("ci_low"),
        "ci_high": interval.get("ci_high"),
        "ci_level": interval.get("ci_level") if interval.get("ci_low") is not None else None,
        "n": found.n if found is not None else None,
    }


def agreement_rows(report: AgreementReport) -> list[dict[str, Any]]:
    """The ``agreement`` table's rows (scope, source, task, statistic, value, ci_low, ci_high, ci_level, n): every
    defined statistic; interval columns where a bootstrap interval exists (None for counts such as ``images``),
    and the ``<statistic>_task_mean`` rows (unweighted mean over tasks) for task 'all'."""
    rows: list[dict[str, Any]] = []
    tables: list[tuple[str, Mapping[tuple[str, str], HumanAgreement | AutoAgreement]]] = [(HUMAN_SCOPE, report.human)]
    tables += [(f"auto:{label}", table) for label, table in report.auto.items()]
    for scope, table in tables:
        for (source, task), result in table.items():
            for statistic, value in result.to_dict().items():
                if value is not None:
                    rows.append(
                        _row(scope, source, task, statistic, value, report.estimate(scope, source, task, statistic))
                    )
            for statistic, found in report.intervals.get((scope, source, task), {}).items():
                if statistic.endswith(TASK_MEAN_SUFFIX) and not math.isnan(found.value):
                    rows.append(_row(scope, source, task, statistic, found.value, found))
    return rows


def store_agreement(run: AgreementRun, store_path: str | Path) -> int:
    """Upsert the annotations (with their human verdicts) and every agreement statistic; returns annotations."""
    from t2ibench.store import Store

    hv, report = run.verdicts, run.report
    ann_rows = []
    for a in run.annotations:
        ann_rows.append(
            {
                "source": a.source,
                "prompt_index": a.prompt_id,
                "image_id": a.image_id,
                "slot": a.slot,
                "task": run.suite[a.prompt_id]["tag"],
                "answers": {
                    "counts": a.counts,
                    "colors": [sorted(c) if c else None for c in a.colors],
                    "position_x": a.position_x,
                    "position_y": a.position_y,
                    "quality": a.quality,
                    "realism": a.realism,
                    "objects": a.objects,
                },
                "human_correct": hv.verdicts[a.image_key][a.slot],
                "reason": hv.reasons.get((a.image_key, a.slot), ""),
            }
        )
    stats = agreement_rows(report)
    Store(store_path).write_agreement(ann_rows, stats)
    return len(ann_rows)
