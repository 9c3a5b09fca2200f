"""What detectors and the benchmarks that read them exchange (stdlib only): a detection, its box, a label space.

A detector backend (``t2ibench.models``) labels in the label space its caller passes (``LabelSpace``: the names a
benchmark's rules use, with aliases from a model's own spellings), or in the model's own labels when given none. So
the models name no benchmark, and a benchmark's verdict engine reads ``Detection`` without importing the models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from t2ibench.errors import InputError

Box = tuple[float, float, float, float]
"""(x1, y1, x2, y2) in pixels of the image the detector read."""


@dataclass(frozen=True)
class Detection:
    """One detected instance: its label, box (x1, y1, x2, y2) in pixels, confidence in [0, 1].

    ``ref`` is an opaque handle the detector backend uses to find the instance's mask again (for colours).
    """

    label: str
    box: Box
    score: float
    ref: int = -1


@dataclass(frozen=True)
class LabelSpace:
    """The names a detector labels in (``classes``, in their order) and a model's own spellings of them
    (``aliases``: model label → name); ``title`` names the space in errors (e.g. "GenEval classes")."""

    classes: tuple[str, ...]
    aliases: Mapping[str, str] = field(default_factory=dict)
    title: str = "classes"

    def canonical(self, label: str) -> str:
        """The space's name for a model's ``label`` (aliases applied); InputError names a label it cannot place."""
        name = self.aliases.get(label, label)
        if name not in self.classes:
            raise InputError(f"detector label {label!r} is not one of the {len(self.classes)} {self.title} "
                             "(and has no alias)")  # fmt: skip
        return name

    def __repr__(self) -> str:
        """A stable, content-complete spelling (``Registry.reuse`` keys on it)."""
        return f"LabelSpace({self.title!r}, {list(self.classes)!r}, {sorted(self.aliases.items())!r})"
