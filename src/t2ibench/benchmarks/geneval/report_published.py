"""Published GenEval rows in the report, placed by protocol: a row whose protocol (``suite_published.COMPARED``)
equals a measured model's joins the leaderboard table, marked published and never ranked; the others are listed
apart, each with the protocol fields it does not share with the nearest measured protocol, filterable by protocol
and source. And the reproduction check: a measured model against its published row under the same protocol
(``geneval_reproduction``, a stored view), per task with our interval. Rendering only: the measured protocols and
the reproduction rows are stored views, the published rows the checked tables."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from t2ibench.benchmarks.geneval.metrics_tasks import TASKS
from t2ibench.benchmarks.geneval.report import TASK_TITLES
from t2ibench.benchmarks.geneval.suite_published import COMPARED, Protocol, PublishedRow, PublishedTable
from t2ibench.report.markdown import markdown_table
from t2ibench.report.site import Cell, fmt, interval, select
from t2ibench.report.site import table as html_table


@dataclass(frozen=True)
class Placed:
    """A published row and where it goes: beside the measured models whose protocol it shares (``models``), or
    apart with the fields it does not share with the nearest measured protocol (``differences``)."""

    table: PublishedTable
    row: PublishedRow
    models: tuple[str, ...]
    differences: tuple[str, ...]


def measured_protocols(data: Mapping[str, Any]) -> dict[str, list[Protocol]]:
    """Each current model's GenEval protocols (``geneval_measured_protocols``: one per suite it was judged on)."""
    found: dict[str, list[Protocol]] = {}
    for m in data.get("measured_protocols", []):
        found.setdefault(m["model"], []).append(
            Protocol(
                prompts=str(m["prompts"]),
                detector=str(m["detector"]),
                images_per_prompt=m["images_per_prompt"] if m["images_per_prompt"] is not None else "not recorded",
                resolution=str(m["resolution"]),
            )
        )
    return found


def placement(data: Mapping[str, Any], tables: Sequence[PublishedTable]) -> list[Placed]:
    """Every published row of ``tables``, in order, placed against the measured protocols of ``data``."""
    measured = measured_protocols(data)
    placed = []
    for t in tables:
        for r in t.rows:
            models = tuple(m for m, ps in measured.items() if any(not r.protocol.differences(p) for p in ps))
            found = (r.protocol.differences(p) for ps in measured.values() for p in ps)
            nearest = min(found, key=len, default=["no measured row"])
            placed.append(Placed(t, r, models, () if models else tuple(nearest)))
    return placed


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-") or "-"


def _name(p: Placed) -> str:
    mark = f' <span class="label" title="prompts rewritten by an LLM">{p.row.mark}</span>' if p.row.mark else ""
    note = f' <span class="label" title="{html.escape(p.row.note)}">note</span>' if p.row.note else ""
    return f'{html.escape(p.row.model)}{mark} <span class="label">published</span>{note}'


def board_rows(data: Mapping[str, Any], tables: Sequence[PublishedTable]) -> list[tuple[Placed, list[Cell]]]:
    """The published rows that join the leaderboard table (their protocol is a measured model's): each with its
    name cell and GenEval cells (no interval, no rank)."""
    found = []
    for p in placement(data, tables):
        if not p.models:
            continue
        name = Cell(f'{_name(p)}<br><span class="label">{html.escape(p.table.citation)}</span>', p.row.model, "text")
        cells = [name, Cell.number(p.row.overall), *(Cell.number(p.row.tasks[t]) for t in TASKS)]
        found.append((p, cells))
    return found


