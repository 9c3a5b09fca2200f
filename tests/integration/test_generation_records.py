"""The diffusers generator's resume fingerprints the prompt record: an image made for another record is made again.

With the tiny-random pipeline: generate, change only the record at one index (the other images, the specification
and the folder stay), resume, and only that prompt's images are generated again, now for the new record.
"""

from __future__ import annotations

import json
import logging

import pytest

from t2ibench.config import GeneratorConfig
from t2ibench.hashing import file_sha256, record_sha256
from t2ibench.models.generation import DiffusersGenerator, OutputFolder
from tests.integration.test_generation import SUITE

BIRD = {"tag": "single_object", "include": [{"class": "bird", "count": 1}], "prompt": "a photo of a bird"}


def spec(**kw):
    return GeneratorConfig(**({"model": "tiny-random", "steps": 2, "images_per_prompt": 2, "batch_size": 2} | kw))


def counting(gen):
    """Wrap the generator's pipeline call to record the prompt of every batch."""
    real_run, calls = gen._run, []
    gen._run = lambda prompt, generators: calls.append(prompt) or real_run(prompt, generators)
    return calls


def stamps(folder, pattern):
    return {p.name + p.parent.parent.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.glob(pattern)}


def images(folder):
    return {p.relative_to(folder).as_posix(): file_sha256(p) for p in sorted(folder.glob("*/samples/*.png"))}


@pytest.fixture
def notes(caplog):
    caplog.set_level(logging.WARNING, logger="t2ibench")
    return lambda: [r.getMessage() for r in caplog.records if r.name == "t2ibench"]


def drop_digests(log):
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert all("record_sha256" in e for e in entries)
    log.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "record_sha256"}) + "\n" for e in entries))


@pytest.mark.parametrize(("seeding", "batch_size"), [("prompt", 2), ("sample", 1)])
@pytest.mark.parametrize("old_log", [False, True], ids=["digest", "old-log"])
def test_only_the_prompt_whose_record_changed_is_generated_again(
    tiny_env, tmp_path, notes, seeding, batch_size, old_log
):
    kw = {"seeding": seeding, "batch_size": batch_size}
    out = tmp_path / "out"
    DiffusersGenerator(spec(**kw), device="cpu", show_progress=False).generate(list(enumerate(SUITE)), out)
    if old_log:  # written by a version that logged only the prompt text
        drop_digests(out / "samples.jsonl")
    kept = stamps(out, "0000[02]/samples/*.png")
    suite = [SUITE[0], BIRD, SUITE[2]]  # prompt 1 was "a photo of a dog", now "a photo of a bird"

    resumed = DiffusersGenerator(spec(**kw), device="cpu", show_progress=False)
    calls = counting(resumed)
    records = resumed.generate(list(enumerate(suite)), out)
    assert calls == ["a photo of a bird"] * (2 // batch_size), "only prompt 1 is generated again"
    assert stamps(out, "0000[02]/samples/*.png") == kept, "prompts 0 and 2 are kept"
    assert [r.prompt for r in records] == [r["prompt"] for r in suite for _ in range(2)]
    assert [r.record_sha256 for r in records[2:4]] == [record_sha256(BIRD)] * 2
    assert json.loads((out / "00001" / "metadata.jsonl").read_text()) == BIRD

    fresh = tmp_path / "fresh"  # the images an uninterrupted run for the new suite makes
    DiffusersGenerator(spec(**kw), device="cpu", show_progress=False).generate(list(enumerate(suite)), fresh)
    assert images(out) == images(fresh)
    assert sorted(OutputFolder(out, identity={}).completed(dict(enumerate(suite)))) == [
        (i, k) for i in range(3) for k in range(2)
    ]
    assert notes() == [f"{out}: 2 images were made for another prompt record (prompt 1); generating them again"]

    again = DiffusersGenerator(spec(**kw), device="cpu", show_progress=False)
    calls = counting(again)
    again.generate(list(enumerate(suite)), out)
    assert calls == [], "a resume after the redo keeps everything"


def test_an_old_log_line_with_the_same_prompt_text_is_kept_and_its_metadata_rewritten(tiny_env, tmp_path, notes):
    out = tmp_path / "out"
    DiffusersGenerator(spec(), device="cpu", show_progress=False).generate(list(enumerate(SUITE)), out)
    drop_digests(out / "samples.jsonl")
    kept = stamps(out, "*/samples/*.png")
    # the same text with another include clause: the old log cannot tell, and the pipeline only ever saw the text
    changed = {**SUITE[1], "include": [{"class": "dog", "count": 1, "color": "red"}]}
    suite = [SUITE[0], changed, SUITE[2]]
    resumed = DiffusersGenerator(spec(), device="cpu", show_progress=False)
    calls = counting(resumed)
    resumed.generate(list(enumerate(suite)), out)
    assert calls == []
    assert stamps(out, "*/samples/*.png") == kept
    assert json.loads((out / "00001" / "metadata.jsonl").read_text()) == changed
    assert notes() == []
