"""The plugin's config sections: ``benchmarks.dpg`` (its prompts) and ``evaluators.dpg`` (its judge)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from t2ibench.fields import Range
from t2ibench.specs import VQAJudgeConfig


@dataclass(frozen=True)
class DPGPrompts:
    """Which prompts a refresh runs."""

    per_category: Annotated[int | None, Range(1, 100)] = None
    """The first N prompts of each category."""


@dataclass(frozen=True)
class DPGConfig:
    """What judges it."""

    judge: VQAJudgeConfig = field(default_factory=VQAJudgeConfig)
    """The VQA judge."""

    def models(self) -> dict[str, VQAJudgeConfig]:
        """Its model specs by field."""
        return {"judge": self.judge}


SELECTION = DPGPrompts
EVALUATOR = DPGConfig
