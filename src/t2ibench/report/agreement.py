"""Markdown tables of the human-agreement analysis (rendering only)."""

from __future__ import annotations

import math
from pathlib import Path

from t2ibench.human_agreement import AgreementReport, AgreementRun, headline
from t2ibench.report.markdown import markdown_table


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{100 * x:.1f}"


def _k(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:.3f}"


def render_agreement(report: AgreementReport) -> str:
    """Human accuracy and inter-annotator agreement, auto-vs-human agreement, tuned thresholds."""
    parts = [
        "Human verdicts and inter-annotator agreement (percentages; κ unitless):",
        "",
        markdown_table(
            [
                "source",
                "task",
                "images",
                "annotations",
                "human acc.",
                "pairwise agr.",
                "vs majority of others",
                "Cohen κ (pooled pairs)",
                "Fleiss κ",
                "unanimous images",
            ],
            [
                [
                    s,
                    t,
                    h.images,
                    h.annotations,
                    _pct(h.human_accuracy),
                    _pct(h.pairwise_agreement),
                    _pct(h.vs_majority_of_others),
                    _k(h.cohen_kappa),
                    _k(h.fleiss_kappa),
                    h.unanimous_images,
                ]
                for (s, t), h in report.human.items()
            ],
        ),
    ]
    overall = [
        [
            source,
            f"{report.human[(source, 'all')].human_accuracy:.2f}" if (source, "all") in report.human else "—",
            f"{sum(scores) / len(scores):.2f}",
            len(scores),
        ]
        for source in dict.fromkeys(s for s, _ in report.human)
        if source != "all"
        and (scores := [h.human_accuracy for (s, t), h in report.human.items() if s == source and t != "all"])
    ]
    parts += [
        "",
        "Human score per source: GenEval Table 2's Human column is the share of all annotations that judge the "
        "image correct, pooled over tasks (it reproduces the paper's 0.42 / 0.57 on the released files); the "
        "unweighted mean of the per-task human accuracies (as GenEval's overall) is the secondary figure:",
        "",
        markdown_table(["source", "human score (Table 2)", "task mean (secondary)", "tasks"], overall),
    ]
    for name, table in report.auto.items():
        parts += [
            "",
            f"Automatic verdicts '{name}' vs humans ({report.coverage.get(name, '')}):",
            "",
            markdown_table(
                [
                    "source",
                    "task",
                    "images",
                    "vs annotators",
                    "vs majority",
                    "κ vs majority",
                    "vs unanimous",
                    "auto acc.",
                    "human majority acc.",
                ],
                [
                    [
                        s,
                        t,
                        a.images,
                        _pct(a.vs_annotators),
                        _pct(a.vs_majority),
                        _k(a.kappa_vs_majority),
                        f"{_pct(a.vs_unanimous)} (n={a.unanimous_images})",
                        _pct(a.auto_accuracy),
                        _pct(a.human_majority_accuracy),
                    ]
                    for (s, t), a in table.items()
                ],
            ),
        ]
    if report.tuned:
        parts += [
            "",
            f"Per-task thresholds on the scores ({report.coverage.get('scores', '')}); "
            "CV = agreement on held-out folds, the honest number:",
            "",
            markdown_table(
                ["task", "threshold", "in-sample agreement", "k-fold CV agreement", "folds", "images"],
                [
                    [t, f"{v.threshold:.4g}", _pct(v.in_sample_agreement), _pct(v.cv_agreement), v.folds, v.images]
                    for t, v in report.tuned.items()
                ],
            ),
        ]
    return "\n".join(parts)


def write_agreement(run: AgreementRun, out: str | Path) -> list[Path]:
    """agreement.json (every table and what loading did), agreement.md and metrics.json (the headline) in ``out``."""
    import json

    from t2ibench.io import output_dir, write_text_atomic

    folder = output_dir(out)
    loading = [
        {"path": r.path, "read": r.rows_read, "kept": r.kept, "repaired": r.repaired, "dropped": r.dropped}
        for r in run.loads
    ]
    payload = run.report.to_dict() | {"loading": loading}
    text = "\n\n".join([*(r.summary() for r in run.loads), render_agreement(run.report)])
    files = [
        write_text_atomic(folder / "agreement.json", json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n"),
        write_text_atomic(folder / "agreement.md", text + "\n"),
        write_text_atomic(folder / "metrics.json", json.dumps(headline(run), indent=2, sort_keys=True) + "\n"),
    ]
    return files
