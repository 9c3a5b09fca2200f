"""Plain Markdown tables."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence


def cell(value: object) -> str:
    """Text safe inside one Markdown table cell: '|' escaped, line breaks and control characters made visible."""
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    out = []
    for ch in text:
        if ch in "\r\n\u2028\u2029":
            out.append("⏎")
        elif unicodedata.category(ch) in ("Cc", "Cf"):  # ESC, bidi overrides, zero-width controls
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table; ``align`` is one character per column ('l', 'r', 'c')."""
    if any(len(r) != len(headers) for r in rows):
        raise ValueError("every row must have one cell per header")
    spec = align or "l" + "r" * (len(headers) - 1)
    rule = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = [
        "| " + " | ".join(cell(h) for h in headers) + " |",
        "| " + " | ".join(rule[a] for a in spec) + " |",
    ]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
