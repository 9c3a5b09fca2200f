"""The report's drill-down pages, rendered from stored rows only: a page per model (model card, scores with
intervals, inline mode galleries, every prompt with its images) and a page per prompt (each image with its kept
detections drawn, the verdict and its reason).

Layout under the report folder: ``models.html``, ``models/<model>.html``, ``models/<model>/p<index>.html``,
``thumbs/<model>/…`` (128 px, boxes) and ``views/<model>/…`` (384 px, boxes and labels). From the leaderboard a
task score links to the model page filtered to that task (``#task=…``): the images behind a score are two clicks
away (score → prompt row → prompt page), their thumbnails one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from t2ibench.benchmarks.geneval.metrics import TASKS
from t2ibench.benchmarks.geneval.report import TASK_TITLES
from t2ibench.io import write_text_atomic
from t2ibench.report import thumbs
from t2ibench.report.site import Cell, esc, fmt, interval, page, select, table

THUMB = 128
VIEW = 384
FAILURE_ORDER = (
    "object missing",
    "first missing",
    "second missing",
    "both missing",
    "too few",
    "too many",
    "wrong color",
    "wrong relation",
    "no relation",
    "swap",
    "leak",
    "absent",
    "miss",
    "color unknown",
    "other",
)


@dataclass
class ImageRow:
    """One stored image of a model with its verdict and kept detections (as read from the store)."""

    prompt_index: int
    sample: int
    path: str
    prompt: str = ""
    task: str = ""
    correct: bool | None = None
    reason: str = ""
    failure: str | None = None
    detections: list[dict[str, Any]] = field(default_factory=list)
    classes: tuple[str, ...] = ()

    @property
    def stem(self) -> str:
        """File stem of this image's thumbnails: p<prompt>_s<sample>."""
        return f"p{self.prompt_index:05d}_s{self.sample}"


def href(*parts: str) -> str:
    """A relative URL of path parts (each percent-encoded: model names may hold '+', '=' or '@')."""
    return "/".join(quote(p, safe="") for p in parts)


def model_images(data: Mapping[str, Any], model: str) -> list[ImageRow]:
    """A model's images in stored order (prompt, sample) with verdicts, failure kinds and detections attached."""
    verdicts = {(v["prompt_index"], v["sample"]): v for v in data["verdicts"] if v["model"] == model}
    dets: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for d in data["detections"]:
        if d["model"] == model:
            dets.setdefault((d["prompt_index"], d["sample"]), []).append(d)
    paths = {(im["prompt_index"], im["sample"]): im for im in data["images"] if im["model"] == model}
    rows = []
    for key in sorted(set(paths) | set(verdicts)):  # judged images, and stored images not judged (yet)
        im = paths.get(key, {})
        v = verdicts.get(key, {})
        metadata = v.get("metadata")
        meta = json.loads(metadata) if isinstance(metadata, str) else (metadata or {})
        rows.append(
            ImageRow(
                prompt_index=key[0],
                sample=key[1],
                path=str(im.get("path") or ""),
                prompt=str(im.get("prompt") or v.get("prompt") or ""),
                task=str(v.get("task") or im.get("task") or ""),
                correct=v.get("correct"),
                reason=str(v.get("reason") or ""),
                failure=v.get("failure"),
                detections=sorted(dets.get(key, []), key=lambda d: (str(d["class"]), d["rank"])),
                classes=tuple(str(c.get("class")) for c in meta.get("include", []) if isinstance(c, dict)),
            )
        )
    return rows


def draw_thumbnails(rows: Sequence[ImageRow], out: Path, model: str) -> dict[tuple[int, int], tuple[str, str]]:
    """Thumbnail and view JPEGs of every image whose file exists (boxes of its kept detections drawn); returns
    (prompt, sample) → (thumb path, view path), relative to the report folder."""
    files: dict[tuple[int, int], tuple[str, str]] = {}
    for r in rows:
        if not r.path or not Path(r.path).is_file():
            continue  # images pulled elsewhere: the pages say so instead of showing a broken picture
        thumb = out / "thumbs" / model / f"{r.stem}.jpg"
        view = out / "views" / model / f"{r.stem}.jpg"
        thumbs.render(r.path, r.detections, thumb, size=THUMB, labels=False, classes=r.classes)
        thumbs.render(r.path, r.detections, view, size=VIEW, labels=True, classes=r.classes)
        files[(r.prompt_index, r.sample)] = (
            href("thumbs", model, f"{r.stem}.jpg"),
            href("views", model, f"{r.stem}.jpg"),
        )
    return files


