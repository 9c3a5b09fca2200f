"""The plugin's report section."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def coverage_labels(suite_sha256: str | None, prompts: int | None) -> list[str]:
    """Nothing to say."""
    return []


def html_section(scores: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]] = ()) -> str:
    """One heading when anything is stored (no paired marks: it declares no ``paired`` read)."""
    return '<h2 id="dpg">DPG</h2>' if scores else ""


def markdown_section(scores: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]] = ()) -> str:
    """One heading when anything is stored (no paired marks: it declares no ``paired`` read)."""
    return "## DPG" if scores else ""


def write_pages(stored: Any, out: Path, **_: Any) -> dict[str, str]:
    """No drill-down pages."""
    return {}
