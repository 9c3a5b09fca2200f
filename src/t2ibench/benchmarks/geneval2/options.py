"""GenEval 2's options: its prompt selection for a refresh (``benchmarks.geneval2``) and what judges it
(``evaluators.geneval2``) — one typed class each, validated once, used by the refresh and ``t2ibench evaluate``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from t2ibench.benchmarks.geneval2.metrics import ANSWER_RULES, DEFAULT_ANSWER_RULE
from t2ibench.benchmarks.geneval2.suite import MAX_GENEVAL2_LINES
from t2ibench.errors import FieldError, InputError, unknown_choice
from t2ibench.fields import Option
from t2ibench.specs import VQAJudgeConfig, check_int, visible_text
from t2ibench.suites.selection import parse_indices

GENEVAL2_DATA = "data/external/geneval2/geneval2_data.jsonl"  # where `t2ibench data fetch geneval2` (DVC) puts it


@dataclass(frozen=True)
class Geneval2SuiteFile:
    """The suite file a command judges or generates for (``evaluate geneval2``, ``generate geneval2``)."""

    suite_file: Annotated[str, Option(flag="--suite", metavar="SUITE_FILE")] = GENEVAL2_DATA
    """GenEval 2's geneval2_data.jsonl, as `t2ibench data fetch geneval2 --out data/external/geneval2` puts it."""
    subset: bool = False
    """The suite file is a subset of GenEval 2 (not its 800 prompts)."""


@dataclass(frozen=True)
class Geneval2Prompts:
    """GenEval 2's prompts for a refresh: the suite file (workspace-relative; the default is where ``t2ibench data
    fetch geneval2`` and its DVC stage put the pinned release) and an optional subset of it — the first
    ``per_atom_count`` prompts of each atom count 3..10 and/or explicit line indices ``prompts`` ("0-9,400")."""

    data: str = GENEVAL2_DATA
    per_atom_count: int | None = None
    prompts: str | None = None

    def __post_init__(self) -> None:
        if not self.data.strip() or not visible_text(self.data):
            raise FieldError("data", f"must name the suite file (geneval2_data.jsonl); got {self.data!r}")
        check_int(self, "per_atom_count", 1, 100)
        if self.prompts is not None:
            try:  # the syntax here; the indices against the suite file when it is read (a user's may be longer)
                parse_indices(self.prompts, size=MAX_GENEVAL2_LINES)
            except InputError as exc:
                raise FieldError("prompts", str(exc)) from None


@dataclass(frozen=True)
class Geneval2Config:
    """What judges GenEval 2: the VQA judge's spec (default: the paper's Qwen3-VL-8B-Instruct) and the answer rule
    ('reference': the reference's first-token sum, the default because published numbers use it; 'unique': each
    distinct token id once). Both are recorded with every result."""

    judge: VQAJudgeConfig = field(default_factory=VQAJudgeConfig)
    """The VQA judge."""
    answer_rule: str = DEFAULT_ANSWER_RULE
    """How an answer's probability is read from its variants' tokens ('reference': as the reference evaluation.py)."""

    def __post_init__(self) -> None:
        if self.answer_rule not in ANSWER_RULES:
            raise FieldError("answer_rule", str(unknown_choice("answer_rule", self.answer_rule, ANSWER_RULES)))

    def models(self) -> dict[str, VQAJudgeConfig]:
        """Its model specs by field name (checked readable, resolved from the hub, smoke when tiny)."""
        return {"judge": self.judge}


# this benchmark's config sections (t2ibench.benchmarks.benchmark_options): benchmarks.geneval2, evaluators.geneval2
SELECTION = Geneval2Prompts
EVALUATOR = Geneval2Config
