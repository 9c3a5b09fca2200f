"""Failure patterns, rendered from the store's failure views (docs/schema.md#failure-patterns); nothing recomputed.

``collect`` reads the views for each model's current version; ``headline_markdown`` is what ``t2ibench failures``
prints; ``plots`` draws the position confusion matrix and the per-class missing-rate bars; ``markdown_section`` and
``html_section`` are the leaderboard report's "Failure patterns" section.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval.metrics import RELATIONS
from t2ibench.errors import InputError
from t2ibench.report.markdown import markdown_table
from t2ibench.store import Store, queries

COLOUR_OUTCOMES = ("correct", "swap", "leak", "absent", "miss", "object missing")
WORST_CLASSES = 15


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def collect(store: Store, models: Sequence[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Rows of every failure view for the current version of each model (all models, or ``models``)."""
    data = {
        "summary": queries.failure_summary(store),
        "position": queries.position_bias(store),
        "confusion": queries.position_confusion(store),
        "colour_attr": queries.color_attr_outcomes(store),
        "colour_attr_rates": queries.color_attr_rates(store),
        "counting": queries.counting_errors(store),
        "two_object": queries.two_object_rates(store),
        "two_object_outcomes": queries.two_object_outcomes(store),
        "classes": queries.class_failures(store),
    }
    known = sorted({r["model"] for r in data["summary"]})
    if models:
        unknown = [m for m in models if m not in known]
        if unknown:
            import difflib

            hint = difflib.get_close_matches(unknown[0], known, n=1)
            raise InputError(
                f"no stored model {unknown[0]!r}"
                + (f"; did you mean {hint[0]!r}?" if hint else "")
                + f" (stored: {', '.join(known) or 'none'})"
            )
        data = {k: [r for r in rows if r["model"] in models] for k, rows in data.items()}
    return data


def found_order(found: Sequence[str]) -> list[str]:
    """Columns of a position confusion matrix: single relations, combined ones, then 'no relation', 'missing'."""
    tail = ["no relation", "object missing"]
    combined = sorted(f for f in set(found) if f not in RELATIONS and f not in tail)
    return [*RELATIONS, *combined, *tail]


def _one(rows: list[dict[str, Any]], model: str) -> dict[str, Any]:
    return next((r for r in rows if r["model"] == model), {})


def headline_markdown(data: dict[str, list[dict[str, Any]]], model: str) -> str:
    """The failure patterns of one model's current version as Markdown (``t2ibench failures``)."""
    summary = _one(data["summary"], model)
    if not summary:
        return f"{model}: no stored verdicts"
    out = [f"# Failure patterns: {model}", ""]
    out.append(f"Version: model {summary['model_hash']}, evaluator {summary['evaluator_hash']}.")
    pos = _one(data["position"], model)
    out += ["", "## Position"]
    if pos:
        out += [
            "",
            f"{pos['images']} images, accuracy {_fmt(pos['accuracy'])}. With both objects found ({pos['both_found']} "
            f"images) the first-named object is left of the second in {_fmt(pos['first_left_rate'])} of them; "
            f"the prompts ask for that in {_fmt(pos['requested_left_rate'])}.",
            "",
        ]
        cells = [r for r in data["confusion"] if r["model"] == model]
        columns = found_order([r["found"] for r in cells])
        table = []
        for requested in RELATIONS:
            counts = {r["found"]: r["images"] for r in cells if r["requested"] == requested}
            if counts:
                table.append([requested, *(str(counts.get(c, 0)) for c in columns)])
        out.append(markdown_table(["requested \\ found", *columns], table))
    else:
        out += ["", "No position prompts stored."]
    rates = _one(data["colour_attr_rates"], model)
    out += ["", "## Color attribution"]
    if rates:
        counts = {r["outcome"]: r["images"] for r in data["colour_attr"] if r["model"] == model}
        out += [
            "",
            f"{rates['images']} images, accuracy {_fmt(rates['accuracy'])}: swap "
            f"{_fmt(rates['swap_rate'])}, leakage {_fmt(rates['leakage_rate'])} (leak {_fmt(rates['leak_rate'])}, "
            f"absent {_fmt(rates['absent_rate'])}), miss {_fmt(rates['miss_rate'])}, object missing "
            f"{_fmt(rates['object_missing_rate'])}.",
            "",
            markdown_table(["outcome", "images"], [[o, str(counts.get(o, 0))] for o in COLOUR_OUTCOMES]),
        ]
    else:
        out += ["", "No color-attribution verdicts with stored colors."]
    counting = [r for r in data["counting"] if r["model"] == model]
    out += ["", "## Counting (found − requested)"]
    if counting:
        out += [
            "",
            markdown_table(
                ["requested", "found − requested", "images", "share"],
                [[str(r["requested"]), f"{r['delta']:+d}", str(r["images"]), _fmt(r["share"])] for r in counting],
            ),
        ]
    else:
        out += ["", "No counting prompts stored."]
    two = _one(data["two_object"], model)
    out += ["", "## Two objects"]
    if two:
        out += [
            "",
            f"{two['images']} images, accuracy {_fmt(two['accuracy'])}: first-named missing "
            f"{_fmt(two['first_missing_rate'])}, second-named missing {_fmt(two['second_missing_rate'])}, both "
            f"missing {_fmt(two['both_missing_rate'])}; both classes on one region (IoU ≥ 0.5) "
            f"{_fmt(two['merge_rate'])}.",
        ]
    else:
        out += ["", "No two-object prompts stored."]
    classes = [r for r in data["classes"] if r["model"] == model][:10]
    if classes:
        out += [
            "",
            "## Classes most often missing",
            "",
            markdown_table(
                ["class", "requested", "missing rate", "failure rate"],
                [[r["class"], str(r["requested"]), _fmt(r["missing_rate"]), _fmt(r["failure_rate"])] for r in classes],
            ),
        ]
    return "\n".join(out) + "\n"


