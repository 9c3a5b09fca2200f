"""The leaderboard report, rendered from stored rows only (nothing is recomputed here). Writes ``leaderboard.html``
(self-contained: inline style and script; a sortable, filterable table of the spine benchmark's columns with bootstrap
intervals, ties marked, every stored benchmark's headline, diversity columns with σ, protocol groups flagged),
``leaderboard.md`` (the same numbers), ``models.html``, the drill-down pages of ``report/pages.py`` (model cards, inline
galleries, the spine's prompts with their images), ``diversity_vs_n.png`` and mode galleries under
``galleries/<model>/<fkea|scendi>/`` (PNG sheets and ``modes.json`` with the stored values), with a provenance footer
(config hash, git commit, code version, date, smoke/lite labels). The spine benchmark's own columns, plots, sections and
pages come from its ``report_spine`` module (``t2ibench.benchmarks.spine_report``); every other stored benchmark's from
its ``report`` module. Models are named by their config name everywhere; a label is shown beside it as a description.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import itertools
import json
from collections.abc import Mapping, Sequence, Set
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from t2ibench.benchmarks import StoredColumns, report_section, spine_report, stored_columns
from t2ibench.errors import InputError
from t2ibench.hashing import code_version
from t2ibench.io import remove_stale_tmp, write_text_atomic
from t2ibench.report import series as series_report
from t2ibench.report.changes import since_html, since_markdown
from t2ibench.report.markdown import markdown_table
from t2ibench.report.pages import write_model_pages
from t2ibench.report.site import Cell, fmt, interval, level_text, page, table
from t2ibench.store import Store, queries

SMOKE_NOTE = (
    "SMOKE RUN: built-in random-weight models produced these numbers; they test the system and measure nothing."
)


def collect(store: Store) -> dict[str, Any]:
    """Every row the report needs, read from the store (read-only)."""
    return {
        "board": queries.leaderboard(store),
        "metrics": queries.current_metrics(store),
        "modes": queries.current_modes(store),
        "images": queries.current_images(store),
        "diversity": queries.diversity(store),
        "convergence": queries.diversity_convergence(store),
        "protocol": queries.protocol(store),
        "run": queries.latest_run(store),
        "comparisons": queries.latest_comparisons(store),
        "series": queries.series(store),
        "benchmarks": {
            name: {
                "scores": queries.benchmark_scores(store, name),
                "answers": queries.benchmark_answers(store, name),
                "images": queries.benchmark_images(store, name),
            }
            for name in stored_columns()
        },
        **spine_report().collect(store),  # the spine benchmark's own rows
    }


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


def _curve_plot(data: dict[str, Any], out: Path) -> dict[str, str]:
    """diversity_vs_n.png: each model's FKEA VENDI-1 against the number of images (name → path under ``out``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files: dict[str, str] = {}
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


