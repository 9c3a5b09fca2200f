"""GenEval's trust numbers from its released annotations: human verdicts, inter-annotator and auto-vs-human
agreement per source and task, and tuned baselines — the glue between annotations, suite and results."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError
from t2ibench.geneval_eval import ResultRow
from t2ibench.metrics.agreement import (
    AutoAgreement,
    HumanAgreement,
    TunedThreshold,
    auto_agreement,
    human_agreement,
    human_verdict,
    tune_threshold,
)
from t2ibench.metrics.geneval import TASKS
from t2ibench.suites.annotations import Annotation

ALL = "all"
ImageKey = tuple[str, int, int]


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


def auto_verdicts(rows: Sequence[ResultRow], source: str) -> dict[ImageKey, bool]:
    """Automatic verdicts keyed like annotations: (source, prompt folder number, sample number)."""
    out: dict[ImageKey, bool] = {}
    for row in rows:
        if row.prompt_index is None or not row.sample.isdigit():
            raise InputError(
                f"{row.filename}: cannot read prompt and image ids from the path (<NNNNN>/samples/<k>.png)"
            )
        out[(source, row.prompt_index, int(row.sample))] = row.correct
    return out


def read_scores(path: str | Path) -> dict[ImageKey, float]:
    """Scalar scores per image from JSON lines {"source", "prompt_id", "image_id", "score"} (e.g. CLIPScore)."""
    p = Path(path)
    out: dict[ImageKey, float] = {}
    for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            out[(str(r["source"]), int(r["prompt_id"]), int(r["image_id"]))] = float(r["score"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{p}:{number}: expected {{source, prompt_id, image_id, score}} ({exc})") from None
    return out


@dataclass
class AgreementReport:
    """Every table of the analysis, keyed by (source or 'all', task or 'all')."""

    human: dict[tuple[str, str], HumanAgreement] = field(default_factory=dict)
    auto: dict[str, dict[tuple[str, str], AutoAgreement]] = field(default_factory=dict)
    tuned: dict[str, TunedThreshold] = field(default_factory=dict)
    coverage: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready nested dict."""
        return {
            "human": {f"{s}/{t}": v.to_dict() for (s, t), v in self.human.items()},
            "auto": {
                name: {f"{s}/{t}": v.to_dict() for (s, t), v in table.items()} for name, table in self.auto.items()
            },
            "tuned_thresholds": {t: v.__dict__ for t, v in self.tuned.items()},
            "coverage": self.coverage,
        }


def _slices(hv: HumanVerdicts) -> list[tuple[str, str, list[ImageKey]]]:
    slices = []
    for source in [*hv.sources, ALL]:
        for task in [*TASKS, ALL]:
            keys = [
                k for k in hv.verdicts if (source == ALL or k[0] == source) and (task == ALL or hv.tasks[k] == task)
            ]
            if keys:
                slices.append((source, task, keys))
    return slices


def agreement_report(
    hv: HumanVerdicts,
    auto: Mapping[str, Mapping[ImageKey, bool]] | None = None,
    scores: Mapping[ImageKey, float] | None = None,
    *,
    folds: int = 5,
    seed: int = 0,
) -> AgreementReport:
    """Human agreement per (source, task), auto-vs-human for each automatic verdict set, tuned score thresholds."""
    report = AgreementReport()
    for source, task, keys in _slices(hv):
        report.human[(source, task)] = human_agreement({k: hv.verdicts[k] for k in keys})
    for name, verdicts in (auto or {}).items():
        table: dict[tuple[str, str], AutoAgreement] = {}
        for source, task, keys in _slices(hv):
            subset = {k: hv.verdicts[k] for k in keys if k in verdicts}
            if subset:
                table[(source, task)] = auto_agreement(subset, verdicts)
        report.auto[name] = table
        annotated = set(hv.verdicts)
        judged = annotated & set(verdicts)
        report.coverage[name] = f"{len(judged)} of {len(annotated)} annotated images have automatic verdicts"
    if scores:
        report.tuned = tune_threshold(scores, hv.verdicts, hv.tasks, folds=folds, seed=seed)
        covered = len(set(scores) & set(hv.verdicts))
        report.coverage["scores"] = f"{covered} of {len(hv.verdicts)} annotated images have scores"
    return report


def verdict_reasons(hv: HumanVerdicts, limit: int = 5) -> dict[str, list[str]]:
    """A few example reasons for failed human verdicts per task (for the report)."""
    out: dict[str, list[str]] = defaultdict(list)
    for (key, _slot), reason in hv.reasons.items():
        task = hv.tasks[key]
        if len(out[task]) < limit:
            out[task].append(f"{key[0]} {key[1]:05d}/{key[2]}: {reason}")
    return dict(out)
