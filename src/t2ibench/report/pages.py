"""The report's drill-down pages, rendered from stored rows only: a page per model (model card, the spine
benchmark's scores, diversity with intervals and convergence, inline mode galleries, the spine's prompt list) and
the spine's page per prompt. What is the spine benchmark's own (its image rows, thumbnails, score section, prompt
list and prompt pages) comes from its ``report_spine`` module (``t2ibench.benchmarks.spine_report``).

Layout under the report folder: ``models.html``, ``models/<model>.html``, ``models/<model>/p<index>.html``,
``thumbs/<model>/…`` (128 px, boxes) and ``views/<model>/…`` (384 px, boxes and labels). From the leaderboard a
task score links to the model page filtered to that task (``#task=…``): the images behind a score are two clicks
away (score → prompt row → prompt page), their thumbnails one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from t2ibench.benchmarks import SPINE, spine_report
from t2ibench.io import write_text_atomic
from t2ibench.report.site import Cell, esc, fmt, page, table

THUMB = 128
VIEW = 384


def href(*parts: str) -> str:
    """A relative URL of path parts (each percent-encoded: model names may hold '+', '=' or '@')."""
    return "/".join(quote(p, safe="") for p in parts)


def convergence_table(rows: Sequence[Mapping[str, Any]], model: str) -> str:
    """The convergence reports of one model's diversity scores: the score at n/8 … n prompts with its band, the
    verdict and its reason (from the ``diversity_convergence`` view; empty when none was stored)."""
    mine = [r for r in rows if r["model"] == model]
    if not mine:
        return (
            "<p>Convergence: not assessed (it needs the bootstrap and at least 9 prompts; "
            "evaluators.diversity.convergence, evaluators.scendi.convergence).</p>"
        )
    fractions = sorted({float(r["fraction"]) for r in mine})
    headers = ["score", *(_fraction_title(f) for f in fractions), "verdict"]
    body = []
    for score in dict.fromkeys(r["score"] for r in mine):
        points = {float(r["fraction"]): r for r in mine if r["score"] == score}
        first = next(iter(points.values()))
        cells = [Cell.text(first.get("label") or score)]
        for f in fractions:
            p = points.get(f, {})
            value = p.get("value")
            count = f"{p.get('images')} images, {p.get('prompts')} prompts" if p else ""
            cell = Cell.number(value, low=p.get("ci_low"), high=p.get("ci_high"))
            cells.append(Cell(f'<span title="{esc(count)}">{cell.html}</span>', cell.sort, cell.css))
        cells.append(Cell.text(f"{first.get('verdict')}: {first.get('reason')}"))
        body.append(cells)
    return "<h3>Convergence with the number of prompts</h3>" + table(
        "convergence", headers, body, sortable=False,
        caption="Each score on nested prompt subsets (all images of the prompts drawn; seeded), with its centred "
        "bootstrap band where it has one. Rule: converged when it moved < 5 % from n/2 to n and the n/2 value lies "
        "in the band at n (docs/metrics.md#convergence).",
    )  # fmt: skip


def _fraction_title(fraction: float) -> str:
    if fraction == 1.0:
        return "n"
    k = round(1.0 / fraction)
    return f"n/{k}" if abs(1.0 / k - fraction) < 1e-9 else f"{fraction:g}n"


def evaluator_sections(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The config sections inside a stored protocol record (``evaluators.settings``): the spine benchmark's
    evaluator (its name's), 'image_embedder', 'clip', 'diversity', 'scendi' — from the record by step (schema 10:
    {SPINE: {SPINE: ...}, 'embed': {'image_embedder': ..., 'clip': ...}, ...}) or, for versions stored before, the
    evaluators section itself."""

    def step(name: str) -> dict[str, Any]:
        value = settings.get(name, {})
        return value if isinstance(value, dict) else {}

    if "embed" not in settings:
        return dict(settings)
    return {
        SPINE: step(SPINE).get(SPINE, {}),
        "image_embedder": step("embed").get("image_embedder", {}),
        "clip": step("embed").get("clip", {}),
        "diversity": step("diversity").get("diversity", {}),
        "scendi": step("scendi").get("scendi", {}),
        "ci_level": step("scores").get("ci_level"),
    }