def _ranked_by_group(board: list[dict[str, Any]], groups: dict[str, str] | None) -> dict[str, list[dict[str, Any]]]:
    """The rows a rank compares (an overall score, not smoke), in board order, by protocol group (one group when
    ``groups`` is None): models measured under different protocols are never compared."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in board:
        if row.get("overall") is not None and not row.get("smoke"):
            out.setdefault(groups.get(row["model"], "—") if groups is not None else "", []).append(row)
    return out


def separated_pairs(comparisons: Sequence[Mapping[str, Any]]) -> set[frozenset[str]]:
    """The model pairs a stored paired test separates (``paired_comparisons`` of kind 'pair', flagged)."""
    return {frozenset((r["model"], r["other"])) for r in comparisons if r["kind"] == "pair" and r["flagged"]}


def tied_with_next(
    board: list[dict[str, Any]], groups: dict[str, str] | None = None, separated: Set[frozenset[str]] = frozenset()
) -> set[str]:
    """Models (in the board's overall order) that a paired test does not separate from the next model of the same
    protocol group (``groups``: model → group; None: one group; ``separated``: the pairs a stored paired test
    separates, ``separated_pairs``): the report does not rank them as different (marked ≈)."""
    tied: set[str] = set()
    for members in _ranked_by_group(board, groups).values():
        for a, b in itertools.pairwise(members):
            if frozenset((a["model"], b["model"])) not in separated:
                tied |= {a["model"], b["model"]}
    return tied


def ranks(
    board: list[dict[str, Any]], groups: dict[str, str] | None = None, separated: Set[frozenset[str]] = frozenset()
) -> dict[str, str]:
    """Rank labels in overall order within each protocol group (``groups``: model → group letter; None: one group):
    a model a paired test does not separate from the one above (``separated``: the pairs it does) shares its rank
    ('2='); with several groups each rank names its group ('1 (B)'), since scores of different protocols are not
    comparable and never ranked against each other; a model without an overall score has none ('—'), and a smoke
    model (random weights: it measures nothing) is not ranked ('smoke')."""
    out: dict[str, str] = {}
    for row in board:
        if row.get("overall") is None or row.get("smoke"):
            out[row["model"]] = "smoke" if row.get("smoke") else "—"
    by_group = _ranked_by_group(board, groups)
    for group, members in by_group.items():
        labels: list[int] = []
        for i, row in enumerate(members):
            shares = i > 0 and frozenset((members[i - 1]["model"], row["model"])) not in separated
            labels.append(labels[-1] if shares else i + 1)
        suffix = f" ({group})" if len(by_group) > 1 else ""
        for row, rank in zip(members, labels, strict=True):
            shared = labels.count(rank) > 1
            out[row["model"]] = f"{rank}{'=' if shared else ''}{suffix}"
    return out


def rank_sort_key(label: str, group: int) -> str:
    """The rank column's sort key: by protocol group (its position), then rank ('' for the unranked: sorted last)."""
    return f"{group * 1_000_000 + int(label.split()[0].rstrip('='))}" if label[:1].isdigit() else ""


SOME_SMOKE_NOTE = (
    "Rows marked (smoke) come from random-weight models: they test the system, measure nothing, and are not ranked."
)
GENERATION_FIELDS = ("steps", "guidance", "height", "width", "dtype", "seed", "scheduler", "negative_prompt")


def generation_differences(data: dict[str, Any]) -> list[str]:
    """Generation settings (steps, guidance, resolution, dtype, seed, scheduler, negative prompt) that differ between
    the current models: each model's own choice, so not a protocol group, but worth a note beside a comparison."""
    seen: dict[str, set[str]] = {}
    for p in data["protocol"]:
        gen = json.loads(p["generation"]) if isinstance(p["generation"], str) else (p["generation"] or {})
        for f in GENERATION_FIELDS:
            seen.setdefault(f, set()).add(json.dumps(gen.get(f)))
    return [f for f in GENERATION_FIELDS if len(seen.get(f, ())) > 1]


# -- protocol ----------------------------------------------------------------------------------------------------------

PROTOCOL_FIELDS = ("suite", "images_per_prompt", "seeding", "prompt_rewriting", "evaluator")


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): json.dumps(value, sort_keys=True)}


def protocols(data: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Each current model's protocol group ('A', 'B', …: models sharing suite, images per prompt, seeding, prompt
    rewriting and every evaluator setting) and the settings that differ between groups (empty: one protocol)."""
    spine = spine_report()
    keys: dict[str, dict[str, Any]] = {}
    for p in data["protocol"]:
        gen = json.loads(p["generation"]) if isinstance(p["generation"], str) else (p["generation"] or {})
        evaluator = json.loads(p["evaluator"]) if isinstance(p["evaluator"], str) else (p["evaluator"] or {})
        keys[p["model"]] = _flatten(
            {
                "suite": spine.model_suites(data, p["model"]),
                "images_per_prompt": gen.get("images_per_prompt"),
                "seeding": gen.get("seeding"),
                "prompt_rewriting": gen.get("prompt_rewriting"),
                "evaluator": evaluator,
            }
        )
    groups: dict[str, str] = {}
    seen: list[dict[str, Any]] = []
    for model in [b["model"] for b in data["board"]]:
        key = keys.get(model)
        if key is None:
            groups[model] = "—"
            continue
        if key not in seen:
            seen.append(key)
        groups[model] = chr(ord("A") + seen.index(key)) if seen.index(key) < 26 else str(seen.index(key) + 1)
    differing = sorted({k for a in seen for b in seen for k in set(a) | set(b) if a.get(k) != b.get(k)})
    return groups, differing


# -- pages -----------------------------------------------------------------------------------------------------------


def _diversity(data: dict[str, Any], model: str) -> dict[str, Any]:
    return next((d for d in data["diversity"] if d["model"] == model), {})


def _diversity_cell(div: dict[str, Any], key: str) -> Cell:
    """A diversity score with its interval and its convergence verdict (✓ / ↗, the reason as tooltip)."""
    return Cell.number(
        div.get(key),
        low=div.get(f"{key}_ci_low"),
        high=div.get(f"{key}_ci_high"),
        verdict=div.get(f"{key}_convergence"),
        reason=div.get(f"{key}_convergence_reason"),
    )


def _diversity_rank_cell(row: dict[str, Any]) -> Cell:
    """VENDI-1's rank among the models measured under the same kernel, or 'not ranked' with the reason as tooltip."""
    if row.get("diversity_rank") is not None:
        return Cell.text(str(row["diversity_rank"]), sort=row["diversity_rank"], css="")
    if row.get("vendi_1") is None:
        return Cell.text("—", sort="", css="")
    note = html.escape(str(row.get("diversity_note") or "not comparable"))
    return Cell(f'<span title="{note}">not ranked</span>', "", "")


