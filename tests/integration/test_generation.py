"""Generation into GenEval's layout with the tiny-random pipeline, loaded through the production loader."""

import json
import types

import numpy as np
import pytest

from t2ibench.benchmarks.geneval.evaluate import scan_folder
from t2ibench.config import GeneratorConfig
from t2ibench.errors import InputError
from t2ibench.hashing import file_sha256
from t2ibench.models.generation import (
    DiffusersGenerator,
    FolderImporter,
    OutputFolder,
    sample_seed,
)

SUITE = [
    {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"},
    {"tag": "single_object", "include": [{"class": "dog", "count": 1}], "prompt": "a photo of a dog"},
    {
        "tag": "counting",
        "include": [{"class": "cup", "count": 2}],
        "exclude": [{"class": "cup", "count": 3}],
        "prompt": "a photo of two cups",
    },
]
PROMPTS = list(enumerate(SUITE))


def spec(**kw):
    return GeneratorConfig(**({"model": "tiny-random", "steps": 2, "images_per_prompt": 2, "batch_size": 2} | kw))


def hashes(folder):
    return {p.relative_to(folder).as_posix(): file_sha256(p) for p in sorted(folder.glob("*/samples/*.png"))}


def test_tiny_random_loads_from_disk_and_writes_geneval_layout(tiny_env, tmp_path):
    gen = DiffusersGenerator(spec(), device="cpu", show_progress=False)
    records = gen.generate(PROMPTS, tmp_path / "out")
    assert len(records) == 6
    info = gen.describe()
    assert info["pipeline"] == "StableDiffusionPipeline"
    assert info["smoke"] is True
    assert info["resolved_path"].startswith(str(tiny_env))  # saved, then loaded with from_pretrained
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["identity"]["spec"]["steps"] == 2
    assert manifest["generator"]["scheduler"] == "DDIMScheduler"
    scan = scan_folder(tmp_path / "out", SUITE, images_per_prompt=2)
    assert scan.ok, scan.report()
    assert (tmp_path / "out" / "00002" / "metadata.jsonl").read_text() == json.dumps(SUITE[2]) + "\n"


def test_generation_is_deterministic_per_seed(tiny_env, tmp_path):
    a = DiffusersGenerator(spec(), device="cpu", show_progress=False)
    a.generate(PROMPTS[:1], tmp_path / "a")
    b = DiffusersGenerator(spec(), device="cpu", show_progress=False)
    b.generate(PROMPTS[:1], tmp_path / "b")
    c = DiffusersGenerator(spec(seed=7), device="cpu", show_progress=False)
    c.generate(PROMPTS[:1], tmp_path / "c")
    assert hashes(tmp_path / "a") == hashes(tmp_path / "b")
    assert set(hashes(tmp_path / "a").values()).isdisjoint(hashes(tmp_path / "c").values())
    images = list(hashes(tmp_path / "a").values())
    assert images[0] != images[1]  # the two samples of one prompt differ


def test_sample_seeding_makes_the_noise_independent_of_batching(tiny_env, tmp_path):
    from PIL import Image

    one = DiffusersGenerator(spec(seeding="sample", batch_size=1), device="cpu", show_progress=False)
    two = DiffusersGenerator(spec(seeding="sample", batch_size=2), device="cpu", show_progress=False)
    prompt_seeded = DiffusersGenerator(spec(seeding="prompt", batch_size=1), device="cpu", show_progress=False)
    one.generate(PROMPTS[:1], tmp_path / "one")
    records = two.generate(PROMPTS[:1], tmp_path / "two")
    prompt_seeded.generate(PROMPTS[:1], tmp_path / "prompt")
    assert [r.seed for r in records] == [sample_seed(42, 0, 0), sample_seed(42, 0, 1)]

    def pixels(folder, k):
        return np.asarray(Image.open(folder / "00000" / "samples" / f"{k:05d}.png"), dtype=float)

    for k in range(2):  # the same image up to batched-GEMM rounding (< 1 grey level on average)
        assert np.abs(pixels(tmp_path / "one", k) - pixels(tmp_path / "two", k)).mean() < 1.0
        assert np.abs(pixels(tmp_path / "one", k) - pixels(tmp_path / "prompt", k)).mean() > 5.0


@pytest.mark.parametrize("seeding", ["prompt", "sample"])
def test_resume_after_a_crash_mid_run(tiny_env, tmp_path, seeding):
    """Killed at the 4th batch, resumed: the folder ends bit-identical to an uninterrupted run."""
    reference = DiffusersGenerator(spec(seeding=seeding, batch_size=1), device="cpu", show_progress=False)
    reference.generate(PROMPTS, tmp_path / "ref")

    crashing = DiffusersGenerator(spec(seeding=seeding, batch_size=1), device="cpu", show_progress=False)
    real_run, calls = crashing._run, []

    def run_then_crash(prompt, generators):
        calls.append(prompt)
        if len(calls) == 4:  # the 4th batch: prompt 1, sample 1
            raise KeyboardInterrupt
        return real_run(prompt, generators)

    crashing._run = run_then_crash
    with pytest.raises(KeyboardInterrupt):
        crashing.generate(PROMPTS, tmp_path / "run")
    done = OutputFolder(tmp_path / "run", identity={}).completed()
    assert sorted(done) == [(0, 0), (0, 1), (1, 0)]
    # a half-written image is not trusted: corrupt one, and plant a stray temp file
    (tmp_path / "run" / "00000" / "samples" / "00001.png").write_bytes(b"\x89PNG truncated")

    resumed = DiffusersGenerator(spec(seeding=seeding, batch_size=1), device="cpu", show_progress=False)
    real_run, calls = resumed._run, []
    resumed._run = lambda prompt, generators: calls.append(prompt) or real_run(prompt, generators)
    resumed.generate(PROMPTS, tmp_path / "run")
    assert hashes(tmp_path / "run") == hashes(tmp_path / "ref")
    if seeding == "sample":  # image by image: only the missing ones
        assert calls == ["a photo of a cat", "a photo of a dog", "a photo of two cups", "a photo of two cups"]
    else:  # the prompt is the unit: prompts 0 (corrupted) and 1 (partial) again, then prompt 2
        assert calls == ["a photo of a cat"] * 2 + ["a photo of a dog"] * 2 + ["a photo of two cups"] * 2


def test_a_folder_made_differently_is_refused(tiny_env, tmp_path):
    DiffusersGenerator(spec(), device="cpu", show_progress=False).generate(PROMPTS[:1], tmp_path / "out")
    other = DiffusersGenerator(spec(guidance=3.0), device="cpu", show_progress=False)
    with pytest.raises(InputError, match=r"made differently \(changed: spec\)"):
        other.generate(PROMPTS[:1], tmp_path / "out")
    other.generate(PROMPTS[:1], tmp_path / "out", overwrite=True)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["identity"]["spec"]["guidance"] == 3.0


def test_grid_is_optional(tiny_env, tmp_path):
    DiffusersGenerator(spec(grid=True), device="cpu", show_progress=False).generate(PROMPTS[:1], tmp_path / "g")
    assert (tmp_path / "g" / "00000" / "grid.png").exists()


def test_folder_importer_copies_and_verifies(tiny_env, tmp_path):
    DiffusersGenerator(spec(), device="cpu", show_progress=False).generate(PROMPTS, tmp_path / "made")
    records = FolderImporter(tmp_path / "made").generate(PROMPTS, tmp_path / "imported")
    assert len(records) == 6
    assert hashes(tmp_path / "made") == hashes(tmp_path / "imported")
    assert json.loads((tmp_path / "imported" / "manifest.json").read_text())["backend"] == "folder"
    wrong = [(0, SUITE[1])]
    with pytest.raises(InputError, match="metadata disagrees with the suite's prompt 0"):
        FolderImporter(tmp_path / "made").generate(wrong, tmp_path / "imported2")
    with pytest.raises(InputError, match="missing"):
        FolderImporter(tmp_path / "made").generate([(7, SUITE[0])], tmp_path / "imported3")


def test_bad_specs_are_named():
    with pytest.raises(InputError, match="seeding"):
        GeneratorConfig(model="x", seeding="global")
    with pytest.raises(InputError, match="height: must be a multiple of 8"):
        GeneratorConfig(model="x", height=100)
    with pytest.raises(InputError, match=r"steps: must be in \[1, 10000\]"):
        GeneratorConfig(model="x", steps=0)


def test_missing_model_offline_says_what_to_do(tmp_path):
    """A model folder that does not exist is refused before anything loads (models.hub), not looked up on the hub."""
    gen = DiffusersGenerator(GeneratorConfig(model=str(tmp_path / "nope")), device="cpu", show_progress=False)
    with pytest.raises(InputError, match=r"^generator model: '.*nope': no such folder, and not a hub id"):
        gen.generate(PROMPTS[:1], tmp_path / "out")


def test_deepfloyd_if_runs_stage_two_on_stage_one(monkeypatch, tmp_path):
    """Two-stage IF with stand-in pipelines: stage II gets stage I's images and the shared prompt embeddings."""
    from PIL import Image

    calls = []

    class Scheduler:
        config = types.MappingProxyType({"num_train_timesteps": 1000})

    class Stage:
        def __init__(self, name):
            self.name, self.scheduler = name, Scheduler()

        def set_progress_bar_config(self, **kw):
            pass

        def to(self, device):
            return self

        def encode_prompt(self, prompt, negative_prompt=None):
            calls.append(("encode", prompt))
            return "EMB", "NEG"

        def __call__(self, **kw):
            calls.append((self.name, {k: v for k, v in kw.items() if k != "generator"}))
            n = kw["num_images_per_prompt"]
            if self.name == "stage1":
                return type("Out", (), {"images": np.zeros((n, 3, 8, 8))})()
            return type("Out", (), {"images": [Image.new("RGB", (16, 16), (i * 40, 0, 0)) for i in range(n)]})()

    def from_pretrained(path, **kw):
        return Stage("stage2" if kw.get("text_encoder", "x") is None else "stage1")

    import diffusers

    monkeypatch.setattr(diffusers.DiffusionPipeline, "from_pretrained", staticmethod(from_pretrained))
    monkeypatch.setattr("t2ibench.models.hub.hub_offline", lambda: None)  # the stand-ins need no hub, offline or not
    gen = DiffusersGenerator(
        GeneratorConfig(model="DeepFloyd/IF-I-XL-v1.0", stage2="DeepFloyd/IF-II-L-v1.0", images_per_prompt=2),
        device="cpu",
        show_progress=False,
    )
    records = gen.generate(PROMPTS[:1], tmp_path / "if")
    assert len(records) == 2
    assert calls[0] == ("encode", "a photo of a cat")
    stage1 = next(c[1] for c in calls if c[0] == "stage1")
    stage2 = next(c[1] for c in calls if c[0] == "stage2")
    assert stage1["prompt_embeds"] == "EMB"
    assert stage1["output_type"] == "pt"
    assert stage2["image"].shape == (2, 3, 8, 8)
    assert stage2["prompt_embeds"] == "EMB"
    assert stage2["negative_prompt_embeds"] == "NEG"
    assert gen.describe()["stage2_pipeline"] == "Stage"


def test_generate_cli_then_evaluate_layout(tiny_env, tmp_path, capsys):
    from t2ibench.benchmarks.geneval.suite import write_suite
    from t2ibench.cli import main

    write_suite(tmp_path / "suite.jsonl", SUITE)
    argv = [
        "generate",
        "geneval",
        "--metadata",
        str(tmp_path / "suite.jsonl"),
        "--out",
        str(tmp_path / "imgs"),
        "--model",
        "tiny-random",
        "--steps",
        "2",
        "--images-per-prompt",
        "2",
        "--device",
        "cpu",
        "--quiet",
        "--prompts",
        "0,2",
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "4 images for 2 prompts" in captured.out
    assert "smoke model" in captured.err
    assert sorted(p.name for p in (tmp_path / "imgs").iterdir() if p.is_dir()) == ["00000", "00002"]


def test_generate_cli_gives_the_generator_the_rewritten_prompts(tiny_env, tmp_path, capsys):
    """`generate geneval --wording rewritten`: the generator reads the long texts; the folder's metadata holds them,
    with the official record's objects (so `evaluate geneval --wording rewritten` judges it as made)."""
    from t2ibench.benchmarks.geneval.suite import REWRITTEN_FILE, generate_suite, read_rewritten
    from t2ibench.cli import main
    from tests.conftest import GENEVAL_REWRITTEN_DATA

    released = GENEVAL_REWRITTEN_DATA / REWRITTEN_FILE
    if not released.is_file():
        pytest.skip("GenEval's rewritten prompts are not available")
    argv = ["generate", "geneval", "--wording", "rewritten", "--rewritten", str(released), "--out",
            str(tmp_path / "imgs"), "--model", "tiny-random", "--steps", "2", "--images-per-prompt", "1", "--device",
            "cpu", "--quiet", "--prompts", "7"]  # fmt: skip
    assert main(argv) == 0
    made = json.loads((tmp_path / "imgs" / "00007" / "metadata.jsonl").read_text())
    assert made == {**generate_suite()[7], "prompt": read_rewritten(released)[7]}
    samples = [json.loads(line) for line in (tmp_path / "imgs" / "samples.jsonl").read_text().splitlines()]
    assert [s["prompt"] for s in samples] == [made["prompt"]]
