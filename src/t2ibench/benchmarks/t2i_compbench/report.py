"""T2I-CompBench++'s tables as Markdown (one row per model, one column per category: the reference's score, its
percentile bootstrap interval over prompts beneath, as the benchmark's papers print them), and its section of the
report and drill-down pages from stored rows. Renders; computes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.t2i_compbench.columns import TABLE
from t2ibench.benchmarks.t2i_compbench.metrics import CATEGORIES, MEAN, CategoryScore
from t2ibench.report import benchmark_pages
from t2ibench.report.markdown import markdown_table

TITLES = {
    "color": "Color", "shape": "Shape", "texture": "Texture", "spatial": "2D-Spatial", "3d_spatial": "3D-Spatial",
    "non_spatial": "Non-Spatial", "numeracy": "Numeracy", "complex": "Complex",
}  # fmt: skip
"""Each category's column title (T2I-CompBench++'s table headers)."""


def render_tables(scores: Sequence[CategoryScore], *, label: str) -> str:
    """The category scores of one model as a Markdown table (4 decimals, intervals in brackets), with each category's
    images and prompts beneath (the label carries the caveats: another rule, a subset, smoke models)."""
    head = "| Model | " + " | ".join(TITLES[s.category] for s in scores) + " |"
    rule_row = "|---|" + "---:|" * len(scores)
    values = "| " + label + " | " + " | ".join(f"{s.score:.4f}" for s in scores) + " |"
    bands = "| (interval) | " + " | ".join(f"[{s.ci_low:.4f}, {s.ci_high:.4f}]" for s in scores) + " |"
    counts = ", ".join(f"{TITLES[s.category]} {s.images} images / {s.prompts} prompts" for s in scores)
    return "\n".join([head, rule_row, values, bands, "", f"{counts}."])


# -- the report's section and drill-down pages (stored rows: t2ibench.store.queries.benchmark_*) ------------------

NAME = "t2i_compbench"
DETAILS = ("rule", "vqa_model", "detector_model", "depth_model", "clip_model", "categories", "suite_sha256")
COLUMNS = (MEAN, *CATEGORIES)  # the section's score columns: the mean first, then each category in the paper's order
HEADERS = {MEAN: "Mean", **TITLES}


def versions(scores: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The stored T2I-CompBench++ evaluations (``benchmark_pages.versions``), within one protocol by the mean
    (highest first)."""

    def mean(v: dict[str, Any]) -> float:
        cell = v["cells"].get((TABLE, MEAN))
        return -float(cell["estimate"]) if cell is not None else float("inf")

    return benchmark_pages.versions(scores, DETAILS, mean)


def prompts_judged(version: Mapping[str, Any]) -> int | None:
    """How many prompts an evaluation judged (its mean's count: every judged category's prompts)."""
    cell = version["cells"].get((TABLE, MEAN))
    return int(cell["prompts"]) if cell is not None and cell["prompts"] is not None else None


def coverage_labels(suite_sha256: str | None, prompts: int | None) -> list[str]:
    """What a T2I-CompBench++ number was measured on, when it is not the whole shipped suite: 'not the pinned
    suite' or 'N of 2400 prompts'."""
    from t2ibench.benchmarks.t2i_compbench.suite import PROMPTS_PER_CATEGORY, pinned_sha256

    return benchmark_pages.coverage(suite_sha256, prompts, release_sha256=pinned_sha256(),
                                    release_prompts=PROMPTS_PER_CATEGORY * len(CATEGORIES),
                                    other="not the pinned suite")  # fmt: skip


def origin(version: Mapping[str, Any]) -> str:
    """Where an evaluation's images came from and how much of the suite it covers (``benchmark_pages.origin``)."""
    return benchmark_pages.origin(version, coverage_labels(version.get("suite_sha256"), prompts_judged(version)))


def page_name(version: Mapping[str, Any]) -> str:
    """The drill-down page of one evaluation: t2i_compbench/<model>-<images>-<protocol>.html."""
    return benchmark_pages.page_name(NAME, version)


