"""GenEval summaries in the layout of the paper's Table 2 (rendering only)."""

from __future__ import annotations

import math

from t2ibench.benchmarks.geneval.evaluate import Summary
from t2ibench.report.markdown import markdown_table

TASK_TITLES = {
    "single_object": "Single object",
    "two_object": "Two object",
    "counting": "Counting",
    "colors": "Colors",
    "position": "Position",
    "color_attr": "Color attribution",
}


def _score(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:.2f}"


def render_summary(summary: Summary, *, label: str = "model") -> str:
    """Table 2 row (overall + six tasks, two decimals), then correct/total per task and prompt-level counts."""
    headers = ["model", "Overall", *TASK_TITLES.values()]
    partial = summary.tasks_present < len(summary.tasks)
    overall = _score(summary.overall) + (f" ({summary.tasks_present} of {len(summary.tasks)} tasks)" if partial else "")
    row = [label, overall, *(_score(t.accuracy) for t in summary.tasks)]
    counts = [
        label,
        f"{summary.correct_images} / {summary.images}",
        *(f"{t.correct} / {t.total}" for t in summary.tasks),
    ]
    table = markdown_table(headers, [row, counts])
    lines = [
        table,
        "",
        f"Images: {summary.images} ({summary.correct_images} correct, "
        f"{100 * summary.correct_images / max(summary.images, 1):.2f} %). "
        f"Prompts: {summary.prompts} ({summary.correct_prompts} with at least one correct image, "
        f"{100 * summary.correct_prompts / max(summary.prompts, 1):.2f} %).",
    ]
    missing = [TASK_TITLES[t.task] for t in summary.tasks if t.total == 0]
    if missing:
        lines.append(
            f"Warning: no images for {', '.join(missing)}: the overall score is the mean of the "
            f"{summary.tasks_present} tasks present (as GenEval's summary_scores.py computes it), not comparable "
            "with a six-task overall."
        )
    return "\n".join(lines)
