"""Typed fields that say how they are checked and shown: a numeric field's ``Range`` and its command-line
``Option`` as ``Annotated`` metadata, the help each field's docstring gives (``field_docs``), and ``check_ranges``,
which applies the ranges to any instance (a config section from YAML, a request from JSON). No argparse here:
``t2ibench.options`` turns the same fields into command-line options."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import textwrap
import typing
from collections.abc import Sequence
from functools import cache
from typing import Annotated, Any, TypeVar

from t2ibench.errors import FieldError

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Range:
    """A numeric field's range, ``[low, high]`` (an open end excludes its bound; ``high`` None: unbounded)."""

    low: float
    high: float | None = None
    open_low: bool = False
    open_high: bool = False

    def text(self) -> str:
        """'in [1, 1000]', 'in (0, 1)' or '≥ 1'."""
        if self.high is None:
            return f"{'>' if self.open_low else '≥'} {self.low:g}"
        left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
        return f"in {left}{self.low:g}, {self.high:g}{right}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` lies in the range (NaN never does)."""
        if value != value:
            return False
        above = value > self.low if self.open_low else value >= self.low
        high = math.inf if self.high is None else self.high
        below = value < high if self.open_high else value <= high
        return above and below


@dataclasses.dataclass(frozen=True)
class Option:
    """How a field shows on the command line when not as ``--field-name`` with its type's parsing: another
    ``flag``, a ``metavar``, ``repeat`` (a list field given as one value per flag: ``--auto a --auto b``), or
    ``cli=False`` (not an option: the command sets it)."""

    flag: str | None = None
    metavar: str | None = None
    repeat: bool = False
    cli: bool = True


def annotated(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """(the type, its Annotated metadata) of a field's type hint."""
    if typing.get_origin(hint) is Annotated:
        base, *extras = typing.get_args(hint)
        return base, tuple(extras)
    return hint, ()


def meta(extras: Sequence[Any], kind: type[T]) -> T | None:
    """The first of ``extras`` (Annotated metadata) of type ``kind``, if any."""
    return next((e for e in extras if isinstance(e, kind)), None)


@cache
def field_docs(cls: type) -> dict[str, str]:
    """Field name → the docstring written under it in ``cls`` or a base (the help its option shows)."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):  # pragma: no cover - a class made at run time
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                found[node.target.id] = " ".join(after.value.value.split())
    return found


def check_ranges(obj: Any) -> None:
    """FieldError naming the first field of the dataclass ``obj`` outside its ``Range`` (None is left alone)."""
    hints = typing.get_type_hints(type(obj), include_extras=True)
    for f in dataclasses.fields(obj):
        _, extras = annotated(hints[f.name])
        bounds = meta(extras, Range)
        value = getattr(obj, f.name)
        if bounds is None or value is None:
            continue
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, (int, float)) and not isinstance(item, bool) and not bounds.holds(item):
                raise FieldError(f.name, f"must be {bounds.text()}; got {item!r}")
