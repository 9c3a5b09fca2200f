"""Exception types shared by every layer (standard library only)."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence

NOTES = logging.getLogger("t2ibench")
"""Where the library says what it did about an input it could use (a recomputed stale cache, a converted image):
the CLI prints these lines as 'note: ...', Prefect flows log them."""


def note(message: str) -> None:
    """Tell the user something the library decided about their input (one line)."""
    NOTES.warning(message)


class InputError(ValueError):
    """Bad user input: the message names the file, row or parameter at fault."""


class FieldError(InputError):
    """A value out of range in a spec (a config section or the object it builds); callers prefix where it came from
    (``c.yaml:evaluators.geneval.threshold``, or a CLI option)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class StateMismatchError(ValueError):
    """Two streaming states that cannot be combined (different feature maps, dimensions or seeds)."""


def unknown_choice(what: str, value: object, options: Sequence[object]) -> InputError:
    """An InputError for an unknown name, with a did-you-mean suggestion drawn from ``options``."""
    names = [str(o) for o in options]
    close = difflib.get_close_matches(str(value), names, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return InputError(f"unknown {what} {value!r}{hint} (choose from: {', '.join(names)})")