def _figure(r: ImageRow, src: str | None, link: str | None, caption: str) -> str:
    verdict = "" if r.correct is None else ("ok" if r.correct else "fail")
    title = ("correct" if r.correct else f"wrong: {r.reason}") if r.correct is not None else "not judged"
    img = (
        f'<img src="{esc(src)}" alt="{esc(r.prompt)} (sample {r.sample})" title="{esc(title)}" loading="lazy" '
        f'width="{THUMB}" height="{THUMB}" style="object-fit: contain">'
        if src
        else f'<span class="label">image file missing: {esc(r.path or "not stored")}</span>'
    )
    if link and src:
        img = f'<a href="{esc(link)}">{img}</a>'
    return f'<figure class="{verdict}">{img}<figcaption>{esc(caption)}</figcaption></figure>'


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
    """The config sections inside a stored protocol record (``evaluators.settings``): 'geneval', 'image_embedder',
    'clip', 'diversity', 'scendi' — from the record by step (schema 10: {'geneval': {'geneval': ...}, 'embed':
    {'image_embedder': ..., 'clip': ...}, ...}) or, for versions stored before, the evaluators section itself."""

    def step(name: str) -> dict[str, Any]:
        value = settings.get(name, {})
        return value if isinstance(value, dict) else {}

    if "embed" not in settings:
        return dict(settings)
    return {
        "geneval": step("geneval").get("geneval", {}),
        "image_embedder": step("embed").get("image_embedder", {}),
        "clip": step("embed").get("clip", {}),
        "diversity": step("diversity").get("diversity", {}),
        "scendi": step("scendi").get("scendi", {}),
        "ci_level": step("scores").get("ci_level"),
    }


def card(protocol: Mapping[str, Any] | None, diversity: Mapping[str, Any] | None, suite: str, group: str) -> str:
    """The model card: generation settings, prompt rewriting, evaluator, embedder, σ per modality, rff_dim, the
    run's environment and the stored version hashes (a <dl>)."""
    if protocol is None:
        return "<p>No protocol stored for this model.</p>"
    gen = _json(protocol.get("generation"))
    ev = evaluator_sections(_json(protocol.get("evaluator")))
    env = _json(protocol.get("environment"))
    geneval = ev.get("geneval", {})
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
        ("prompt rewriting", gen.get("prompt_rewriting") or "none"),
        (
            "detector",
            f"{geneval.get('detector', {}).get('backend')}: {geneval.get('detector', {}).get('model')}; threshold "
            f"{geneval.get('threshold')}, counting {geneval.get('counting_threshold')}, position margin "
            f"{geneval.get('position_margin')}",
        ),
        ("color classifier", _colour(geneval.get("colour"))),
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


def _colour(section: Any) -> str:
    if not isinstance(section, dict):
        return "not recorded"
    if section.get("backend") == "clip":
        return f"clip: {section.get('arch')} ({section.get('pretrained')}), background {section.get('background')}"
    return str(section.get("backend"))


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


