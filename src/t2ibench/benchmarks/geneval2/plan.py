"""GenEval 2's slice of a refresh plan: its prompts chosen once (``select``) and, per model, the generation of those
prompts into an images folder of its own, the VQA judge's call, the tables and the rows for the store write
(``plan_model``). Its own evaluation hash is derived from the settings of its judging and tables calls, by the
one mechanism every call's identity comes from (``t2ibench.pipeline.identity``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from t2ibench.benchmarks.geneval2.options import GENEVAL2_DATA, Geneval2Config, Geneval2Prompts
from t2ibench.benchmarks.geneval2.steps import select_geneval2, step_geneval2
from t2ibench.config import Config
from t2ibench.datasets import check_release_copy, fetch_release
from t2ibench.errors import note
from t2ibench.pipeline.identity import settings, version_hash
from t2ibench.pipeline.plan import BenchmarkPart, Call, ModelScope, Ref, building
from t2ibench.pipeline.results import LocalFiles, PromptSet, SuiteFile
from t2ibench.pipeline.stamps import stamp_of
from t2ibench.workspace import Workspace


def select(config: Config, ws: Workspace) -> tuple[PromptSet, SuiteFile]:
    """GenEval 2's prompts for a refresh of ``config`` (``benchmarks.geneval2``) and the stamp of its suite file."""
    selection: Geneval2Prompts | None = config.benchmarks.selection("geneval2")
    if selection is None:
        raise ValueError("benchmarks.geneval2 is not configured")  # refresh_benchmarks never asks then
    return select_geneval2(selection, ws.path(selection.data))


def acquire(config: Config, root: Path) -> list[Path]:
    """The released suite file a refresh of ``config`` (workspace ``root``) reads, fetched where it is missing: at its
    default place (``benchmarks.geneval2.data`` left as is) it comes from ``$T2IBENCH_GENEVAL2_DATA`` or the pinned
    release, as ``t2ibench data fetch geneval2`` would, and is verified against the release's SHA-256 every time
    (``check_release_copy``). A suite file named elsewhere is the user's own and is never fetched over (a missing one
    is refused when the run is planned; its numbers are labelled as not the released file's)."""
    selection: Geneval2Prompts | None = config.benchmarks.selection("geneval2")
    if selection is None or selection.data != GENEVAL2_DATA:
        return []
    target = root / selection.data
    if target.is_file():
        return [check_release_copy("geneval2", target, where="benchmarks.geneval2.data")]
    note(f"{selection.data}: fetching GenEval 2's suite (as `t2ibench data fetch geneval2`)")
    fetched = fetch_release("geneval2", target.parent)
    return [p for p in fetched if p.name == target.name]


def judge_weights(geneval2: Geneval2Config) -> LocalFiles:
    """The stamp of the VQA judge's local weights (a model folder given as a path), if any."""
    return stamp_of([geneval2.judge.model])


def plan_model(scope: ModelScope, selected: tuple[PromptSet, SuiteFile]) -> BenchmarkPart:
    """One model's GenEval 2 calls: generate its prompts, judge them, their tables and rows."""
    name, ws, device, ev = scope.model.name, scope.ws, scope.device, scope.config.evaluators
    prompts, suite = selected
    generated, images = scope.generate("geneval2", prompts)

    judge_id = f"{name}/geneval2"
    with building(judge_id):
        evaluator: Geneval2Config = ev.of("geneval2")
        judge_settings = {"geneval2": evaluator, "prompts": prompts}
        weights = judge_weights(evaluator)
    judge_hash = version_hash({"geneval2": settings(step_geneval2, judge_settings)})
    out = ws.results_file(name, scope.model_hash, judge_hash, "geneval2")
    params: dict[str, Any] = {**judge_settings, "generated": Ref(generated), "suite": suite, "weights": weights}
    params |= {"out": out, "names_from": ws.root, "device": device}
    judge = Call(judge_id, "geneval2", params, name, "geneval2", (out,))
    judged = scope.add(judge)
    with building(f"{name}/geneval2-scores"):
        params = {"judged": Ref(judged), "prompts": prompts, "ci_level": ev.ci_level}
    tables = Call(f"{name}/geneval2-scores", "geneval2-scores", params, name, "geneval2")
    scores = scope.add(tables)
    refs = {"images": generated, "judged": judged, "scores": scores}
    return scope.finish("geneval2", (judge, tables), refs, images=images, results=out.parent, prompts=len(prompts))
