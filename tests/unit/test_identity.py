"""One derivation for a step's cache key, its version and its protocol (``t2ibench.pipeline.identity``), and the
content digests of results (what a downstream key holds of them: never a path or a count)."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Annotated

import pytest

from t2ibench.config import DiversityConfig, parse_config
from t2ibench.pipeline import STEPS, plan_refresh, select_prompts
from t2ibench.pipeline.identity import OUTPUT, PLACEMENT, fingerprint, keyed, roles, settings, step_key
from t2ibench.pipeline.results import (
    Bandwidth,
    Embedded,
    EmbeddingFiles,
    Generated,
    ImageInfo,
    Judged,
    PromptSet,
    ShardState,
)
from t2ibench.workspace import Workspace


def step(
    config: DiversityConfig, upstream: Judged, out: Annotated[Path, OUTPUT], device: Annotated[str, PLACEMENT]
) -> int:
    """A step of every role."""
    return 0


def test_roles_are_read_off_the_signature():
    assert roles(step) == {"config": "value", "upstream": "value", "out": "output", "device": "placement"}


def test_the_key_covers_settings_content_and_outputs_but_not_placement(tmp_path):
    judged = Judged(model="m", results="/x/a.jsonl", sha256="a" * 16, summary={})
    base = {"config": DiversityConfig(), "upstream": judged, "out": tmp_path / "o", "device": "cpu"}
    key = step_key("s", step, base)
    assert step_key("s", step, {**base, "device": "cuda"}) == key  # placement: where, never what
    assert step_key("s", step, {**base, "config": DiversityConfig(modes=7)}) != key
    assert step_key("s", step, {**base, "out": tmp_path / "p"}) != key  # another output location
    assert step_key("s", step, {**base, "upstream": dataclasses.replace(judged, sha256="b" * 16)}) != key
    assert step_key("t", step, base) != key  # another step
    # a result's digest is its content: the same bytes at another path, or timed differently, key the same
    moved = dataclasses.replace(judged, results="/elsewhere/a.jsonl", elapsed_s=3.0)
    assert step_key("s", step, {**base, "upstream": moved}) == key
    # the spelling of a location is not its identity
    (tmp_path / "o").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "o")
    assert step_key("s", step, {**base, "out": tmp_path / "link"}) == key
    assert step_key("s", step, {**base, "out": tmp_path / "x" / ".." / "o"}) == key
    with pytest.raises(TypeError, match="no parameter"):
        keyed(step, {**base, "extra": 1})


def test_settings_are_the_values_that_are_neither_content_nor_outputs(tmp_path):
    judged = Judged(model="m", results="r", sha256="a" * 16, summary={})
    found = settings(step, {"config": DiversityConfig(), "upstream": judged, "out": tmp_path, "device": "cpu"})
    assert set(found) == {"config"}
    assert found["config"]["sigma"] == "reference"


def test_result_digests_hold_content_only():
    image = ImageInfo(0, 0, "/a/00000/samples/00000.png", "f" * 64, 42)
    generated = Generated("m", "/a", (image,), {"fingerprint": "x"})
    assert (
        generated.digest()
        == Generated("m", "/b", (dataclasses.replace(image, path="/b/0.png"),), {"fingerprint": "x"}, 9.0).digest()
    )
    assert (
        generated.digest()
        != Generated("m", "/a", (dataclasses.replace(image, sha256="e" * 64),), {"fingerprint": "x"}).digest()
    )
    files = EmbeddingFiles("/a/i.npy", "/a/c.npy", "/a/t.npy")
    digests = EmbeddingFiles("1" * 16, "2" * 16, "3" * 16)
    embedded = Embedded("m", files, digests, (0,), (0,), (0,))
    assert embedded.digest() == Embedded("m", EmbeddingFiles("/b", "/b", "/b"), digests, (0,), (0,), (0,)).digest()
    assert embedded.digest() != Embedded("m", files, digests, (1,), (0,), (1,)).digest()
    # a shard state is its file's bytes, not its row count or path
    state = ShardState(0, 2, 10, "/a/s.npz", sha256="a" * 16)
    assert state.digest() == ShardState(0, 2, 11, "/b/s.npz", sha256="a" * 16).digest()
    assert state.digest() != dataclasses.replace(state, sha256="b" * 16).digest()
    assert Bandwidth(0.5, "fixed").digest() != Bandwidth(0.5, "reference:photos-v1@x").digest()
    assert fingerprint(PromptSet.of([(0, {"prompt": "a"})])) == {
        "digest": PromptSet.of([(0, {"prompt": "a"})]).digest()
    }


def test_every_step_declares_its_paths_and_reads_nothing_beside_its_parameters():
    """Each step's path parameters say their role (output or placement); no step takes the workspace or a whole
    config, and each parameter is used in the step's body (a parameter nobody reads would still change its key)."""
    import ast
    import textwrap

    for name, spec in STEPS.items():
        hints = roles(spec.fn)
        tree = ast.parse(textwrap.dedent(inspect.getsource(spec.fn)))
        function = tree.body[0]
        assert isinstance(function, ast.FunctionDef)
        used = {n.id for statement in function.body for n in ast.walk(statement) if isinstance(n, ast.Name)}
        for parameter in inspect.signature(spec.fn).parameters:
            assert parameter not in ("ws", "workspace", "config", "cfg"), (name, parameter)
            assert parameter in used, f"{name}: parameter {parameter} is never read in its body"
        annotations = inspect.get_annotations(spec.fn)
        for parameter, annotation in annotations.items():
            if parameter != "return" and "Path" in str(annotation) and parameter != "store":
                assert hints[parameter] in ("output", "placement"), (name, parameter, annotation)


def test_a_plans_versions_come_from_its_calls_settings(tmp_path):
    """The model hash is the generation's settings; the evaluator hash the protocol record; changing a field that
    only the report reads changes neither."""
    raw = {"name": "x", "models": [{"name": "a", "label": "A"}]}
    config = parse_config(raw)
    ws = Workspace(tmp_path, config.outputs)
    prompts = select_prompts(config.spine_prompts)
    plan = plan_refresh(config, ws, prompts, "r").models[0]
    assert set(plan.protocol) >= {
        "geneval",
        "scores",
        "embed",
        "reference-bandwidth",
        "fkea-shard",
        "diversity",
        "scendi",
    }
    relabelled = parse_config({**raw, "models": [{"name": "a", "label": "B"}], "report": {"published": []}})
    other = plan_refresh(relabelled, ws, prompts, "r").models[0]
    assert (other.model_hash, other.evaluator_hash) == (plan.model_hash, plan.evaluator_hash)
    leveled = parse_config({**raw, "evaluators": {"ci_level": 0.9}})
    assert plan_refresh(leveled, ws, prompts, "r").models[0].evaluator_hash != plan.evaluator_hash
    assert plan_refresh(leveled, ws, prompts, "r").models[0].model_hash == plan.model_hash
    # output folders are named by the versions
    assert plan.images == ws.images_dir("a", plan.model_hash)