def card(
    protocol: Mapping[str, Any] | None,
    diversity: Mapping[str, Any] | None,
    suite: str,
    group: str,
    checks: Sequence[tuple[str, str]] = (),
) -> str:
    """The model card: generation settings, prompt rewriting, the spine's evaluator, embedder, σ per modality,
    rff_dim, the run's environment and the stored version hashes (a <dl>); ``checks``: the spine's lines about its
    scores (the reproduction check against a published row), after its evaluator's."""
    if protocol is None:
        return "<p>No protocol stored for this model.</p>"
    gen = _json(protocol.get("generation"))
    ev = evaluator_sections(_json(protocol.get("evaluator")))
    env = _json(protocol.get("environment"))
    div = diversity or {}
    size = f"{gen.get('width')}×{gen.get('height')}" if gen.get("width") else "model default"
    items = [
        ("model", f"{protocol['model']} ({protocol.get('label') or 'no label'})"),
        ("backend / weights", f"{protocol.get('backend')}: {protocol.get('model_id')}"),
        ("protocol group", group),
        ("suite", suite),
        (
            "generation",
            f"{gen.get('images_per_prompt')} images per prompt, {gen.get('steps')} steps, guidance "
            f"{gen.get('guidance')}, {size}, dtype {gen.get('dtype')}, seed {gen.get('seed')} ({gen.get('seeding')}), "
            f"scheduler {gen.get('scheduler') or 'default'}, negative prompt {gen.get('negative_prompt') or 'none'}",
        ),
        ("prompt rewriting", gen.get("prompt_rewriting") or spine_report().wording_of(suite) or "none"),
        *spine_report().card_items(ev),
        *checks,
        ("image embedder", _component(ev.get("image_embedder"))),
        ("image–text embedder", _component(ev.get("clip"))),
        (
            "kernel",
            f"FKEA σ = {fmt(div.get('sigma'), 3)}, rff_dim {div.get('rff_dim')}; Scendi image σ = "
            f"{fmt(div.get('scendi_image_sigma'), 3)}, text σ = {ev.get('scendi', {}).get('text_sigma')}, rff_dim "
            f"{div.get('scendi_rff_dim')}",
        ),
        ("lite evaluators", ", ".join(_json(protocol.get("lite"), [])) or "none (reference evaluators)"),
        ("git commit", env.get("git_commit") or "not a git checkout"),
        ("device", env.get("device") or "not recorded"),
        ("python / platform", f"{env.get('python')} / {env.get('platform')}"),
        (
            "packages",
            ", ".join(f"{k} {v}" for k, v in sorted((env.get("packages") or {}).items()) if v) or "not recorded",
        ),
        ("version", f"model {protocol.get('model_hash')}, evaluator {protocol.get('evaluator_hash')}, computed in "
         f"run {protocol.get('computed_in_run')}"),
    ]  # fmt: skip
    return (
        '<dl class="card" id="model-card">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items) + "</dl>"
    )


def _component(section: Any) -> str:
    if not isinstance(section, dict):
        return "not recorded"
    return f"{section.get('backend')}: {section.get('model')}" + (
        f" ({section.get('pretrained')})" if section.get("pretrained") else ""
    )


def _json(value: Any, default: Any = None) -> Any:
    if value is None:
        return {} if default is None else default
    return json.loads(value) if isinstance(value, str) else value


def galleries(model: str, modes: Sequence[Mapping[str, Any]], rows: Sequence[Any], files: Mapping[Any, Any]) -> str:
    """FKEA and Scendi modes inline: per mode its eigenvalue share, then its top images captioned with their
    prompts (positions index the model's images in stored order)."""
    figure = spine_report().figure  # the spine's images, each with its verdict
    parts = []
    for source, title in (("fkea", "FKEA modes (image kernel)"), ("scendi", "Scendi modes (beyond the prompts)")):
        chosen = [m for m in modes if m["model"] == model and m["source"] == source]
        if not chosen:
            continue
        parts.append(f'<section id="modes-{source}"><h3>{esc(title)}</h3>')
        for m in chosen:
            top = _json(m.get("top"), [])
            scores = _json(m.get("top_scores"), [])
            figures = []
            for k, pos in enumerate(top):
                if not isinstance(pos, int) or not 0 <= pos < len(rows):
                    continue
                r = rows[pos]
                src = files.get((r.prompt_index, r.sample), (None, None))[0]
                score = f" · score {scores[k]:.3f}" if k < len(scores) and isinstance(scores[k], (int, float)) else ""
                figures.append(figure(r, src, href(model, f"p{r.prompt_index:05d}.html"), f"{r.prompt}{score}"))
            parts.append(
                f'<div class="mode"><p>Mode {m["mode_index"]}: eigenvalue {fmt(m.get("eigenvalue"), 4)}, share '
                f"{fmt(100 * m['share'] if m.get('share') is not None else None, 1)} % of the spectrum, entropy share "
                f"{fmt(100 * m['entropy_share'] if m.get('entropy_share') is not None else None, 1)} %</p>"
                f'<div class="gallery">{"".join(figures)}</div></div>'
            )
        parts.append("</section>")
    return "".join(parts) or "<p>No modes stored for this model.</p>"