def published_html(data: Mapping[str, Any], tables: Sequence[PublishedTable]) -> str:
    """The published rows measured under no protocol of this leaderboard: a filterable table (prompts, detector,
    source) with each row's protocol and what differs from the measured rows', then each source's citation and how
    it was read."""
    placed = placement(data, tables)
    apart = [p for p in placed if not p.models]
    if not tables:
        return ""
    joined = len(placed) - len(apart)
    intro = (
        "<p>Numbers as their sources printed them, with the protocol each source states ('unstated' where it does "
        "not). A row whose protocol (prompts, evaluator, images per prompt) equals a measured model's is in the "
        f"leaderboard table above, marked published and never ranked ({joined} here); the rest are listed apart, "
        "with the protocol fields they do not share with the nearest measured row: not comparable, not ranked. "
        "† marks rows on LLM-rewritten prompts.</p>"
    )
    if not apart:
        return f'<section id="published-rows"><h2>Published reference rows</h2>{intro}{_sources_html(tables)}</section>'
    headers = ["model", "Overall", *TASK_TITLES.values(), "Human", "source", "prompts", "detector", "images/prompt",
               "resolution", "not comparable: differs in"]  # fmt: skip
    rows, attrs = [], []
    for p in apart:
        proto = p.row.protocol
        rows.append(
            [
                Cell(_name(p), p.row.model, "text"),
                Cell.number(p.row.overall),
                *(Cell.number(p.row.tasks[t]) for t in TASKS),
                Cell.number(p.row.human),
                Cell.text(p.table.source),
                Cell.text(proto.prompts),
                Cell.text(proto.describe("detector")),
                Cell.text(str(proto.images_per_prompt)),
                Cell.text(proto.resolution),
                Cell.text("; ".join(p.differences)),
            ]
        )
        attrs.append({"prompts": proto.prompts, "detector": _slug(proto.detector), "source": _slug(p.table.source)})
    shown = {
        "prompts": [p.row.protocol.prompts for p in apart],
        "detector": [p.row.protocol.describe("detector") for p in apart],
        "source": [p.table.source for p in apart],
    }
    menus = "".join(
        select(name, "published", name, sorted({(a[name], text) for a, text in zip(attrs, shown[name], strict=True)}))
        for name in shown
    )
    text_columns = (0, *range(len(headers) - 6, len(headers)))
    body = html_table("published", headers, rows, css="published", filterable=True, row_attrs=attrs,
                      text_columns=text_columns)  # fmt: skip
    return (
        f'<section id="published-rows"><h2>Published reference rows</h2>{intro}'
        f'<div class="controls">{menus}</div>{body}{_sources_html(tables)}</section>'
    )


def _sources_html(tables: Sequence[PublishedTable]) -> str:
    return (
        "<ul>"
        + "".join(
            f"<li>{html.escape(t.citation)}"
            + (f' (<a href="{html.escape(t.url)}">{html.escape(t.url)}</a>)' if t.url else "")
            + (f". Read: {html.escape(t.verified)}" if t.verified else "")
            + "".join(f" Protocol: {html.escape(n)}" for n in t.notes)
            + "</li>"
            for t in tables
        )
        + "</ul>"
    )


def published_markdown(data: Mapping[str, Any], tables: Sequence[PublishedTable]) -> list[str]:
    """The Markdown counterpart of ``published_html`` (and of ``board_rows``: the rows a measured protocol shares,
    listed first and marked as such)."""
    md: list[str] = []
    for t in tables:
        placed = placement(data, [t])
        md += [
            "",
            f"## Published: {t.source}",
            "",
            f"{t.citation}; not measured here, never ranked. Read: {t.verified}"
            + "".join(f" Protocol: {n}" for n in t.notes),
            "",
            markdown_table(
                ["model", "Overall", *TASK_TITLES.values(), "Human", "protocol (prompts, detector, images/prompt, "
                 "resolution)", "comparable with"],
                [[f"{p.row.model}{p.row.mark} (published)", fmt(p.row.overall), *(fmt(p.row.tasks[k]) for k in TASKS),
                  fmt(p.row.human),
                  ", ".join(str(getattr(p.row.protocol, f)) for f in (*COMPARED, "resolution")),
                  ", ".join(p.models) if p.models else "none: " + "; ".join(p.differences)]
                 for p in placed],
            ),
        ]  # fmt: skip
    return md


# -- the reproduction check -----------------------------------------------------------------------------------------


