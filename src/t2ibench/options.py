"""Command-line value types and error wording shared by the CLI and the benchmarks' own ``evaluate`` options: an
integer in a range (``int_from``), and a typed section built from options with a field's error reported under the
option that set it (``spec_or_error``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TypeVar

from t2ibench.errors import FieldError, InputError

T = TypeVar("T")


def int_from(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer in [minimum, maximum] (no maximum: ≥ minimum), else a one-line error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"in [{minimum}, {maximum}]" if maximum is not None else f"≥ {minimum}"
            raise argparse.ArgumentTypeError(f"must be {bound}; got {value}")
        return value

    return parse


def spec_or_error(build: Callable[[], T], options: Mapping[str, str]) -> T:
    """``build()`` (a config section), its FieldError reported under the command-line option that set the field
    (``options``: field → option; others are ``--field-name``)."""
    try:
        return build()
    except FieldError as exc:
        option = options.get(exc.field, "--" + exc.field.replace("_", "-"))
        raise InputError(f"{option}: {exc.message}") from None
