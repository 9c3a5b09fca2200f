"""The leaderboard report, rendered from stored rows only (nothing is recomputed here).

Writes ``leaderboard.md`` and ``leaderboard.html`` (GenEval Table 2 layout plus diversity columns, human
agreement when stored, and the failure-pattern section of ``report/failures.py``), ``tasks.png`` (per-task
accuracy bars), ``diversity_vs_n.png`` (FKEA VENDI-1 against the number of images), ``failures/`` (position
confusion matrices, per-class bars) and mode galleries under ``galleries/<model>/<fkea|scendi>/`` linked from
the tables, with a provenance footer (config hash, code version, date, and a smoke label when random-weight
models were used).
"""

from __future__ import annotations

import hashlib
import html
import itertools
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from t2ibench.io import remove_stale_tmp, write_text_atomic
from t2ibench.metrics.geneval import TASKS
from t2ibench.report import failures
from t2ibench.report.geneval import TASK_TITLES
from t2ibench.report.markdown import markdown_table
from t2ibench.store import Store

LITE_NOTE = "LITE EVALUATOR, not comparable with published GenEval scores"
SMOKE_NOTE = (
    "SMOKE RUN: built-in random-weight models produced these numbers; they test the system and measure nothing."
)


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def collect(store: Store) -> dict[str, Any]:
    """Every row the report needs, read from the store (read-only)."""
    board = store.rows("SELECT * FROM leaderboard")
    metrics = store.rows(
        """SELECT c.model, m.metric, m.alpha, m.value, m.error_bound, m.n, m.sigma, m.rff_dim
           FROM current_models c JOIN metrics m USING (model, model_hash, evaluator_hash)"""
    )
    modes = store.rows(
        """SELECT c.model, o.source, o.mode_index, o.eigenvalue, o.share, o.entropy_share, o.mass, o.top, o.bottom,
                  o.top_scores, o.bottom_scores
           FROM current_models c JOIN modes o USING (model, model_hash, evaluator_hash)
           ORDER BY c.model, o.source, o.mode_index"""
    )
    images = store.rows(
        """SELECT c.model, i.prompt_index, i.sample, i.path
           FROM current_models c JOIN images i USING (model, model_hash) ORDER BY c.model, i.prompt_index, i.sample"""
    )
    task_ci = store.rows(
        """SELECT c.model, t.task, t.ci_low, t.ci_high
           FROM current_models c JOIN geneval_tasks t USING (model, model_hash, evaluator_hash)
           ORDER BY c.model, t.task"""
    )
    runs = store.rows("SELECT * FROM runs WHERE status = 'completed' ORDER BY finished_at DESC LIMIT 1")
    agreement = store.rows("SELECT * FROM agreement WHERE task = 'all' ORDER BY scope, source, statistic")
    return {
        "board": board,
        "metrics": metrics,
        "modes": modes,
        "images": images,
        "task_ci": task_ci,
        "run": runs[0] if runs else None,
        "agreement": agreement,
    }


def _metric(metrics: list[dict[str, Any]], model: str, metric: str, alpha: float | None = 1.0) -> dict[str, Any] | None:
    for m in metrics:
        if m["model"] == model and m["metric"] == metric and (alpha is None or m["alpha"] == alpha):
            return m
    return None


def _stored_mode(row: dict[str, Any]) -> Any:
    """A ``Mode`` exactly as stored: eigenvalue, shares, mass and sample scores (None where an older store lacks
    them: a gallery never shows an invented 0.0)."""
    from t2ibench.metrics.modes import Mode

    def floats(value: Any, n: int) -> tuple[float, ...]:
        values = json.loads(value) if isinstance(value, str) else value
        return tuple(float(x) for x in values) if values and len(values) == n else tuple(float("nan") for _ in range(n))

    top, bottom = tuple(json.loads(row["top"])), tuple(json.loads(row["bottom"] or "[]"))
    return Mode(
        index=row["mode_index"],
        eigenvalue=float("nan") if row["eigenvalue"] is None else row["eigenvalue"],
        share=row["share"],
        entropy_share=row["entropy_share"],
        mass=float("nan") if row.get("mass") is None else row["mass"],
        top=top,
        top_scores=floats(row.get("top_scores"), len(top)),
        bottom=bottom,
        bottom_scores=floats(row.get("bottom_scores"), len(bottom)),
    )