def galleries(
    model: str, modes: Sequence[Mapping[str, Any]], rows: Sequence[ImageRow], files: Mapping[Any, Any]
) -> str:
    """FKEA and Scendi modes inline: per mode its eigenvalue share, then its top images captioned with their
    prompts (positions index the model's images in stored order)."""
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
                figures.append(_figure(r, src, href(model, f"p{r.prompt_index:05d}.html"), f"{r.prompt}{score}"))
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
    rows: Sequence[ImageRow],
    files: Mapping[tuple[int, int], tuple[str, str]],
    *,
    group: str,
    banners: Sequence[str],
    footer: str,
) -> str:
    """models/<model>.html: card, scores with intervals, galleries, failure figures and the filterable prompt table."""
    files = {k: ("../" + t, "../" + v) for k, (t, v) in files.items()}  # this page lives in models/
    board: dict[str, Any] = next((b for b in data["board"] if b["model"] == model), {})
    diversity = next((d for d in data["diversity"] if d["model"] == model), None)
    protocol = next((p for p in data["protocol"] if p["model"] == model), None)
    ci = {r["task"]: r for r in data["task_ci"] if r["model"] == model}
    suite = ", ".join(sorted({str(v.get("suite")) for v in data["verdicts"] if v["model"] == model})) or "—"
    score_rows = [
        [Cell.text("Overall"), Cell.number(board.get("overall"), low=board.get("overall_ci_low"),
                                          high=board.get("overall_ci_high")),
         Cell.number(board.get("images"), digits=0), Cell.number(board.get("prompts"), digits=0)],
    ]  # fmt: skip
    for t in TASKS:
        c = ci.get(t, {})
        link = f'<a href="#task={quote(t)}">{esc(TASK_TITLES[t])}</a>'
        score_rows.append(
            [
                Cell(link, TASK_TITLES[t], "text"),
                Cell.number(board.get(t), low=c.get("ci_low"), high=c.get("ci_high")),
                Cell.number(c.get("images"), digits=0),
                Cell.number(c.get("prompts"), digits=0),
            ]
        )
    level = f"{100 * board['ci_level']:g} %" if board.get("ci_level") else "95 %"
    scores = table("scores", ["task", f"accuracy [{level} CI]", "images", "prompts"], score_rows, sortable=False)
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
    by_prompt: dict[int, list[ImageRow]] = {}
    for r in rows:
        by_prompt.setdefault(r.prompt_index, []).append(r)
    prompt_rows, attrs = [], []
    for index, images in sorted(by_prompt.items()):
        first = images[0]
        judged = [r for r in images if r.correct is not None]
        correct = sum(1 for r in judged if r.correct)
        failures = sorted({r.failure for r in images if r.failure}, key=_failure_rank)
        figures = "".join(
            _figure(r, files.get((r.prompt_index, r.sample), (None, None))[0], href(model, f"p{index:05d}.html"),
                    "correct" if r.correct else (r.reason or "not judged"))
            for r in images
        )  # fmt: skip
        prompt_rows.append(
            [
                Cell(f'<a href="{esc(href(model, f"p{index:05d}.html"))}">{index}</a>', str(index), ""),
                Cell.text(TASK_TITLES.get(first.task, first.task)),
                Cell.text(first.prompt),
                Cell(f"{correct} / {len(judged)}", repr(correct / len(judged)) if judged else "", ""),
                Cell.text(", ".join(failures) or "—"),
                Cell(f'<div class="gallery">{figures}</div>', None, "text"),
            ]
        )
        attrs.append({"task": first.task, "failure": " ".join(f.replace(" ", "-") for f in failures) or "none"})
    kinds = sorted({r.failure for r in rows if r.failure}, key=_failure_rank)
    controls = (
        '<div class="controls">'
        + select("task", "prompts", "Task", [(t, TASK_TITLES[t]) for t in TASKS if any(r.task == t for r in rows)])
        + select("failure", "prompts", "Failure kind", [(k.replace(" ", "-"), k) for k in kinds] + [("none", "none")])
        + "</div>"
    )
    prompts = table(
        "prompts",
        ["prompt", "task", "text", "correct", "failure kinds", "images (green: correct, red: wrong)"],
        prompt_rows,
        filterable=True,
        row_attrs=attrs,
        text_columns=(1, 2, 4, 5),
    )
    figures = "".join(
        f'<figure><img src="{esc("../" + p)}" alt="{esc(f"{model} {name}")}"></figure>'
        for name, p in data.get("failure_plots", {}).get(model, {}).items()
    )
    body = (
        f"<h2>Model card</h2>{card(protocol, diversity, suite, group)}"
        f"<h2>GenEval</h2>{scores}<h2>Diversity</h2>{div_table}"
        f'<h2 id="modes">Modes</h2>{galleries(model, data["modes"], rows, files)}'
        + (f"<h2>Failure patterns</h2>{figures}" if figures else "")
        + f'<h2 id="prompt-list">Prompts</h2><p>Each prompt with its images (kept detections drawn; hover for the '
        f"verdict's reason). Filter by task or failure kind (the failure-pattern views).</p>{controls}{prompts}"
    )
    return page(f"Model {model}", body, root="../", banners=banners, footer=footer)