def diversity_flags(board: list[dict[str, Any]]) -> list[str]:
    """One line per model whose diversity is not ranked against the others: '<model>: <why>'."""
    return [f"{r['model']}: {r['diversity_note']}" for r in board if r.get("diversity_note")]


def protocol_letters(board: list[dict[str, Any]], benchmark: str) -> dict[str, str]:
    """Model → the letter of its protocol for ``benchmark`` (its leaderboard column ``<benchmark>_protocol``) among
    the current models', only when they differ (then the column's numbers are not comparable across letters);
    empty otherwise."""
    column = f"{benchmark}_protocol"
    keys: dict[str, str] = {}
    for r in board:
        if r.get(column) is not None:
            keys.setdefault(str(r[column]), chr(ord("A") + len(keys)))
    if len(keys) < 2:
        return {}
    return {r["model"]: keys[str(r[column])] for r in board if r.get(column) is not None}


def _shown_benchmarks(board: list[dict[str, Any]]) -> list[tuple[str, StoredColumns, dict[str, str]]]:
    """The stored benchmarks with a headline on the board: (name, columns, protocol letters), in registry order."""
    return [
        (name, cols, protocol_letters(board, name))
        for name, cols in stored_columns().items()
        if any(r.get(cols.column(name, cols.headline)) is not None for r in board)
    ]


def _benchmark_text(row: dict[str, Any], name: str, cols: StoredColumns, letters: dict[str, str]) -> str:
    """'12.34 [10.1, 14.5]' (the benchmark's headline, as stored) with its protocol letter when they differ, and
    what it was measured on when that is not the whole released suite (its report module's ``coverage_labels``:
    '8 of 800 prompts', 'not the released suite')."""
    head = cols.column(name, cols.headline)
    if row.get(head) is None:
        return "—"
    text = f"{row[head]:.2f} {interval(row.get(f'{head}_ci_low'), row.get(f'{head}_ci_high'))}"
    labels = [f"protocol {letters[row['model']]}"] if row["model"] in letters else []
    labels += report_section(name).coverage_labels(row.get(f"{name}_suite"), row.get(f"{name}_prompts"))
    return text + (f" ({'; '.join(labels)})" if labels else "")


