"""A model named by hub id or folder is resolved before anything loads (t2ibench.models.hub): a name that can only be
a path and is missing, or a hub id neither cached nor reachable, is one line at once — not minutes of retries."""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
from pathlib import Path

import pytest

from t2ibench.cli import main
from t2ibench.config import parse_config
from t2ibench.errors import FieldError, InputError
from t2ibench.models import hub
from t2ibench.specs import ColourConfig, DetectorConfig, EmbedderConfig, GeneratorConfig, ModelSource, VQAJudgeConfig

hf_constants = pytest.importorskip("huggingface_hub.constants")


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """huggingface_hub offline (HF_HUB_OFFLINE) with an empty cache of its own."""
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    return tmp_path / "hf-cache"


def cache_model(cache: Path, name: str, commit: str = "a" * 40) -> None:
    """A hub model as huggingface_hub's cache holds it: refs/main → snapshots/<commit>/config.json."""
    repo = cache / f"models--{name.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")


@pytest.mark.parametrize("name", ["./judge", "../judge", "/no/such/judge", "~/judge", "models/qwen/v2", "judge/"])
def test_a_name_that_can_only_be_a_path_is_refused_at_once_when_missing(name, tmp_path):
    with pytest.raises(FieldError, match=r"no such folder.*not a hub id") as e:
        hub.resolve(ModelSource("model", name), base=tmp_path)
    assert e.value.field == "model"
    assert "\n" not in str(e.value)
    if name.startswith("~"):
        assert "~ is not expanded" in str(e.value)


def test_a_file_is_not_a_model_folder(tmp_path):
    (tmp_path / "weights.safetensors").write_bytes(b"x")
    with pytest.raises(FieldError, match=r"'weights.safetensors' is a file; a local model is a folder"):
        hub.resolve(ModelSource("model", "weights.safetensors"), base=tmp_path)


def test_an_existing_folder_is_the_model_whatever_its_shape(tmp_path, offline):
    (tmp_path / "org" / "name").mkdir(parents=True)
    resolved = hub.resolve(ModelSource("model", "org/name"), base=tmp_path)
    assert resolved == hub.Resolved(str(tmp_path / "org" / "name"), local_files_only=False)


def test_offline_a_hub_id_that_is_not_cached_fails_at_once(offline):
    start = time.monotonic()
    with pytest.raises(FieldError, match=r"'q/nonexistent' is neither a local folder nor a hub model in the local "
                       r"cache, and HF_HUB_OFFLINE is set") as e:  # fmt: skip
        hub.resolve(ModelSource("model", "q/nonexistent"))
    assert time.monotonic() - start < 2
    assert "\n" not in str(e.value)
    with pytest.raises(FieldError, match=r"at revision 'v2'"):
        hub.resolve(ModelSource("model", "q/nonexistent", "v2"))


def test_offline_a_cached_hub_id_is_read_from_the_cache_only(offline):
    cache_model(offline, "org/judge")
    assert hub.resolve(ModelSource("model", "org/judge")) == hub.Resolved("org/judge", local_files_only=True)


