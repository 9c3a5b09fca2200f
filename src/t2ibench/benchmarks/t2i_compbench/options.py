"""T2I-CompBench++'s options: its prompt selection and what judges it (BLIP VQA, the open-vocabulary detector, the
depth model, CLIP, the rule) — one typed class each, validated once, what ``t2ibench evaluate t2i_compbench`` builds
from its options and a refresh from a config's ``benchmarks.t2i_compbench`` and ``evaluators.t2i_compbench``
sections."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from t2ibench.benchmarks.t2i_compbench.metrics import NP_NUM, RULES
from t2ibench.benchmarks.t2i_compbench.metrics_categories import CATEGORIES, USES
from t2ibench.errors import FieldError, unknown_choice
from t2ibench.fields import Option, Range, check_ranges
from t2ibench.specs import DepthConfig, EmbedderConfig, OpenDetectorConfig, VQAJudgeConfig

DEFAULT_BLIP = "Salesforce/blip-vqa-capfilt-large"  # the reference's model_base_vqa_capfilt_large weights
CLIP_ARCH, CLIP_WEIGHTS = "ViT-B-32", "openai"  # the reference's clip.load("ViT-B/32")
DETECTION_FRAME = (479, 480)
"""The reference's detection input: shorter side 479, longer at most 480 (torchvision Resize(479, max_size=480));
boxes, the 150-pixel distance threshold and the depth map are in this frame."""


@dataclass(frozen=True)
class T2ICompBenchPrompts:
    """Which prompts a run judges: ``categories`` (default: all eight, in the benchmark's order) and the first
    ``per_category`` prompts of each (default: all 300)."""

    categories: Annotated[tuple[str, ...] | None, Option(sep=",")] = None
    """The categories to judge, comma-separated on the command line (default: all eight)."""
    per_category: Annotated[int | None, Range(1, 300)] = None
    """Judge only the first N prompts of each category (default: all 300)."""

    def __post_init__(self) -> None:
        check_ranges(self)
        if self.categories is not None:
            for name in self.categories:
                if name not in CATEGORIES:
                    raise FieldError("categories", str(unknown_choice("category", name, CATEGORIES)))
            if len(set(self.categories)) != len(self.categories) or not self.categories:
                raise FieldError("categories", f"must name each category once; got {list(self.categories)}")


def _blip() -> VQAJudgeConfig:
    return VQAJudgeConfig(backend="blip-vqa", model=DEFAULT_BLIP, batch_size=32)


def _clip() -> EmbedderConfig:
    return EmbedderConfig(backend="open_clip", model=CLIP_ARCH, pretrained=CLIP_WEIGHTS)  # the rule normalises


@dataclass(frozen=True)
class T2ICompBenchConfig:
    """What judges T2I-CompBench++: BLIP VQA (attribute binding), an open-vocabulary detector (spatial, numeracy; the
    reference's UniDet has no maintained loader), a depth model (3-D spatial), CLIP (non-spatial, complex), the
    rule ('reference': the scripts as published, the default since only it is comparable; 'corrected': their
    defects fixed, docs/t2i_compbench.md) and how many noun phrases BLIP is asked about. All are recorded with every
    result; ``phrases`` names a phrase table other than the shipped one."""

    vqa: VQAJudgeConfig = field(default_factory=_blip)
    """BLIP VQA, asked '<noun phrase>?' (its yes-probability)."""
    detector: OpenDetectorConfig = field(default_factory=OpenDetectorConfig)
    """The open-vocabulary detector of the 2-D spatial, 3-D spatial and numeracy categories."""
    depth: DepthConfig = field(default_factory=DepthConfig)
    """The depth model of the 3-D spatial category."""
    clip: EmbedderConfig = field(default_factory=_clip)
    """CLIP of the non-spatial category and the complex category's action score."""
    rule: str = "reference"
    """'reference' (the published scripts, defects kept) or 'corrected'."""
    np_num: Annotated[int, Range(1, 32)] = NP_NUM
    """How many noun phrases of a prompt BLIP is asked about (the reference's --np_num)."""
    phrases: str | None = None
    """A phrase table (JSON) to read instead of the shipped one."""

    def __post_init__(self) -> None:
        check_ranges(self)
        if self.rule not in RULES:
            raise FieldError("rule", str(unknown_choice("rule", self.rule, RULES)))
        if self.vqa.backend != "blip-vqa":
            raise FieldError(
                "vqa", f"the attribute rule reads BLIP's yes-probability: backend 'blip-vqa', not {self.vqa.backend!r}"
            )
        if self.clip.backend != "open_clip":
            raise FieldError(
                "clip", f"CLIPScore needs an image-text embedder: backend 'open_clip', not {self.clip.backend!r}"
            )

    def models(self) -> dict[str, Any]:
        """Its model specs by field name (checked readable, resolved from the hub, smoke when tiny)."""
        return {"vqa": self.vqa, "detector": self.detector, "depth": self.depth, "clip": self.clip}

    def models_for(self, selection: T2ICompBenchPrompts) -> dict[str, Any]:
        """The model specs a refresh of ``selection``'s categories builds (``USES``): those a run must find and whose
        tiny build makes its numbers smoke — numeracy and non-spatial alone need no BLIP or depth model."""
        used = {kind for category in selection.categories or CATEGORIES for kind in USES[category]}
        return {kind: spec for kind, spec in self.models().items() if kind in used}


# this benchmark's config sections (t2ibench.benchmarks.benchmark_options): benchmarks.t2i_compbench (which prompts a
# refresh generates and judges), evaluators.t2i_compbench (what judges them)
SELECTION = T2ICompBenchPrompts
EVALUATOR = T2ICompBenchConfig
