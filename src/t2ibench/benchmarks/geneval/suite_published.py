"""Published GenEval results as reviewed data: every row with its numbers as printed, its source and the protocol
its source states. Built in: GenEval's own Table 2 (``geneval-table2``) and current models' rows from their papers
and repositories (``geneval-current``); a user adds another paper's numbers as a YAML file of the same shape.

A file holds one table (the keys below at its top level) or several under ``tables:``. A table: ``source`` (short
name), ``citation``, optional ``url``, ``verified`` (how its numbers were read and checked), ``protocol`` (what its
source states: ``prompts`` original / rewritten / unstated, ``detector`` (``DETECTOR_NAMES`` or the source's words),
``images_per_prompt``, ``resolution``, optional ``notes``; 'unstated' where the source does not say), optional
``columns`` and ``scale`` (how to read each row's ``printed`` text), and ``rows``: each a ``model``, optional
``overall``, any of GenEval's six task accuracies and ``human`` (in [0, 1]; ``scale: percent`` tables are still
written as fractions), optional ``protocol`` (fields that differ from the table's: a † row's ``prompts:
rewritten``), ``printed`` (the row as its source prints it), ``hub`` (generator ids of the model, for the
reproduction check), ``verified``, ``note`` and ``overall_is_mean: false`` (with a note) for a source whose printed
overall is not the mean of its printed tasks. A row without a source or without every protocol field is refused; a
given overall must agree with the mean of the six tasks (to the table's two decimals); where the table names its
``columns``, a row whose ``printed`` text disagrees with its numbers is refused, and each printed score's rounding
(half its last digit) is kept for the reproduction check.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval.columns_protocol import COMPARED as COMPARED  # re-exported
from t2ibench.benchmarks.geneval.columns_protocol import DETECTOR_NAMES, PROMPTS, STATED, UNSTATED, wording_words
from t2ibench.benchmarks.geneval.metrics_tasks import TASKS
from t2ibench.errors import InputError
from t2ibench.io import load_yaml, read_text_file
from t2ibench.specs import visible_text

BUILTIN = {"geneval-table2": "published_geneval_table2.yaml", "geneval-current": "published_geneval_current.yaml"}
TABLE_KEYS = ("source", "citation", "url", "verified", "protocol", "columns", "scale", "rows")
ROW_KEYS = ("model", "overall", *TASKS, "human", "protocol", "printed", "hub", "verified", "note", "overall_is_mean")
PROTOCOL_KEYS = ("prompts", "detector", "images_per_prompt", "resolution", "notes")
CELL_NAMES = ("overall", *TASKS, "human", "-")
MAX_ROWS = 10_000
MAX_IMAGES_PER_PROMPT = 10_000
MAX_TABLES = 100
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Protocol:
    """How published numbers were obtained, as their source states it ('unstated' where it does not)."""

    prompts: str
    detector: str
    images_per_prompt: int | str
    resolution: str
    notes: str | None = None

    def describe(self, name: str) -> str:
        """Field ``name``'s value in the report's words (a detector key spelled out)."""
        value = getattr(self, name)
        return DETECTOR_NAMES.get(value, value) if name == "detector" else str(value)

    def differences(self, other: Protocol, fields: tuple[str, ...] = COMPARED) -> list[str]:
        """'detector: Mask2Former Swin-S (GenEval's evaluator) vs SSD-MobileNet-v2 lite' for each of ``fields``
        where this protocol (first) and ``other`` differ; an 'unstated' value never equals anything."""
        return [
            f"{name.replace('_', ' ')}: {self.describe(name)} vs {other.describe(name)}"
            for name in fields
            if getattr(self, name) != getattr(other, name) or getattr(self, name) == UNSTATED
        ]


@dataclass(frozen=True)
class PublishedRow:
    """One model's published scores (accuracy in [0, 1]; None where its source prints none) and their protocol."""

    model: str
    overall: float | None
    tasks: dict[str, float | None]
    human: float | None
    protocol: Protocol
    printed: str | None = None
    hub: tuple[str, ...] = ()
    verified: str = ""
    note: str | None = None
    rounding: Mapping[str, float] = field(default_factory=dict)  # score → half its printed last digit (fraction)

    @property
    def mark(self) -> str:
        """'†' for a row whose prompts were rewritten by an LLM (BAGEL's tables' mark), else ''."""
        return "†" if self.protocol.prompts.startswith("rewritten") else ""