def _leaderboard_table(
    data: dict[str, Any], groups: dict[str, str], links: dict[str, str], tables: Sequence[Any] = ()
) -> str:
    spine = spine_report()
    separated = separated_pairs(data["comparisons"])
    ties = tied_with_next(data["board"], groups, separated)
    rank = ranks(data["board"], groups, separated)
    group_order = {g: i for i, g in enumerate(dict.fromkeys([*groups.values(), "—"]))}
    shown = _shown_benchmarks(data["board"])
    headers = ["rank", "model", *spine.board_headers(level_text(data["board"])), *(cols.title for _, cols, _ in shown),
               "images (prompts)", "FKEA VENDI-1", "truncated VENDI-1", "RKE", "Scendi", "diversity rank", "σ",
               "rff_dim", "FKEA radius", "protocol"]  # fmt: skip
    rows = []
    for row in data["board"]:
        model = row["model"]
        page_link = links.get(model, "")
        div = _diversity(data, model)
        name = f'<a href="{html.escape(page_link)}">{html.escape(model)}</a>' if page_link else html.escape(model)
        label = f'<br><span class="label">{html.escape(row["label"])}</span>' if row.get("label") else ""
        smoke = ' <span class="label">(smoke)</span>' if row.get("smoke") else ""
        mark = spine.row_mark(data, model)
        smoke += f' <span class="label" title="{html.escape(spine.REWRITTEN_NOTE)}">{mark}</span>' if mark else ""
        cells = [
            Cell.text(rank[model], sort=rank_sort_key(rank[model], group_order[groups.get(model, "—")]), css=""),
            Cell(name + smoke + label, model, "text"),
            *spine.board_cells(row, data, page_link, model in ties),
        ]
        for name, cols, letters in shown:
            head = cols.column(name, cols.headline)
            cells.append(Cell(html.escape(_benchmark_text(row, name, cols, letters)), str(row.get(head) or ""), ""))
        cells += [
            Cell(f"{row['images']} ({row['prompts']})" if row.get("images") is not None else "—",
                 str(row.get("images") or ""), ""),
            *(_diversity_cell(div, key) for key in ("vendi_1", "truncated_vendi_1", "rke", "scendi")),
            _diversity_rank_cell(row),
            Cell.number(div.get("sigma"), digits=3),
            Cell.number(div.get("rff_dim"), digits=0),
            Cell.number(div.get("fkea_radius"), digits=3),
            Cell.text(groups.get(model, "—"), css=""),
        ]  # fmt: skip
        rows.append(cells)
    # published rows under a measured model's protocol (the spine places them): beside it, marked, never ranked
    for placed, spine_cells in spine.board_rows(data, tables):
        group = groups.get(placed.models[0], "—")
        filler = [Cell.text("—", sort="", css="") for _ in range(len(headers) - len(spine_cells) - 2)]
        rows.append([Cell.text("published", sort="~", css=""), *spine_cells, *filler, Cell.text(group, css="")])
    return table("leaderboard", headers, rows, filterable=True, text_columns=(1,))


def _models_index(
    data: dict[str, Any], groups: dict[str, str], links: dict[str, str], banners: list[str], footer: str
) -> str:
    rows = []
    for row in data["board"]:
        model = row["model"]
        link = links.get(model)
        name = f'<a href="{html.escape(link)}">{html.escape(model)}</a>' if link else html.escape(model)
        rows.append(
            [
                Cell(name, model, "text"),
                Cell.text(row.get("label") or ""),
                Cell.number(row.get("overall"), low=row.get("overall_ci_low"), high=row.get("overall_ci_high")),
                Cell.text(groups.get(model, "—"), css=""),
                Cell.text(row.get("model_hash") or ""),
                Cell.text(row.get("evaluator_hash") or ""),
            ]
        )
    body = table("models", ["model", "label", "Overall", "protocol", "model version", "evaluator version"], rows,
                 text_columns=(0, 1, 4, 5))  # fmt: skip
    return page("Models", body, banners=banners, footer=footer)


def _provenance(data: dict[str, Any], config_name: str) -> str:
    run = data["run"]
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if run is None:
        return f"Config {config_name}; no completed run yet; rendered {now}."
    board = data["board"]
    smoke = (all(r["smoke"] for r in board) if board else False) or bool(run.get("smoke"))
    details = run["details"] if isinstance(run.get("details"), dict) else json.loads(run.get("details") or "{}")
    commit = (details.get("environment") or {}).get("git_commit")
    text = (
        f"Config {run['config_name']} (hash {run['config_hash']}), git commit {commit or 'none (not a git checkout)'}, "
        f"code version {run['code_version']}, run {run['run_id']} finished {run['finished_at']}; rendered {now}."
    )
    lite = lite_parts(run)
    if lite:
        text += f" {spine_report().LITE_NOTE} ({'; '.join(lite)})."
    return text + (f" {SMOKE_NOTE}" if smoke else "")


def lite_parts(run: dict[str, Any] | None) -> list[str]:
    """The lite evaluators a run used (from its stored details), empty for the reference evaluators."""
    if not run or not run.get("details"):
        return []
    details = run["details"] if isinstance(run["details"], dict) else json.loads(run["details"])
    return [str(p) for p in details.get("lite", [])]


