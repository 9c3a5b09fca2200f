"""Progress reporting for long loops: a live bar on a terminal, a line every 10 s in logs; and the one progress
display of a refresh (a live bar on a terminal, one line per finished model elsewhere).

Both write to t2ibench's console (``t2ibench.logs.console``): the terminal even when a run routes everything else to
its log file.
"""

from __future__ import annotations

import threading
import time
from typing import Any, TextIO

from tqdm import tqdm

from t2ibench.logs import console


def progress(total: int | None, desc: str, *, enabled: bool = True, unit: str = "it") -> tqdm[Any]:
    """A tqdm bar on stderr; redraws at most every 10 s when stderr is not a terminal (CI, cron logs)."""
    out = console()
    interactive = out.interactive
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        disable=not enabled,
        mininterval=0.1 if interactive else 10.0,
        file=out.err,
        dynamic_ncols=interactive,
    )


LONG_STEP_S = 10.0
"""A refresh's step with at least this many seconds of model work gets its own progress line away from a terminal."""
HEARTBEAT_S = 60.0
"""Away from a terminal, a refresh that printed nothing for this long says what it is waiting for."""


class RunProgress:
    """A refresh's progress: on a terminal, one live bar over every (model, step), labelled with the step being
    waited for, and gone when the run ends (the summary replaces it); elsewhere (pipes, CI, cron) one line per
    finished model and per long step — shared ones included — each as it happens, with the seconds since the run
    started, and a line saying what the run waits for whenever ``HEARTBEAT_S`` pass without one."""

    def __init__(
        self,
        models: int,
        steps: int,
        *,
        label: str,
        stream: TextIO | None = None,
        heartbeat: float = HEARTBEAT_S,
        started: float | None = None,
    ) -> None:
        self.stream = stream if stream is not None else console().err
        self.label = label
        self.models = models
        self.finished_models = 0
        self.started = time.perf_counter() if started is None else started
        self.waiting = "the plan"
        try:
            live = self.stream.isatty()
        except (AttributeError, ValueError):
            live = False
        self.bar: tqdm[Any] = tqdm(
            total=models * steps,
            desc=label,
            unit="step",
            leave=False,
            disable=not live,
            file=self.stream,
            dynamic_ncols=True,
            mininterval=0.1,
        )
        self._lock = threading.Lock()
        self._last = self.started  # the program says it started when it starts: the first beat is due a minute on
        self._closed = threading.Event()
        self._beat: threading.Thread | None = None
        if not live and heartbeat > 0:
            self._beat = threading.Thread(target=self._heartbeat, args=(heartbeat,), name="progress", daemon=True)
            self._beat.start()

    def _line(self, text: str) -> None:
        """One progress line (away from a terminal), as the run's time since its start."""
        with self._lock:
            print(f"{self.label}: {text}", file=self.stream, flush=True)
            self._last = time.perf_counter()

    def _heartbeat(self, every: float) -> None:
        while not self._closed.wait(min(every, 5.0)):
            now = time.perf_counter()
            if now - self._last >= every:
                self._line(f"working on {self.waiting} ({now - self.started:.0f} s since the start)")

    def total(self, steps: int) -> None:
        """Set the number of (model, step) columns the run has, once its plan is known."""
        self.bar.total = steps
        self.bar.refresh()

    def at(self, model: str, step: str) -> None:
        """Show that the run now waits for ``step`` of ``model``."""
        self.waiting = f"{model} {step}".strip()
        self.bar.set_postfix_str(self.waiting)

    def advance(self) -> None:
        """Count one (model, step) as done."""
        self.bar.update(1)

    def step_done(self, model: str, step: str, seconds: float, work: float) -> None:
        """A model's step (``model``: 'shared' for a step every model uses) finished ``seconds`` into the run after
        ``work`` seconds of work; away from a terminal, a step of at least ``LONG_STEP_S`` of work gets its own
        line."""
        if self.bar.disable and work >= LONG_STEP_S:
            self._line(f"{model} {step} done at {seconds:.0f} s ({work:.0f} s of work)")

    def model_done(self, model: str, seconds: float, *, failed: bool = False) -> None:
        """Count a model as finished (``failed``: a task of it failed); away from a terminal, say so in one line."""
        self.finished_models += 1
        if self.bar.disable:
            done = f"{self.finished_models}/{self.models}"
            how = "failed after" if failed else "done at"
            self._line(f"{model} {how} {seconds:.0f} s ({done} models)")

    def close(self) -> None:
        """Remove the bar (a terminal shows the summary in its place) and stop the heartbeat."""
        self._closed.set()
        self.bar.close()
