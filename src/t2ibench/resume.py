"""The resumable companion of a results file: ``<results>.partial``, the one mechanism both benchmarks' evaluations
use to survive an interruption.

Its first line records the settings the rows were made under (``{"partial_settings": ...}``); each further line is
one finished item's record, appended, flushed and fsynced as soon as it is done, with the SHA-256 of the image it
judged. Reading drops a torn last line (a kill mid-write) and anything that does not parse; ``start`` rewrites the
file atomically with only the rows the caller keeps, so nothing is ever appended after a torn fragment. What to keep
(same settings, same image bytes, same prompt) is the caller's decision.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from t2ibench.errors import InputError
from t2ibench.io import write_text_atomic
from t2ibench.paths import regular_file

RowT = TypeVar("RowT")
DIGEST = "image_sha256"  # the key of a row's image digest in its line


class PartialResults(Generic[RowT]):
    """``<out>.partial`` of results file ``out``: its stored rows, then the rows appended as they are made."""

    def __init__(self, out: str | Path, settings: Mapping[str, Any], parse: Callable[..., RowT]) -> None:
        self.path = Path(str(out) + ".partial")
        self.settings = json.loads(json.dumps(settings, sort_keys=True, default=str))  # as it reads back
        self.parse = parse  # (record, where=...) → row, raising InputError on a bad record
        self._handle: IO[str] | None = None

    def read(self) -> tuple[Any, list[tuple[RowT, str | None]]]:
        """(the settings recorded, or None; (row, image SHA-256) of each readable row); (None, []) when absent.
        A partial file that is a folder, a FIFO or not text is a one-line InputError naming it."""
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
        for number, line in enumerate(text.splitlines(), start=1):
            try:
                record = json.loads(line)
                if number == 1 and isinstance(record, dict) and "partial_settings" in record:
                    settings = record["partial_settings"]
                    continue
                rows.append((self.parse(record, where=f"{self.path}:{number}"), record.get(DIGEST)))
            except (json.JSONDecodeError, InputError):
                continue
        return settings, rows

    def start(self, kept: Iterable[tuple[Mapping[str, Any], str]] = ()) -> None:
        """Rewrite the file atomically: the current settings, then each kept (record, image SHA-256); then open it
        for appending."""
        lines = [json.dumps({"partial_settings": self.settings}, sort_keys=True)]
        lines += [json.dumps({**record, DIGEST: digest}, sort_keys=True, allow_nan=False) for record, digest in kept]
        write_text_atomic(self.path, "\n".join(lines) + "\n")
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (closed by close())

    def add(self, record: Mapping[str, Any], digest: str) -> None:
        """Append one finished row with its image's SHA-256, flushed and fsynced (a kill after this keeps it)."""
        assert self._handle is not None, "start() first"
        self._handle.write(json.dumps({**record, DIGEST: digest}, sort_keys=True, allow_nan=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file, keeping it (an interrupted run resumes from it)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def remove(self) -> None:
        """Close and delete it (the results file holds every row now)."""
        self.close()
        self.path.unlink(missing_ok=True)