SUMMARY_COLUMNS = [
    ("model", "model"),
    ("first_left_rate", "first left"),
    ("requested_left_rate", "left requested"),
    ("swap_rate", "color swap"),
    ("leakage_rate", "color leakage"),
    ("miss_rate", "color miss"),
    ("counting_under_rate", "count under"),
    ("counting_over_rate", "count over"),
    ("first_missing_rate", "1st missing"),
    ("second_missing_rate", "2nd missing"),
    ("merge_rate", "merged"),
]


def summary_table(data: dict[str, list[dict[str, Any]]]) -> tuple[list[str], list[list[str]]]:
    """One row per model: the headline rates of every pattern."""
    headers = [title for _, title in SUMMARY_COLUMNS]
    rows = [[_fmt(r[key]) for key, _ in SUMMARY_COLUMNS] for r in data["summary"]]
    return headers, rows


def plots(data: dict[str, list[dict[str, Any]]], out: Path) -> dict[str, dict[str, str]]:
    """Per model: the position confusion matrix and the per-class missing-rate bars (PNG paths relative to out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    folder = out / "failures"
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, str]] = {}
    for model in sorted({r["model"] for r in data["summary"]}):
        files[model] = {}
        cells = [r for r in data["confusion"] if r["model"] == model]
        if cells:
            columns = found_order([r["found"] for r in cells])
            rows = [rel for rel in RELATIONS if any(r["requested"] == rel for r in cells)]
            counts = np.zeros((len(rows), len(columns)))
            for r in cells:
                counts[rows.index(r["requested"]), columns.index(r["found"])] = r["images"]
            shares = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
            fig, ax = plt.subplots(figsize=(1.2 + 0.75 * len(columns), 1.2 + 0.55 * len(rows)))
            ax.imshow(shares, cmap="Blues", vmin=0, vmax=1, aspect="auto")
            for i in range(len(rows)):
                for j in range(len(columns)):
                    if counts[i, j]:
                        colour = "white" if shares[i, j] > 0.6 else "black"
                        ax.text(j, i, f"{int(counts[i, j])}", ha="center", va="center", fontsize=8, color=colour)
            ax.set_xticks(range(len(columns)), columns, rotation=35, ha="right", fontsize=8)
            ax.set_yticks(range(len(rows)), rows, fontsize=8)
            ax.set_xlabel("relation found (first-named object to the second)")
            ax.set_ylabel("requested")
            ax.set_title(f"{model}: position (images; shade = share of the row)", fontsize=9)
            fig.tight_layout()
            path = folder / f"{model}_position.png"
            fig.savefig(path, dpi=100)
            plt.close(fig)
            files[model]["position"] = str(path.relative_to(out))
        classes = [r for r in data["classes"] if r["model"] == model][:WORST_CLASSES]
        if classes:
            fig, ax = plt.subplots(figsize=(7, 0.6 + 0.28 * len(classes)))
            names = [f"{r['class']} ({r['requested']})" for r in classes][::-1]
            ax.barh(names, [r["missing_rate"] for r in classes][::-1], color="#c0504d", label="not detected")
            ax.barh(
                names,
                [r["failure_rate"] - r["missing_rate"] for r in classes][::-1],
                left=[r["missing_rate"] for r in classes][::-1],
                color="#f2c4c3",
                label="detected, image still failed",
            )
            ax.set_xlim(0, 1)
            ax.set_xlabel("share of the images that ask for the class (count in brackets)")
            ax.tick_params(axis="y", labelsize=8)
            ax.legend(fontsize=7, loc="lower right")
            ax.set_title(f"{model}: classes most often missing", fontsize=9)
            fig.tight_layout()
            path = folder / f"{model}_classes.png"
            fig.savefig(path, dpi=100)
            plt.close(fig)
            files[model]["classes"] = str(path.relative_to(out))
    return files


def markdown_section(data: dict[str, list[dict[str, Any]]], figures: dict[str, dict[str, str]]) -> list[str]:
    """The report's "Failure patterns" section (Markdown lines)."""
    if not data["summary"]:
        return []
    headers, rows = summary_table(data)
    lines = [
        "## Failure patterns",
        "",
        "Rates over each task's images (position: over images with both objects found; the first-named object's "
        "left rate against the share of those prompts that ask for left). Per-model detail: `t2ibench failures "
        "--model M`; the views are documented in docs/schema.md.",
        "",
        markdown_table(headers, rows),
    ]
    for model, paths in figures.items():
        lines += ["", *(f"![{model} {name}]({path})" for name, path in paths.items())]
    return lines


def html_section(data: dict[str, list[dict[str, Any]]], figures: dict[str, dict[str, str]]) -> str:
    """The report's "Failure patterns" section (HTML)."""
    if not data["summary"]:
        return ""
    headers, rows = summary_table(data)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    images = "".join(
        f'<figure><img src="{html.escape(path)}" alt="{html.escape(f"{model} {name}")}"></figure>'
        for model, paths in figures.items()
        for name, path in paths.items()
    )
    return (
        '<section id="failure-patterns"><h2>Failure patterns</h2>'
        "<p>Position: first-named object left of the second, against how often the prompts ask for it (images with "
        "both objects found). Color attribution: swapped, leaked and missed colors. Counting: found fewer / more "
        "than requested. Two objects: which named object goes missing, and both classes detected on one region.</p>"
        f'<table id="failures"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{images}</section>'
    )
