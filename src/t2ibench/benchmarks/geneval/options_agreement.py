"""GenEval's human-agreement analysis as a workspace flow's request (``flows.human_agreement``; ``t2ibench agreement``,
whose options are its fields): standard library only, so the command line builds it without the numeric core."""

from __future__ import annotations

import dataclasses
from typing import Annotated, ClassVar

from t2ibench.errors import InputError
from t2ibench.fields import Option, Range
from t2ibench.metrics.levels import BOOTSTRAP_RESAMPLES, CI_LEVEL
from t2ibench.requests import Request


@dataclasses.dataclass(frozen=True)
class AgreementRequest(Request):
    """GenEval's MTurk annotations → human verdicts → agreement tables → files, and optionally the store
    (``flows.human_agreement``; ``t2ibench agreement --flow``)."""

    program: ClassVar[str] = "flows.human_agreement"
    work: ClassVar[str] = "the agreement flow"
    annotations: Annotated[tuple[str, ...], Option(metavar="CSV")]
    """annotations_{source}.csv files."""
    metadata: str
    """An evaluation_metadata.jsonl to use instead of generating the suite (the flow reads one)."""
    out: str
    """Write agreement.json, agreement.md and metrics.json to this folder."""
    store: str | None = None
    """Also upsert the annotations (with human verdicts) and the statistics into this DuckDB store."""
    auto: Annotated[tuple[str, ...], Option(metavar="[SOURCE=]RESULTS", repeat=True)] = ()
    """results.jsonl of automatic verdicts (repeatable)."""
    auto_label: str = "geneval"
    """Name of the automatic verdict set in the report."""
    scores: str | None = None
    """JSON lines {source, prompt_id, image_id, score} to tune per-task thresholds."""
    folds: Annotated[int, Range(2, 1000)] = 5
    """Cross-validation folds for tuned thresholds."""
    seed: Annotated[int, Range(0, 2**31 - 1), Option(flag="--seed-cv")] = 0
    """Seed of the fold assignment."""
    resamples: Annotated[int, Range(1, 100_000)] = BOOTSTRAP_RESAMPLES
    """Bootstrap resamples over prompts."""
    ci_level: Annotated[float, Range(0.0, 1.0, open_low=True, open_high=True)] = CI_LEVEL
    """Confidence level of the bootstrap intervals."""
    ci_seed: Annotated[int, Range(0, 2**31 - 1), Option(flag="--seed-ci")] = 0
    """Seed of the bootstrap resampling."""

    def check(self) -> None:
        """At least one annotations file."""
        if not self.annotations:
            raise InputError("AgreementRequest.annotations: give at least one annotations file")
