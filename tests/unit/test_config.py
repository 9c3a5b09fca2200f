from pathlib import Path

import pytest

from t2ibench.config import load_config, parse_config
from t2ibench.errors import InputError
from t2ibench.hashing import section_hash

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
MINIMAL = {"name": "x", "models": [{"name": "a"}]}


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_shipped_configs_load(path):
    cfg = load_config(path)
    assert cfg.models
    assert cfg.name == path.stem


def test_smoke_config_is_offline_and_labelled_smoke():
    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml")
    assert cfg.smoke
    assert all(m.generator.model.startswith("tiny-random") for m in cfg.models)
    paper = load_config(Path(__file__).resolve().parents[2] / "configs" / "geneval_paper.yaml")
    assert not paper.smoke
    assert [m.generator.images_per_prompt for m in paper.models] == [4, 4, 4, 4]
    assert {m.generator.guidance for m in paper.models} == {9.0}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({**MINIMAL, "modles": []}, "unknown key 'modles'; did you mean 'models'"),
        ({"name": "x", "models": [{"name": "a", "generater": {}}]}, "did you mean 'generator'"),
        ({"name": "x", "models": [{"name": "a", "generator": {"backend": "difusers"}}]}, "did you mean 'diffusers'"),
        ({"name": "x", "models": [{"name": "a", "generator": {"steps": "many"}}]}, r"models\[0\].generator.steps"),
        ({"name": "x", "models": [{"name": "a"}, {"name": "a"}]}, "names must be unique .*repeated: a"),
        ({"name": "x", "models": []}, "at least one model"),
        ({"models": [{"name": "a"}]}, "missing required key"),
        ({**MINIMAL, "evaluators": {"diversity": {"sigma": "mean"}}}, "sigma"),
        ({**MINIMAL, "evaluators": {"geneval": {"detector": {"resize": [1, 2, 3]}}}}, "expected 2 values"),
        ([1, 2], "expected a mapping"),
    ],
)
def test_bad_configs_are_named(raw, message):
    with pytest.raises(InputError, match=message):
        parse_config(raw, source="c.yaml")


def test_python_tags_are_refused(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("name: !!python/object/apply:os.system ['echo hi']\nmodels: [{name: a}]\n")
    with pytest.raises(InputError, match="safe_load"):
        load_config(path)


def test_section_hashes_are_stable_and_local():
    a = parse_config({"name": "x", "models": [{"name": "a"}, {"name": "b", "generator": {"steps": 5}}]})
    b = parse_config({"name": "x", "models": [{"name": "a"}, {"name": "b", "generator": {"steps": 6}}]})
    assert section_hash(a.models[0]) == section_hash(b.models[0])
    assert section_hash(a.models[1]) != section_hash(b.models[1])
    assert section_hash(a) == section_hash(
        parse_config({"name": "x", "models": [{"name": "a"}, {"name": "b", "generator": {"steps": 5}}]})
    )
    with pytest.raises(InputError, match="did you mean 'a'"):
        a.model("aa")


RUNTIME_ERRORS = [
    ({"address": "tcp://10.0.0.5:8786"}, r"runtime.address: .*set task_runner: dask"),
    ({"task_runner": "dask", "address": "10.0.0.5:8786"}, r"runtime.address: must be a Dask scheduler address"),
    ({"task_runner": "dask", "address": "tcp://h:8786", "workers": 4}, r"runtime.workers: a running cluster"),
    ({"devices": 2}, r"runtime.devices: one worker per device needs task_runner: dask"),
    ({"task_runner": "dask", "devices": 2, "workers": 3}, r"runtime.workers: is one per device"),
    ({"task_runner": "dask", "devices": 2, "device": "cpu"}, r"runtime.device: with devices"),
    ({"prompts_per_shard": -1}, r"runtime.prompts_per_shard: must be in"),
    ({"workers": 0}, r"runtime.workers: must be in"),
    ({"task_runner": "ray"}, r"runtime.task_runner"),
]


@pytest.mark.parametrize(("runtime", "message"), RUNTIME_ERRORS)
def test_runtime_combinations_that_cannot_work_are_named(runtime, message):
    with pytest.raises(InputError, match=message):
        parse_config({"name": "x", "models": [{"name": "a"}], "runtime": runtime}, source="c.yaml")


def test_runtime_worker_counts_and_shards_never_change_a_version_hash(tmp_path):
    """How work is spread (runner, workers, devices, shards) is not part of any model or evaluator version."""
    from t2ibench.pipeline import plan_refresh, select_prompts
    from t2ibench.workspace import Workspace

    def versions(config):
        plan = plan_refresh(config, Workspace(tmp_path, config.outputs), select_prompts(config.spine_prompts), "r")
        return [(m.model_hash, m.evaluator_hash) for m in plan.models]

    plain = parse_config({"name": "x", "models": [{"name": "a"}]})
    spread = parse_config(
        {
            "name": "x",
            "models": [{"name": "a"}],
            "runtime": {"task_runner": "dask", "devices": 4, "prompts_per_shard": 7},
        }
    )
    assert spread.runtime.worker_count == 4
    assert plain.runtime.worker_count == 1
    assert versions(plain) == versions(spread)
    assert (
        len(
            plan_refresh(spread, Workspace(tmp_path, spread.outputs), select_prompts(spread.spine_prompts), "r")
            .models[0]
            .by_column()["generate"]
        )
        > 1
    )  # fmt: skip  (the shards are there, and change no version)


def test_every_shipped_config_has_a_store_of_its_own():
    """A store belongs to the config that first ran into it (another is refused): no two shipped configs share one."""
    from pathlib import Path

    from t2ibench.config import load_config

    configs = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
    stores = [load_config(p).outputs.store for p in configs]
    assert len(configs) >= 4
    assert len(set(stores)) == len(stores), dict(zip([p.name for p in configs], stores, strict=True))
