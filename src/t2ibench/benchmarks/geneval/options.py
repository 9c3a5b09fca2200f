"""GenEval's options: its prompt selection for a refresh (``benchmarks.geneval``) and what judges it
(``evaluators.geneval``: the detector, the colour classifier and the verdict thresholds) — one typed class each,
validated once, used by the refresh, ``t2ibench evaluate geneval`` and the self-test."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Annotated

from t2ibench.benchmarks.geneval.metrics import GenEvalParams
from t2ibench.benchmarks.geneval.suite import MAX_PER_TASK, REWRITTEN_DATA, generate_suite
from t2ibench.errors import FieldError, InputError
from t2ibench.fields import Option, Range
from t2ibench.specs import MAX_SEED, ColourConfig, DetectorConfig, check_int, check_seed, visible_text
from t2ibench.suites.selection import parse_indices


@dataclass(frozen=True)
class GenEvalSuite:
    """The GenEval prompt suite (official: seed 43, 100 per task) and an optional subset of it."""

    seed: Annotated[int, Range(0, MAX_SEED)] = 43
    """The suite's seed (the official suite: 43)."""
    per_task: Annotated[int, Range(1, MAX_PER_TASK)] = 100
    """Prompts per task (the official suite: 100)."""
    limit_per_task: int | None = None
    """Keep only the first N prompts of each task (smoke runs)."""
    prompts: str | None = None
    """Keep only these prompt indices or ranges, e.g. "0-9,80-85"."""
    classes: Annotated[tuple[str, ...] | None, Option(sep=",")] = None
    """Draw prompts from these classes only, comma-separated on the command line (e.g. the compositor's; default:
    all 80)."""
    rewritten: str = REWRITTEN_DATA
    """The rewritten prompts' file a model with ``wording: rewritten`` is given (workspace-relative; the default is
    where `t2ibench data fetch geneval_rewritten` and its DVC stage put the pinned release)."""

    def __post_init__(self) -> None:
        check_seed(self)
        check_int(self, "per_task", 1, MAX_PER_TASK)
        check_int(self, "limit_per_task", 1)
        if self.classes is not None:
            if len(set(self.classes)) != len(self.classes):
                raise FieldError("classes", f"lists a class twice: {list(self.classes)}")
            try:
                generate_suite(seed=self.seed, per_task=1, classes=self.classes)
            except InputError as exc:
                raise FieldError("classes", str(exc).removeprefix("classes: ")) from None
        if not self.rewritten.strip() or not visible_text(self.rewritten):
            raise FieldError("rewritten", f"must name the rewritten prompts' file; got {self.rewritten!r}")
        if self.prompts is not None:
            try:
                parse_indices(self.prompts, size=self.size)
            except InputError as exc:
                raise FieldError("prompts", str(exc)) from None

    @property
    def official(self) -> bool:
        """Whether the suite is GenEval's official one (seed 43, 100 per task, all classes), a subset aside."""
        return self.seed == 43 and self.per_task == 100 and self.classes is None

    @property
    def size(self) -> int:
        """Number of records the generated suite has at most (one single-object prompt per class + per_task for the
        five others)."""
        return (80 if self.classes is None else len(self.classes)) + 5 * self.per_task


@dataclass(frozen=True)
class GenEvalConfig(GenEvalParams):
    """Detector, colour model and GenEval's verdict thresholds: the section *is* the verdict engine's parameters
    (``GenEvalParams``, whose defaults are the reference evaluator's) plus the two models."""

    detector: DetectorConfig = field(default_factory=DetectorConfig)
    colour: ColourConfig = field(default_factory=ColourConfig)

    @property
    def lite(self) -> list[str]:
        """The offline stand-ins among the detector and colour classifier (empty for the reference ones)."""
        parts = []
        if self.detector.backend == "opencv-ssd":
            parts.append("detector: SSD-MobileNet-v2 (OpenCV)")
        if self.colour.backend == "lite":
            parts.append("colour: CIELAB rule")
        return parts

    def models(self) -> dict[str, DetectorConfig | ColourConfig]:
        """Its model specs by field name (checked readable, resolved from the hub, smoke when tiny)."""
        return {"detector": self.detector, "colour": self.colour}

    @property
    def params(self) -> GenEvalParams:
        """The thresholds alone (what the verdict engine reads)."""
        return GenEvalParams(**{f.name: getattr(self, f.name) for f in fields(GenEvalParams)})


# this benchmark's config sections (t2ibench.benchmarks.benchmark_options): benchmarks.geneval, evaluators.geneval
SELECTION = GenEvalSuite
EVALUATOR = GenEvalConfig
