"""Typed fields that say how they are checked and shown: a numeric field's ``Range`` and its command-line
``Option`` as ``Annotated`` metadata, the help each field's docstring gives (``field_docs``), and ``check_ranges``,
which applies the ranges to any instance (a config section from YAML, a request from JSON). No argparse here:
``t2ibench.options`` turns the same fields into command-line options."""

from __future__ import annotations

import ast
import dataclasses
import math
import sys
import types
import typing
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from t2ibench.errors import FieldError, InputError, unknown_choice

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
            return f"{'>' if self.open_low else '≥'} {_number(self.low)}"
        left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
        return f"in {left}{_number(self.low)}, {_number(self.high)}{right}"

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
    ``flag``, a ``metavar``, ``repeat`` (a list field given as one value per flag: ``--auto a --auto b``), ``sep``
    (a list field given as one value, its items separated by ``sep``: ``--classes person,dog``), ``positional`` (an
    argument, not an option: ``t2ibench sql QUERY``; optional when the field has a default), ``parse`` (the parser of
    a value whose type has no derived one, e.g. a number or a rule's name: it raises ``ValueError`` or argparse's
    ``ArgumentTypeError`` with the reason), ``bare`` (the option may be given without a value: the field is then
    True), ``exclusive`` (fields naming the same group exclude one another on the command line), or ``cli=False``
    (not an option: the command sets it)."""

    flag: str | None = None
    metavar: str | None = None
    repeat: bool = False
    sep: str | None = None
    positional: bool = False
    parse: Callable[[str], Any] | None = None
    bare: bool = False
    exclusive: str | None = None
    cli: bool = True


def _number(x: float) -> str:
    """A bound as written: 1000000000 rather than 1e+09, 0.5 as 0.5."""
    return str(int(x)) if math.isfinite(x) and float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


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
        if dataclasses.is_dataclass(klass):
            found |= _module_docs(klass.__module__).get(klass.__qualname__, {})
    return found


@cache
def _module_docs(module: str) -> dict[str, dict[str, str]]:
    """Class qualified name → its fields' docstrings, for every class of ``module``, its source parsed once (every
    command builds its options from them at start-up: one parse per module, not per class)."""
    path = getattr(sys.modules.get(module), "__file__", None)
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8")) if path else None
    except (OSError, SyntaxError, UnicodeDecodeError):  # pragma: no cover - no source to read
        tree = None
    found: dict[str, dict[str, str]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.ClassDef):
                continue
            name = prefix + node.name
            docs = found.setdefault(name, {})
            for field, after in zip(node.body, [*node.body[1:], None], strict=True):
                if (
                    isinstance(field, ast.AnnAssign)
                    and isinstance(field.target, ast.Name)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    docs[field.target.id] = " ".join(after.value.value.split())
            visit(node.body, name + ".")

    visit(tree.body if tree else [], "")
    return found


@cache
def type_hints(cls: Any, *, extras: bool = True) -> dict[str, Any]:
    """The resolved annotations of the class ``cls`` (``Annotated`` extras kept unless ``extras`` is False),
    computed once per class (``typing.get_type_hints`` evaluates every annotation each call, and a config builds
    hundreds of sections). Callers must not modify the returned dict."""
    return typing.get_type_hints(cls, include_extras=extras)


@cache
def _ranged_fields(cls: Any) -> tuple[tuple[str, Range], ...]:
    """The fields of the dataclass ``cls`` that carry a ``Range``, with it, in field order."""
    hints = type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        bounds = meta(annotated(hints[f.name])[1], Range)
        if bounds is not None:
            found.append((f.name, bounds))
    return tuple(found)


def check_ranges(obj: Any) -> None:
    """FieldError naming the first field of the dataclass ``obj`` outside its ``Range`` (None is left alone)."""
    for name, bounds in _ranged_fields(obj.__class__):
        value = getattr(obj, name)
        if value is None:
            continue
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, (int, float)) and not isinstance(item, bool) and not bounds.holds(item):
                raise FieldError(name, f"must be {bounds.text()}; got {item!r}")


def decode(tp: Any, value: Any, where: str, *, section: Callable[[Any, Any, str], Any] | None = None) -> Any:
    """``value`` (parsed YAML or JSON) as a field of type ``tp`` holds it — lists become tuples, an integer for a
    number a float — or an InputError naming ``where``: the one decoder of config sections and flow requests.
    ``section`` builds a nested dataclass (the config's sections; None: none is expected)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:  # an optional section: its own error, naming its key
            return decode(options[0], value, where, section=section)
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return decode(option, value, where, section=section)
            except InputError as exc:
                errors.append(str(exc).split(": ", 1)[-1])
        raise InputError(f"{where}: {value!r} is not a valid value ({'; '.join(errors)})")
    if origin is Literal:
        if value not in args:
            raise InputError(f"{where}: {unknown_choice('value', value, [str(a) for a in args])}")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise InputError(f"{where}: expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v, f"{where}[{i}]", section=section) for i, v in enumerate(value))
        if len(value) != len(args):
            raise InputError(f"{where}: expected {len(args)} values, got {len(value)}")
        return tuple(
            decode(a, v, f"{where}[{i}]", section=section) for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and section is not None:
        return section(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise InputError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise InputError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise InputError(f"{where}: expected a string, got {value!r}")
        if "\x00" in value:
            raise InputError(f"{where}: a string with a NUL character ({value!r})")
        return value
    raise InputError(f"{where}: unsupported type {getattr(tp, '__name__', str(tp))}")