def _markdown(
    data: dict[str, Any],
    links: dict[tuple[str, str], str],
    plots: dict[str, str],
    published: list[Any],
    banners: list[str],
    provenance: str,
) -> str:
    spine = spine_report()
    groups, _ = protocols(data)
    separated = separated_pairs(data["comparisons"])
    ties = tied_with_next(data["board"], groups, separated)
    rank = ranks(data["board"], groups, separated)
    shown = _shown_benchmarks(data["board"])
    headers = ["rank", "model", *spine.markdown_headers(level_text(data["board"])),
               *(cols.title for _, cols, _ in shown), "images (prompts)", "FKEA VENDI-1", "VENDI-1 interval",
               "truncated VENDI-1", "RKE", "Scendi", "diversity rank", "σ", "rff_dim", "FKEA radius",
               "modes"]  # fmt: skip
    rows = []
    for row in data["board"]:
        model = row["model"]
        div = _diversity(data, model)
        mark = spine.row_mark(data, model)
        mode_links = " ".join(
            f"[{source}]({links[(model, source)]})" for source in ("fkea", "scendi") if (model, source) in links
        )
        rows.append(
            [
                rank[model],
                f"{model}{' (smoke)' if row['smoke'] else ''}{(' ' + mark) if mark else ''}",
                *spine.markdown_cells(row, model in ties),
                *(_benchmark_text(row, name, cols, letters) for name, cols, letters in shown),
                f"{row['images']} ({row['prompts']})" if row.get("images") is not None else "—",
                fmt(div.get("vendi_1")),
                interval(div.get("vendi_1_ci_low"), div.get("vendi_1_ci_high")),
                fmt(div.get("truncated_vendi_1")),
                fmt(div.get("rke")),
                fmt(div.get("scendi")),
                str(row["diversity_rank"])
                if row.get("diversity_rank") is not None
                else ("not ranked" if row.get("vendi_1") is not None else "—"),
                fmt(div.get("sigma"), 3),
                fmt(div.get("rff_dim"), 0),
                fmt(div.get("fkea_radius"), 3),
                mode_links or "—",
            ]
        )
    md = ["# Leaderboard", ""]
    md += [f"> **{b}**" for b in banners] + ([""] if banners else [])
    md += since_markdown(data["comparisons"])
    md += [
        spine.legend_markdown(level_text(data["board"]))
        + " and diversity (FKEA VENDI-1 and RKE on the image embedder with its bootstrap interval, Scendi on "
        "image–prompt pairs; FKEA radius = Theorem-2 bound, δ = 0.05)."
        + "".join(f" {cols.legend}" for _, cols, _ in shown),
        "",
        markdown_table(headers, rows) if rows else "No completed model yet.",
    ]
    flags = diversity_flags(data["board"])
    if flags:
        md += ["", "Diversity is ranked only between models measured under one kernel (the same σ from a shared "
               "source, kernel, rff_dim and embedders):", "", *(f"* {f}" for f in flags)]  # fmt: skip
    others = {n: p for n, p in plots.items() if not n.startswith(series_report.PREFIX)}  # series: their own section
    md += spine.sections_markdown(data, published, others)
    md += series_report.markdown_section(data["series"], plots)
    for name, stored in data["benchmarks"].items():
        section = report_section(name).markdown_section(stored["scores"], data["comparisons"])
        if section:
            md += ["", section]
    closing = spine.closing_markdown(data)
    if closing:
        md += ["", *closing]
    md += ["", "---", provenance, ""]
    return "\n".join(md)


