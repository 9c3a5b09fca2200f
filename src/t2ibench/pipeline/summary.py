"""What a refresh computed and what it took from earlier runs, per model and step, and its console summary.

A step is *cached* when a refresh did not redo its work: a Prefect cache hit (its content key unchanged), or the
pipeline's own skip of work already done (every image already on disk and unchanged; a stored version unchanged).
The flow collects one ``StepOutcome`` per (model, step) into a ``RunSummary``; ``RunSummary.render()`` is the table a
run ends with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from t2ibench.benchmarks import SPINE, label, names

Status = Literal["computed", "cached"]
BENCHMARK_COLUMNS = tuple(b for b in names() if b != SPINE)
"""Columns of benchmarks a config may leave out (every registered one but the spine, which every refresh runs):
shown only when some model has them (a missing one elsewhere: '-'); each covers its benchmark's judging and
tables."""
STEPS = ("generate", "embed", SPINE, *BENCHMARK_COLUMNS, "diversity", "scendi", "store")
"""The summary's columns: a model's steps in run order (diversity covers the bandwidth, the FKEA shards and their
merge)."""
LEGEND = "cached: reused from an earlier run (content-keyed task cache, images already on disk, unchanged stored rows)"

FileStamp = tuple[int, int]  # (inode, modification time in ns): a rewritten file gets a new one


@dataclass(frozen=True)
class StepOutcome:
    """One step of one model: computed or cached, and for generation how many images were made and reused."""

    step: str
    status: Status
    made: int | None = None  # images this run generated (None: not counted for this step)
    reused: int | None = None  # images already on disk, unchanged, that it kept

    def cell(self) -> str:
        """The table cell: 'cached', 'computed', or 'computed (20 new, 4 reused)'."""
        if self.status == "cached" or self.made is None:
            return self.status
        if self.reused:
            return f"computed ({self.made} new, {self.reused} reused)"
        return f"computed ({self.made} new)"


@dataclass(frozen=True)
class ModelSummary:
    """The outcomes of one model's steps (in ``STEPS`` order), when it was done — ``seconds`` (wall clock) from the
    start of the refresh until its last step finished (models run side by side, so these overlap) — and ``work``,
    the seconds of work its own steps did (cache hits: none)."""

    model: str
    steps: tuple[StepOutcome, ...]
    seconds: float
    work: float = 0.0

    def outcome(self, step: str) -> StepOutcome | None:
        """The outcome of ``step`` (None when the model has no such step)."""
        return next((s for s in self.steps if s.step == step), None)


@dataclass(frozen=True)
class RunSummary:
    """A finished refresh: its config and run id, every model's outcomes, and where the report, store and log are."""

    config: str
    run_id: str
    prompts: int
    models: tuple[ModelSummary, ...]
    report_html: str
    store: str
    log: str | None
    seconds: float
    report_rendered: bool = True  # False: the report's rows had not changed, its files were kept
    benchmark_prompts: tuple[tuple[str, int], ...] = ()  # (benchmark, prompts per model) besides GenEval
    shared: tuple[tuple[str, float], ...] = ()  # the calls every model shares (self-test, bandwidths): their work

    def render(self) -> str:
        """The console summary: a header line, one row per model with a column per step, its own work and when it
        was done, the legend, where the run's wall time went, the paths."""
        shown = [
            step
            for step in STEPS
            if step not in BENCHMARK_COLUMNS or any(m.outcome(step) is not None for m in self.models)
        ]
        header = ["model", *shown, "work", "done at"]
        rows = [
            [
                m.model,
                *((o.cell() if (o := m.outcome(step)) is not None else "-") for step in shown),
                _seconds(m.work),
                _seconds(m.seconds),
            ]
            for m in self.models
        ]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        extra = "".join(f" + {n} {label(b)} prompts" for b, n in self.benchmark_prompts if n)
        lines = [
            f"refresh {self.config} (run {self.run_id}): {len(self.models)} models × {self.prompts} prompts{extra}"
        ]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]
        lines.append(LEGEND)
        lines.append(self.time_line())
        report = self.report_html + ("" if self.report_rendered else "  (unchanged: its rows are the same)")
        paths = [("report", report), ("store", self.store)] + ([("log", self.log)] if self.log else [])
        lines += [f"{name + ':':<8}{path}" for name, path in paths]
        return "\n".join(lines) + "\n"

    def time_line(self) -> str:
        """Where the wall time went: 'work' is each model's own steps, 'done at' the time since the run started."""
        models = sum(m.work for m in self.models)
        shared = sum(w for _, w in self.shared)
        parts = [f"models {_seconds(models)}"] + ([f"shared steps {_seconds(shared)}"] if shared else [])
        head = f"time: {_seconds(self.seconds)} wall; work: {', '.join(parts)}"
        rest = self.seconds - models - shared
        if rest >= 0:
            return f"{head}; the rest {_seconds(rest)} (start-up, planning, cache look-ups, the report)"
        return f"{head} (steps ran side by side: work adds up to more than the wall time)"


def _seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def _stamp(path: str | Path) -> FileStamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns)


def images_on_disk(folder: str | Path) -> dict[str, FileStamp]:
    """The images of a model's images folder (GenEval layout, ``<prompt>/samples/<sample>.png``) with their file
    stamps, taken before generation runs so that ``generate_outcome`` can tell made images from kept ones."""
    found: dict[str, FileStamp] = {}
    for path in Path(folder).glob("*/samples/*.png"):
        stamp = _stamp(path)
        if stamp is not None:
            found[str(path)] = stamp
    return found


def generate_outcome(cached: bool, images: Sequence[str], before: Mapping[str, FileStamp]) -> StepOutcome:
    """Generation of a model's ``images`` (paths): cached on a cache hit or when every image was already on disk and
    unchanged (``before``, from ``images_on_disk``); else computed, with the counts of images made and kept."""
    if cached:
        return StepOutcome("generate", "cached", made=0, reused=len(images))
    reused = sum(1 for p in images if p in before and _stamp(p) == before[p])
    made = len(images) - reused
    return StepOutcome("generate", "computed" if made else "cached", made=made, reused=reused)


def embedding_cache_shards(root: str | Path) -> frozenset[str]:
    """The vector shards of a content-keyed embedding cache (``<root>/<fingerprint>/shard-*.npy``, see
    ``t2ibench.embed_cache``): every embedding computed adds one, so an embed step that added none reused them all."""
    return frozenset(str(p) for p in Path(root).glob("*/shard-*.npy"))


def embed_outcome(cached: bool, shards_before: frozenset[str], shards_after: frozenset[str]) -> StepOutcome:
    """The embed step: cached on a cache hit, or when every vector came from the embedding cache (no new shard)."""
    return StepOutcome("embed", "cached" if cached or shards_after <= shards_before else "computed")


def step_outcome(step: str, cached: Sequence[bool]) -> StepOutcome:
    """A step made of one or more cached tasks (diversity: bandwidth, shards, merge): cached only if all were."""
    return StepOutcome(step, "cached" if all(cached) else "computed")


def store_outcome(unchanged: bool) -> StepOutcome:
    """The store step: cached when the model version's rows were already stored unchanged (nothing rewritten)."""
    return StepOutcome("store", "cached" if unchanged else "computed")