def test_an_unreachable_hub_counts_as_offline(monkeypatch, tmp_path):
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(hf_constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens: refused
    hub._unreachable.cache_clear()
    try:
        start = time.monotonic()
        with pytest.raises(FieldError, match=r"and the hub \(http://127\.0\.0\.1:9\) cannot be reached \("):
            hub.resolve(ModelSource("model", "q/nonexistent"))
        assert time.monotonic() - start < hub.PROBE_TIMEOUT + 1  # one probe, no retries
        cache_model(tmp_path / "hf-cache", "org/judge")
        assert hub.resolve(ModelSource("model", "org/judge")).local_files_only
    finally:
        hub._unreachable.cache_clear()


def test_every_backend_that_reads_a_hub_id_or_folder_lists_it():
    assert GeneratorConfig(model="org/sd", stage2="org/sr", revision="r").hub_sources() == (
        ModelSource("model", "org/sd", "r"),
        ModelSource("stage2", "org/sr", "r"),
    )
    assert GeneratorConfig(model="tiny-random:1").hub_sources() == ()
    assert GeneratorConfig(backend="folder", source="x").hub_sources() == ()
    assert DetectorConfig().hub_sources() == (ModelSource("model", DetectorConfig.model),)
    assert DetectorConfig(backend="opencv-ssd").hub_sources() == ()
    assert EmbedderConfig(model="org/dino").hub_sources() == (ModelSource("model", "org/dino"),)
    assert EmbedderConfig(backend="open_clip", model="ViT-B-32", pretrained="openai").hub_sources() == (
        ModelSource("pretrained", "openai", arch="ViT-B-32"),
    )
    assert EmbedderConfig(backend="open_clip", model="tiny-random").hub_sources() == ()
    assert ColourConfig().hub_sources() == (ModelSource("pretrained", "openai", arch="ViT-L-14"),)
    assert ColourConfig(backend="lite").hub_sources() == ()
    assert VQAJudgeConfig(model="./judge", revision="c").hub_sources() == (ModelSource("model", "./judge", "c"),)


def test_a_config_lists_the_judge_only_when_it_runs_geneval2():
    base = {"name": "x", "models": [{"name": "a", "generator": {"model": "org/sd"}}]}
    keys = [key for key, _ in parse_config(base).hub_sources()]
    assert "models[0].generator" in keys
    assert "evaluators.geneval2.judge" not in keys
    with_g2 = {**base, "benchmarks": {"geneval2": {}}}
    assert ("evaluators.geneval2.judge", ModelSource("model", VQAJudgeConfig.model)) in parse_config(
        with_g2
    ).hub_sources()


def cli(*argv: str) -> tuple[int, str, float]:
    err = io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(list(argv))
    return status, err.getvalue(), time.monotonic() - start


def geneval2_folder(root: Path) -> tuple[Path, Path]:
    """A GenEval 2-shaped suite (tests/geneval2_lines.py) and a folder with one image per prompt."""
    from PIL import Image

    from tests.geneval2_lines import LINES

    suite = root / "suite.jsonl"
    suite.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    for i, line in enumerate(LINES):
        folder = root / "images" / f"{i:05d}"
        (folder / "samples").mkdir(parents=True)
        (folder / "metadata.jsonl").write_text(json.dumps(line) + "\n")
        Image.new("RGB", (16, 16)).save(folder / "samples" / "0000.png")
    return suite, root / "images"


def test_evaluate_geneval2_refuses_a_judge_it_cannot_read_in_one_line_naming_the_option(offline, tmp_path):
    """Measured before the fix, offline: 147 s and 30 'Retrying in Ns' lines for q/nonexistent."""
    suite, images = geneval2_folder(tmp_path)
    for model, said in (
        ("q/nonexistent", r"--judge-model: 'q/nonexistent' is neither a local folder nor a hub model in the local"),
        (str(tmp_path / "typo"), r"--judge-model: '.*typo': no such folder"),
    ):
        argv = ("evaluate", "geneval2", str(images), "--suite", str(suite), "--subset", "--judge-model", model)
        status, err, seconds = cli(*argv)
        assert status == 2, err
        assert re.search(said, err.splitlines()[-1]), err
        assert "Retrying" not in err
        assert seconds < 5
    assert not (images / "results.jsonl.partial").exists()


def test_the_loader_refuses_too_before_loading(offline):
    from t2ibench.models.vqa import Qwen3VLJudge

    with pytest.raises(InputError, match=r"^VQA judge model: 'q/nonexistent' is neither a local folder"):
        Qwen3VLJudge(VQAJudgeConfig(model="q/nonexistent")).source()


def test_run_refuses_a_config_whose_model_folder_is_missing_naming_the_key(tmp_path):
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "leaderboard_refresh.py").write_text("raise SystemExit('the refresh must not start')\n")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "c.yaml").write_text(
        "name: x\nmodels: [{name: a, generator: {model: tiny-random}}]\n"
        "benchmarks: {geneval2: {}}\nevaluators: {geneval2: {judge: {model: ./judges/qwen-typo}}, "
        "geneval: {detector: {model: tiny-random}, colour: {arch: tiny-random, pretrained: null}}, "
        "image_embedder: {model: tiny-random}, clip: {backend: open_clip, model: tiny-random}}\n"
    )
    status, err, _ = cli("run", "--config", str(tmp_path / "configs" / "c.yaml"))
    assert status == 2, err
    assert err.count("\n") == 1, err
    assert "c.yaml:evaluators.geneval2.judge.model: './judges/qwen-typo': no such folder" in err


def test_open_clip_weights_are_a_checkpoint_file_or_a_readable_tag(tmp_path, offline):
    """open_clip takes no local_files_only: a tag offline is read from the cache only (``cache_only``), refused at
    once when not cached (before: 56 s and 20 'Retrying' lines for ViT-L-14/openai); a missing file at once."""
    pytest.importorskip("open_clip")
    with pytest.raises(FieldError, match=r"'./clip\.pt': no such checkpoint file"):
        hub.resolve(ModelSource("pretrained", "./clip.pt", arch="ViT-B-32"), base=tmp_path)
    start = time.monotonic()
    said = r"open_clip ViT-B-32/openai \(hub model timm/vit_base_patch32_clip_224\.openai\) is not in the local cache"
    with pytest.raises(FieldError, match=said + r", and HF_HUB_OFFLINE is set"):
        hub.resolve(ModelSource("pretrained", "openai", arch="ViT-B-32"))
    assert time.monotonic() - start < 30  # importing open_clip (torch) is most of it; no request is made
    cache_model(offline, "timm/vit_base_patch32_clip_224.openai")
    assert hub.resolve(ModelSource("pretrained", "openai", arch="ViT-B-32")).local_files_only
    (tmp_path / "clip.pt").write_bytes(b"x")
    assert hub.resolve(ModelSource("pretrained", "clip.pt", arch="ViT-B-32"), base=tmp_path).source.endswith("clip.pt")


def test_cache_only_makes_huggingface_hub_read_its_cache_only_while_it_lasts(monkeypatch):
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    with hub.cache_only(True):
        assert hf_constants.HF_HUB_OFFLINE
    assert not hf_constants.HF_HUB_OFFLINE
    with hub.cache_only(False):
        assert not hf_constants.HF_HUB_OFFLINE
