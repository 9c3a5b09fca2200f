"""`t2ibench evaluate t2i_compbench` end to end on tiny random-weight models (BLIP, OWLv2, DPT, CLIP) loaded through
their registries: every category judged by its rule, every image accounted for, results resumable, and a folder's
departures from the suite reported. The phrase table is a stand-in made here by a small rule tagger (the shipped
one comes from spaCy's official model, not installable here): what is tested is that each rule reads it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from t2ibench.benchmarks.t2i_compbench import metrics as rules
from t2ibench.benchmarks.t2i_compbench.metrics import Token
from t2ibench.benchmarks.t2i_compbench.suite import load_suite, select
from t2ibench.benchmarks.t2i_compbench.suite_phrases import Parse, table_json
from t2ibench.cli import main

DET, ADP = {"a", "an", "the", "its"}, {"on", "of", "to", "next", "near", "in", "front", "at", "top"}
ADJ = {"green", "blue", "oblong", "teardrop", "plastic", "glass", "red", "brown"}
VERB = {"is", "was", "looking", "marveling", "and"}
TINY = ["--vqa-model", "tiny-random", "--detector-model", "tiny-random", "--detector-threshold", "0", "--depth-model",
        "tiny-random", "--clip-model", "tiny-random", "--device", "cpu", "--quiet"]  # fmt: skip


def stand_in_parse(text: str) -> Parse:
    """A rule tagger's parse (not spaCy's): determiners, prepositions, adjectives and verbs from small lists, every
    other word a NOUN; chunks: a determiner, adjectives and nouns run together."""
    words = [(m.group(), text[m.end() : m.end() + 1] == " ") for m in re.finditer(r"[A-Za-z]+|[^\sA-Za-z]", text)]
    tokens = []
    for w, space in words:
        low = w.lower()
        pos = ("DET" if low in DET else "ADP" if low in ADP else "ADJ" if low in ADJ else "VERB" if low in VERB
               else "PUNCT" if not w.isalpha() else "NOUN")  # fmt: skip
        tokens.append(Token(w, pos, " " if space else ""))
    chunks, current = [], []
    for t in tokens:
        if t.pos in ("DET", "ADJ", "NOUN") and not (t.pos == "DET" and current and current[-1].pos == "NOUN"):
            current.append(t)
        else:
            if any(c.pos == "NOUN" for c in current):
                chunks.append(" ".join(c.text for c in current))
            current = [t] if t.pos == "DET" else []
    if any(c.pos == "NOUN" for c in current):
        chunks.append(" ".join(c.text for c in current))
    return Parse(tuple(tokens), tuple(chunks))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The reference's folder of the first prompt of each category, two images each, and a stand-in phrase table."""
    from PIL import Image

    root = tmp_path_factory.mktemp("t2i")
    samples = root / "images" / "samples"
    samples.mkdir(parents=True)
    suite = load_suite()
    rng = np.random.default_rng(0)
    n = 0
    for prompt in select(suite, None, 1):
        for _ in range(2):
            Image.fromarray(rng.integers(0, 256, (80, 120, 3), dtype=np.uint8)).save(
                samples / f"{prompt.text}_{n:06d}.png"
            )
            n += 1
    table = root / "phrases.json"
    parser = {"library": "test", "version": "0", "model": "rule tagger"}
    table.write_text(table_json(parser, suite.sha256, {p.text: stand_in_parse(p.text) for p in suite.prompts}))
    return root / "images", table


