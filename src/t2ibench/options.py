"""Options derived from typed fields, and the command-line value types and error wording they share.

A typed class (a flow's request, a config section) is the one place its options are declared: each field's type
(``int``, ``float``, ``str``, ``bool``, ``tuple[str, ...]``, optional, ``Literal`` choices), its default, its range
(``Annotated[int, Range(1, 1000)]``), its command-line spelling when not ``--field-name`` (``Option``) and its help
(the attribute docstring under the field). ``add_fields`` declares a class's fields as argparse options,
``from_args`` builds the class from the parsed values (a field's error under the option that set it) and
``check_ranges`` applies the same ranges to a value from YAML or JSON — so an option the class lacks cannot exist,
and a field cannot be left off the command line by accident (``tests/unit/test_options.py``)."""

from __future__ import annotations

import argparse
import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from t2ibench.errors import FieldError, InputError
from t2ibench.fields import Option, Range, annotated, field_docs, meta, type_hints

T = TypeVar("T")


def int_from(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer in [minimum, maximum] (no maximum: ≥ minimum), else a one-line error."""
    return range_parser(Range(minimum, maximum), int)


def float_in(
    low: float, high: float = math.inf, *, open_low: bool = False, open_high: bool = False
) -> Callable[[str], float]:
    """An argparse ``type``: a number in the range (an open end excludes its bound), else a one-line error."""
    return range_parser(Range(low, high, open_low=open_low, open_high=open_high), float)


def spec_or_error(build: Callable[[], T], options: Mapping[str, str]) -> T:
    """``build()`` (a config section), its FieldError reported under the command-line option that set the field
    (``options``: field → option; others are ``--field-name``)."""
    try:
        return build()
    except FieldError as exc:
        option = options.get(exc.field, "--" + exc.field.replace("_", "-"))
        raise InputError(f"{option}: {exc.message}") from None


@dataclasses.dataclass(frozen=True)
class FieldOption:
    """One field as a command-line option: the field, its flag (a positional argument's: its name as shown), the
    argparse destination and its declaration."""

    field: str
    flag: str
    dest: str
    kwargs: Mapping[str, Any]
    absent: Any = None  # the field's value when the option is not given and argparse has None (a list's ())
    positional: bool = False
    exclusive: str | None = None  # the group of options it excludes (Option.exclusive)


def field_options(
    cls: type,
    *,
    skip: Sequence[str] = (),
    only: Sequence[str] | None = None,
    flags: Mapping[str, str] | None = None,
    choices: Mapping[str, Sequence[str]] | None = None,
    defaults: Mapping[str, Any] | None = None,
    notes: Mapping[str, str] | None = None,
    dest_prefix: str = "",
    optional: Sequence[str] = (),
) -> list[FieldOption]:
    """Every field of the dataclass ``cls`` (but ``skip`` and those marked ``Option(cli=False)``; of ``only`` when
    given) as an option; ``flags`` respells fields for one command (a config section's ``model`` is ``evaluate``'s
    ``--judge-model``), ``choices`` gives a string field the names of the registry it is checked against,
    ``defaults`` gives a field another default for one command (a benchmark's images per prompt), ``notes`` adds
    what one command says of a field to its help, ``dest_prefix`` keeps the parsed values apart from the command's
    other options (else a value's name is its flag's), ``optional`` names required fields the command may go
    without (it checks them where it needs them)."""
    hints = type_hints(cls)
    docs = field_docs(cls)
    found = []
    for f in dataclasses.fields(cls):
        base, extras = annotated(hints[f.name])
        option = meta(extras, Option) or Option()
        if f.name in skip or not option.cli or (only is not None and f.name not in only):
            continue
        positional = option.positional
        flag = f.name if positional else (flags or {}).get(f.name) or option.flag or "--" + f.name.replace("_", "-")
        absent = None
        dest = dest_prefix + f.name if dest_prefix else f.name if positional else flag[2:].replace("-", "_")
        kwargs: dict[str, Any] = {"dest": dest, "help": docs.get(f.name, "").replace("``", "")}
        if f.name in (notes or {}):
            kwargs["help"] = (kwargs["help"].rstrip(".") + " " + (notes or {})[f.name]).strip()
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        default = f.default if f.default is not dataclasses.MISSING else None
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        if f.name in (defaults or {}):
            has_default, default = True, (defaults or {})[f.name]
        args = [a for a in typing.get_args(base) if a is not type(None) and not (option.bare and a is bool)]
        if typing.get_origin(base) in (typing.Union, types.UnionType) and len(args) == 1:
            base = args[0]  # optional: None is the absent option's value (bare: True its value-less flag's)
        if option.parse is not None:  # a value of its own form: a number or a rule's name, a list in one value
            kwargs |= {"type": option.parse}
        elif base is bool:
            if default is not False:
                raise TypeError(f"{cls.__name__}.{f.name}: a flag's default must be False")
            kwargs |= {"action": "store_true"}
        elif typing.get_origin(base) is tuple:
            item = typing.get_args(base)[0]
            if option.sep is not None:  # one value, its items separated: --classes person,dog
                kwargs |= {"type": _split(option.sep, _parser(item, meta(extras, Range)) if item is not str else str)}
            else:
                many = "*" if positional and has_default else "+"
                kwargs |= {"action": "append"} if option.repeat else {"nargs": many}
                kwargs |= {"type": _parser(item, meta(extras, Range))} if item is not str else {}
            absent, default = default, None if default == () else default  # argparse's None is the field's ()
        elif f.name in (choices or {}):
            kwargs |= {"choices": list((choices or {})[f.name])}
        elif typing.get_origin(base) is Literal:
            kwargs |= {"choices": list(typing.get_args(base))}
        elif base in (int, float):
            kwargs |= {"type": _parser(base, meta(extras, Range))}
        elif base is not str:
            raise TypeError(f"{cls.__name__}.{f.name}: no command-line form for {base!r}")
        if option.bare:
            kwargs |= {"nargs": "?", "const": True}
        if not has_default:
            if not positional:
                kwargs["required"] = f.name not in optional
        elif base is not bool:
            kwargs["default"] = default
            if positional and "nargs" not in kwargs:
                kwargs["nargs"] = "?"
            if default is not None and default != ():
                shown = ",".join(map(str, default)) if isinstance(default, tuple) else f"{default:g}" if isinstance(
                    default, float) else str(default)  # fmt: skip
                kwargs["help"] = (kwargs["help"].rstrip(".") + f" (default {shown})").strip()
        if base is not bool and "choices" not in kwargs:  # named after its flag, not the prefixed destination
            if option.metavar or not positional:
                kwargs["metavar"] = option.metavar or flag[2:].upper().replace("-", "_")
            elif dest != f.name:
                kwargs["metavar"] = f.name
        if positional and kwargs.get("metavar"):
            flag = kwargs["metavar"]  # as argparse and the command's messages name it
        found.append(FieldOption(f.name, flag, dest, kwargs, absent, positional, option.exclusive))
    return found


def range_parser(bounds: Range, kind: type) -> Callable[[str], Any]:
    """An argparse ``type`` for a field of ``kind`` (int or float) in ``bounds``: a one-line error otherwise."""
    noun = "an integer" if kind is int else "a number"

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if not bounds.holds(value):
            raise argparse.ArgumentTypeError(f"must be {bounds.text()}; got {text}")
        return value

    return parse


def _split(sep: str, item: Callable[[str], Any]) -> Callable[[str], tuple[Any, ...]]:
    """A parser of one value holding items separated by ``sep`` (blanks around each dropped, empty items refused)."""

    def parse(text: str) -> tuple[Any, ...]:
        parts = [part.strip() for part in text.split(sep)]
        if not all(parts):
            raise argparse.ArgumentTypeError(f"expected items separated by {sep!r}, none empty; got {text!r}")
        return tuple(item(part) for part in parts)

    return parse


def _parser(kind: Any, bounds: Range | None) -> Callable[[str], Any]:
    if bounds is not None:
        return range_parser(bounds, kind)
    if kind is int:
        return int_from(-(2**63), 2**63 - 1)
    if kind is float:
        return float_in(-math.inf, math.inf, open_low=True, open_high=True)
    return kind  # type: ignore[no-any-return]


def add_fields(parser: Any, cls: type, **how: Any) -> list[FieldOption]:
    """Declare the fields of ``cls`` as options (and positional arguments) of the argparse ``parser`` (or group);
    ``how``: ``field_options``'s keywords."""
    made = field_options(cls, **how)
    groups: dict[str, Any] = {}  # Option.exclusive: one mutually exclusive group each
    for option in made:
        target = parser
        if option.exclusive is not None:
            if option.exclusive not in groups:
                groups[option.exclusive] = parser.add_mutually_exclusive_group()
            target = groups[option.exclusive]
        if option.positional:  # argparse names a positional argument by its destination
            kwargs = dict(option.kwargs)
            action = target.add_argument(kwargs.pop("dest"), **kwargs)
        else:
            action = target.add_argument(option.flag, **option.kwargs)
        setattr(action, _FIELD, (cls, option.field))
    return made


_FIELD = "t2ibench_field"


def field_of(action: argparse.Action) -> tuple[type, str] | None:
    """(class, field) of an argparse action ``add_fields`` declared; None for one declared by hand."""
    found: tuple[type, str] | None = getattr(action, _FIELD, None)
    return found


def from_args(cls: Callable[..., T], args: argparse.Namespace, options: Sequence[FieldOption], **given: Any) -> T:
    """``cls`` built from the parsed values of ``options`` (lists as tuples) and ``given``; a field's error is
    reported under the option that set it."""
    values: dict[str, Any] = {}
    for option in options:
        value = getattr(args, option.dest)
        values[option.field] = tuple(value) if isinstance(value, list) else option.absent if value is None else value
    return spec_or_error(lambda: cls(**{**values, **given}), {o.field: o.flag for o in options})
