"""GenEval's released MTurk annotations: robust loading, repair of broken records, validation against the suite.

Format (``annotations_{source}.csv``): one row per (image, annotator). ``Input.prompt_id`` is the line of the
official ``evaluation_metadata.jsonl``, ``Input.image_id`` the sample, ``Input.caption`` the prompt;
``Input.object_0_name``/``object_1_name`` are the prompt's first and second include clause. Answers (see
``mturk_hit_template.html``):

* ``Answer.task-count-0/1`` — how many of object 0/1: 0–4, or 5 for "5 or more";
* ``Answer.task-color-0/1`` — the colours the annotator selected, joined by "|" (the ten GenEval colours and
  "gray");
* ``Answer.task-position-x/y`` — "Is object 1 to the left or right of / above or below object 0?":
  left/right/neither_x and above/below/neither_y;
* ``Answer.task-real-0/1`` realism 1–3, ``Answer.task-quality`` caption fit 1–4, ``Answer.task-objects`` free text.

Real exports are dirty. A free-text answer with an unquoted line break splits one record over two lines; one
with unquoted commas spills into the next columns. The loader rejoins split records and re-absorbs spilled
commas into the free-text column when the result is a well-formed row, drops what it cannot repair, and reports
how many rows were repaired or dropped and why (with line numbers) — it never crashes on a bad row and never
lets columns shift silently.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError
from t2ibench.io import read_text_file

FORM_COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray")
POSITION_X = ("left", "right", "neither_x")
POSITION_Y = ("above", "below", "neither_y")
REQUIRED_COLUMNS = (
    "Input.prompt_id",
    "Input.image_id",
    "Input.caption",
    "Answer.task-count-0",
    "Answer.task-count-1",
    "Answer.task-color-0",
    "Answer.task-color-1",
    "Answer.task-position-x",
    "Answer.task-position-y",
)
FREE_TEXT_COLUMN = "Answer.task-objects"
# columns that tell two annotators' records apart (Answer.ee: seconds spent, with two decimals, in the released files)
ANNOTATOR_COLUMNS = ("AssignmentId", "WorkerId", "Answer.ee")


@dataclass(frozen=True)
class Annotation:
    """One annotator's answers about one image (missing answers are None)."""

    source: str
    prompt_id: int
    image_id: int
    slot: int
    caption: str
    counts: tuple[int | None, int | None]
    colors: tuple[frozenset[str] | None, frozenset[str] | None]
    position_x: str | None
    position_y: str | None
    quality: int | None = None
    realism: tuple[int | None, int | None] = (None, None)
    objects: str = ""
    hit_id: str = ""
    line: int = 0

    @property
    def image_key(self) -> tuple[str, int, int]:
        """(source, prompt_id, image_id): the image this annotation is about."""
        return (self.source, self.prompt_id, self.image_id)