def reproduction_html(data: Mapping[str, Any]) -> str:
    """The reproduction section: each measured model with a published row under its protocol, per task: ours with
    its interval, the published value, the difference and whether the published value lies inside ('' when
    none)."""
    rows = data.get("reproduction", [])
    if not rows:
        return ""
    headers = ["model", "published as", "source", "task", "measured", "interval", "published", "difference",
               "inside", "resolution (ours / published)", "detector (ours)"]  # fmt: skip
    cells = [
        [
            Cell.text(r["model"]),
            Cell.text(r["published_model"]),
            Cell.text(r["source"]),
            Cell.text(TASK_TITLES.get(r["task"], "Overall")),
            Cell.number(r["measured"]),
            Cell.text(interval(r["ci_low"], r["ci_high"]), css=""),
            Cell.number(r["published"]),
            Cell.number(r["difference"]),
            Cell.text(_inside(r), css="fail" if r["inside"] is False else ""),
            Cell.text(f"{r['resolution']} / {r['published_resolution']}"),
            Cell.text(f"{r['detector_backend']}" + (f" @{r['detector_revision']}" if r["detector_revision"] else "")),
        ]
        for r in rows
    ]
    summary = "; ".join(
        f"{model}: {sum(1 for r in rows if r['model'] == model and r['inside'])} of "
        f"{sum(1 for r in rows if r['model'] == model and r['inside'] is not None)} published values inside our "
        "interval"
        for model in dict.fromkeys(r["model"] for r in rows)
    )
    return (
        '<section id="reproduction"><h2>Reproduction check</h2><p>Measured models whose generator has a published '
        "row under the same protocol (prompts, evaluator, images per prompt): per task and overall, our score with "
        "its bootstrap interval over prompts against the published value; 'inside' when the published value, "
        f"± its printed rounding, meets the interval (n/a: no interval stored). {html.escape(summary)}. In SQL: the "
        "<code>geneval_reproduction</code> view.</p>"
        + html_table("reproduction", headers, cells, text_columns=(0, 1, 2, 3, 9, 10))
        + "</section>"
    )


def reproduction_markdown(data: Mapping[str, Any]) -> list[str]:
    """The Markdown counterpart of ``reproduction_html`` (no lines when there is no reproduction row)."""
    rows = data.get("reproduction", [])
    if not rows:
        return []
    return [
        "",
        "## Reproduction check",
        "",
        "Measured vs published under the same protocol; inside: the published value (± its printed rounding) meets "
        "our interval.",
        "",
        markdown_table(
            ["model", "published as", "source", "task", "measured", "interval", "published", "difference", "inside"],
            [[r["model"], r["published_model"], r["source"], r["task"], fmt(r["measured"]),
              interval(r["ci_low"], r["ci_high"]), fmt(r["published"]), fmt(r["difference"]),
              _inside(r)] for r in rows],
        ),
    ]  # fmt: skip


def reproduction_items(data: Mapping[str, Any], model: str) -> list[tuple[str, str]]:
    """The model card's reproduction line: for each published row it is checked against, how many of its values lie
    inside our intervals and which do not (none when the model has no published row under its protocol)."""
    rows = [r for r in data.get("reproduction", []) if r["model"] == model]
    found = []
    for key in dict.fromkeys((r["source"], r["published_model"], r["published_resolution"]) for r in rows):
        mine = [r for r in rows if (r["source"], r["published_model"], r["published_resolution"]) == key]
        checked = [r for r in mine if r["inside"] is not None]
        outside = [f"{r['task']} {fmt(r['measured'])} vs {fmt(r['published'])}" for r in checked if not r["inside"]]
        at = "" if key[2] in ("unstated", "model default") else f" ({key[2]})"
        found.append(
            (
                "reproduction",
                f"{key[1]}{at} in {key[0]}: {len(checked) - len(outside)} of {len(checked)} published values inside "
                "our intervals" + (f"; outside: {', '.join(outside)}" if outside else ""),
            )
        )
    return found


def _inside(r: Mapping[str, Any]) -> str:
    return "n/a" if r["inside"] is None else "yes" if r["inside"] else "no"
