"""Plain Markdown tables."""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table; ``align`` is one character per column ('l', 'r', 'c')."""
    if any(len(r) != len(headers) for r in rows):
        raise ValueError("every row must have one cell per header")
    spec = align or "l" + "r" * (len(headers) - 1)
    rule = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join(rule[a] for a in spec) + " |",
    ]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
