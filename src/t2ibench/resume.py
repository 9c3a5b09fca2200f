"""The resumable companion of a results file: ``<results>.partial``, the one mechanism both benchmarks' evaluations
use to survive an interruption.

Its first line records the settings the rows were made under (``{"partial_settings": ...}``); each further line is
one finished item's record, appended, flushed and fsynced as soon as it is done, with the SHA-256 of the image it
judged and the row's own digest (``row_sha256``: SHA-256 of the canonical JSON — sorted keys — of the settings line's
settings and the row without that field). Reading drops a torn last line (a kill mid-write) silently; a row whose
digest does not match (edited by hand: a changed probability or verdict), a row without one (written by a t2ibench
before row digests: it cannot be told from an edited one) and any other line that does not parse are never reused —
the caller judges those items again — and one note names the file and counts them. The digest binds a row to the
settings it was made under, so editing the settings line cannot pass rows off as made under other settings. It is
an integrity check, not a signature: it catches hand edits and corruption, not someone who recomputes it. ``start``
rewrites the file atomically with only the rows the caller keeps, so nothing is ever appended after a torn fragment.
What to keep (same settings, same image bytes, same prompt) is the caller's decision.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from t2ibench.errors import InputError, note
from t2ibench.hashing import record_sha256
from t2ibench.io import write_text_atomic
from t2ibench.paths import regular_file

RowT = TypeVar("RowT")
DIGEST = "image_sha256"  # the key of a row's image digest in its line
ROW_DIGEST = "row_sha256"  # the key of a row's own digest (of the settings and the rest of the line)
# why a stored row is not reused, as its note says
EDITED = "edited (the row's digest does not match its content)"
UNSIGNED = "without a row digest (written by an older t2ibench)"
UNREADABLE = "unreadable"


def row_digest(settings: Any, line: Mapping[str, Any]) -> str:
    """SHA-256 (64 hex digits) of a partial row: the canonical JSON of the settings it was made under and its line
    without ``ROW_DIGEST``."""
    return record_sha256({"settings": settings, "row": {k: v for k, v in line.items() if k != ROW_DIGEST}})


class PartialResults(Generic[RowT]):
    """``<out>.partial`` of results file ``out``: its stored rows, then the rows appended as they are made."""

    def __init__(self, out: str | Path, settings: Mapping[str, Any], parse: Callable[..., RowT]) -> None:
        self.path = Path(str(out) + ".partial")
        self.settings = json.loads(json.dumps(settings, sort_keys=True, default=str))  # as it reads back
        self.parse = parse  # (record, where=...) → row, raising InputError on a bad record
        self._handle: IO[str] | None = None

    def read(self) -> tuple[Any, list[tuple[RowT, str | None]]]:
        """(the settings recorded, or None; (row, image SHA-256) of each row whose digest matches); (None, []) when
        absent. Rows left out (a digest that does not match, none, a line that does not parse; a torn last line
        aside) are counted in one note naming the file. A partial file that is a folder, a FIFO or not text is a
        one-line InputError naming it."""
        if not (self.path.exists() or self.path.is_symlink()):
            return None, []
        regular_file(self.path, what="partial results file")
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(
                f"{self.path}: cannot read the partial results ({type(exc).__name__}); remove it"
            ) from None
        settings: Any = None
        rows = []
        left = {EDITED: 0, UNSIGNED: 0, UNREADABLE: 0}
        lines = text.splitlines()
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
                if number == 1 and isinstance(record, dict) and "partial_settings" in record:
                    settings = record["partial_settings"]
                    continue
                if not isinstance(record, dict):
                    raise InputError("not a row")
                stored = record.pop(ROW_DIGEST, None)
                if stored is None:
                    left[UNSIGNED] += 1
                    continue
                if stored != row_digest(settings, record):
                    left[EDITED] += 1
                    continue
                rows.append((self.parse(record, where=f"{self.path}:{number}"), record.get(DIGEST)))
            except (json.JSONDecodeError, InputError, TypeError, ValueError):
                torn = number == len(lines) and not text.endswith("\n")  # a kill mid-write: expected, no note
                left[UNREADABLE] += not torn
        if any(left.values()):
            counts = ", ".join(f"{n} {why}" for why, n in left.items() if n)
            note(f"{self.path}: judging {sum(left.values())} stored row(s) again: {counts}")
        return settings, rows

    def start(self, kept: Iterable[tuple[Mapping[str, Any], str]] = ()) -> None:
        """Rewrite the file atomically: the current settings, then each kept (record, image SHA-256); then open it
        for appending."""
        lines = [json.dumps({"partial_settings": self.settings}, sort_keys=True)]
        lines += [self._line(record, digest) for record, digest in kept]
        write_text_atomic(self.path, "\n".join(lines) + "\n")
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (closed by close())

    def add(self, record: Mapping[str, Any], digest: str) -> None:
        """Append one finished row with its image's SHA-256, flushed and fsynced (a kill after this keeps it)."""
        assert self._handle is not None, "start() first"
        self._handle.write(self._line(record, digest) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def _line(self, record: Mapping[str, Any], digest: str) -> str:
        """One row's line: the record, its image's SHA-256 and the row's own digest under the current settings."""
        line = {**record, DIGEST: digest}
        line = json.loads(json.dumps(line, allow_nan=False))  # as it reads back (tuples as lists, keys as text)
        return json.dumps({**line, ROW_DIGEST: row_digest(self.settings, line)}, sort_keys=True, allow_nan=False)

    def close(self) -> None:
        """Close the file, keeping it (an interrupted run resumes from it)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def remove(self) -> None:
        """Close and delete it (the results file holds every row now)."""
        self.close()
        self.path.unlink(missing_ok=True)