def render_reports(
    store_path: str | Path,
    out_dir: str | Path,
    *,
    config_name: str = "",
    published: Sequence[str | Path] | None = None,
    root: str | Path | None = None,
) -> dict[str, Any]:
    """Write the report for the current models in the store: leaderboard.md/.html, models.html, a page per model and
    per prompt, the spine's pages (agreement.html), plots, thumbnails and galleries; returns their paths.
    ``published``: the published reference tables shown (built-in names or YAML paths; None: the spine's default).
    ``root``: the workspace the refresh ran in (a benchmark's stored image names are relative to it; None: the
    current folder)."""
    store = Store(store_path)
    if not Path(store_path).exists():
        raise InputError(f"{store_path}: no results store yet (run a benchmark first)")
    store.initialise()  # a store written by an older version gains the current schema first (additive migration)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(out)  # a killed render's temporary files
    spine = spine_report()
    tables = spine.load_tables(published)
    with store.session():  # one connection for every read
        data = collect(store)
    # the report is re-rendered only when what it shows changed: its rows, the published tables, the config's name
    # and the code that renders them (a refresh with nothing new keeps the files as they are)
    on_disk = [Path(r["path"]).exists() for r in data["images"]]  # galleries and thumbnails are drawn from them
    # the run that last made each version current is bookkeeping the report does not show (a model card names the
    # run that computed its version): a refresh that changed nothing leaves the report as it is
    rows = [_unbooked(v) for k, v in sorted(data.items()) if k != "run"] + [data["run"]]
    inputs = [rows, [dataclasses.asdict(t) for t in tables], config_name, code_version(), on_disk, str(root)]
    report_stamp = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
    rendered = out / ".report-rendered-from"
    before = json.loads(rendered.read_text()) if rendered.exists() else {}
    if before.get("stamp") == report_stamp and all(p.exists() for p in _files(before.get("result", {}), out)):
        return {**before["result"], "rendered": False}
    links = _galleries(data, out)
    plots, failure_plots = _plots(data, out, spine)
    data["failure_plots"] = failure_plots
    provenance = _provenance(data, config_name)
    banners = _banners(data, provenance, spine)
    groups, differing = protocols(data)
    flag = _flags_html(data, groups, differing)
    pages = write_model_pages(data, out, groups=groups, banners=banners, footer=provenance)
    benchmark_pages = {
        name: report_section(name).write_pages(
            stored,
            out,
            banners=banners,
            footer=provenance,
            root=Path(root) if root is not None else None,
        )
        for name, stored in data["benchmarks"].items()
    }
    figures = "".join(
        f'<figure><img src="{html.escape(p)}" alt="{html.escape(n)}"></figure>'
        for n, p in plots.items()
        if not n.startswith(series_report.PREFIX)  # drawn in the series section
    )
    body = (
        since_html(data["comparisons"]) + f"{flag}<p>{spine.legend_html()} "
        "Diversity: FKEA VENDI-1 and RKE on the image embedder (σ, rff_dim), Scendi on image–prompt pairs; "
        "their brackets are bootstrap intervals over prompts for the score at this number of prompts (centred "
        "percentile; how each was obtained, or why none was, is on the model page and in docs/metrics.md). ✓ "
        "marks a diversity score whose convergence report says 'converged' (it moved < 5 % from n/2 to n "
        "prompts and stayed in its band), ↗ one that is 'not yet' — still moving with the sample size, so it "
        "describes this many images rather than the model; hover for the reason, the model page has the "
        "curve.</p>"
        + (_leaderboard_table(data, groups, pages, tables) if data["board"] else "<p>No completed model yet.</p>")
        + spine.sections_html(data, tables, figures)
        + "".join(
            report_section(name).html_section(stored["scores"], data["comparisons"])
            for name, stored in data["benchmarks"].items()
        )
        + series_report.html_section(data["series"], plots)
        + spine.closing_html(data)
    )
    write_text_atomic(out / "leaderboard.html", page("Leaderboard", body, banners=banners, footer=provenance))
    write_text_atomic(out / "models.html", _models_index(data, groups, pages, banners, provenance))
    spine_pages = spine.write_pages(data, out, banners=banners, footer=provenance)
    write_text_atomic(out / "leaderboard.md", _markdown(data, links, plots, tables, banners, provenance))
    result = {
        "markdown": str(out / "leaderboard.md"),
        "html": str(out / "leaderboard.html"),
        "models_html": {m: str(out / p) for m, p in pages.items()},
        **spine_pages,
        "plots": plots,
        "failure_plots": failure_plots,
        "galleries": {f"{m}/{s}": p for (m, s), p in links.items()},
        "published": [t.path for t in tables],
        "benchmark_pages": benchmark_pages,
        "models": len(data["board"]),
        "protocols": len(set(groups.values())),
    }
    write_text_atomic(rendered, json.dumps({"stamp": report_stamp, "result": result}, default=str))
    return {**result, "rendered": True}


