"""The paper artifacts' writer: every number at one stated precision, so ``dvc repro`` makes the same bytes anywhere.

The files the DVC stages track (the digits figure, the agreement tables, the paper tables and their metrics.json)
are compared by their md5 in ``dvc.lock``. A float printed with all its 17 digits differs in the last ones between
machines: BLAS kernels and thread counts sum in other orders (FKEA's float32 products move VENDI by up to 8e-9
relative between OpenBLAS's SkylakeX, Haswell, Nehalem and Prescott kernels and between one and two threads), so
such a file's bytes, and its md5, depend on the CPU. Here every number an artifact shows is rounded, once, to
``SIGNIFICANT_DIGITS`` significant digits (``stated``) before anything renders it — JSON, Markdown and the figure's
points all come from the same rounded values — and the files are written by this module's writers.

Five significant digits hold every digit the paper reports (σ = 19.637, VENDI-1 = 100.27, agreement to 0.1 %) and
are 4 orders of magnitude coarser than the measured spread. A value that lies closer to a rounding boundary than its
spread can still round differently: with the measured spreads, about 2 in 1,000 runs of the digits figure on
another machine.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from t2ibench.io import write_bytes_atomic, write_text_atomic

SIGNIFICANT_DIGITS = 5  # the stated precision of every number in a paper artifact

T = TypeVar("T")


def stated_float(value: float) -> float:
    """``value`` rounded to ``SIGNIFICANT_DIGITS`` significant digits (correctly rounded from its binary value);
    ±inf, nan and 0 as they are."""
    number = float(value)
    if not math.isfinite(number) or number == 0.0:
        return number
    return float(f"{number:.{SIGNIFICANT_DIGITS}g}")


def stated(value: T) -> T:
    """``value`` with every float in it — nested in dicts (values), lists, tuples and dataclasses — rounded to
    ``SIGNIFICANT_DIGITS`` significant digits; ints, bools, strings and None unchanged, types kept."""
    if value is None or isinstance(value, (str, bytes, numbers.Integral)):  # bools and numpy ints are Integral
        return value
    if isinstance(value, numbers.Real):  # a float, or a numpy float scalar: a float out
        return stated_float(float(value))  # type: ignore[return-value]
    if isinstance(value, dict):
        return type(value)((k, stated(v)) for k, v in value.items())
    if isinstance(value, list):
        return [stated(v) for v in value]  # type: ignore[return-value]
    if isinstance(value, tuple):
        items = [stated(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: stated(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    return value


def write_json(
    path: str | Path, payload: Any, *, sort_keys: bool = True, default: Callable[[Any], Any] | None = None
) -> Path:
    """``payload`` (its numbers ``stated``) as indented JSON with a final newline, written atomically."""
    text = json.dumps(stated(payload), indent=2, sort_keys=sort_keys, default=default)
    return write_text_atomic(path, text + "\n")


def write_text(path: str | Path, text: str) -> Path:
    """A rendered artifact (Markdown), written atomically; render it from ``stated`` values."""
    return write_text_atomic(path, text)


def write_png(figure: Any, path: str | Path, *, dpi: int) -> Path:
    """A matplotlib figure as PNG, written atomically, without the metadata that names the matplotlib version (the
    pixels are Agg's: the same for the same points); plot ``stated`` values."""
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return write_bytes_atomic(path, buffer.getvalue())
