"""GenEval's part of the leaderboard report, as the refresh's spine benchmark: the Table 2 columns with their
intervals, the per-task plot, the evaluator self-test card, the published reference rows, the human-agreement page,
the failure-pattern section and the paper's Table 2 — plus its drill-down (``report_pages``, re-exported here).

``t2ibench.report`` renders the leaderboard around these hooks (``t2ibench.benchmarks.spine_report``); the spine's
contract is this module's public names (docs/benchmarks.md#the-spines-report). Rendering only: every number is a
stored row.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval import report_failures as failures
from t2ibench.benchmarks.geneval import report_selftest as selftest
from t2ibench.benchmarks.geneval.metrics import TASKS
from t2ibench.benchmarks.geneval.report import TASK_TITLES
from t2ibench.benchmarks.geneval.report_pages import (
    REWRITTEN_MARK,
    REWRITTEN_NOTE,
    card_items,
    draw_thumbnails,
    failure_figures,
    figure,
    model_images,
    model_suites,
    prompt_list,
    prompt_pages,
    row_mark,
    score_section,
    wording_of,
)
from t2ibench.benchmarks.geneval.report_published import (
    board_rows,
    published_html,
    published_markdown,
    reproduction_html,
    reproduction_items,
    reproduction_markdown,
)
from t2ibench.benchmarks.geneval.suite import WORDINGS, wording_of_suite
from t2ibench.benchmarks.geneval.suite_published import BUILTIN, PublishedTable, load_published
from t2ibench.errors import InputError
from t2ibench.report.markdown import markdown_table
from t2ibench.report.site import BANNER_CSS, Cell, banner_html, fmt, footer_html, interval, level_text, navigation
from t2ibench.store import Store, queries

__all__ = [  # the spine's report hooks (docs/benchmarks.md#the-spines-report), its drill-down's among them
    "HEADLINE",
    "LITE_NOTE",
    "PUBLISHED",
    "REWRITTEN_NOTE",
    "board_cells",
    "board_headers",
    "board_rows",
    "card_items",
    "closing_html",
    "closing_markdown",
    "collect",
    "draw_thumbnails",
    "failure_figures",
    "failure_plots",
    "figure",
    "legend_html",
    "legend_markdown",
    "load_tables",
    "markdown_cells",
    "markdown_headers",
    "model_images",
    "model_suites",
    "paper_marks",
    "paper_table",
    "plots",
    "plotted",
    "prompt_list",
    "prompt_pages",
    "reproduction_items",
    "row_mark",
    "score_section",
    "sections_html",
    "sections_markdown",
    "wording_of",
    "write_pages",
]

LITE_NOTE = "LITE EVALUATOR, not comparable with published GenEval scores"
PUBLISHED = tuple(BUILTIN)  # the published tables a report shows when its caller names none


def collect(store: Store) -> dict[str, Any]:
    """GenEval's rows the report shows, read from the store (read-only): per-task intervals, verdicts, kept
    detections, human agreement, evaluator self-tests and the failure views."""
    return {
        "task_ci": queries.spine_rows(store, "task_intervals"),
        "verdicts": queries.spine_rows(store, "current_verdicts"),
        "detections": queries.current_detections(store),
        "agreement": queries.agreement(store),
        "selftests": queries.evaluator_selftests(store),
        "failures": failures.collect(store),
        "measured_protocols": queries.spine_rows(store, "measured_protocols"),
        "reproduction": queries.spine_rows(store, "reproduction"),
    }


def load_tables(published: Sequence[str | Path] | None) -> list[PublishedTable]:
    """The published reference tables to show (``published``: built-in names or YAML paths, each holding one or
    more tables; None: PUBLISHED)."""
    found: list[PublishedTable] = []
    for p in PUBLISHED if published is None else published:
        for t in load_published(p):
            twin = next((o for o in found if o.source.casefold() == t.source.casefold()), None)
            if twin is not None:  # the store keys published rows by source: one name, one table
                raise InputError(f"{t.path}: table {t.source!r} is also in {twin.path} (each source once)")
            found.append(t)
    return found


# -- the leaderboard table ----------------------------------------------------------------------------------------


def board_headers(level: str) -> list[str]:
    """The leaderboard's GenEval headers (HTML): overall with its interval level, then the six tasks."""
    return [f"Overall [{level} CI]", *TASK_TITLES.values()]


