"""GenEval 2's tables as Markdown: overall by method, Soft-TIFA AM per skill, Soft-TIFA GM per atom count.

Renders what ``t2ibench.metrics.soft_tifa.geneval2_tables`` computed; nothing is computed here. Scores are percent
points with two decimals (as the reference's analysis prints them) and their bootstrap interval beside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t2ibench.metrics.soft_tifa import Geneval2Tables, TableCell
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