def prompt_page(
    model: str, index: int, images: Sequence[ImageRow], files: Mapping[Any, Any], *, banners: Sequence[str]
) -> str:
    """models/<model>/p<index>.html: each image at view size with its detections, verdict and reason."""
    first = images[0]
    blocks = []
    for r in images:
        view = files.get((r.prompt_index, r.sample), (None, None))[1]
        verdict = "not judged" if r.correct is None else ("correct" if r.correct else "wrong")
        det_rows = [
            [Cell.text(d["class"]), Cell.text(d["rank"], css=""), Cell.number(d["score"], digits=3),
             Cell.text(interval(d["x1"], d["x2"], 0) + " × " + interval(d["y1"], d["y2"], 0)),
             Cell.text(d.get("color") or d.get("colour") or "—")]
            for d in r.detections
        ]  # fmt: skip
        dets = (
            table(f"detections-{r.sample}", ["class", "rank", "score", "x × y (px)", "color"], det_rows,
                  sortable=False, text_columns=(0, 3, 4))
            if det_rows else "<p>No kept detections.</p>"
        )  # fmt: skip
        img = (
            f'<img src="../../{esc(view)}" alt="{esc(r.prompt)} (sample {r.sample})">'
            if view
            else f'<p class="label">image file missing: {esc(r.path)}</p>'
        )
        blocks.append(
            f'<section class="{"ok" if r.correct else "fail"}"><h2>Sample {r.sample}: {esc(verdict)}</h2>'
            f"<p>{esc(r.reason) if not r.correct else 'Every requirement of the prompt was found.'}"
            f"{' Failure kind: ' + esc(r.failure) + '.' if r.failure else ''}</p>"
            f'<figure class="{"ok" if r.correct else "fail"}">{img}</figure>{dets}</section>'
        )
    body = (
        f'<p><a href="../{esc(quote(model, safe=""))}.html#task={quote(first.task)}">← {esc(model)}, '
        f"{esc(TASK_TITLES.get(first.task, first.task))}</a></p>"
        f"<p><b>Prompt {index}</b> ({esc(TASK_TITLES.get(first.task, first.task))}): {esc(first.prompt)}</p>"
        + "".join(blocks)
    )
    return page(f"{model}: prompt {index}", body, root="../../", banners=banners)


def _failure_rank(kind: str) -> int:
    return FAILURE_ORDER.index(kind) if kind in FAILURE_ORDER else len(FAILURE_ORDER)


def write_model_pages(
    data: Mapping[str, Any], out: Path, *, groups: Mapping[str, str], banners: Sequence[str], footer: str
) -> dict[str, str]:
    """Write every current model's page, its prompt pages and thumbnails; returns model → page path (relative)."""
    written: dict[str, str] = {}
    for b in data["board"]:
        model = b["model"]
        rows = model_images(data, model)
        files = draw_thumbnails(rows, out, model)
        write_text_atomic(
            out / "models" / f"{model}.html",
            model_page(model, data, rows, files, group=groups.get(model, "—"), banners=banners, footer=footer),
        )
        by_prompt: dict[int, list[ImageRow]] = {}
        for r in rows:
            by_prompt.setdefault(r.prompt_index, []).append(r)
        for index, images in by_prompt.items():
            write_text_atomic(
                out / "models" / model / f"p{index:05d}.html",
                prompt_page(model, index, images, files, banners=banners),
            )
        written[model] = href("models", f"{model}.html")
    return written