def board_cells(row: Mapping[str, Any], data: Mapping[str, Any], link: str, tied: bool) -> list[Cell]:
    """A model's GenEval cells on the leaderboard (HTML): overall (≈ when ``tied`` with the next) and each task with
    its interval, a task score linking to the model page filtered to that task (``link``: the page, or '')."""
    model = row["model"]
    ci = {r["task"]: r for r in data["task_ci"] if r["model"] == model}
    cells = [
        Cell.number(row["overall"], low=row.get("overall_ci_low"), high=row.get("overall_ci_high"),
                    mark="≈" if tied else ""),
    ]  # fmt: skip
    for t in TASKS:
        c = ci.get(t, {})
        cell = Cell.number(row[t], low=c.get("ci_low"), high=c.get("ci_high"))
        if link and row[t] is not None:
            cell = Cell(f'<a href="{html.escape(link)}#task={t}">{cell.html}</a>', cell.sort, cell.css)
        cells.append(cell)
    return cells


def markdown_headers(level: str) -> list[str]:
    """The leaderboard's GenEval headers (Markdown): overall, its interval, the six tasks."""
    return ["Overall", f"{level} CI", *TASK_TITLES.values()]


def markdown_cells(row: Mapping[str, Any], tied: bool) -> list[str]:
    """A model's GenEval cells on the Markdown leaderboard."""
    return [
        fmt(row["overall"]) + (" ≈" if tied else ""),
        interval(row.get("overall_ci_low"), row.get("overall_ci_high")),
        *(fmt(row[t]) for t in TASKS),
    ]


def legend_markdown(level: str) -> str:
    """What the Markdown leaderboard's GenEval columns are (the start of its legend sentence)."""
    return (
        f"GenEval accuracy (Table 2 layout: overall = mean of the six tasks; {level} CI = percentile bootstrap over "
        "prompts, 1,000 resamples, all images of a prompt together; ≈ marks a model a paired test on the prompts both "
        "share does not separate from the next one of its protocol group — paired randomization test, Holm-adjusted "
        "over every pair of the run, at 1 − the confidence level: not ranked as different, rank shared as '2=')"
    )


def legend_html() -> str:
    """What the HTML leaderboard's GenEval columns are and how to drill down (the start of its legend)."""
    return (
        "GenEval accuracy per task and overall (mean of the six tasks) with percentile-bootstrap "
        "intervals over prompts (all images of a prompt together); ≈ and a shared rank ('2=') mark models that a "
        "paired test does not separate (ranks from paired tests: the randomization test of the overall difference on "
        "the prompts both models share, Holm-adjusted over every pair of the run; a pair with no shared prompt is "
        "not compared). Click a header to sort, a model for its card and images, a task score for the images "
        "behind it."
    )


# -- plots -------------------------------------------------------------------------------------------------------


def plotted(data: Mapping[str, Any]) -> list[Any]:
    """The rows GenEval's plots are drawn from (they are re-drawn only when these change)."""
    return [data["task_ci"], data["failures"]]


def plots(data: Mapping[str, Any], out: Path) -> dict[str, str]:
    """tasks.png: accuracy per task and model with interval error bars; name → path relative to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    board = data["board"]
    if not board:
        return {}
    fig, ax = plt.subplots(figsize=(9, 4.4))
    width = 0.8 / max(len(board), 1)
    ci = {(r["model"], r["task"]): (r["ci_low"], r["ci_high"]) for r in data.get("task_ci", [])}
    for i, row in enumerate(board):
        values = [row[t] if row[t] is not None else 0.0 for t in TASKS]
        xs = [x + i * width for x in range(len(TASKS))]
        intervals = [ci.get((row["model"], t), (None, None)) for t in TASKS]
        yerr = [
            [v - lo if lo is not None else 0.0 for v, (lo, _) in zip(values, intervals, strict=True)],
            [hi - v if hi is not None else 0.0 for v, (_, hi) in zip(values, intervals, strict=True)],
        ]
        bars = ax.bar(xs, values, width=width, label=row["model"], yerr=yerr, capsize=2)
        colour = bars.patches[0].get_facecolor() if bars.patches else None
        # a zero is a result, not a missing bar: draw it as a stub on the axis; a task without images says n/a
        for x, v, t in zip(xs, values, TASKS, strict=True):
            if row[t] is None:
                ax.text(x, 0.01, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
            elif v == 0.0:
                ax.plot([x - width / 2, x + width / 2], [0.004, 0.004], color=colour, linewidth=3)
        ax.bar_label(bars, labels=["" if row[t] is None else f"{row[t]:.2f}" for t in TASKS], fontsize=6, padding=1)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(TASKS))], [TASK_TITLES[t] for t in TASKS], fontsize=8)
    ax.set_ylabel("accuracy (images)")
    ax.set_ylim(0, 1.1)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
    ax.set_title(f"GenEval accuracy per task (error bars: {level_text(board)} bootstrap CI over prompts)")
    fig.tight_layout()
    fig.savefig(out / "tasks.png", dpi=100)
    plt.close(fig)
    return {"tasks": "tasks.png"}


def failure_plots(data: Mapping[str, Any], out: Path) -> dict[str, dict[str, str]]:
    """Each model's failure-pattern figures (position confusion, per-class missing rates): model → name → path."""
    return failures.plots(data["failures"], out)