def protocol_flag(found: Sequence[Mapping[str, Any]]) -> str:
    """A sentence when the evaluations were measured under more than one protocol ('' when one)."""
    what = "the models as loaded, the rule, np_num, the phrase table, the categories and prompts judged"
    return benchmark_pages.protocol_flag(found, "T2I-CompBench++", what)


INTRO = (
    "Each category's score ×100 (the paper prints fractions: 67.65 here is its 0.6765) with its percentile-bootstrap "
    "interval over prompts, and their unweighted mean (t2ibench's summary, not a number the paper reports). The 2-D "
    "spatial, 3-D spatial, numeracy and complex scores use an open-vocabulary detector, not the paper's UniDet: "
    "not comparable with published numbers. A model's page has every image with what the models said."
)


def html_section(scores: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]] = ()) -> str:
    """The leaderboard page's T2I-CompBench++ section: one row per evaluation, linked to its drill-down page, ≈ where
    the stored paired tests (``comparisons``) do not separate a model from the next of its protocol."""
    from t2ibench.report.site import Cell, esc, table

    found = versions(scores)
    if not found:
        return ""
    marks = benchmark_pages.paired_marks(found, comparisons, NAME)
    rows = [
        [*benchmark_pages.evaluation_cells(v, page_name(v), [(TABLE, k) for k in COLUMNS]),
         Cell.text(benchmark_pages.paired_mark(marks, v)), Cell.text(v["rule"]),
         Cell.number(prompts_judged(v), digits=0), Cell.text(origin(v))]
        for v in found
    ]  # fmt: skip
    flag = protocol_flag(found)
    headers = ["model", "protocol", *(HEADERS[k] for k in COLUMNS), "≈", "rule", "prompts", "measured on"]
    text = (0, 1, len(headers) - 4, len(headers) - 3, len(headers) - 1)
    return (
        f'<h2 id="{NAME}">T2I-CompBench++</h2>'
        + (f'<p class="flag" id="{NAME}-protocol-flag">{esc(flag)}</p>' if flag else "")
        + f"<p>{esc(INTRO)} {esc(benchmark_pages.PAIRED_NOTE)}</p>"
        + table(f"{NAME}-table", headers, rows, text_columns=text)
    )


def markdown_section(scores: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]] = ()) -> str:
    """The Markdown report's T2I-CompBench++ section ('' when nothing is stored)."""
    found = versions(scores)
    if not found:
        return ""
    marks = benchmark_pages.paired_marks(found, comparisons, NAME)
    headers = ["model", "protocol", *(HEADERS[k] for k in COLUMNS), "≈", "rule", "prompts", "measured on"]
    rows = []
    for v in found:
        judged = prompts_judged(v)
        shown = [benchmark_pages.score_text(v["cells"].get((TABLE, k))) for k in COLUMNS]
        rows.append([v["model"], v["protocol"], *shown, benchmark_pages.paired_mark(marks, v), v["rule"],
                     "—" if judged is None else str(judged), origin(v)])  # fmt: skip
    flag = protocol_flag(found)
    return "\n".join(["## T2I-CompBench++", "", INTRO, "", *([flag, ""] if flag else []), markdown_table(headers, rows),
                      "", benchmark_pages.PAIRED_NOTE, ""])  # fmt: skip


def said(details: Mapping[str, Any]) -> str:
    """What the models said about one image, in words (its stored ``details``): BLIP's yes-probability of each
    phrase, the relation and objects looked for, the detector's boxes (label, score), the text CLIP compared, and
    for a complex prompt its three parts."""
    parts = []
    if "kind" in details:
        parts.append(f"{details['kind']}: attribute {details.get('attribute')}, spatial {details.get('spatial')}, "
                     f"action {details.get('action')}")  # fmt: skip
        for key in ("blip", "boxes", "clip"):
            if isinstance(details.get(key), Mapping):
                parts.append(said(details[key]))
        return "; ".join(p for p in parts if p)
    if details.get("questions"):
        asked = zip(details["questions"], details.get("answers", []), strict=False)
        parts.append(", ".join(f"{q!r} {a}" for q, a in asked))
    if details.get("objects") is not None:
        counts = details.get("counts")
        objects = (
            [f"{n} × {o}" for n, o in zip(counts, details["objects"], strict=False)] if counts else details["objects"]
        )
        relation = f" {details['relation']!r}" if details.get("relation") else ""
        parts.append(f"looked for{relation}: {', '.join(str(o) for o in objects)}")
    if details.get("detections") is not None:
        boxes = details["detections"]
        shown = ", ".join(f"{b[0]} {b[2]:.2f}" for b in boxes[:8]) + (" …" if len(boxes) > 8 else "")
        parts.append(f"{len(boxes)} boxes" + (f": {shown}" if boxes else ""))
    if "text" in details:
        parts.append(f"CLIP text {details['text']!r}" + (" (truncated)" if details.get("truncated") else ""))
    return "; ".join(parts)


