"""GenEval's drill-down in the report, rendered from stored rows only: each image with its verdict and kept
detections (``ImageRow``), the scores per task on a model's page, its prompt list (filterable by task and failure
kind) and a page per prompt (each image with its detections drawn, the verdict and its reason).

The core's model pages (``t2ibench.report.pages``) are built around the spine benchmark's images: these are the
parts of them that are GenEval's (``report_spine`` hands them to the core).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from t2ibench.benchmarks.geneval.metrics import TASKS
from t2ibench.benchmarks.geneval.report import TASK_TITLES
from t2ibench.benchmarks.geneval.suite import REWRITTEN, WORDINGS, wording_of_suite
from t2ibench.report import thumbs
from t2ibench.report.pages import THUMB, VIEW, href
from t2ibench.report.site import Cell, esc, interval, page, select, table

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


def failure_rank(kind: str) -> int:
    """The position of a failure kind in FAILURE_ORDER (unknown kinds last)."""
    return FAILURE_ORDER.index(kind) if kind in FAILURE_ORDER else len(FAILURE_ORDER)


def model_suites(data: Mapping[str, Any], model: str) -> list[str]:
    """The suites a model's stored verdicts name, sorted."""
    return sorted({str(v.get("suite")) for v in data["verdicts"] if v["model"] == model})


REWRITTEN_MARK = "†"
REWRITTEN_NOTE = (
    "† GenEval on its prompts rewritten long by an LLM (BAGEL's evaluation_metadata_long.jsonl; same objects, counts, "
    "colours and positions judged): a protocol of its own, ranked only with other rewritten-prompt rows, never with "
    "original-prompt ones."
)


def row_mark(data: Mapping[str, Any], model: str) -> str:
    """'†' for a model whose GenEval verdicts were judged on rewritten prompts (a suite of another wording), else ''."""
    return REWRITTEN_MARK if any(wording_of_suite(s) != WORDINGS[0] for s in model_suites(data, model)) else ""


def wording_of(suite: str) -> str | None:
    """The model card's 'prompt rewriting' line for a suite of the rewritten wording (None for the originals)."""
    if wording_of_suite(suite) == WORDINGS[0]:
        return None
    return f"{REWRITTEN.title}, {REWRITTEN.revision[:7]} (benchmarks.geneval.rewritten) {REWRITTEN_MARK}"


def card_items(evaluator: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The model card's lines for GenEval's evaluator (its detector and colour classifier) from the stored protocol's
    sections (``t2ibench.report.pages.evaluator_sections``)."""
    geneval = evaluator.get("geneval", {})
    return [
        (
            "detector",
            f"{geneval.get('detector', {}).get('backend')}: {geneval.get('detector', {}).get('model')}; threshold "
            f"{geneval.get('threshold')}, counting {geneval.get('counting_threshold')}, position margin "
            f"{geneval.get('position_margin')}",
        ),
        ("color classifier", _colour(geneval.get("colour"))),
    ]


def figure(r: ImageRow, src: str | None, link: str | None, caption: str) -> str:
    """One image as a captioned thumbnail (green border: correct, red: wrong), linked to ``link``."""
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


def _colour(section: Any) -> str:
    if not isinstance(section, dict):
        return "not recorded"
    if section.get("backend") == "clip":
        return f"clip: {section.get('arch')} ({section.get('pretrained')}), background {section.get('background')}"
    return str(section.get("backend"))


def score_section(model: str, data: Mapping[str, Any]) -> str:
    """A model page's GenEval section: overall and per task with intervals, images and prompts (a task links to the
    prompt list filtered to it)."""
    board: dict[str, Any] = next((b for b in data["board"] if b["model"] == model), {})
    ci = {r["task"]: r for r in data["task_ci"] if r["model"] == model}
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
    return f"<h2>GenEval</h2>{scores}"


def failure_figures(model: str, data: Mapping[str, Any]) -> str:
    """A model page's failure-pattern figures (drawn by ``report_failures.plots``), or '' when it has none."""
    figures = "".join(
        f'<figure><img src="{esc("../" + p)}" alt="{esc(f"{model} {name}")}"></figure>'
        for name, p in data.get("failure_plots", {}).get(model, {}).items()
    )
    return f"<h2>Failure patterns</h2>{figures}" if figures else ""


def prompt_list(model: str, rows: Sequence[ImageRow], files: Mapping[tuple[int, int], tuple[str, str]]) -> str:
    """A model page's prompt list: each prompt with its images and verdicts, filterable by task and failure kind
    (``files``: the thumbnails, relative to the page)."""
    by_prompt: dict[int, list[ImageRow]] = {}
    for r in rows:
        by_prompt.setdefault(r.prompt_index, []).append(r)
    prompt_rows, attrs = [], []
    for index, images in sorted(by_prompt.items()):
        first = images[0]
        judged = [r for r in images if r.correct is not None]
        correct = sum(1 for r in judged if r.correct)
        failures = sorted({r.failure for r in images if r.failure}, key=failure_rank)
        figures = "".join(
            figure(r, files.get((r.prompt_index, r.sample), (None, None))[0], href(model, f"p{index:05d}.html"),
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
    kinds = sorted({r.failure for r in rows if r.failure}, key=failure_rank)
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
    return (
        '<h2 id="prompt-list">Prompts</h2><p>Each prompt with its images (kept detections drawn; hover for the '
        f"verdict's reason). Filter by task or failure kind (the failure-pattern views).</p>{controls}{prompts}"
    )


def prompt_pages(
    model: str, rows: Sequence[ImageRow], files: Mapping[Any, Any], *, banners: Sequence[str]
) -> Iterator[tuple[str, str]]:
    """Each prompt's page of a model: (file name under models/<model>/, HTML)."""
    by_prompt: dict[int, list[ImageRow]] = {}
    for r in rows:
        by_prompt.setdefault(r.prompt_index, []).append(r)
    for index, images in by_prompt.items():
        yield f"p{index:05d}.html", prompt_page(model, index, images, files, banners=banners)


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
