"""Choosing prompts by index: 'a-b,c' ranges over a suite's records, checked against its size (the syntax every
prompt selection uses: a benchmark section's ``prompts`` in a config, ``--prompts`` on the command line)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

from t2ibench.errors import InputError

T = TypeVar("T")
DIGITS = re.compile(r"[0-9]+")


def parse_indices(text: str, *, size: int) -> list[int]:
    """Indices from 'a-b,c' ranges, each in [0, size); InputError on bad syntax, reversed or out-of-range parts."""
    wanted: set[int] = set()
    for part in text.split(","):
        start, dash, stop = part.strip().partition("-")
        if not DIGITS.fullmatch(start) or (dash and not DIGITS.fullmatch(stop)):
            raise InputError(f"cannot read {part.strip()!r} (use indices or ranges like 0-9,20)")
        first, last = int(start), int(stop) if dash else int(start)
        if last < first:
            raise InputError(f"range {part.strip()!r} runs backwards")
        if last >= size:
            raise InputError(f"index {last} is beyond the suite ({size} prompts at most, numbered from 0)")
        wanted.update(range(first, last + 1))
    return sorted(wanted)


def select_indices(records: Sequence[T], text: str | None, *, where: str) -> list[tuple[int, T]]:
    """(index, record) of ``records`` whose index ``text`` ('a-b,c'; None: all) names; errors prefixed ``where``."""
    selected = list(enumerate(records))
    if text:
        try:
            wanted = set(parse_indices(text, size=len(records)))
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        selected = [(i, r) for i, r in selected if i in wanted]
    return selected
