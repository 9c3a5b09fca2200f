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