def _galleries(data: dict[str, Any], out: Path) -> dict[tuple[str, str], str]:
    """Render each model's mode galleries from stored mode rows and image paths; returns relative links."""
    from t2ibench.metrics.modes import ModeSet
    from t2ibench.report.gallery import write_image_gallery

    links: dict[tuple[str, str], str] = {}
    by_model: dict[str, list[str]] = {}
    for row in data["images"]:
        by_model.setdefault(row["model"], []).append(row["path"])
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in data["modes"]:
        groups.setdefault((row["model"], row["source"]), []).append(row)
    for (model, source), rows in groups.items():
        paths = by_model.get(model, [])
        if not paths:
            continue
        modes = tuple(_stored_mode(r) for r in rows)
        folder = out / "galleries" / model / source
        available = [Path(p) for p in paths]
        if not all(p.exists() for p in available):
            continue  # images were removed (e.g. pulled elsewhere): link nothing rather than break
        stamp = hashlib.sha256(json.dumps([rows, paths], sort_keys=True, default=str).encode()).hexdigest()
        marker = folder / ".rendered-from"
        if not (marker.exists() and marker.read_text() == stamp and (folder / "summary.png").exists()):
            write_image_gallery(
                ModeSet(source=source, n=len(paths), modes=modes),
                available,
                folder,
                thumb=96,
                title=f"{model} {source}",
            )
            write_text_atomic(marker, stamp)
        links[(model, source)] = str((folder / "summary.png").relative_to(out))
    return links


def _plots(data: dict[str, Any], out: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files: dict[str, str] = {}
    board = data["board"]
    if board:
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
            bars = ax.bar(xs, values, width=width, label=row["label"] or row["model"], yerr=yerr, capsize=2)
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
        ax.set_title("GenEval accuracy per task (error bars: 95 % bootstrap CI over prompts)")
        fig.tight_layout()
        fig.savefig(out / "tasks.png", dpi=100)
        plt.close(fig)
        files["tasks"] = "tasks.png"
    curves: dict[str, list[tuple[int, float]]] = {}
    for m in data["metrics"]:
        if m["metric"] == "fkea_curve":
            curves.setdefault(m["model"], []).append((int(m["n"]), float(m["value"])))
    if curves:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for model, points in sorted(curves.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=model)
        ax.set_xlabel("number of images n")
        ax.set_ylabel("FKEA VENDI-1")
        ax.set_title("Diversity vs n")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "diversity_vs_n.png", dpi=100)
        plt.close(fig)
        files["curve"] = "diversity_vs_n.png"
    return files


def _rows(data: dict[str, Any], links: dict[tuple[str, str], str]) -> tuple[list[str], list[list[str]]]:
    headers = [
        "model",
        "Overall",
        "95 % CI",
        *TASK_TITLES.values(),
        "images (prompts)",
        "FKEA VENDI-1",
        "RKE",
        "Scendi",
        "FKEA radius",
        "modes",
    ]
    rows = []
    ties = tied_with_next(data["board"])
    for row in data["board"]:
        model = row["model"]
        fkea = _metric(data["metrics"], model, "fkea", 1.0)
        rke = _metric(data["metrics"], model, "rke", 2.0)
        scendi = _metric(data["metrics"], model, "scendi", 1.0)
        mode_links = " ".join(
            f"[{source}]({links[(model, source)]})" for source in ("fkea", "scendi") if (model, source) in links
        )
        rows.append(
            [
                f"{row['label'] or model}{' (smoke)' if row['smoke'] else ''}",
                _fmt(row["overall"]) + (" ≈" if model in ties else ""),
                _interval(row.get("overall_ci_low"), row.get("overall_ci_high")),
                *(_fmt(row[t]) for t in TASKS),
                f"{row['images']} ({row['prompts']})" if row.get("images") is not None else "—",
                _fmt(fkea["value"] if fkea else None),
                _fmt(rke["value"] if rke else None),
                _fmt(scendi["value"] if scendi else None),
                _fmt(fkea["error_bound"] if fkea else None, 3),
                mode_links or "—",
            ]
        )
    return headers, rows


