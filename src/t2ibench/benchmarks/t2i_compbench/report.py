"""T2I-CompBench++'s tables as Markdown: one row per model, one column per category (the reference's score, its
percentile bootstrap interval over prompts beneath), as the benchmark's papers print them."""

from __future__ import annotations

from collections.abc import Sequence

from t2ibench.benchmarks.t2i_compbench.metrics import CategoryScore

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
