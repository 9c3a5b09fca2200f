"""The benchmark as plain, typed steps (``steps``) with typed results (``results``), the rows they store (``rows``)
and a run's lifecycle (``runs``). Prefect lives outside the library: ``tasks/`` wraps each step, ``flows/``
composes them."""

from t2ibench.pipeline.results import (
    Embedded,
    Generated,
    ImageInfo,
    Judged,
    MetricRecord,
    ModeRecord,
    Scores,
    ShardState,
    Stored,
)
from t2ibench.pipeline.runs import failure_cause, finish_run, start_run
from t2ibench.pipeline.steps import (
    merge_generated,
    merge_judged,
    prompt_shards,
    resolve_sigma,
    select_prompts,
    shard_label,
    step_diversity,
    step_embed,
    step_fkea_shard,
    step_generate,
    step_geneval,
    step_scendi,
    step_sigma,
    step_store,
)

__all__ = [
    "Embedded",
    "Generated",
    "ImageInfo",
    "Judged",
    "MetricRecord",
    "ModeRecord",
    "Scores",
    "ShardState",
    "Stored",
    "failure_cause",
    "finish_run",
    "merge_generated",
    "merge_judged",
    "prompt_shards",
    "resolve_sigma",
    "select_prompts",
    "shard_label",
    "start_run",
    "step_diversity",
    "step_embed",
    "step_fkea_shard",
    "step_generate",
    "step_geneval",
    "step_scendi",
    "step_sigma",
    "step_store",
]
