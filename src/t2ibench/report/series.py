"""The report's checkpoint series: each series' scores against the training step, with their intervals — the spine's
overall, FKEA VENDI-1 and each stored benchmark's headline (the ``series`` view: the points' leaderboard rows in step
order). Rendering only."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from t2ibench.benchmarks import SPINE, label, stored_columns
from t2ibench.report.markdown import markdown_table
from t2ibench.report.site import Cell, fmt, interval, table

PREFIX = "series-"  # the plots' names (and files): series-<name>.png


def panels(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(title, leaderboard column) of each score the series rows have: the spine's overall, FKEA VENDI-1, then each
    stored benchmark's headline (its ``StoredColumns``) where a point has it."""
    found = [(f"{label(SPINE)} overall", "overall"), ("FKEA VENDI-1", "vendi_1")]
    for name, cols in stored_columns().items():
        column = cols.column(name, cols.headline)
        found.append((cols.title, column))
    return [(t, c) for t, c in found if any(r.get(c) is not None for r in rows)]


def by_series(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The rows of each series, in step order (as the view gives them)."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        found.setdefault(str(r["series"]), []).append(r)
    return found


def _file(name: str) -> str:
    return PREFIX + re.sub(r"[^A-Za-z0-9_.+=@-]", "_", name) + ".png"


def plots(rows: Sequence[Mapping[str, Any]], out: Path) -> dict[str, str]:
    """One figure per series (``series-<name>.png`` in ``out``): a panel per score against the step, each point with
    its interval as an error bar; name → path relative to ``out``."""
    groups = by_series(rows)
    if not groups:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = {}
    for name, points in groups.items():
        shown = panels(points)
        fig, axes = plt.subplots(1, len(shown), figsize=(4.2 * len(shown), 3.4), squeeze=False)
        for ax, (title, column) in zip(axes[0], shown, strict=True):
            kept = [p for p in points if p.get(column) is not None]
            steps = [p["step"] for p in kept]
            values = [p[column] for p in kept]
            low = [v - p[f"{column}_ci_low"] if p.get(f"{column}_ci_low") is not None else 0.0
                   for v, p in zip(values, kept, strict=True)]  # fmt: skip
            high = [p[f"{column}_ci_high"] - v if p.get(f"{column}_ci_high") is not None else 0.0
                    for v, p in zip(values, kept, strict=True)]  # fmt: skip
            ax.errorbar(steps, values, yerr=[low, high], marker="o", capsize=3)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("training step", fontsize=8)
            ax.tick_params(labelsize=7)
        fig.suptitle(f"{name}: scores by checkpoint (error bars: bootstrap intervals over prompts)", fontsize=9)
        fig.tight_layout()
        path = _file(name)
        fig.savefig(out / path, dpi=100)
        plt.close(fig)
        made[PREFIX + name] = path
    return made


def html_section(rows: Sequence[Mapping[str, Any]], drawn: Mapping[str, str]) -> str:
    """The "Checkpoint series" section: per series its figure and a table of its points ('' without a series)."""
    groups = by_series(rows)
    if not groups:
        return ""
    parts = [
        '<section id="series"><h2>Checkpoint series</h2><p>Each series\' points (one model version per checkpoint) '
        "by training step, every score with its interval; in SQL: the <code>series</code> view.</p>"
    ]
    for i, (name, points) in enumerate(groups.items()):
        shown = panels(points)
        cells = [
            [Cell.number(p["step"], digits=0), Cell.text(str(p["model"])),
             *(Cell.number(p.get(c), low=p.get(f"{c}_ci_low"), high=p.get(f"{c}_ci_high")) for _, c in shown)]
            for p in points
        ]  # fmt: skip
        figure = drawn.get(PREFIX + name)
        img = f'<figure><img src="{html.escape(figure)}" alt="{html.escape(name)} by step"></figure>' if figure else ""
        headers = ["step", "model", *(t for t, _ in shown)]
        parts.append(f"<h3>{html.escape(name)}</h3>" + img + table(f"series-{i}", headers, cells, text_columns=(1,)))
    return "".join(parts) + "</section>"


def markdown_section(rows: Sequence[Mapping[str, Any]], drawn: Mapping[str, str]) -> list[str]:
    """The Markdown counterpart of ``html_section`` (no lines without a series)."""
    md: list[str] = []
    for name, points in by_series(rows).items():
        shown = panels(points)
        md += [
            "",
            f"## Checkpoint series: {name}",
            "",
            markdown_table(
                ["step", "model", *(t for t, _ in shown)],
                [[str(p["step"]), str(p["model"]),
                  *(f"{fmt(p.get(c))} {interval(p.get(f'{c}_ci_low'), p.get(f'{c}_ci_high'))}" for _, c in shown)]
                 for p in points],
            ),
        ]  # fmt: skip
        if PREFIX + name in drawn:
            md += ["", f"![{name} by step]({drawn[PREFIX + name]})"]
    return md
