"""GenEval's image-folder layout, shared by everything that reads or writes one (generation, import, evaluation).

<dir>/<NNNNN>/metadata.jsonl    the prompt record of line NNNNN of the suite (exactly one JSON line)
<dir>/<NNNNN>/samples/<k>.png   the prompt's images (also .jpg, .jpeg, .webp)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError
from t2ibench.io import loads_strict

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
PROMPT_DIR = re.compile(r"[0-9]+")  # ASCII digits only (str.isdigit also accepts '²', which int() refuses)


def prompt_index_of(path: str | Path) -> int | None:
    """The prompt folder number of ``.../<NNNNN>/samples/<file>``, or None if the path is not laid out so."""
    parts = Path(path).parts
    if len(parts) >= 3 and parts[-2] == "samples" and PROMPT_DIR.fullmatch(parts[-3]):
        return int(parts[-3])
    return None


def read_metadata(path: Path, validate: Callable[..., None] | None = None) -> dict[str, Any]:
    """The one prompt record (a JSON object) of a prompt folder's metadata.jsonl, checked by
    ``validate(record, where=...)`` when given (a benchmark's record check); InputError names the file otherwise."""

    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: malformed metadata ({type(exc).__name__})") from None
    if len(lines) != 1:
        raise InputError(f"{path}: malformed metadata (holds {len(lines)} records; expected exactly 1)")
    try:
        record = loads_strict(lines[0], where=str(path))
        if not isinstance(record, dict):
            raise InputError(f"expected a JSON object, got {type(record).__name__}")
        if validate is not None:
            validate(record, where=str(path))
    except InputError as exc:
        raise InputError(f"{path}: malformed metadata ({str(exc).removeprefix(str(path) + ': ')})") from None
    assert isinstance(record, dict)
    return record
