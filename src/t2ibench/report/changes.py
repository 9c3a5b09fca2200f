"""The report's "Since the last refresh" section: what the latest run changed (``paired_comparisons`` of kind
'since', recorded by ``t2ibench.comparisons``) — new models and those not in it, and each changed model old → new
with the paired difference, its interval and Holm-adjusted p-value, flagged only when the paired test says so.
Rendering only."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from t2ibench.report.markdown import markdown_table
from t2ibench.report.site import Cell, fmt, interval
from t2ibench.report.site import table as html_table

WORDS = {"improvement": "improvement ↑", "regression": "regression ↓"}
UNITS = (
    "Before and now are each version's headline score on the prompts both share, in the benchmark's own units "
    "(GenEval: overall accuracy as a fraction; GenEval 2: Soft-TIFA GM and T2I-CompBench++: the category mean, in "
    "percent points); a version judged differently (another judge or rule) is listed, not compared."
)


def _since(comparisons: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in comparisons if r["kind"] == "since"]


def _verdict(r: Mapping[str, Any]) -> str:
    if r["p_value"] is None:
        return "—"
    return WORDS.get(str(r["flagged"]), "no significant change")


def _summary(rows: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"].split(",")[0]] = counts.get(r["status"].split(",")[0], 0) + 1
    flagged = [r for r in rows if r["flagged"]]
    level = next((r["ci_level"] for r in rows if r["ci_level"] is not None), None)
    alpha = f"{1 - level:.2g}" if level is not None else "—"
    return (
        ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        + f"; {len(flagged)} flagged (paired randomization test on the prompts both versions share, Holm-adjusted "
        f"over the run's changed models and benchmarks, α = {alpha})"
    )


def since_html(comparisons: Sequence[Mapping[str, Any]]) -> str:
    """The section (HTML), or '' when the latest run recorded no comparison."""
    rows = _since(comparisons)
    if not rows:
        return ""
    previous = next((r["previous_run"] for r in rows), None)
    shown = [r for r in rows if r["status"] != "unchanged"]
    headers = ["model", "status", "benchmark", "before", "now", "difference", "interval", "p (Holm)", "prompts",
               "verdict"]  # fmt: skip
    cells = [
        [
            Cell.text(r["model"]),
            Cell.text(r["status"]),
            Cell.text(r["benchmark"]),
            Cell.number(r["other_score"], digits=3),
            Cell.number(r["score"], digits=3),
            Cell.number(r["difference"], digits=3),
            Cell.text(interval(r["ci_low"], r["ci_high"], 3), css=""),
            Cell.text(fmt(r["p_adjusted"], 3), css=""),
            Cell.number(r["prompts"], digits=0),
            Cell.text(_verdict(r), css="fail" if r["flagged"] == "regression" else ""),
        ]
        for r in shown
    ]
    since = "the completed run before it" if previous else "no earlier run (every model is new)"
    body = html_table("since", headers, cells, text_columns=(0, 1, 2, 9)) if cells else "<p>Nothing changed.</p>"
    return (
        f'<section id="since-last-refresh"><h2>Since the last refresh</h2><p>The latest run against {since}: '
        f"{html.escape(_summary(rows))}. {html.escape(UNITS)} <code>t2ibench diff</code> names the runs.</p>"
        f"{body}</section>"
    )


def since_markdown(comparisons: Sequence[Mapping[str, Any]]) -> list[str]:
    """The section's Markdown lines (none when the latest run recorded no comparison)."""
    rows = _since(comparisons)
    if not rows:
        return []
    previous = next((r["previous_run"] for r in rows), None)
    shown = [r for r in rows if r["status"] != "unchanged"]
    against = "the completed run before it" if previous else "no earlier run (every model is new)"
    md = ["## Since the last refresh", "", f"The latest run against {against}: {_summary(rows)}. {UNITS}", ""]
    if shown:
        md.append(
            markdown_table(
                ["model", "status", "benchmark", "before", "now", "difference", "interval", "p (Holm)", "prompts",
                 "verdict"],
                [[r["model"], r["status"], r["benchmark"], fmt(r["other_score"], 3), fmt(r["score"], 3),
                  fmt(r["difference"], 3), interval(r["ci_low"], r["ci_high"], 3), fmt(r["p_adjusted"], 3),
                  str(r["prompts"]), _verdict(r)] for r in shown],
            )
        )  # fmt: skip
    else:
        md.append("Nothing changed.")
    return [*md, ""]