def _interval(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"[{low:.2f}, {high:.2f}]"


def tied_with_next(board: list[dict[str, Any]]) -> set[str]:
    """Models (in the board's overall order) whose overall bootstrap interval overlaps the next model's: the report
    does not rank them as different (marked ≈)."""
    tied: set[str] = set()
    for a, b in itertools.pairwise(board):
        lows = (a.get("overall_ci_low"), b.get("overall_ci_low"))
        highs = (a.get("overall_ci_high"), b.get("overall_ci_high"))
        if None in lows or None in highs:
            continue
        if a["overall_ci_low"] <= b["overall_ci_high"] and b["overall_ci_low"] <= a["overall_ci_high"]:
            tied |= {a["model"], b["model"]}
    return tied


def _provenance(data: dict[str, Any], config_name: str) -> str:
    run = data["run"]
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if run is None:
        return f"Config {config_name}; no completed run yet; rendered {now}."
    board = data["board"]
    smoke = (all(r["smoke"] for r in board) if board else False) or bool(run.get("smoke"))
    text = (
        f"Config {run['config_name']} (hash {run['config_hash']}), code {run['code_version']}, run {run['run_id']} "
        f"finished {run['finished_at']}; rendered {now}."
    )
    lite = lite_parts(run)
    if lite:
        text += f" {LITE_NOTE} ({'; '.join(lite)})."
    return text + (f" {SMOKE_NOTE}" if smoke else "")


def lite_parts(run: dict[str, Any] | None) -> list[str]:
    """The lite evaluators a run used (from its stored details), empty for the reference evaluators."""
    if not run or not run.get("details"):
        return []
    details = run["details"] if isinstance(run["details"], dict) else json.loads(run["details"])
    return [str(p) for p in details.get("lite", [])]


def render_reports(store_path: str | Path, out_dir: str | Path, *, config_name: str = "") -> dict[str, Any]:
    """Write leaderboard.md/.html, plots and galleries for the current models in the store; returns their paths."""
    store = Store(store_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(out)  # a killed render's temporary files
    data = collect(store)
    failure_data = failures.collect(store)
    links = _galleries(data, out)
    # plots are re-drawn only when what they show changed (matplotlib alone costs about a second to import)
    plot_data = [
        data["board"],
        data["task_ci"],
        [m for m in data["metrics"] if m["metric"] == "fkea_curve"],
        failure_data,
    ]
    stamp = hashlib.sha256(json.dumps(plot_data, sort_keys=True, default=str).encode()).hexdigest()
    marker = out / ".plots-rendered-from"
    previous = json.loads(marker.read_text()) if marker.exists() else {}
    drawn = [
        *previous.get("plots", {}).values(),
        *(p for f in previous.get("failures", {}).values() for p in f.values()),
    ]
    if previous.get("stamp") == stamp and all((out / p).exists() for p in drawn):
        plots, failure_plots = previous["plots"], previous["failures"]
    else:
        plots, failure_plots = _plots(data, out), failures.plots(failure_data, out)
        write_text_atomic(marker, json.dumps({"stamp": stamp, "plots": plots, "failures": failure_plots}))
    headers, rows = _rows(data, links)
    provenance = _provenance(data, config_name)
    smoke = SMOKE_NOTE in provenance
    lite = lite_parts(data["run"])
    agreement_rows = [[a["scope"], a["source"], a["statistic"], _fmt(a["value"], 3)] for a in data["agreement"]]
    md = ["# Leaderboard", ""]
    if smoke:
        md += [f"> **{SMOKE_NOTE}**", ""]
    if lite:
        md += [f"> **{LITE_NOTE}**: {'; '.join(lite)}.", ""]
    md += [
        "GenEval accuracy (Table 2 layout: overall = mean of the six tasks; 95 % CI = percentile bootstrap over "
        "prompts, 1,000 resamples, all images of a prompt together; ≈ marks a model whose interval overlaps the "
        "next one's: not ranked as different) and diversity (FKEA VENDI-1 and RKE on the image embedder, Scendi on "
        "CLIP image–prompt pairs; FKEA radius = Theorem-2 bound, δ = 0.05).",
        "",
        markdown_table(headers, rows) if rows else "No completed model yet.",
    ]
    if plots:
        md += ["", *(f"![{name}]({path})" for name, path in plots.items())]
    if agreement_rows:
        md += ["", "## Human agreement", "", markdown_table(["scope", "source", "statistic", "value"], agreement_rows)]
    failure_md = failures.markdown_section(failure_data, failure_plots)
    if failure_md:
        md += ["", *failure_md]
    md += ["", "---", provenance, ""]
    # each report file is replaced atomically: a refresh killed while rendering leaves the previous report
    write_text_atomic(out / "leaderboard.md", "\n".join(md))
    write_text_atomic(
        out / "leaderboard.html",
        _html(
            headers, rows, plots, agreement_rows, provenance, smoke, failures.html_section(failure_data, failure_plots)
        ),
    )
    return {
        "markdown": str(out / "leaderboard.md"),
        "html": str(out / "leaderboard.html"),
        "plots": plots,
        "failure_plots": failure_plots,
        "galleries": {f"{m}/{s}": p for (m, s), p in links.items()},
        "models": len(rows),
    }


def _cell(text: str) -> str:
    """Markdown links [a](b) in a cell become HTML links; everything else is escaped."""
    import re

    parts = []
    last = 0
    for m in re.finditer(r"\[([^\]]+)\]\(([^)]+)\)", text):
        parts.append(html.escape(text[last : m.start()]))
        parts.append(f'<a href="{html.escape(m.group(2))}">{html.escape(m.group(1))}</a>')
        last = m.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def _html(
    headers: list[str],
    rows: list[list[str]],
    plots: dict[str, str],
    agreement: list[list[str]],
    provenance: str,
    smoke: bool,
    failure_section: str = "",
) -> str:
    def table(hs: list[str], rs: list[list[str]], ident: str) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in hs)
        body = "".join("<tr>" + "".join(f"<td>{_cell(str(c))}</td>" for c in r) + "</tr>" for r in rs)
        return f'<table id="{ident}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

    banner = f'<p class="smoke">{html.escape(SMOKE_NOTE)}</p>' if smoke else ""
    if LITE_NOTE in provenance:
        banner += f'<p class="smoke">{html.escape(LITE_NOTE)}: see the provenance line below.</p>'

    images = "".join(f'<figure><img src="{html.escape(p)}" alt="{html.escape(n)}"></figure>' for n, p in plots.items())
    agree = (
        f"<h2>Human agreement</h2>{table(['scope', 'source', 'statistic', 'value'], agreement, 'agreement')}"
        if agreement
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>t2ibench leaderboard</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; }} td:first-child {{ text-align: left; }}
.smoke {{ background: #fff3cd; border: 1px solid #e0a800; padding: 8px; font-weight: bold; }}
figure {{ display: inline-block; margin: 1em; }} footer {{ margin-top: 2em; color: #555; font-size: 90%; }}
</style></head>
<body><h1>Leaderboard</h1>{banner}
{table(headers, rows, "leaderboard") if rows else "<p>No completed model yet.</p>"}
{images}{agree}{failure_section}
<footer id="provenance">{html.escape(provenance)}</footer>
</body></html>
"""
