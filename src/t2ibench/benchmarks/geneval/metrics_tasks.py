"""GenEval's six tasks, in its Table 2's order, and its verdict engine's thresholds (numpy-free: the store's schema
reads them to build its views; ``metrics`` re-exports both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from t2ibench.fields import Range, check_ranges

TASKS = ("single_object", "two_object", "counting", "colors", "position", "color_attr")


@dataclass(frozen=True)
class GenEvalParams:
    """Thresholds of the verdict engine; the defaults are the reference evaluator's."""

    threshold: Annotated[float, Range(0.0, 1.0, open_high=True)] = 0.3
    """Detection score threshold."""
    counting_threshold: Annotated[float, Range(0.0, 1.0, open_high=True)] = 0.9
    """Detection score threshold for counting."""
    max_objects: Annotated[int, Range(1, 10_000)] = 16
    """Detections kept per class."""
    max_overlap: Annotated[float, Range(0.0, 1.0, open_low=True)] = 1.0
    """IoU de-duplication threshold (1: off)."""
    position_margin: Annotated[float, Range(0.0, 1.0, open_high=True)] = 0.1
    """Relative-position margin."""

    def __post_init__(self) -> None:
        check_ranges(self)
