"""Typed pipeline parameters: a command's option values read from a section of ``params.yaml``.

DVC stages never splice a parameter into their shell command (``${seed}`` in ``dvc.yaml`` would put whatever
``params.yaml`` says into a shell line: ``seed: 43; touch x`` runs the ``touch``). A stage's command names the
section instead, ``--params params.yaml:geneval``, and the command reads it here: each key is one of the command's
own options (``per_task`` is ``--per-task``) and its value is parsed by that option's own type and choices, in
process, exactly as if it had been typed on the command line — so there is one list of options and one set of
checks, and a bad value is refused naming the file, the key and the option's reason.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError, unknown_choice

FLAG = "--params"


def _reached_parser(parser: argparse.ArgumentParser, tokens: Sequence[str]) -> argparse.ArgumentParser:
    """The (sub)parser that parses the options after ``tokens`` (a subcommand token selects its parser)."""
    current = parser
    for token in tokens:
        if token.startswith("-"):
            continue
        sub = next((a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is not None and token in sub.choices:
            current = sub.choices[token]
    return current


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The parser's long options by params key (``--per-task`` is ``per_task``), ``--params`` and help excluded."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith("--") and option not in (FLAG, "--help"):
                found[option[2:].replace("-", "_")] = action
    return found


def _scalar_text(value: Any, where: str) -> str:
    """A YAML scalar as the text a user would type; booleans, nulls and nested values are refused."""
    if isinstance(value, bool) or value is None or not isinstance(value, (int, float, str)):
        kind = "null" if value is None else type(value).__name__
        raise InputError(f"{where}: must be a number or a string, got {kind} {value!r}")
    text = str(value)
    if not text or "\x00" in text or "\n" in text:
        raise InputError(f"{where}: must be a non-empty single-line value, got {value!r}")
    return text


def _check(action: argparse.Action, text: str, where: str) -> None:
    """Parse ``text`` with the option's own type and choices; a refusal names ``where``."""
    try:
        value = action.type(text) if callable(action.type) else text
    except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
        reason = " ".join(str(exc).split()) or f"not a valid {getattr(action.type, '__name__', 'value')}"
        shown = "" if text in reason else f" (got {text!r})"
        raise InputError(f"{where}: {reason}{shown}") from None
    if action.choices is not None and value not in action.choices:
        raise unknown_choice(f"value for {where}", text, list(action.choices))


MAX_PARAMS_BYTES = 16 * 2**20  # a params.yaml is a few kB; a bigger file is not one


def load_section(path: str | Path, section: str) -> dict[str, Any]:
    """The mapping at ``section`` (dotted keys nest) of a params YAML file, read strictly."""
    from t2ibench.io import load_yaml, read_text_file

    text = read_text_file(path, what="parameters file", max_bytes=MAX_PARAMS_BYTES)
    node: Any = load_yaml(text, source=str(path))
    for part in section.split("."):
        if not isinstance(node, dict) or part not in node:
            known = sorted(node) if isinstance(node, dict) else []
            raise unknown_choice(f"section of {path}", section, known)
        node = node[part]
    if not isinstance(node, dict):
        raise InputError(f"{path}: {section}: must be a mapping of option names to values")
    return node


def expand_params(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """``argv`` with each ``--params FILE:SECTION`` replaced by that section's values as the options they name,
    each checked by the option's type; unknown keys and options given both ways are refused (one line each)."""
    out: list[str] = []
    expanded: dict[str, str] = {}  # option -> the --params that gave it (a second one may not override it)
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token != FLAG and not token.startswith(FLAG + "="):
            out.append(token)
            i += 1
            continue
        if token == FLAG:
            if i + 1 >= len(tokens):
                raise InputError(f"{FLAG}: expected FILE:SECTION (e.g. params.yaml:leaderboard)")
            spec, i = tokens[i + 1], i + 2
        else:
            spec, i = token.split("=", 1)[1], i + 1
        file, sep, section = spec.rpartition(":")
        if not sep or not file or not section:
            raise InputError(f"{FLAG} {spec!r}: expected FILE:SECTION (e.g. params.yaml:leaderboard)")
        options = _options(_reached_parser(parser, out))
        given = {t.split("=", 1)[0] for t in tokens if t.startswith("-") and t != FLAG and not t.startswith(FLAG + "=")}
        for key, value in load_section(file, section).items():
            where = f"{file}: {section}.{key}"
            action = options.get(str(key))
            if action is None:
                close = difflib.get_close_matches(str(key), list(options), n=1, cutoff=0.5)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise InputError(
                    f"{where}: not an option of this command; {hint}(options: {', '.join(sorted(options))})"
                )
            option = next(o for o in action.option_strings if o.startswith("--"))
            if any(_spells(g, o) for g in given for o in action.option_strings):
                raise InputError(f"{where}: {option} is also given on the command line; give it once")
            if option in expanded:
                raise InputError(f"{where}: {option} is also given by {expanded[option]}; give it once")
            expanded[option] = f"{FLAG} {spec}"
            if action.nargs == 0:  # a flag (store_true): true adds it, false leaves it out
                if not isinstance(value, bool):
                    raise InputError(f"{where}: {option} is a flag; give true or false, got {value!r}")
                out += [option] if value else []
                continue
            values = value if isinstance(value, list) and action.nargs in ("+", "*") else [value]
            if isinstance(value, list) and not values:
                raise InputError(f"{where}: an empty list")
            texts = [_scalar_text(v, where) for v in values]
            for text in texts:
                _check(action, text, where)
            out += [option, *texts]
    return out


def add_params_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--params FILE:SECTION`` to a parser (the values are expanded by ``expand_params`` before parsing)."""
    parser.add_argument(
        FLAG,
        metavar="FILE:SECTION",
        help="read option values from a section of a YAML file (DVC: params.yaml); each key is an option's name",
    )


def _spells(token: str, option: str) -> bool:
    """Whether the command-line ``token`` names ``option``: exactly, or as argparse's unique-prefix abbreviation of a
    long option (``--per-tas`` for ``--per-task``)."""
    if token == option:
        return True
    return token.startswith("--") and len(token) > 2 and option.startswith("--") and option.startswith(token)
