"""T2I-CompBench++'s slice of a refresh plan: its prompts chosen once (``select``) and, per model, the generation of
those prompts into an images folder of its own, the judging call, the table and the rows for the store write
(``plan_model``). Its own evaluation hash is derived from the settings of its judging and table calls, by the one
mechanism every call's identity comes from (``t2ibench.pipeline.identity``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from t2ibench.benchmarks.t2i_compbench.options import T2ICompBenchConfig, T2ICompBenchPrompts
from t2ibench.benchmarks.t2i_compbench.steps import select_t2i_compbench, step_t2i_compbench
from t2ibench.benchmarks.t2i_compbench.suite_phrases import NEEDS_PARSE, packaged_table, read_table
from t2ibench.config import Config
from t2ibench.errors import InputError
from t2ibench.pipeline.identity import settings, version_hash
from t2ibench.pipeline.plan import BenchmarkPart, Call, ModelScope, Ref, building
from t2ibench.pipeline.results import LocalFiles, PromptSet
from t2ibench.pipeline.stamps import stamp_of
from t2ibench.workspace import Workspace

NAME = "t2i_compbench"


def select(config: Config, ws: Workspace) -> PromptSet:
    """T2I-CompBench++'s prompts for a refresh of ``config`` (``benchmarks.t2i_compbench``); a selection whose
    categories read the phrase table is refused here, before any work, when the table is missing or not this
    suite's (``evaluators.t2i_compbench.phrases``, or the shipped one)."""
    selection: T2ICompBenchPrompts | None = config.benchmarks.selection(NAME)
    if selection is None:
        raise ValueError("benchmarks.t2i_compbench is not configured")  # refresh_benchmarks never asks then
    prompts = select_t2i_compbench(selection)
    evaluator: T2ICompBenchConfig = config.evaluators.of(NAME)
    table = ws.path(evaluator.phrases) if evaluator.phrases is not None else None
    if table is not None and not table.is_file():
        raise InputError(f"evaluators.t2i_compbench.phrases {evaluator.phrases}: no such file ({table})")
    if {r["category"] for _, r in prompts} & set(NEEDS_PARSE):
        from t2ibench.benchmarks.t2i_compbench.suite import load_suite

        read_table(table, suite_sha256=load_suite().sha256)
    return prompts


def local_inputs(evaluator: T2ICompBenchConfig, ws: Workspace) -> tuple[LocalFiles, LocalFiles]:
    """The stamps of the local files the judging reads: the models given as local folders and CLIP's weights given
    as a file; the phrase table — the one named (workspace-relative paths resolved), else the packaged one (absent
    until derived: then nothing)."""
    models = stamp_of([*(spec.model for spec in evaluator.models().values()), evaluator.clip.pretrained or ""])
    table = ws.path(evaluator.phrases) if evaluator.phrases is not None else packaged_table()
    return models, stamp_of([table])


def plan_model(scope: ModelScope, prompts: PromptSet) -> BenchmarkPart:
    """One model's T2I-CompBench++ calls: generate its prompts, judge them, its table and rows."""
    name, ws, device, ev = scope.model.name, scope.ws, scope.device, scope.config.evaluators
    generated, images = scope.generate(NAME, prompts)

    judge_id = f"{name}/{NAME}"
    with building(judge_id):
        evaluator: T2ICompBenchConfig = ev.of(NAME)
        judge_settings = {NAME: evaluator, "prompts": prompts}
        weights, phrases = local_inputs(evaluator, ws)
    judge_hash = version_hash({NAME: settings(step_t2i_compbench, judge_settings)})
    out: Path = ws.results_file(name, scope.model_hash, judge_hash, NAME)
    params: dict[str, Any] = {**judge_settings, "generated": Ref(generated), "weights": weights, "phrases": phrases}
    params |= {"out": out, "names_from": ws.root, "device": device}
    judge = Call(judge_id, NAME, params, name, NAME, (out,))
    judged = scope.add(judge)
    with building(f"{name}/{NAME}-scores"):
        params = {"judged": Ref(judged), "prompts": prompts, "ci_level": ev.ci_level}
    table = Call(f"{name}/{NAME}-scores", f"{NAME}-scores", params, name, NAME)
    scores = scope.add(table)
    refs = {"images": generated, "judged": judged, "scores": scores}
    return scope.finish(NAME, (judge, table), refs, images=images, results=out.parent, prompts=len(prompts))
