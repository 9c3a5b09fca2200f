"""Prompt shards of generation and GenEval: any sharding, run one after another or side by side in one folder, gives
byte-identical images and the same results file as the unsharded run (the pipeline's steps, without Prefect)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from t2ibench import pipeline
from t2ibench.config import load_config
from t2ibench.errors import InputError
from t2ibench.workspace import Workspace
from tests.integration._workspace import make_workspace


def plan(root: Path, model_cache: Path, size: int) -> tuple[Workspace, pipeline.ModelPlan]:
    """The smoke config's first model (6 prompts, 12 images) planned in prompt shards of ``size`` (0: unsharded)."""
    config, _ = make_workspace(
        root, model_cache, models=1, per_task=1, edit=lambda c: c["runtime"].update(prompts_per_shard=size)
    )
    cfg = load_config(config)
    ws = Workspace.for_config(cfg, config)
    return ws, pipeline.plan_refresh(cfg, ws, pipeline.select_prompts(cfg.spine_prompts), "run").models[0]


def run(root: Path, model_cache: Path, size: int, *, side_by_side: bool = False) -> tuple[dict, bytes, pipeline.Judged]:
    """Generate and judge the model's shards (the plan's calls, without Prefect), then merge them."""
    _ws, model = plan(root, model_cache, size)
    generate = [c for c in model.calls if c.step == "generate"]
    geneval = [c for c in model.calls if c.step == "geneval"]

    def shard(pair):
        gen, judge = pair
        generated = gen.spec.fn(**gen.resolve({}))
        return generated, judge.spec.fn(**judge.resolve({gen.id: generated}))

    if side_by_side:  # two shards at a time writing into the one images folder and its sample log
        with ThreadPoolExecutor(2) as pool:
            done = list(pool.map(shard, zip(generate, geneval, strict=True)))
    else:
        done = [shard(pair) for pair in zip(generate, geneval, strict=True)]
    results = {c.id: r for c, (r, _) in zip(generate, done, strict=True)} | {
        c.id: r for c, (_, r) in zip(geneval, done, strict=True)
    }
    merges = {c.step: c for c in model.calls if c.step in ("images", "verdicts")}
    if len(generate) > 1:
        generated = merges["images"].spec.fn(**merges["images"].resolve(results))
        judged = merges["verdicts"].spec.fn(**merges["verdicts"].resolve(results))
    else:
        assert not merges
        ((generated, judged),) = done
    images = {(i.prompt_index, i.sample): Path(i.path).read_bytes() for i in generated.images}
    assert [(i.prompt_index, i.sample) for i in generated.images] == sorted(images)  # (prompt, sample) order
    return images, Path(judged.results).read_bytes(), judged


def test_any_sharding_gives_identical_images_and_verdicts(tmp_path, tiny_env):
    whole_images, whole_results, whole = run(tmp_path / "whole", tiny_env, 0)
    assert len(whole_images) == 12
    assert whole_results.count(b"\n") == 12
    for size, side_by_side in ((2, True), (4, False)):
        images, results, judged = run(tmp_path / f"s{size}", tiny_env, size, side_by_side=side_by_side)
        assert images == whole_images, size  # byte for byte
        # the merged results file is the unsharded one, byte for byte (images are named relative to the workspace)
        assert results == whole_results, size
        assert judged.summary == whole.summary
    # the sample log of a folder written by shards side by side has every image once, no torn line
    log = (next((tmp_path / "s2" / "data" / "images").glob("*/*")) / "samples.jsonl").read_text().splitlines()
    assert len(log) == 12
    assert len({line for line in log}) == 12


def test_a_shard_file_changed_after_judging_is_refused(tmp_path, tiny_env):
    ws, model = plan(tmp_path, tiny_env, 3)
    generate = [c for c in model.calls if c.step == "generate"]
    geneval = [c for c in model.calls if c.step == "geneval"]
    assert len(generate) == 2
    results = {}
    for gen, judge in zip(generate, geneval, strict=True):
        results[gen.id] = gen.spec.fn(**gen.resolve(results))
        results[judge.id] = judge.spec.fn(**judge.resolve(results))
    Path(results[geneval[1].id].results).write_text("")
    merge = next(c for c in model.calls if c.step == "verdicts")
    with pytest.raises(InputError, match="shard's file is missing or changed"):
        merge.spec.fn(**merge.resolve(results))
    with pytest.raises(InputError, match="in two generation shards"):
        pipeline.merge_generated([results[generate[0].id]] * 2)
    with pytest.raises(InputError, match="not a prompt-shard label"):
        ws.shard_results_file(model.model.name, model.model_hash, "0" * 16, "geneval", "../../etc")