def _plots(data: dict[str, Any], out: Path, spine: Any) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The report's plots and failure plots (paths relative to ``out``), drawn again only when what they show
    changed (matplotlib alone costs about a second to import)."""
    plot_data = [
        data["board"],
        data["series"],
        spine.plotted(data),
        [m for m in data["metrics"] if m["metric"] == "fkea_curve"],
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
        plots = {**spine.plots(data, out), **_curve_plot(data, out), **series_report.plots(data["series"], out)}
        failure_plots = spine.failure_plots(data, out)
        write_text_atomic(marker, json.dumps({"stamp": stamp, "plots": plots, "failures": failure_plots}))
    return plots, failure_plots


def _banners(data: dict[str, Any], provenance: str, spine: Any) -> list[str]:
    """The notes every page of the report opens with: smoke rows, rewritten prompts, the lite evaluator."""
    banners: list[str] = []
    if SMOKE_NOTE in provenance:
        banners.append(SMOKE_NOTE)
    elif any(r.get("smoke") for r in data["board"]):
        banners.append(SOME_SMOKE_NOTE)
    if any(spine.row_mark(data, r["model"]) for r in data["board"]):
        banners.append(spine.REWRITTEN_NOTE)
    lite = lite_parts(data["run"])
    if lite:
        banners.append(f"{spine.LITE_NOTE}: {'; '.join(lite)}.")
    return banners


def _flags_html(data: dict[str, Any], groups: dict[str, str], differing: list[str]) -> str:
    """The leaderboard's warnings (HTML): protocols that differ or are missing, diversity measured under different
    kernels, generation settings that differ between models."""
    flag = ""
    if not differing and len(set(groups.values())) > 1:  # some models have no stored protocol record
        flag = (
            '<p class="flag" id="protocol-flag">Some models have no stored protocol record (protocol "—"): they are '
            "ranked apart from the others.</p>"
        )
    if differing:
        shown = ", ".join(differing[:8]) + (f" and {len(differing) - 8} more" if len(differing) > 8 else "")
        flag = (
            f'<p class="flag" id="protocol-flag">These models were measured under {len(set(groups.values()))} '
            f"different protocols (column 'protocol'); scores of different groups are not comparable, so each model is "
            f"ranked within its group only ('1 (B)'). They differ "
            f"in: {html.escape(shown)}. See each model card.</p>"
        )
    flags = diversity_flags(data["board"])
    if flags:
        flag += (
            '<p class="flag" id="diversity-flag">Diversity is ranked only between models measured under one kernel '
            "(the same σ from a shared source, kernel, rff_dim and embedders); column 'diversity rank'. "
            + html.escape("; ".join(flags))
            + ".</p>"
        )
    generation = generation_differences(data)
    if generation:
        flag += (
            '<p id="generation-note">Generation settings differ between models '
            f"({html.escape(', '.join(generation))}): each model's own choice, recorded on its card; keep it in mind "
            "when comparing.</p>"
        )
    return flag


BOOKKEEPING = ("run_id", "finished_at", "previous_run")
"""Columns of the current versions' rows (and of the latest run's comparisons) that name the runs involved: not shown
by the report, so a refresh that changed nothing — the same comparisons, under new run ids — keeps it as it is."""


def _unbooked(value: Any) -> Any:
    """``value`` (rows, or a mapping of row lists) without the BOOKKEEPING columns of its rows."""
    if isinstance(value, dict):
        return {k: _unbooked(v) for k, v in value.items() if k not in BOOKKEEPING}
    if isinstance(value, list):
        return [_unbooked(v) for v in value]
    return value


def _files(result: dict[str, Any], out: Path) -> list[Path]:
    """Every file a rendered report's result names: its pages, plots and galleries (relative ones under ``out``)."""
    named = [result.get("markdown", ""), result.get("html", ""), result.get("agreement_html", "")]
    named += list(result.get("models_html", {}).values())
    named += list(result.get("plots", {}).values())
    named += [p for plots in result.get("failure_plots", {}).values() for p in plots.values()]
    named += list(result.get("galleries", {}).values())
    named += [p for pages in result.get("benchmark_pages", {}).values() for p in pages.values()]
    files = [Path(p) if Path(p).is_absolute() else out / p for p in named if p]
    return files or [out / "\0 nothing rendered"]
