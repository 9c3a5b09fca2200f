"""Progress reporting for long loops: a live bar on a terminal, a line every 10 s in logs."""

from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm


def progress(total: int | None, desc: str, *, enabled: bool = True, unit: str = "it") -> tqdm[Any]:
    """A tqdm bar on stderr; redraws at most every 10 s when stderr is not a terminal (CI, cron logs)."""
    interactive = sys.stderr.isatty()
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        disable=not enabled,
        mininterval=0.1 if interactive else 10.0,
        file=sys.stderr,
        dynamic_ncols=interactive,
    )
