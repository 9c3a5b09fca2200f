"""Published reference rows as data: GenEval's own Table 2 ships with t2ibench (``geneval-table2``); a user adds
another paper's numbers as a YAML file of the same shape. The report shows them beside measured rows, labelled
"published", and never ranks them with measured rows.

A file: ``source`` (short name), ``citation``, optional ``url`` and ``protocol`` (how those numbers were obtained),
and ``rows``: each a ``model`` name, optional ``overall``, any of GenEval's six task accuracies and ``human``, all
in [0, 1]. A given overall must agree with the mean of the six tasks (to the table's two decimals).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from t2ibench.benchmarks.geneval.metrics_tasks import TASKS
from t2ibench.errors import InputError
from t2ibench.io import load_yaml, read_text_file

BUILTIN = {"geneval-table2": "published_geneval_table2.yaml"}
FILE_KEYS = ("source", "citation", "url", "protocol", "rows")
ROW_KEYS = ("model", "overall", *TASKS, "human")
MAX_ROWS = 10_000


@dataclass(frozen=True)
class PublishedRow:
    """One model's published scores (accuracy in [0, 1]; None where the paper gives none)."""

    model: str
    overall: float | None
    tasks: dict[str, float | None]
    human: float | None


@dataclass(frozen=True)
class PublishedTable:
    """One paper's reference rows and where they come from."""

    source: str
    citation: str
    url: str | None
    protocol: str | None
    rows: tuple[PublishedRow, ...]
    path: str


def _unknown(key: str, known: tuple[str, ...], where: str) -> InputError:
    hint = difflib.get_close_matches(key, known, n=1)
    return InputError(
        f"{where}: unknown key {key!r}"
        + (f"; did you mean {hint[0]!r}?" if hint else "")
        + f" (known: {', '.join(known)})"
    )


def _score(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: must be a number in [0, 1] or null; got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise InputError(f"{where}: must be an accuracy in [0, 1] (not a percentage); got {value!r}")
    return float(value)


def load_published(name_or_path: str | Path) -> PublishedTable:
    """Read a published table: a built-in name (``geneval-table2``) or a YAML file path; InputError names the file,
    row and key of anything malformed."""
    text_name = str(name_or_path)
    if text_name in BUILTIN:
        where = f"published table {text_name}"
        text = (
            resources.files("t2ibench.benchmarks.geneval")
            .joinpath("data", BUILTIN[text_name])
            .read_text(encoding="utf-8")
        )
    else:
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
    data = load_yaml(text, source=where)
    if not isinstance(data, dict):
        raise InputError(f"{where}: must be a mapping with source, citation and rows")
    for key in data:
        if key not in FILE_KEYS:
            raise _unknown(str(key), FILE_KEYS, where)
    for key in ("source", "citation"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise InputError(f"{where}: {key} must be a non-empty string")
    rows = data.get("rows")
    if not isinstance(rows, list) or not rows:
        raise InputError(f"{where}: rows must be a non-empty list")
    if len(rows) > MAX_ROWS:
        raise InputError(f"{where}: {len(rows)} rows; at most {MAX_ROWS}")
    parsed: list[PublishedRow] = []
    seen: dict[str, int] = {}
    for i, row in enumerate(rows, start=1):
        at = f"{where}: row {i}"
        if not isinstance(row, dict):
            raise InputError(f"{at}: must be a mapping (model, overall, tasks)")
        for key in row:
            if key not in ROW_KEYS:
                raise _unknown(str(key), ROW_KEYS, at)
        model = row.get("model")
        if not isinstance(model, str) or not model.strip():
            raise InputError(f"{at}: model must be a non-empty string")
        if model.casefold() in seen:
            raise InputError(f"{at}: model {model!r} is also row {seen[model.casefold()]}")
        seen[model.casefold()] = i
        tasks = {t: _score(row.get(t), f"{at}: {t}") for t in TASKS}
        overall = _score(row.get("overall"), f"{at}: overall")
        given = [v for v in tasks.values() if v is not None]
        if overall is not None and len(given) == len(TASKS):
            mean = sum(given) / len(given)
            if abs(mean - overall) > 0.0051 + 0.005:  # each task rounded to 2 decimals, and the overall too
                raise InputError(
                    f"{at}: overall {overall:.2f} is not the mean of its six tasks ({mean:.3f}); check the "
                    "transcription"
                )
        parsed.append(
            PublishedRow(model=model, overall=overall, tasks=tasks, human=_score(row.get("human"), f"{at}: human"))
        )
    url = data.get("url")
    if url is not None and (not isinstance(url, str) or not url.startswith(("https://", "http://"))):
        raise InputError(f"{where}: url must be an http(s):// address; got {url!r}")
    return PublishedTable(
        source=data["source"],
        citation=data["citation"],
        url=data.get("url") if isinstance(data.get("url"), str) else None,
        protocol=data.get("protocol") if isinstance(data.get("protocol"), str) else None,
        rows=tuple(parsed),
        path=where,
    )
