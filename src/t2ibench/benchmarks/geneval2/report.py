"""GenEval 2's tables as Markdown: overall by method, Soft-TIFA AM per skill, Soft-TIFA GM per atom count.

Renders what ``metrics.geneval2_tables`` (beside this module) computed; nothing is computed here. Scores are
percent points with two decimals (as the reference's analysis prints them) and their bootstrap interval beside them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval2.metrics import Geneval2Tables, TableCell
from t2ibench.report import benchmark_pages
from t2ibench.report.markdown import markdown_table

METHOD_TITLES = {
    "soft_tifa_am": "Soft-TIFA AM",
    "soft_tifa_gm": "Soft-TIFA GM",
    "tifa": "TIFA",
    "vqascore": "VQAScore",
}
SKILL_TITLES = {"object": "Object", "attribute": "Attribute", "count": "Count", "position": "Position", "verb": "Verb"}


def score_cell(cell: TableCell) -> str:
    """'83.41 [81.02, 85.60]': the estimate and its interval, percent points, two decimals."""
    if cell.ci_low is None or cell.ci_high is None:
        return f"{cell.estimate:.2f}"
    return f"{cell.estimate:.2f} [{cell.ci_low:.2f}, {cell.ci_high:.2f}]"


def _table(first: str, cells: Mapping[Any, TableCell], titles: Mapping[Any, str], label: str) -> str:
    keys = list(cells)
    headers = [first, *(titles.get(k, str(k)) for k in keys)]
    rows = [[label, *(score_cell(cells[k]) for k in keys)], ["n", *(_n(cells[k]) for k in keys)]]
    return markdown_table(headers, rows)


def _n(cell: TableCell) -> str:
    if cell.questions is None:
        return f"{cell.prompts} prompts"
    return f"{cell.prompts} prompts, {cell.questions} questions"


def render_tables(tables: Geneval2Tables, *, label: str = "model") -> str:
    """The three tables of one model's GenEval 2 results, with the bootstrap's description and the counts."""
    atoms = {k: f"{k} atoms" for k in tables.atom_counts}
    parts = [
        "GenEval 2 overall (percent points)",
        "",
        _table("model", tables.overall, METHOD_TITLES, label),
        "",
        "Per skill (Soft-TIFA AM, pooled over questions)",
        "",
        _table("model", tables.skills, SKILL_TITLES, label),
        "",
        "Per atom count (Soft-TIFA GM, mean over prompts)",
        "",
        _table("model", tables.atom_counts, atoms, label),
        "",
        f"{tables.prompts} prompts, {tables.images} images, {tables.questions} questions; intervals: "
        f"{tables.describe()}, {100 * tables.level:g} %.",
    ]
    return "\n".join(parts)


# -- the report's section and drill-down pages (stored rows: t2ibench.store.queries.geneval2_*) ------------------

OVERALL = ("soft_tifa_gm", "soft_tifa_am", "tifa", "vqascore")  # the headline first: Soft-TIFA GM, prompt level


DETAILS = ("judge_model", "judge_dtype", "answer_rule", "suite_sha256")  # its scores view's protocol columns shown


def versions(scores: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The stored GenEval 2 evaluations (``benchmark_pages.versions``), within one protocol by Soft-TIFA GM (highest
    first)."""

    def gm(v: dict[str, Any]) -> float:
        cell = v["cells"].get(("overall", "soft_tifa_gm"))
        return -float(cell["estimate"]) if cell is not None else float("inf")

    return benchmark_pages.versions(scores, DETAILS, gm)


def prompts_judged(version: Mapping[str, Any]) -> int | None:
    """How many prompts an evaluation judged: its overall table's count (every overall cell has the same)."""
    overall = [c for (table_name, _), c in version["cells"].items() if table_name == "overall"]
    return int(overall[0]["prompts"]) if overall and overall[0]["prompts"] is not None else None