def write_pages(
    stored: Mapping[str, Sequence[Mapping[str, Any]]],
    out: Path,
    *,
    banners: Sequence[str] = (),
    footer: str = "",
    root: Path | None = None,
) -> dict[str, str]:
    """One page per stored evaluation: its category table, protocol and origin, its images (thumbnails linked to a
    larger view) and every image's score with what the models said; ``stored``: its ``scores`` and ``images`` rows
    (the store's queries); ``root``: the workspace a refresh's image names are relative to. Returns {page: path}."""
    from t2ibench.report.site import Cell, esc, table

    by_version: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for row in stored["images"]:
        by_version.setdefault((row["model"], row["model_hash"], row["evaluator_hash"]), []).append(row)
    written = {}
    for v in versions(stored["scores"]):
        mine = by_version.get((v["model"], v["model_hash"], v["evaluator_hash"]), [])
        models = ", ".join(f"{kind} {v[f'{kind}_model']}" for kind in ("vqa", "detector", "depth", "clip")
                           if v.get(f"{kind}_model"))  # fmt: skip
        parts = [
            f"<p>Images {esc(str(v['model_hash'])[:16])}…, protocol {esc(v['protocol'])} "
            f"({esc(str(v['evaluator_hash'])[:16])}…): rule {esc(v['rule'])}; {esc(models or 'no models recorded')}; "
            f"categories {esc(v['categories'])}; suite {esc(str(v['suite_sha256'])[:16])}…. "
            f"Measured on: {esc(origin(v))}.</p>"
        ]
        rows = [
            [Cell.text(HEADERS[key]), Cell.number(c["estimate"], low=c["ci_low"], high=c["ci_high"]),
             Cell.number(c["questions"], digits=0), Cell.number(c["prompts"], digits=0)]
            for key in COLUMNS if (c := v["cells"].get((TABLE, key))) is not None
        ]  # fmt: skip
        parts.append("<h2>Categories (×100)</h2>" + table("t2i-categories", ["", "score", "images", "prompts"], rows))
        gallery, views = benchmark_pages.gallery(NAME, v, mine, out, root)
        parts.append(gallery)
        rows, attrs = [], []
        for r in mine:
            view = views.get((int(r["prompt_index"]), str(r["sample"])))
            image = (
                Cell(f'<a href="{esc(view)}">{esc(str(r["image"]))}</a>', str(r["image"]), "text")
                if view
                else Cell.text(r["image"])
            )
            rows.append([Cell.number(r["prompt_index"], digits=0), Cell.text(r["sample"]),
                         Cell.text(TITLES.get(str(r["category"]), r["category"])), Cell.text(r["prompt"]),
                         Cell.number(r["score"], digits=4), Cell.text(said(benchmark_pages.stored_json(r["details"]))),
                         image])  # fmt: skip
            attrs.append({"category": str(r["category"])})
        headers = ["prompt", "sample", "category", "text", "score (0–1, as its rule gives it)", "what the models said",
                   "image"]  # fmt: skip
        parts.append(
            "<h2>Every image</h2>"
            + table("t2i-images", headers, rows, filterable=True, row_attrs=attrs, text_columns=(1, 2, 3, 5, 6))
        )
        name = page_name(v)
        title = f"T2I-CompBench++: {v['model']}"
        written[name] = benchmark_pages.write_page(out, name, title, "".join(parts), banners=banners, footer=footer)
    return written
