"""Console hygiene for long runs: t2ibench's own lines on the console, everything else in the run's log file.

A refresh drives Prefect, diffusers, transformers, open_clip, OpenCV, DuckDB and Dask, each with its own console
habits (log lines, warnings, progress bars, C-level messages, child processes' output). ``route_to_log(path)`` sends
all of it to a log file and hands back the console for what t2ibench itself has to say (progress, notes, the
summary, the one-line cause of a failure):

* file descriptors 1 and 2 point at the log file, so C libraries, ``print`` and tqdm in any library, and child
  processes started later (Prefect's temporary API server, Dask workers) write there;
* every logging handler that wrote to the console is replaced by one appending to the log file with the same format
  and level (plain text: no terminal colours in the file); Python warnings are captured into logging;
* the ``t2ibench`` notes logger also prints its lines on the console (``<program>: note: ...``).

Standard library only: the library's layers may import it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

LOG_MAX_BYTES = 10 * 1024 * 1024
"""A log file larger than this at the start of a run is renamed to ``<name>.1`` (the previous one is replaced)."""

QUIET_ENVIRONMENT = {"HF_HUB_DISABLE_PROGRESS_BARS": "1"}
"""Set (unless already set) when routing: progress bars are of no use in a file (the log keeps the messages)."""


@dataclass(frozen=True)
class Console:
    """Where t2ibench's own output goes: ``out`` (results), ``err`` (progress, notes, errors); ``log`` is the file
    that receives everything else (None while nothing is routed)."""

    out: TextIO
    err: TextIO
    log: Path | None = None

    @property
    def interactive(self) -> bool:
        """True when ``err`` is a terminal (live progress bars); False in pipes, files and CI logs."""
        try:
            return self.err.isatty()
        except (AttributeError, ValueError):  # a closed or stream-like object
            return False


_ROUTED: Console | None = None


def console() -> Console:
    """The console of this process: the routed one after ``route_to_log``, else the current sys.stdout/stderr."""
    return _ROUTED if _ROUTED is not None else Console(out=sys.stdout, err=sys.stderr)


def _writes_to_console(handler: logging.Handler, streams: list[object]) -> bool:
    if not isinstance(handler, logging.StreamHandler) or isinstance(handler, logging.FileHandler):
        return False
    return any(handler.stream is s for s in streams)


def _file_handler(path: Path, like: logging.Handler | None) -> logging.FileHandler:
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    if like is None:
        handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)-7s | %(name)s - %(message)s"))
    else:
        handler.setLevel(like.level)
        handler.setFormatter(like.formatter)
        for f in like.filters:
            handler.addFilter(f)
    return handler


def _reopen(fd: int, like: TextIO) -> TextIO:
    """A line-buffered text stream on a duplicate of ``fd``, with ``like``'s encoding."""
    encoding = getattr(like, "encoding", None) or "utf-8"
    return open(os.dup(fd), "w", buffering=1, encoding=encoding, errors="backslashreplace")


def route_to_log(path: Path, *, program: str) -> Console:
    """Send this process's console output (fds 1 and 2, console logging handlers, warnings) to ``path`` (appended;
    one older generation is kept past ``LOG_MAX_BYTES``); returns the original console for t2ibench's own lines.

    ``program`` prefixes the notes shown on the console. Idempotent: a second call returns the first console.
    """
    global _ROUTED
    if _ROUTED is not None:
        return _ROUTED
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and path.stat().st_size > LOG_MAX_BYTES:
        os.replace(path, path.with_name(path.name + ".1"))
    for key, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    streams: list[object] = [sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__]
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    routed = Console(out=_reopen(1, sys.stdout), err=_reopen(2, sys.stderr), log=path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    finally:
        os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(line_buffering=True)  # what lands in the log lands there now, not at exit
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"==== {program} (pid {os.getpid()}) started {time.strftime('%Y-%m-%d %H:%M:%S %z')} ====\n")

    loggers = [logging.getLogger()]
    loggers += [v for v in logging.Logger.manager.loggerDict.values() if isinstance(v, logging.Logger)]
    root_routed = False
    for logger in loggers:
        for handler in list(logger.handlers):
            if _writes_to_console(handler, streams):
                logger.removeHandler(handler)
                logger.addHandler(_file_handler(path, handler))
                root_routed = root_routed or logger is logging.getLogger()
    if not root_routed:  # no framework configured the root logger: its records (warnings included) go to the log
        logging.getLogger().addHandler(_file_handler(path, None))
    logging.captureWarnings(True)

    notes = logging.StreamHandler(routed.err)
    notes.setFormatter(logging.Formatter(f"{program}: note: %(message)s"))
    notes.setLevel(logging.INFO)
    logging.getLogger("t2ibench").addHandler(notes)
    _ROUTED = routed
    return routed
