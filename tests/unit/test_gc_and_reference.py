"""`t2ibench gc` keeps exactly the versions a config's plan writes; the reference sets that fix a bandwidth per
embedding space are fixed and named."""

from __future__ import annotations

import pytest

from t2ibench.config import parse_config
from t2ibench.errors import InputError
from t2ibench.pipeline import plan_refresh, select_prompts
from t2ibench.pipeline.gc import find_garbage, remove
from t2ibench.suites.reference import IMAGE_SET, TEXT_SET, load_reference
from t2ibench.workspace import Workspace

CONFIG = {"name": "x", "models": [{"name": "a"}, {"name": "b"}], "evaluators": {"diversity": {"shards": 2}}}


def populated(tmp_path):
    config = parse_config(CONFIG)
    ws = Workspace(tmp_path, config.outputs)
    plan = plan_refresh(config, ws, select_prompts(config.geneval), "r")
    for folder in plan.outputs:  # the current versions, with their files
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text("{}")
    for model in plan.models:
        for call in model.calls:
            out = call.params.get("out")
            if call.step == "fkea-shard":
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(b"state")
    return config, ws, plan


def test_gc_removes_older_versions_and_keeps_the_current_ones(tmp_path):
    config, ws, plan = populated(tmp_path)
    current = {p: sorted(q.relative_to(p) for q in p.rglob("*")) for p in plan.outputs}
    images = ws.data / "images"
    old = images / "a" / ("0" * 16)
    old.mkdir(parents=True)
    (old / "x.png").write_bytes(b"12345")
    embeddings = plan.models[0].folders[2]
    old_states = embeddings / ("fkea-" + "1" * 16)
    old_states.mkdir()
    (old_states / "diversity_state_0of4.npz").write_bytes(b"old")
    foreign = images / "someone-else" / ("2" * 16)
    foreign.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    link = images / "b" / ("3" * 16)
    link.symlink_to(outside, target_is_directory=True)

    garbage = find_garbage(config, ws)
    assert {p for p, _ in garbage.stale} == {old, old_states, link}
    assert garbage.size >= 5 + 3
    assert garbage.foreign == (images / "someone-else",)
    remove(garbage, ws)
    assert not old.exists()
    assert not old_states.exists()
    assert not link.exists()
    assert (outside / "keep.txt").read_text() == "keep"  # a symlink is removed, never followed
    assert foreign.is_dir()  # another config's model: left alone
    assert {p: sorted(q.relative_to(p) for q in p.rglob("*")) for p in plan.outputs} == current
    assert find_garbage(config, ws).stale == ()  # nothing left to collect


def test_the_reference_photos_are_a_fixed_named_set():
    photos = load_reference(IMAGE_SET)
    assert (photos.kind, len(photos.images)) == ("image", 22 * 5)  # 22 photographs, each whole and in quadrants
    assert all(im.mode == "RGB" and min(im.size) >= 32 for im in photos.images)
    assert load_reference(IMAGE_SET).digest == photos.digest  # the same files: the same set
    assert len(photos.digest) == 16
    prompts = load_reference(TEXT_SET)
    assert (prompts.kind, len(prompts.texts)) == ("text", 553)  # GenEval's official suite
    assert prompts.texts[0] == "a photo of a bench"
    with pytest.raises(InputError, match="did you mean 'photos-v1'"):
        load_reference("photos-v2")


def test_gc_keeps_every_version_of_a_model_whose_shown_version_is_not_yet_the_configs(tmp_path):
    """After the config changed but before a refresh made the new version (or after one failed), the leaderboard
    still shows the old one: that model's folders are all kept."""
    from datetime import UTC, datetime

    from t2ibench.store import Store

    config, ws, _plan = populated(tmp_path)
    old = ws.data / "images" / "a" / ("0" * 16)
    old.mkdir(parents=True)
    store = Store(ws.store)
    with store.write() as con:
        store.upsert(con, "runs", [{"run_id": "r", "status": "completed", "finished_at": datetime.now(UTC)}])
        store.upsert(con, "run_models", [{"run_id": "r", "model": "a", "model_hash": "0" * 16, "evaluator_hash": "e"}])
    garbage = find_garbage(config, ws)
    assert old not in {p for p, _ in garbage.stale}
    assert [name for name, _ in garbage.held] == ["a"]
    remove(garbage, ws)
    assert old.is_dir()


def test_gc_refuses_a_symlinked_model_folder_before_removing_anything(tmp_path):
    config, ws, _plan = populated(tmp_path)
    stale = ws.data / "images" / "a" / ("0" * 16)
    stale.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ("1" * 16)).mkdir(parents=True)
    (ws.data / "results" / "b").rename(tmp_path / "b-results")
    (ws.data / "results" / "b").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(InputError, match=r"results/b: is a symlink; t2ibench gc does not follow links"):
        find_garbage(config, ws)
    assert stale.is_dir()
    assert (elsewhere / ("1" * 16)).is_dir()