# -- sections around the table -----------------------------------------------------------------------------------


def sections_html(data: Mapping[str, Any], tables: Sequence[PublishedTable], figures: str) -> str:
    """What follows the HTML leaderboard table of GenEval's: the self-test card, the published rows, the figures
    (``figures``: every plot, as HTML) and the link to the agreement page."""
    return (
        selftest.html_section(data["selftests"])
        + reproduction_html(data)
        + published_html(data, tables)
        + figures
        + '<p><a href="agreement.html">Human agreement</a> (per source and task, with intervals).</p>'
    )


def sections_markdown(data: Mapping[str, Any], tables: Sequence[PublishedTable], plots: Mapping[str, str]) -> list[str]:
    """The Markdown counterpart of ``sections_html``: lines after the leaderboard table."""
    md: list[str] = []
    card = selftest.markdown_section(data["selftests"])
    if card:
        md += ["", *card]
    md += reproduction_markdown(data)
    md += published_markdown(data, tables)
    if plots:
        md += ["", *(f"![{name}]({path})" for name, path in plots.items())]
    agreement = [a for a in data["agreement"] if a["task"] == "all"]
    if agreement:
        md += [
            "",
            "## Human agreement",
            "",
            markdown_table(
                ["scope", "source", "statistic", "value", "interval"],
                [[a["scope"], a["source"], a["statistic"], fmt(a["value"], 3),
                  interval(a.get("ci_low"), a.get("ci_high"))] for a in agreement],
            ),
            "",
            "Per task, with definitions: agreement.html.",
        ]  # fmt: skip
    return md


def closing_html(data: Mapping[str, Any]) -> str:
    """The HTML leaderboard's last section: failure patterns (after every benchmark's section)."""
    return failures.html_section(data["failures"], data["failure_plots"])


def closing_markdown(data: Mapping[str, Any]) -> list[str]:
    """The Markdown counterpart of ``closing_html``."""
    return failures.markdown_section(data["failures"], data["failure_plots"])


def write_pages(data: Mapping[str, Any], out: Path, *, banners: Sequence[str], footer: str) -> dict[str, str]:
    """agreement.html (the agreement page with the site's navigation, banners and footer): name → path."""
    from t2ibench.benchmarks.geneval.report_agreement import html_page
    from t2ibench.io import write_text_atomic

    text = html_page(data["agreement"], nav=f"<style>{BANNER_CSS}</style>{navigation()}{banner_html(banners)}")
    write_text_atomic(out / "agreement.html", text.replace("</body>", footer_html(footer) + "</body>", 1))
    return {"agreement_html": str(out / "agreement.html")}


# -- the paper's table ---------------------------------------------------------------------------------------------


def paper_marks(store: Store) -> dict[str, str]:
    """Model → '†' for the current models judged on rewritten prompts (``geneval_measured_protocols``): the paper
    table lists them apart."""
    rows = queries.spine_rows(store, "measured_protocols")
    return {r["model"]: REWRITTEN_MARK for r in rows if wording_of_suite(r["suite"]) != WORDINGS[0]}


def paper_table(
    board: Sequence[Mapping[str, Any]], note: str, marks: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """GenEval's Table 2 for the paper artifacts: (file name, Markdown) of the current models at the stated
    precision (``note``: a line before the table, e.g. the smoke label, or ''); models marked † (``paper_marks``:
    rewritten prompts) in a table of their own after the others, never in one ordering with them."""
    marks = marks or {}

    def rows(chosen: Sequence[Mapping[str, Any]]) -> str:
        return markdown_table(
            ["Model", "Overall", *TASK_TITLES.values()],
            [[r["model"] + marks.get(r["model"], ""), fmt(r["overall"]), *(fmt(r[t]) for t in TASKS)] for r in chosen],
        )

    plain = [r for r in board if r["model"] not in marks]
    text = f"# GenEval (Table 2 layout)\n\n{note}{rows(plain)}\n"
    marked = [r for r in board if r["model"] in marks]
    if marked:
        text += f"\n## † Rewritten prompts\n\n{REWRITTEN_NOTE}\n\n{rows(marked)}\n"
    return "table2.md", text


HEADLINE = "geneval_overall"  # the paper's metrics.json key of the board's overall score
