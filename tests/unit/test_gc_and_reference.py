"""`t2ibench gc` keeps exactly the versions a config's plan writes; the reference sets that fix a bandwidth per
embedding space are fixed and named."""

from __future__ import annotations

import pytest

from t2ibench.config import parse_config
from t2ibench.errors import InputError
from t2ibench.pipeline import plan_refresh, select_prompts
from t2ibench.pipeline.gc import find_garbage, remove
from t2ibench.pipeline.ownership import claim_data_folder
from t2ibench.pipeline.runs import record_folders
from t2ibench.store import Store
from t2ibench.suites.reference import IMAGE_SET, TEXT_SET, load_reference
from t2ibench.workspace import Workspace

CONFIG = {"name": "x", "models": [{"name": "a"}, {"name": "b"}], "evaluators": {"diversity": {"shards": 2}}}
FILE = "configs/x.yaml"


def populated(tmp_path, *, store=True):
    """Config x's workspace with its current versions on disk; with ``store``, its store (claimed, recording the plan's
    folders as a run of it would) and its data folder claimed."""
    config = parse_config(CONFIG)
    ws = Workspace(tmp_path, config.outputs)
    plan = plan_refresh(config, ws, select_prompts(config.spine_prompts), "r")
    for folder in plan.outputs:  # the current versions, with their files
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text("{}")
    for model in plan.models:
        for call in model.calls:
            out = call.params.get("out")
            if call.step == "fkea-shard":
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(b"state")
    if store:
        Store(ws.store).claim("x", FILE)
        claim_data_folder(ws, "x", FILE)
        record_folders(ws, "r", {m.model.name: m.folders for m in plan.models})
    return config, ws, plan


def made_by_x(ws, model, *folders):
    """Record ``folders`` as planned by an earlier run of config x (what a refresh does before writing them)."""
    record_folders(ws, "earlier", {model: list(folders)})


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
    made_by_x(ws, "a", old)
    made_by_x(ws, "b", link)

    garbage = find_garbage(config, ws, FILE)
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
    assert find_garbage(config, ws, FILE).stale == ()  # nothing left to collect


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

    config, ws, _plan = populated(tmp_path)
    old = ws.data / "images" / "a" / ("0" * 16)
    old.mkdir(parents=True)
    made_by_x(ws, "a", old)
    store = Store(ws.store)
    with store.write() as con:
        store.upsert(con, "runs", [{"run_id": "r", "status": "completed", "finished_at": datetime.now(UTC)}])
        store.upsert(con, "run_models", [{"run_id": "r", "model": "a", "model_hash": "0" * 16, "evaluator_hash": "e"}])
    garbage = find_garbage(config, ws, FILE)
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
        find_garbage(config, ws, FILE)
    assert stale.is_dir()
    assert (elsewhere / ("1" * 16)).is_dir()


def test_gc_removes_only_what_the_configs_store_records_as_its_own(tmp_path):
    """A stale-looking folder no refresh of this config planned (another config's, a copy, one made before folders
    were recorded) is left alone and listed; the images folder of a version the store holds rows of is its own."""
    config, ws, _plan = populated(tmp_path)
    unknown = ws.data / "images" / "a" / ("4" * 16)
    (unknown / "00000" / "samples").mkdir(parents=True)
    legacy = ws.data / "images" / "b" / ("5" * 16)
    (legacy / "00000" / "samples").mkdir(parents=True)
    (legacy / "00000" / "samples" / "00000.png").write_bytes(b"png")
    store = Store(ws.store)
    with store.write() as con:  # a version stored before folders were recorded: its images' paths say where
        image = str(legacy / "00000" / "samples" / "00000.png")
        row = {"model": "b", "model_hash": "5" * 16, "suite": "s", "prompt_index": 0, "sample": 0, "path": image}
        store.upsert(con, "images", [row])
    garbage = find_garbage(config, ws, FILE)
    assert {p for p, _ in garbage.stale} == {legacy}
    assert unknown in garbage.unattributed
    remove(garbage, ws)
    assert unknown.is_dir()
    assert not legacy.exists()


def test_gc_of_a_config_without_a_store_removes_nothing(tmp_path):
    """The data folder is x's, but its store was moved aside: nothing there can be attributed, nothing is removed."""
    config, ws, _plan = populated(tmp_path)
    ws.store.rename(tmp_path / "aside.duckdb")
    old = ws.data / "images" / "a" / ("0" * 16)
    old.mkdir(parents=True)
    garbage = find_garbage(config, ws, FILE)
    assert garbage.stale == ()
    assert not garbage.has_store
    assert ws.data / "images" / "a" in garbage.unattributed


def test_gc_and_a_refresh_refuse_another_configs_data_folder_or_a_copy_of_it(tmp_path):
    """Config y pointed at x's data folder (or a copy of it, which carries x's owner record) is refused in one
    line by gc and by a refresh's start, before anything is written; x's files and store are untouched."""
    import shutil

    from t2ibench.config import Outputs
    from t2ibench.pipeline.runs import start_run

    config, ws, _plan = populated(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in ws.data.rglob("*"))
    stored = ws.store.read_bytes()
    other = parse_config({**CONFIG, "name": "y", "outputs": {"data": "data", "store": "y.duckdb"}})
    assert other.outputs.data == config.outputs.data
    ws_y = Workspace(tmp_path, other.outputs)
    with pytest.raises(InputError, match=r"this data folder belongs to config 'x' \(configs/x.yaml"):
        find_garbage(other, ws_y, "configs/y.yaml")
    with pytest.raises(InputError, match=r"belongs to config 'x'"):
        start_run(ws_y, other, tmp_path / "configs" / "y.yaml", "run-y", "test")
    assert not ws_y.store.exists()
    shutil.copytree(ws.data, tmp_path / "copy")
    copy = Workspace(tmp_path, Outputs(data="copy", store="y.duckdb"))
    with pytest.raises(InputError, match=r"copy: this data folder belongs to config 'x'"):
        find_garbage(other, copy, "configs/y.yaml")
    assert sorted(p.relative_to(tmp_path) for p in ws.data.rglob("*")) == before
    assert ws.store.read_bytes() == stored


def test_an_unmarked_data_folder_is_adopted_only_by_the_config_whose_store_made_it(tmp_path):
    from t2ibench.pipeline.ownership import OWNER_FILE, check_data_folder

    _config, ws, _plan = populated(tmp_path)
    (ws.data / OWNER_FILE).unlink()  # as made before owner records
    with pytest.raises(InputError, match="holds version folders but no owner record"):
        check_data_folder(ws, "y", "configs/y.yaml")
    assert check_data_folder(ws, "x", FILE) is False  # x's own store made it: x may claim it
    claim_data_folder(ws, "x", FILE)
    assert check_data_folder(ws, "x", FILE) is True