def model_page(
    model: str,
    data: Mapping[str, Any],
    rows: Sequence[Any],
    files: Mapping[tuple[int, int], tuple[str, str]],
    *,
    group: str,
    banners: Sequence[str],
    footer: str,
) -> str:
    """models/<model>.html: card, scores with intervals, galleries, failure figures and the filterable prompt table."""
    files = {k: ("../" + t, "../" + v) for k, (t, v) in files.items()}  # this page lives in models/
    diversity = next((d for d in data["diversity"] if d["model"] == model), None)
    protocol = next((p for p in data["protocol"] if p["model"] == model), None)
    div = diversity or {}
    div_rows = [
        [
            Cell.text(name),
            Cell.number(
                div.get(key),
                low=div.get(f"{key}_ci_low"),
                high=div.get(f"{key}_ci_high"),
                verdict=div.get(f"{key}_convergence"),
                reason=div.get(f"{key}_convergence_reason"),
            ),
            Cell.text(
                div.get(f"{key}_convergence")
                or ("no report: the bootstrap undercovers a maximum" if key == "vendi_inf" else "not assessed")
            ),
        ]
        for name, key in (
            ("FKEA VENDI-1", "vendi_1"),
            ("FKEA VENDI-2", "vendi_2"),
            ("FKEA VENDI-∞", "vendi_inf"),
            ("RKE", "rke"),
            ("Scendi", "scendi"),
            (f"truncated VENDI-1 (t = {div.get('truncation')})", "truncated_vendi_1"),
            ("conditional VENDI-1 (prompt-aware)", "cond_vendi"),
            ("information VENDI-1 (prompt-driven)", "info_vendi"),
        )
    ]
    div_table = (
        table("diversity", ["score", "value [interval]", "convergence"], div_rows, sortable=False)
        + (convergence_table(data.get("convergence", []), model))
        + (
            f"<p>FKEA radius (Theorem 2, δ = 0.05): {fmt(div.get('fkea_radius'), 3)}; n = {div.get('n')}; intervals: "
            f"{esc(div.get('ci_method') or 'not stored')}. Scendi's C_TT⁻¹: "
            f"{esc(div.get('scendi_regularisation') or 'not recorded')}.</p>"
        )
    )
    spine = spine_report()
    suite = ", ".join(spine.model_suites(data, model)) or "—"
    body = (
        f"<h2>Model card</h2>{card(protocol, diversity, suite, group, spine.reproduction_items(data, model))}"
        f"{spine.score_section(model, data)}<h2>Diversity</h2>{div_table}"
        f'<h2 id="modes">Modes</h2>{galleries(model, data["modes"], rows, files)}'
        + spine.failure_figures(model, data)
        + spine.prompt_list(model, rows, files)
    )
    return page(f"Model {model}", body, root="../", banners=banners, footer=footer)


def write_model_pages(
    data: Mapping[str, Any], out: Path, *, groups: Mapping[str, str], banners: Sequence[str], footer: str
) -> dict[str, str]:
    """Write every current model's page, its prompt pages and thumbnails; returns model → page path (relative)."""
    written: dict[str, str] = {}
    for b in data["board"]:
        model = b["model"]
        spine = spine_report()
        rows = spine.model_images(data, model)
        files = spine.draw_thumbnails(rows, out, model)
        write_text_atomic(
            out / "models" / f"{model}.html",
            model_page(model, data, rows, files, group=groups.get(model, "—"), banners=banners, footer=footer),
        )
        for name, text in spine.prompt_pages(model, rows, files, banners=banners):
            write_text_atomic(out / "models" / model / name, text)
        written[model] = href("models", f"{model}.html")
    return written