@dataclass
class LoadReport:
    """What loading did: rows read, repaired (by reason), dropped (by reason), with example line numbers.

    Every record read is kept or dropped (``rows_read == kept + sum(dropped.values())``); of the kept ones,
    ``score_only`` counts those that enter the human score but no agreement statistic (by reason: the only
    annotation of their image), so every row that leaves a statistic is counted with its reason.
    """

    path: str
    rows_read: int = 0
    kept: int = 0
    repaired: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    noted: Counter[str] = field(default_factory=Counter)
    score_only: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[int]] = field(default_factory=dict)

    def note(self, kind: str, reason: str, line: int) -> None:
        """Count a repaired, dropped, noted (kept, but worth a look) or score-only (kept, in the human score but in
        no agreement statistic) row and remember a few line numbers."""
        counters = {"repaired": self.repaired, "dropped": self.dropped, "noted": self.noted}
        counters["in the human score only"] = self.score_only
        counters[kind][reason] += 1
        lines = self.examples.setdefault(f"{kind}: {reason}", [])
        if len(lines) < 5:
            lines.append(line)

    @property
    def dropped_rows(self) -> int:
        """Records read but not kept (every reason)."""
        return sum(self.dropped.values())

    @property
    def agreement_rows(self) -> int:
        """Kept records that enter the agreement statistics (their image has two or more annotations)."""
        return self.kept - sum(self.score_only.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the counts, each outcome by reason (read = kept + dropped; kept = agreement + score only)."""
        return {
            "path": self.path,
            "read": self.rows_read,
            "kept": self.kept,
            "dropped_rows": self.dropped_rows,
            "agreement_rows": self.agreement_rows,
            "repaired": dict(self.repaired),
            "dropped": dict(self.dropped),
            "noted": dict(self.noted),
            "score_only": dict(self.score_only),
        }

    def summary(self) -> str:
        """One line per outcome, e.g. 'repaired 2 rows (split record rejoined; lines 14, 90)'."""
        parts = [f"{self.path}: {self.rows_read} records read, {self.kept} kept, {self.dropped_rows} dropped"]
        kinds = (("repaired", self.repaired), ("dropped", self.dropped), ("noted", self.noted))
        for kind, counter in (*kinds, ("in the human score only", self.score_only)):
            for reason, n in counter.most_common():
                lines = ", ".join(map(str, self.examples.get(f"{kind}: {reason}", [])))
                parts.append(f"{kind} {n} row(s): {reason} (e.g. line {lines})")
        return "\n".join(parts)


_SOURCE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}")


def _source_of(path: Path, row: Mapping[str, str]) -> str:
    """The model ('source') an annotated image came from: the folder after /images/ in its URL, else the file's
    name (annotations_<source>.csv); ValueError if the URL names something that is not a model folder."""
    url = row.get("Input.image_url") or ""
    if "/images/" in url:
        source = url.split("/images/")[1].split("/")[0]
        if not _SOURCE.fullmatch(source):
            raise ValueError(f"image URL names no model folder {source!r}")
        return source
    stem = path.stem
    return stem.removeprefix("annotations_")


MAX_SPLIT_LINES = 100
"""Lines one record may be rejoined from: a longer run of short records is no free-text answer split by line
breaks (and would make one runaway record of the rest of the file)."""


def _records(text: str, where: str = "the CSV") -> list[tuple[int, list[str], str]]:
    """(first line number, fields, '' or why it cannot be parsed) of every CSV record; quoted multi-line fields are
    one record, and a record the csv module refuses (a field over its size limit) is kept as its reason. A refused
    record that took more than one line is a quote that never closes: the lines it swallowed are records nobody
    can count, so the file is refused (InputError naming ``where`` and the lines)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    out: list[tuple[int, list[str], str]] = []
    previous_end = 0  # reader.line_num is the line where a record *ends*; a record starts after the previous one
    while True:
        try:
            fields, error = next(reader), ""
        except StopIteration:
            break
        except csv.Error as exc:
            fields, error = [], f"not readable as CSV ({exc})"
            if reader.line_num > previous_end + 1:
                raise InputError(
                    f"{where}: line {previous_end + 1}: a quoted field that never closes swallows lines "
                    f"{previous_end + 1}–{reader.line_num} ({exc}); fix the quote — the records in those lines cannot "
                    "be counted"
                ) from None
        out.append((previous_end + 1, fields, error))
        previous_end = reader.line_num
    if out and out[-1][0] < previous_end:  # the last record took several lines: did its quote ever close?
        _refuse_open_quote(text, out[-1][0], previous_end, where)
    return out


def _refuse_open_quote(text: str, start: int, end: int, where: str) -> None:
    """InputError when the record starting on line ``start`` ends the file inside a quoted field (the csv module,
    not strict, returns it as one record holding every line after the quote)."""
    tail = "".join(text.splitlines(keepends=True)[start - 1 :])
    try:
        for _ in csv.reader(io.StringIO(tail, newline=""), strict=True):
            pass
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            raise InputError(
                f"{where}: line {start}: a quoted field that never closes swallows lines {start}–{end} (the end of "
                "the file); fix the quote — the records in those lines cannot be counted"
            ) from None


def _repair(
    records: list[tuple[int, list[str], str]], header: list[str], report: LoadReport
) -> list[tuple[int, list[str]]]:
    """Rejoin split records and re-absorb unquoted commas into the free-text column; drop the rest.

    Linear in the file: a split record's open field is collected piece by piece and joined once (a record
    rejoined from thousands of lines costs their length, not its square), and more than ``MAX_SPLIT_LINES``
    lines is not repaired.
    """
    width = len(header)
    free = header.index(FREE_TEXT_COLUMN) if FREE_TEXT_COLUMN in header else None
    out: list[tuple[int, list[str]]] = []
    i = 0
    while i < len(records):
        line, fields, error = records[i]
        i += 1
        if error:
            report.rows_read += 1
            report.note("dropped", error, line)
            continue
        if fields == [] or fields == [""]:
            continue
        report.rows_read += 1
        reason = None
        if len(fields) < width:
            done, pieces, joined = list(fields[:-1]), [fields[-1]], 1
            while len(done) + 1 < width and i < len(records) and not records[i][2]:
                more = records[i][1]
                i += 1
                joined += 1
                pieces.append(more[0] if more else "")
                if len(more) > 1:
                    done += ["\n".join(pieces), *more[1:-1]]
                    pieces = [more[-1]]
            fields, reason = [*done, "\n".join(pieces)], "split record rejoined"
            if joined > MAX_SPLIT_LINES:
                report.note("dropped", f"a record split over more than {MAX_SPLIT_LINES} lines, not repaired", line)
                continue
        if len(fields) > width and free is not None:
            surplus = len(fields) - width
            fields = [*fields[:free], ",".join(fields[free : free + surplus + 1]), *fields[free + surplus + 1 :]]
            reason = "unquoted commas in free text re-absorbed" if reason is None else reason + " + commas re-absorbed"
        if len(fields) != width:
            report.note("dropped", f"cannot repair a record of {len(fields)} fields (header has {width})", line)
            continue
        if reason is not None:
            if not _plausible(dict(zip(header, fields, strict=True))):
                report.note("dropped", "repair did not give a well-formed row", line)
                continue
            report.note("repaired", reason, line)
        out.append((line, fields))
    return out


def _plausible(row: Mapping[str, str]) -> bool:
    """Cheap structural check of a repaired row: ids are integers and answers come from the form's vocabularies."""
    try:
        _identifier(row["Input.prompt_id"], "prompt_id")
        _identifier(row["Input.image_id"], "image_id")
    except (KeyError, ValueError):
        return False
    return all(
        (row.get(col) or "") in ("", *allowed)
        for col, allowed in (("Answer.task-position-x", POSITION_X), ("Answer.task-position-y", POSITION_Y))
    )


_WHOLE_NUMBER = re.compile(r"[0-9]+(\.0+)?")  # '3' or '3.0' (the released files write both); not 'inf', '1e3'


def _int_or_none(value: str, *, lo: int, hi: int, what: str) -> int | None:
    text = (value or "").strip()
    if not text:
        return None
    if not _WHOLE_NUMBER.fullmatch(text):
        raise ValueError(f"{what} {text!r} is not a number")
    number = int(float(text))
    if not lo <= number <= hi:
        raise ValueError(f"{what} {text!r} outside {lo}–{hi}")
    return number


MAX_ID = 2**31 - 1
"""Largest prompt or image id (the store's INTEGER columns)."""


def _identifier(value: str, what: str) -> int:
    """A prompt or image id: ASCII digits ('3', or '3.0' as the exports write numbers), 0 to MAX_ID; ValueError
    otherwise — ' 3', '+3', '3_0', '٣' or '-1' are not ids (int() would accept most of them and merge images)."""
    text = value or ""
    if not _WHOLE_NUMBER.fullmatch(text):
        raise ValueError(f"{what} {text!r} is not a whole number")
    digits = text.split(".")[0].lstrip("0") or "0"
    number = int(digits) if len(digits) <= len(str(MAX_ID)) else MAX_ID + 1
    if number > MAX_ID:
        raise ValueError(f"{what} {text!r} outside 0–{MAX_ID}")
    return number


def _colors(value: str, what: str) -> frozenset[str] | None:
    text = (value or "").strip()
    if not text:
        return None
    picked = frozenset(c.strip().lower() for c in text.split("|") if c.strip())
    unknown = sorted(picked - set(FORM_COLORS))
    if unknown:
        raise ValueError(f"{what} has unknown colour(s) {', '.join(unknown)}")
    return picked


def _choice(value: str, allowed: Sequence[str], what: str) -> str | None:
    text = (value or "").strip()
    if not text:
        return None
    if text not in allowed:
        raise ValueError(f"{what} {text!r} not one of {', '.join(allowed)}")
    return text


def load_annotations(
    path: str | Path, suite: Sequence[Mapping[str, Any]] | None = None
) -> tuple[list[Annotation], LoadReport]:
    """Annotations of one CSV and a report of repaired/dropped rows; with ``suite``, captions are checked too."""
    p = Path(path)
    text = read_text_file(p, what="MTurk CSV export", encoding="utf-8-sig")
    records = _records(text, str(p))
    if not records:
        raise InputError(f"{p}: empty file")
    header_line, header, header_error = records[0]
    if header_error:
        raise InputError(f"{p}:{header_line}: the header is {header_error}; expected an MTurk CSV export")
    repeated = sorted(c for c, n in Counter(header).items() if n > 1)  # one pass: header.count is quadratic
    if repeated:
        raise InputError(f"{p}: the header names column(s) {', '.join(repeated)} more than once; keep one of each")
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise InputError(f"{p}: not a GenEval annotation file: missing column(s) {', '.join(missing)}")
    report = LoadReport(path=str(p))
    rows = _repair(records[1:], header, report)
    slots: dict[tuple[str, int, int], int] = {}
    annotations: list[Annotation] = []
    first_seen: dict[tuple[Any, ...], int] = {}
    workers: set[tuple[str, int, int, str]] = set()
    columns = [(c, header.index(c)) for c in ANNOTATOR_COLUMNS if c in header]
    for line, fields in rows:
        row = dict(zip(header, fields, strict=True))
        try:
            parsed = _parse_row(row)
        except ValueError as exc:
            report.note("dropped", _reason_class(str(exc)), line)
            continue
        # the same record twice would count one annotator twice: compared as parsed ('3' and '3.0', 'red|blue' and
        # 'blue|red' are one answer), so a respelling is no new annotator
        identity = tuple(parsed.get(c, v) for c, v in zip(header, fields, strict=True))
        if identity in first_seen:
            distinguishing = [c for c, i in columns if fields[i].strip()]
            if distinguishing:
                report.note("dropped", f"duplicate of an earlier record ({distinguishing[0]} included)", line)
                continue
            why = f"no {'/'.join(ANNOTATOR_COLUMNS)} value tells the annotators apart"
            report.note("noted", f"same answers as an earlier record of the image; kept ({why})", line)
        first_seen.setdefault(identity, line)
        prompt_id, image_id = parsed["Input.prompt_id"], parsed["Input.image_id"]
        if suite is not None:
            if not 0 <= prompt_id < len(suite):
                report.note("dropped", "prompt_id outside the suite", line)
                continue
            if suite[prompt_id].get("prompt") != row["Input.caption"]:
                report.note("dropped", "caption differs from the suite's prompt for that prompt_id", line)
                continue
        try:
            source = _source_of(p, row)
        except ValueError:
            report.note("dropped", "image URL names no model folder", line)
            continue
        key = (source, prompt_id, image_id)
        worker = (row.get("WorkerId") or "").strip()
        if worker:
            if (*key, worker) in workers:
                report.note("dropped", "a second annotation of the image by the same WorkerId", line)
                continue
            workers.add((*key, worker))
        slot = slots.get(key, 0)
        slots[key] = slot + 1
        annotations.append(
            Annotation(
                source=source,
                prompt_id=prompt_id,
                image_id=image_id,
                slot=slot,
                caption=row["Input.caption"],
                counts=(parsed["Answer.task-count-0"], parsed["Answer.task-count-1"]),
                colors=(parsed["Answer.task-color-0"], parsed["Answer.task-color-1"]),
                position_x=parsed["Answer.task-position-x"],
                position_y=parsed["Answer.task-position-y"],
                quality=parsed["Answer.task-quality"],
                realism=(parsed["Answer.task-real-0"], parsed["Answer.task-real-1"]),
                objects=row.get(FREE_TEXT_COLUMN, ""),
                hit_id=row.get("HITId", ""),
                line=line,
            )
        )
    report.kept = len(annotations)
    for a in annotations:  # agreement needs two annotators of one image; one annotation is in the human score only
        if slots[a.image_key] == 1:
            report.note("in the human score only", "the only annotation of its image (no agreement statistic)", a.line)
    return annotations, report


def _parse_row(row: Mapping[str, str]) -> dict[str, Any]:
    """The ids and answers of one record, parsed (column → value); ValueError names the first bad one."""
    return {
        "Input.prompt_id": _identifier(row["Input.prompt_id"], "prompt_id"),
        "Input.image_id": _identifier(row["Input.image_id"], "image_id"),
        "Answer.task-count-0": _int_or_none(row["Answer.task-count-0"], lo=0, hi=5, what="count of object 0"),
        "Answer.task-count-1": _int_or_none(row["Answer.task-count-1"], lo=0, hi=5, what="count of object 1"),
        "Answer.task-color-0": _colors(row["Answer.task-color-0"], "colour of object 0"),
        "Answer.task-color-1": _colors(row["Answer.task-color-1"], "colour of object 1"),
        "Answer.task-position-x": _choice(row["Answer.task-position-x"], POSITION_X, "position-x"),
        "Answer.task-position-y": _choice(row["Answer.task-position-y"], POSITION_Y, "position-y"),
        "Answer.task-quality": _int_or_none(row.get("Answer.task-quality", ""), lo=1, hi=4, what="caption fit"),
        "Answer.task-real-0": _int_or_none(row.get("Answer.task-real-0", ""), lo=1, hi=3, what="realism 0"),
        "Answer.task-real-1": _int_or_none(row.get("Answer.task-real-1", ""), lo=1, hi=3, what="realism 1"),
    }


def _reason_class(message: str) -> str:
    """Group value errors by kind for the report ('count of object 0 outside 0–5', 'unknown colour', ...): the
    offending value is left out, so the report has one line per kind however many values a file spells."""
    what = message.split(" '")[0]
    if "unknown colour" in message:
        return "unknown colour"
    if "outside" in message:
        return what + " out of range"
    if "not one of" in message:
        return what + " not a form answer"
    if "not a whole number" in message:
        return what + " not a whole number"
    if "not a number" in message:
        return what + " not a number"
    return what