@dataclass(frozen=True)
class PublishedTable:
    """One source's published rows and where they come from."""

    source: str
    citation: str
    url: str | None
    verified: str
    rows: tuple[PublishedRow, ...]
    path: str
    notes: tuple[str, ...] = field(default=())  # the protocol notes its rows carry, once each


def _unknown(key: str, known: tuple[str, ...], where: str) -> InputError:
    hint = difflib.get_close_matches(key, known, n=1)
    return InputError(
        f"{where}: unknown key {key!r}"
        + (f"; did you mean {hint[0]!r}?" if hint else "")
        + f" (known: {', '.join(known)})"
    )


def _keys(data: dict[Any, Any], known: tuple[str, ...], where: str) -> None:
    for key in data:
        if key not in known:
            raise _unknown(str(key), known, where)


def _text(value: object, where: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or not visible_text(value.strip()):
        raise InputError(f"{where}: must be one line of visible text (no control or bidi characters); got {value!r}")
    return value.strip()


def _score(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: must be a number in [0, 1] or null; got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise InputError(f"{where}: must be an accuracy in [0, 1] (not a percentage); got {value!r}")
    return float(value)


def _protocol_fields(raw: object, where: str) -> dict[str, Any]:
    """A protocol mapping's fields, each checked (a partial one: a row's differences from its table's)."""
    if isinstance(raw, str):
        raise InputError(
            f"{where}: must be a mapping of {', '.join(STATED)} ('unstated' where the source does not say); the "
            "text goes under protocol.notes"
        )
    if not isinstance(raw, dict):
        raise InputError(f"{where}: must be a mapping of {', '.join(STATED)}; got {raw!r}")
    _keys(raw, PROTOCOL_KEYS, where)
    found: dict[str, Any] = {}
    for key, value in raw.items():
        at = f"{where}.{key}"
        if key == "prompts":
            if value not in PROMPTS and not (isinstance(value, str) and re.fullmatch(r"rewritten:\S+", value)):
                raise InputError(
                    f"{at}: must be one of {', '.join(PROMPTS)} (or rewritten:<the rewrite, as "
                    f"{wording_words('rewritten')!r}>); got {value!r}"
                )
        elif key == "images_per_prompt":
            bad = isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_IMAGES_PER_PROMPT
            if value != UNSTATED and bad:
                raise InputError(
                    f"{at}: must be an integer in [1, {MAX_IMAGES_PER_PROMPT}] or 'unstated'; got {value!r}"
                )
        else:
            value = _text(value, at)
        found[key] = value
    return found


def _printed_cells(text: str) -> list[str]:
    """The cells of a row as printed: a Markdown or HTML table row's cells (emphasis and tags dropped), else its
    words."""
    plain = re.sub(r"</t[dh]>\s*<t[dh][^>]*>", "|", text)
    plain = re.sub(r"<[^>]+>", "", plain).replace("**", "")
    if "|" in plain:
        cells = [c.strip().strip("_").strip() for c in plain.split("|")]
        return [c for c in cells if c] if plain.strip().startswith("|") else cells
    return plain.split()


def _check_printed(row: PublishedRow, columns: tuple[str, ...], percent: bool, where: str) -> dict[str, float]:
    """InputError naming ``where`` unless the last cells of ``row.printed`` are its numbers, column by column; each
    printed score's rounding (half its last digit, as a fraction)."""
    assert row.printed is not None
    rounding: dict[str, float] = {}
    cells = _printed_cells(row.printed)
    if len(cells) < len(columns):
        raise InputError(f"{where}: printed has {len(cells)} cells; the table's columns name {len(columns)}")
    for name, cell in zip(columns, cells[-len(columns) :], strict=True):
        if name == "-":
            continue
        value = row.overall if name == "overall" else row.human if name == "human" else row.tasks[name]
        if cell in ("-", "–", "—"):
            read = None
        elif _NUMBER.fullmatch(cell):
            read = float(cell) / (100 if percent else 1)
            decimals = len(cell.partition(".")[2])
            rounding[name] = 0.5 * 10.0**-decimals / (100 if percent else 1)
        else:
            raise InputError(f"{where}: printed cell {cell!r} under {name} is not a number or '-'")
        if (read is None) != (value is None) or (read is not None and value is not None and abs(read - value) > 1e-9):
            raise InputError(f"{where}: {name} is {value} but printed {cell!r}: check the transcription")
    return rounding


def _row(raw: object, table: dict[str, Any], where: str) -> PublishedRow:
    if not isinstance(raw, dict):
        raise InputError(f"{where}: must be a mapping (model, overall, tasks, …)")
    _keys(raw, ROW_KEYS, where)
    model = _text(raw.get("model"), f"{where}: model")
    assert model is not None
    if "†" in model:
        raise InputError(f"{where}: model {model!r}: write the name without †; the mark comes from protocol.prompts")
    tasks = {t: _score(raw.get(t), f"{where}: {t}") for t in TASKS}
    overall = _score(raw.get("overall"), f"{where}: overall")
    given = [v for v in tasks.values() if v is not None]
    checked = raw.get("overall_is_mean", True)
    if not isinstance(checked, bool) or (not checked and not raw.get("note")):
        raise InputError(f"{where}: overall_is_mean must be true, or false with a note saying the source prints it so")
    if overall is not None and len(given) == len(TASKS) and checked:
        mean = sum(given) / len(given)
        if abs(mean - overall) > 0.0051 + 0.005:  # each task rounded to 2 decimals, and the overall too
            raise InputError(
                f"{where}: overall {overall:.2f} is not the mean of its six tasks ({mean:.3f}); check the "
                "transcription (a source that prints it so: overall_is_mean: false, with a note)"
            )
    if overall is None and not given:
        raise InputError(f"{where}: no score (give overall or the tasks its source prints)")
    stated = {**table["protocol"], **_protocol_fields(raw.get("protocol", {}), f"{where}: protocol")}
    missing = [k for k in STATED if k not in stated]
    if missing:
        raise InputError(
            f"{where}: no protocol {', '.join(missing)} (in the row's or its table's protocol; 'unstated' where the "
            "source does not say)"
        )
    verified = _text(raw.get("verified", table["verified"]), f"{where}: verified", required=False)
    if verified is None:
        raise InputError(f"{where}: no verified (how its numbers were read and checked; the row's or its table's)")
    hub = raw.get("hub", [])
    if not isinstance(hub, list) or not all(isinstance(h, str) and h.strip() for h in hub):
        raise InputError(f"{where}: hub must be a list of generator ids (hub ids or names); got {hub!r}")
    row = PublishedRow(
        model=model,
        overall=overall,
        tasks=tasks,
        human=_score(raw.get("human"), f"{where}: human"),
        protocol=Protocol(**stated),
        printed=_text(raw.get("printed"), f"{where}: printed", required=False),
        hub=tuple(h.strip() for h in hub),
        verified=verified,
        note=_text(raw.get("note"), f"{where}: note", required=False),
    )
    default = 0.0005 if table["percent"] else 0.005  # a table's two decimals (one, in percent)
    rounding = {k: default for k in ("overall", *TASKS, "human")}
    if row.printed is not None and table["columns"]:
        rounding |= _check_printed(row, table["columns"], table["percent"], where)
    return replace(row, rounding=rounding)


def _table(data: dict[Any, Any], where: str, path: str) -> PublishedTable:
    _keys(data, TABLE_KEYS, where)
    source = _text(data.get("source"), f"{where}: source")
    citation = _text(data.get("citation"), f"{where}: citation")
    assert source is not None
    assert citation is not None
    url = data.get("url")
    if url is not None and (not isinstance(url, str) or not url.startswith(("https://", "http://"))):
        raise InputError(f"{where}: url must be an http(s):// address; got {url!r}")
    columns = data.get("columns", [])
    if not isinstance(columns, list) or any(c not in CELL_NAMES for c in columns):
        raise InputError(f"{where}: columns must name the printed cells ({', '.join(CELL_NAMES)}); got {columns}")
    if data.get("scale", "fraction") not in ("fraction", "percent"):
        raise InputError(f"{where}: scale must be fraction or percent; got {data.get('scale')!r}")
    shared = {
        "protocol": _protocol_fields(data.get("protocol", {}), f"{where}: protocol"),
        "verified": data.get("verified"),
        "columns": tuple(columns),
        "percent": data.get("scale") == "percent",
    }
    rows = data.get("rows")
    if not isinstance(rows, list) or not rows:
        raise InputError(f"{where}: rows must be a non-empty list")
    if len(rows) > MAX_ROWS:
        raise InputError(f"{where}: {len(rows)} rows; at most {MAX_ROWS}")
    parsed: list[PublishedRow] = []
    seen: dict[tuple[str, str, str], int] = {}
    for i, raw in enumerate(rows, start=1):
        row = _row(raw, shared, f"{where}: row {i}")
        key = (row.model.casefold(), row.protocol.resolution, row.protocol.prompts)
        if key in seen:
            raise InputError(
                f"{where}: row {i}: model {row.model!r} is also row {seen[key]} (at this resolution, on these prompts)"
            )
        seen[key] = i
        parsed.append(row)
    notes = tuple(dict.fromkeys(r.protocol.notes for r in parsed if r.protocol.notes))
    return PublishedTable(source, citation, url, str(shared["verified"] or ""), tuple(parsed), path, notes)


def load_published(name_or_path: str | Path) -> list[PublishedTable]:
    """The tables of a published file: a built-in name (``BUILTIN``) or a YAML file path; InputError names the
    file, table, row and key of anything malformed."""
    text_name = str(name_or_path)
    if text_name in BUILTIN:
        return list(_builtin(text_name))
    return _load(name_or_path)


@cache
def _builtin(name: str) -> tuple[PublishedTable, ...]:
    """A built-in table, read once per process (package data: it does not change while the process runs)."""
    text = resources.files("t2ibench.benchmarks.geneval").joinpath("data", BUILTIN[name]).read_text(encoding="utf-8")
    return tuple(_parse(text, f"published table {name}"))


def _load(name_or_path: str | Path) -> list[PublishedTable]:
    """A published file given by path, read and parsed."""
    text_name = str(name_or_path)
    path = Path(name_or_path)
    where = str(path)
    if not path.is_file():
        hint = difflib.get_close_matches(text_name, list(BUILTIN), n=1)
        raise InputError(
            f"{where}: no such published table (built in: {', '.join(BUILTIN)}"
            + (f"; did you mean {hint[0]!r}?" if hint else "")
            + ", or a YAML file path)"
        )
    try:
        text = read_text_file(path, what="published table (YAML)", max_bytes=16 * 2**20)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return _parse(text, where)


def _parse(text: str, where: str) -> list[PublishedTable]:
    """The tables of a published file's text (``where`` names it in errors)."""
    data = load_yaml(text, source=where)
    if not isinstance(data, dict):
        raise InputError(f"{where}: must be a mapping: one table (source, citation, protocol, rows) or tables")
    if "tables" not in data:
        return [_table(data, where, where)]
    _keys(data, ("tables",), where)
    tables = data["tables"]
    if not isinstance(tables, list) or not tables or len(tables) > MAX_TABLES:
        raise InputError(f"{where}: tables must be a list of 1 to {MAX_TABLES} tables")
    found = []
    for i, raw in enumerate(tables, start=1):
        if not isinstance(raw, dict):
            raise InputError(f"{where}: table {i}: must be a mapping (source, citation, protocol, rows)")
        found.append(_table(raw, f"{where}: table {i}", where))
    names = [t.source.casefold() for t in found]
    if len(set(names)) != len(names):
        twice = next(t.source for t in found if names.count(t.source.casefold()) > 1)
        raise InputError(f"{where}: two tables are named {twice!r} (each source once)")
    return found


def stored_rows(tables: list[PublishedTable]) -> list[dict[str, Any]]:
    """The store's rows of ``tables`` (``columns.PUBLISHED_TABLE``): one per model and score (overall, each task,
    human) its source prints, with the row's protocol, hub ids, how it was read and its place in its file."""
    found: list[dict[str, Any]] = []
    for table in tables:
        for order, row in enumerate(table.rows):
            scores = {"overall": row.overall, **row.tasks, "human": row.human}
            for task, value in scores.items():
                if value is None:
                    continue
                found.append(
                    {
                        "source": table.source, "citation": table.citation, "file": table.path, "model": row.model,
                        "prompts": row.protocol.prompts, "detector": row.protocol.detector,
                        "images_per_prompt": str(row.protocol.images_per_prompt),
                        "resolution": row.protocol.resolution, "hub": list(row.hub), "task": task, "value": value,
                        "verified": row.verified, "note": row.note, "row_order": order,
                        "rounding": row.rounding[task],
                    }
                )  # fmt: skip
    return found
