"""Progress reporting for long loops: a live bar on a terminal, a line every 10 s in logs; and the one progress
display of a refresh (a live bar on a terminal, one line per finished model elsewhere).

Both write to t2ibench's console (``t2ibench.logs.console``): the terminal even when a run routes everything else to
its log file.
"""

from __future__ import annotations

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


class RunProgress:
    """A refresh's progress: on a terminal, one live bar over every (model, step), labelled with the step being
    waited for, and gone when the run ends (the summary replaces it); elsewhere (pipes, CI, cron) one line per
    finished model and per long step, each as it happens, with the seconds since the run started."""

    def __init__(self, models: int, steps: int, *, label: str, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else console().err
        self.label = label
        self.models = models
        self.finished_models = 0
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

    def total(self, steps: int) -> None:
        """Set the number of (model, step) columns the run has, once its plan is known."""
        self.bar.total = steps
        self.bar.refresh()

    def at(self, model: str, step: str) -> None:
        """Show that the run now waits for ``step`` of ``model``."""
        self.bar.set_postfix_str(f"{model} {step}")

    def advance(self) -> None:
        """Count one (model, step) as done."""
        self.bar.update(1)

    def step_done(self, model: str, step: str, seconds: float, work: float) -> None:
        """A model's step finished ``seconds`` into the run after ``work`` seconds of model work; away from a terminal,
        a step of at least ``LONG_STEP_S`` of work gets its own line."""
        if self.bar.disable and work >= LONG_STEP_S:
            print(
                f"{self.label}: {model} {step} done at {seconds:.0f} s ({work:.0f} s of work)",
                file=self.stream,
                flush=True,
            )

    def model_done(self, model: str, seconds: float, *, failed: bool = False) -> None:
        """Count a model as finished (``failed``: a task of it failed); away from a terminal, say so in one line."""
        self.finished_models += 1
        if self.bar.disable:
            done = f"{self.finished_models}/{self.models}"
            how = "failed after" if failed else "done in"
            print(f"{self.label}: {model} {how} {seconds:.0f} s ({done} models)", file=self.stream, flush=True)

    def close(self) -> None:
        """Remove the bar (a terminal shows the summary in its place)."""
        self.bar.close()
