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


def run(root: Path, model_cache: Path, size: int, *, side_by_side: bool = False) -> tuple[dict, bytes, pipeline.Judged]:
    """Generate and judge the smoke config's first model in shards of ``size`` prompts (0: unsharded)."""
    config, _ = make_workspace(root, model_cache, models=1, per_task=1)  # 6 prompts, 12 images
    ws = Workspace.for_config(load_config(config), config)
    model = ws.config.models[0]
    prompts = pipeline.select_prompts(ws.config.geneval)
    records = dict(prompts)
    parts = pipeline.prompt_shards(prompts, size)

    def shard(part):
        generated = pipeline.step_generate(ws, model, part, show_progress=False)
        label = pipeline.shard_label(part) if len(parts) > 1 else None
        return generated, pipeline.step_geneval(ws, model.name, generated, records, show_progress=False, shard=label)

    if side_by_side:  # two shards at a time writing into the one images folder and its sample log
        with ThreadPoolExecutor(2) as pool:
            done = list(pool.map(shard, parts))
    else:
        done = [shard(part) for part in parts]
    if len(parts) > 1:
        generated = pipeline.merge_generated([g for g, _ in done])
        judged = pipeline.merge_judged(ws, model.name, [j for _, j in done])
    else:
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
        # the merged results file is the unsharded one, byte for byte, once the folder names are the same
        theirs = results.replace(str(tmp_path / f"s{size}").encode(), str(tmp_path / "whole").encode())
        assert theirs == whole_results, size
        assert judged.summary == whole.summary
    # the sample log of a folder written by shards side by side has every image once, no torn line
    log = (next((tmp_path / "s2" / "data" / "images").glob("*/*")) / "samples.jsonl").read_text().splitlines()
    assert len(log) == 12
    assert len({line for line in log}) == 12


def test_a_shard_file_changed_after_judging_is_refused(tmp_path, tiny_env):
    config, _ = make_workspace(tmp_path, tiny_env, models=1, per_task=1)
    ws = Workspace.for_config(load_config(config), config)
    model = ws.config.models[0]
    prompts = pipeline.select_prompts(ws.config.geneval)
    parts = pipeline.prompt_shards(prompts, 3)
    assert len(parts) == 2
    judged = []
    for part in parts:
        generated = pipeline.step_generate(ws, model, part, show_progress=False)
        label = pipeline.shard_label(part)
        judged.append(pipeline.step_geneval(ws, model.name, generated, dict(prompts), show_progress=False, shard=label))
    Path(judged[1].results).write_text("")
    with pytest.raises(InputError, match="shard's file is missing or changed"):
        pipeline.merge_judged(ws, model.name, judged)
    with pytest.raises(InputError, match="in two generation shards"):
        pipeline.merge_generated([generated, generated])
    with pytest.raises(InputError, match="not a prompt-shard label"):
        ws.geneval_shard_file(model.name, "../../etc")