def test_every_category_is_judged_by_its_rule_and_resumes(
    folder: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
):
    images, table = folder
    out = images.parent / "results.jsonl"
    args = ["evaluate", "t2i_compbench", str(images), "--per-category", "1", "--phrases", str(table), "--out", str(out),
            "--json", str(images.parent / "tables.json"), *TINY]  # fmt: skip
    assert main(args) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted({r["category"] for r in lines}) == sorted(rules.CATEGORIES)
    assert len(lines) == 16
    by = {r["category"]: r for r in lines}
    assert by["color"]["details"]["questions"] == ["a green bench?", "a blue bowl?"]
    assert len(by["color"]["details"]["answers"]) == 2
    assert by["spatial"]["details"]["objects"] == ["giraffe", "lamp"]
    assert by["spatial"]["details"]["relation"] == "next to"
    assert by["3d_spatial"]["details"]["relation"] == "in front of"
    assert by["numeracy"]["details"]["objects"] == ["boy"]
    assert by["numeracy"]["details"]["counts"] == [2]
    complex_ = by["complex"]["details"]
    suite = load_suite()
    assert complex_["kind"] == rules.complex_kind(by["complex"]["prompt"], suite.complex_spatial, suite.complex_action)
    expected = rules.three_in_one(complex_["kind"], complex_["attribute"], complex_["spatial"], complex_["action"])
    assert by["complex"]["score"] == expected
    assert complex_["clip"]["text"] == "The hat was on top of the coat rack ."  # adjectives out (red, brown)
    assert all(0 <= r["score"] <= 1 for r in lines if r["category"] != "non_spatial")
    assert by["3d_spatial"]["protocol"]["models"].keys() == {"detector", "depth"}
    assert by["color"]["protocol"]["phrases"]["model"] == "rule tagger"
    tables = json.loads((images.parent / "tables.json").read_text())
    assert [c["category"] for c in tables["categories"]] == list(rules.CATEGORIES)
    assert tables["evaluation"]["rule"] == "reference"
    printed = capsys.readouterr().out
    assert "| Model | Color | Shape | Texture | 2D-Spatial | 3D-Spatial | Non-Spatial | Numeracy | Complex |" in printed
    # resume: a partial file (t2ibench.resume) holding half the images under the same settings: those are kept
    from t2ibench.benchmarks.t2i_compbench.evaluate import parse_result, run_settings
    from t2ibench.benchmarks.t2i_compbench.options import T2ICompBenchConfig
    from t2ibench.hashing import file_sha256
    from t2ibench.resume import PartialResults
    from t2ibench.specs import DepthConfig, EmbedderConfig, OpenDetectorConfig, VQAJudgeConfig

    config = T2ICompBenchConfig(
        vqa=VQAJudgeConfig(backend="blip-vqa", model="tiny-random", batch_size=32),
        detector=OpenDetectorConfig(model="tiny-random", threshold=0.0),
        depth=DepthConfig(model="tiny-random"),
        clip=EmbedderConfig(backend="open_clip", model="tiny-random", pretrained="openai"),
        phrases=str(table),
    )

    def plant(rows: list[dict], score: float) -> None:
        partial = PartialResults(out, run_settings(config, load_suite()), parse_result)
        planted = [{**r, "score": score} for r in rows]
        partial.start((r, file_sha256(images / r["filename"])) for r in planted)
        partial.close()

    plant(lines[:8], 0.123456)
    assert main(args) == 0
    again = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["score"] for r in again[:8]] == [0.123456] * 8  # kept: their digests match
    assert [r["score"] for r in again[8:]] == [r["score"] for r in lines[8:]]
    assert not out.with_name(out.name + ".partial").exists()
    # a changed image is judged again; so is every row under another rule
    plant(lines[:8], 0.123456)
    first = images / lines[0]["filename"]
    first.write_bytes(first.read_bytes() + b"\0")  # the same pixels, other bytes
    assert main(args) == 0
    again = [json.loads(line) for line in out.read_text().splitlines()]
    assert again[0]["score"] != 0.123456
    assert [r["score"] for r in again[1:8]] == [0.123456] * 7
    plant(lines[:8], 0.123456)
    assert main([*args, "--rule", "corrected"]) == 0
    assert 0.123456 not in [json.loads(line)["score"] for line in out.read_text().splitlines()]


def test_a_folders_departures_are_reported_and_stop_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from PIL import Image

    samples = tmp_path / "samples"
    samples.mkdir()
    image = Image.fromarray(np.zeros((32, 32, 3), dtype=np.uint8))
    image.save(samples / "two boys_000000.png")
    image.save(samples / "a prompt nobody wrote_000001.png")
    image.save(samples / "two boys.png")
    (samples / "six airplanes_000002.png").write_bytes(b"not a png")
    args = ["evaluate", "t2i_compbench", str(tmp_path), "--categories", "numeracy", "--per-category", "3", *TINY]
    assert main(args) != 0
    err = capsys.readouterr().err
    assert "prompt 'a prompt nobody wrote' is not in the suite" in err
    assert "not named <prompt>_<number>.png" in err
    assert "six airplanes_000002.png" in err
    assert "missing prompts (2)" in err


def test_an_image_a_rule_cannot_score_stops_the_run_naming_it(folder: tuple[Path, Path], tmp_path: Path, capsys):
    images, table = folder
    raw = json.loads(table.read_text())
    spatial = "a giraffe next to a lamp"
    raw["parses"][spatial]["tokens"] = [[t, "DET", s] for t, _, s in raw["parses"][spatial]["tokens"]]  # no NOUN
    broken = tmp_path / "phrases.json"
    broken.write_text(json.dumps(raw))
    args = ["evaluate", "t2i_compbench", str(images), "--categories", "spatial", "--per-category", "1",
            "--phrases", str(broken), "--out", str(tmp_path / "r.jsonl"), *TINY]  # fmt: skip
    assert main(args) != 0
    err = capsys.readouterr().err
    assert f"{spatial}_000006.png: spatial: the parse of '{spatial}' has no NOUN" in err
    assert not (tmp_path / "r.jsonl").exists()  # nothing written as if scored