def coverage_labels(suite_sha256: str | None, prompts: int | None) -> list[str]:
    """What a GenEval 2 number was measured on, when it is not the whole released suite: 'not the released suite'
    (another file, or none recorded) or 'N of 800 prompts'."""
    from t2ibench.benchmarks.geneval2.suite import RELEASE_PROMPTS, RELEASE_SHA256

    return benchmark_pages.coverage(suite_sha256, prompts, release_sha256=RELEASE_SHA256,
                                    release_prompts=RELEASE_PROMPTS, other="not the released suite")  # fmt: skip


def origin(version: Mapping[str, Any]) -> str:
    """Where an evaluation's images came from and how much of the suite it covers (``benchmark_pages.origin``)."""
    return benchmark_pages.origin(version, coverage_labels(version.get("suite_sha256"), prompts_judged(version)))


def page_name(version: Mapping[str, Any]) -> str:
    """The drill-down page of one evaluation: geneval2/<model>-<images>-<protocol>.html (hashes shortened)."""
    return benchmark_pages.page_name("geneval2", version)


def protocol_flag(found: Sequence[Mapping[str, Any]]) -> str:
    """A sentence when the evaluations were measured under more than one protocol ('' when one)."""
    return benchmark_pages.protocol_flag(found, "GenEval 2", "judge, its weights and dtype, answer rule, suite file")


def html_section(scores: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]] = ()) -> str:
    """The leaderboard page's GenEval 2 section: one row per evaluation, linked to its drill-down page, ≈ where the
    stored paired tests (``comparisons``) do not separate a model from the next of its protocol."""
    from t2ibench.report.site import Cell, esc, table

    found = versions(scores)
    if not found:
        return ""
    marks = benchmark_pages.paired_marks(found, comparisons, "geneval2")
    rows = [
        [*benchmark_pages.evaluation_cells(v, page_name(v), [("overall", m) for m in OVERALL]),
         Cell.text(benchmark_pages.paired_mark(marks, v)), Cell.text(v["judge_model"]), Cell.text(v["answer_rule"]),
         Cell.number(prompts_judged(v), digits=0), Cell.text(origin(v))]
        for v in found
    ]  # fmt: skip
    flag = protocol_flag(found)
    headers = ["model", "protocol", *(METHOD_TITLES[m] for m in OVERALL), "≈", "judge", "answer rule", "prompts",
               "measured on"]  # fmt: skip
    return (
        '<h2 id="geneval2">GenEval 2</h2>'
        + (f'<p class="flag" id="geneval2-protocol-flag">{esc(flag)}</p>' if flag else "")
        + "<p>Soft-TIFA GM (prompt level), Soft-TIFA AM (atom level), TIFA and VQAScore in percent points, each "
        "with its percentile-bootstrap interval over prompts; a model's page has the skill and atom-count tables "
        f"and every image's questions with the judge's probabilities. {esc(benchmark_pages.PAIRED_NOTE)}</p>"
        + table("geneval2-table", headers, rows, text_columns=(0, 1, 6, 7, 8, 10))
    )


def markdown_section(scores: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]] = ()) -> str:
    """The Markdown report's GenEval 2 section ('' when nothing is stored)."""
    found = versions(scores)
    if not found:
        return ""
    marks = benchmark_pages.paired_marks(found, comparisons, "geneval2")
    headers = ["model", "protocol", *(METHOD_TITLES[m] for m in OVERALL), "≈", "judge", "answer rule", "prompts",
               "measured on"]  # fmt: skip
    rows = []
    for v in found:
        values = [benchmark_pages.score_text(v["cells"].get(("overall", method))) for method in OVERALL]
        judged = prompts_judged(v)
        rows.append([v["model"], v["protocol"], *values, benchmark_pages.paired_mark(marks, v), v["judge_model"],
                     v["answer_rule"], "—" if judged is None else str(judged), origin(v)])  # fmt: skip
    flag = protocol_flag(found)
    return "\n".join(["## GenEval 2", "", *([flag, ""] if flag else []), markdown_table(headers, rows), "",
                      benchmark_pages.PAIRED_NOTE, ""])  # fmt: skip


def write_pages(
    stored: Mapping[str, Sequence[Mapping[str, Any]]],
    out: Path,
    *,
    banners: Sequence[str] = (),
    footer: str = "",
    root: Path | None = None,
) -> dict[str, str]:
    """One page per stored evaluation: its three tables, its protocol and origin, its images (thumbnails linked to
    a larger view) and every image's questions with the judge's probability, top answer and verdict; ``root``: the
    workspace a refresh's image names are relative to; ``stored``: its ``scores`` and ``answers`` rows (the store's
    queries). Returns {page name: path}."""
    from t2ibench.report.site import Cell, esc, table

    scores, answers = stored["scores"], stored["answers"]
    by_version: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for a in answers:
        by_version.setdefault((a["model"], a["model_hash"], a["evaluator_hash"]), []).append(a)
    written = {}
    for v in versions(scores):
        mine = by_version.get((v["model"], v["model_hash"], v["evaluator_hash"]), [])
        parts = [
            f"<p>Images {esc(str(v['model_hash'])[:16])}…, protocol {esc(v['protocol'])} "
            f"({esc(str(v['evaluator_hash'])[:16])}…): judge {esc(v['judge_model'])} ({esc(v['judge_dtype'])}), "
            f"answer rule {esc(v['answer_rule'])}, suite {esc(str(v['suite_sha256'])[:16])}…. "
            f"Measured on: {esc(origin(v))}.</p>"
        ]
        for name, title, titles in (
            ("overall", "Overall", METHOD_TITLES),
            ("skill", "Per skill (Soft-TIFA AM)", SKILL_TITLES),
            ("atom_count", "Per atom count (Soft-TIFA GM)", {}),
        ):
            cells = [(key, c) for (t, key), c in v["cells"].items() if t == name]
            if name == "atom_count":
                cells.sort(key=lambda kc: int(kc[0]))
            rows = [
                [
                    Cell.text(titles.get(key, f"{key} atoms" if name == "atom_count" else key)),
                    Cell.number(c["estimate"], low=c["ci_low"], high=c["ci_high"]),
                    Cell.number(c["prompts"], digits=0),
                    Cell.number(c["questions"], digits=0),
                ]
                for key, c in cells
            ]
            parts.append(f"<h2>{esc(title)}</h2>" + table(f"g2-{name}", ["", "score", "prompts", "questions"], rows))
        gallery, views = benchmark_pages.gallery("geneval2", v, mine, out, root)
        parts.append(gallery)
        rows, attrs = [], []
        for a in mine:
            view = views.get((int(a["prompt_index"]), str(a["sample"])))
            image = (
                Cell(f'<a href="{esc(view)}">{esc(str(a["image"]))}</a>', str(a["image"]), "text")
                if view
                else Cell.text(a["image"])
            )
            rows.append(
                [
                    Cell.number(a["prompt_index"], digits=0),
                    Cell.text(a["sample"]),
                    Cell.text(a["prompt"]),
                    Cell.text(a["skill"] or "VQAScore"),
                    Cell.text(a["question"]),
                    Cell.text(a["answer"]),
                    Cell.number(a["probability"], digits=4),
                    Cell.text(repr(a["top_answer"])),
                    Cell.text("✓" if a["correct"] else "✗"),
                    image,
                ]
            )
            attrs.append({"skill": str(a["skill"] or "vqascore")})
        headers = ["prompt", "sample", "text", "skill", "question", "expected", "probability", "top answer", "TIFA",
                   "image"]  # fmt: skip
        parts.append(
            "<h2>Every question</h2>"
            + table(
                "g2-answers", headers, rows, filterable=True, row_attrs=attrs, text_columns=(1, 2, 3, 4, 5, 7, 8, 9)
            )
        )
        name = page_name(v)
        title = f"GenEval 2: {v['model']}"
        written[name] = benchmark_pages.write_page(out, name, title, "".join(parts), banners=banners, footer=footer)
    return written
