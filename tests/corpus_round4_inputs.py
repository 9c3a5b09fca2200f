"""Bad-input corpus, round four (issue 36, item 1): an edited resume file, input files refused only after minutes of
work, an image size that ended in a library traceback, and a σ error that did not say which side it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.corpus import case, geneval_folder, scan_report
from tests.corpus_files import cli

__all__: list[str] = []


# -- an edited .partial row ---------------------------------------------------------------------------------------


class _Judge:
    """A GenEval 2 judge over a small vocabulary whose answers depend on the image's bytes and the question."""

    NUMBERS = tuple(w for n in ("one", "two", "three") for w in (n, n.capitalize(), " " + n, " " + n.capitalize()))
    WORDS = ("Yes", "yes", " yes", " Yes", " ", "No", "x", "1", "2", "3", *NUMBERS)

    def describe(self) -> dict[str, str]:
        return {"backend": "corpus"}

    def encode(self, text: str) -> list[int]:
        if text in self.WORDS:
            return [self.WORDS.index(text)]
        if text.startswith(" ") and len(text) > 1:
            return [self.WORDS.index(" "), *self.encode(text[1:])]
        return [self.WORDS.index("x")]

    def decode(self, token_id: int) -> str:
        return self.WORDS[token_id]

    def ask(self, requests: Any) -> list[Any]:
        import hashlib

        from t2ibench.models.vqa import JudgeAnswer

        out = []
        for r in requests:
            seed = hashlib.sha256(Path(r.image).read_bytes() + r.text.encode()).digest()
            p = np.random.default_rng(list(seed[:8])).dirichlet(np.ones(len(self.WORDS)))
            top = int(np.argmax(p))
            out.append(JudgeAnswer(tuple(float(p[i]) for i in r.token_ids), top, self.WORDS[top]))
        return out


@case(
    "r4-partial-row-edited",
    "a GenEval 2 results.jsonl.partial row whose probabilities were raised to 0.95 by hand (image, prompt and "
    "protocol untouched)",
    "the row's own digest no longer matches: its image is judged again, with a note naming the file and the count "
    "(was reused as is: every probability of that image 0.95 in the tables)",
    r"results\.jsonl\.partial: judging 1 stored row\(s\) again: 1 edited \(the row's digest does not match its "
    r"content\)",
)
def _(tmp: Path) -> str:
    import logging

    from PIL import Image

    from t2ibench.benchmarks.geneval2.evaluate import evaluate_scan, parse_result, protocol, scan_images
    from t2ibench.benchmarks.geneval2.suite import read_geneval2
    from t2ibench.errors import NOTES
    from t2ibench.hashing import file_sha256
    from t2ibench.resume import PartialResults
    from tests.geneval2_lines import LINE

    (tmp / "suite.jsonl").write_text(json.dumps(LINE) + "\n")
    suite = read_geneval2(tmp / "suite.jsonl", full=False)
    (tmp / "imgs" / "00000" / "samples").mkdir(parents=True)
    (tmp / "imgs" / "00000" / "metadata.jsonl").write_text(json.dumps(suite.prompts[0].record()) + "\n")
    Image.new("RGB", (24, 20), (200, 30, 30)).save(tmp / "imgs" / "00000" / "samples" / "0000.png")
    scan = scan_images(tmp / "imgs", suite)
    honest = evaluate_scan(scan, _Judge(), suite=suite, rule="reference", show_progress=False)
    out = tmp / "results.jsonl"  # the .partial a run stopped after this image leaves, then one row edited by hand
    left = PartialResults(out, protocol(_Judge(), "reference", suite), parse_result)
    left.start([(json.loads(honest[0].to_json()), file_sha256(scan.items[0].path))])
    left.close()
    settings, row = left.path.read_text().splitlines()
    edited = json.loads(row)
    for question in edited["questions"]:
        question["probability"] = 0.95
    left.path.write_text(settings + "\n" + json.dumps(edited, sort_keys=True) + "\n")
    heard: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: heard.append(record.getMessage())  # type: ignore[method-assign]
    NOTES.addHandler(handler)
    try:
        resumed = evaluate_scan(scan, _Judge(), suite=suite, rule="reference", out=out, show_progress=False)
    finally:
        NOTES.removeHandler(handler)
    assert resumed == honest, "the edited probabilities were reused"
    return "\n".join(heard)


# -- input files checked when they are loaded, before any work ----------------------------------------------------


def _photo_set(tmp: Path, old: str, new: str) -> Path:
    """The built-in photo truth set with ``old`` replaced by ``new`` (once)."""
    from importlib import resources

    text = (resources.files("t2ibench.benchmarks.geneval") / "data" / "photo_truth.yaml").read_text(encoding="utf-8")
    assert old in text
    (tmp / "photos.yaml").write_text(text.replace(old, new, 1))
    return tmp / "photos.yaml"


def _selftest(tmp: Path, truth: Path) -> str:
    args = ["--detector", "opencv-ssd", "--colour", "lite", "--per-task", "1", "--quiet"]
    return cli("selftest", *args, "--out", tmp / "out", "--photo-truth", truth)


@case(
    "r4-selftest-photo-checksum",
    "`t2ibench selftest --photo-truth FILE` whose photo has another pixel checksum",
    "refused when the file is loaded, in 0.6 s, before any model is built (was after ≈ 40 s with the lite "
    "evaluator, ≈ 3 min with the reference one: the compositor set is judged first)",
    r"exit 2: .*photos\.yaml: photos\.astronaut: photo 'skimage:astronaut': its pixels \(sha256 7605af19ba2b…\) "
    r"are not the ones reviewed \(0605af19ba2b…\)",
)
def _(tmp: Path) -> str:
    return _selftest(tmp, _photo_set(tmp, "sha256: 7605af19", "sha256: 0605af19"))


@case(
    "r4-selftest-photo-path-source",
    "`t2ibench selftest --photo-truth FILE` whose photo source is a path ('skimage:../etc/passwd')",
    "refused when the file is parsed, naming the entry (was after ≈ 20 s of judging)",
    r"exit 2: .*photos\.yaml: photos\.astronaut\.source: photo source 'skimage:\.\./etc/passwd': expected a bare "
    r"name \(no path\)",
)
def _(tmp: Path) -> str:
    return _selftest(tmp, _photo_set(tmp, "source: skimage:astronaut", "source: 'skimage:../etc/passwd'"))


@case(
    "r4-agreement-flow-annotations",
    "`t2ibench agreement --flow` with an annotation file missing GenEval's columns",
    "refused before the flow starts (was after the flow's ≈ 15 s start-up)",
    r"exit 2: .*bad\.csv: not a GenEval annotation file: missing column\(s\) Input\.image_id",
)
def _(tmp: Path) -> str:
    from t2ibench.benchmarks.geneval.suite import generate_suite, write_suite

    write_suite(tmp / "meta.jsonl", generate_suite(seed=0, per_task=1))
    (tmp / "bad.csv").write_text("HITId,Input.prompt_id\nH,0\n")
    return cli("agreement", "--flow", "--annotations", tmp / "bad.csv", "--metadata", tmp / "meta.jsonl", "--out", tmp)


# -- degenerate image sizes ------------------------------------------------------------------------------------------


@case(
    "r4-image-1x20000",
    "a 1 × 20 000 px image in a GenEval image folder",
    "listed as a problem naming the file and the size rule (the scan said the folder was fine; judging ended in a "
    "transformers ValueError traceback and left a .partial)",
    r"00001/samples/00000\.png: degenerate size 1×20000 px \(a side under 8 px; images to judge have each side "
    r"≥ 8 px, aspect ratio ≤ 40:1",
)
def _(tmp: Path) -> str:
    from PIL import Image

    folder = geneval_folder(tmp)
    Image.new("RGB", (1, 20_000), (200, 20, 20)).save(folder / "00001" / "samples" / "00000.png")
    return scan_report(folder)


@case(
    "r4-image-strip-geneval2-map",
    "a 2 000 × 40 px strip (50:1) as a GenEval 2 image map's image",
    "listed as a problem naming the prompt, the file and the aspect ratio (Qwen3-VL refuses beyond 200:1; the "
    "detectors' resize leaves under one stride)",
    r"prompt '.*': .*strip\.png: degenerate size 2000×40 px \(aspect ratio 50:1",
)
def _(tmp: Path) -> str:
    from PIL import Image

    from t2ibench.benchmarks.geneval2.evaluate import scan_images
    from t2ibench.benchmarks.geneval2.suite import read_geneval2
    from tests.geneval2_lines import LINE

    (tmp / "suite.jsonl").write_text(json.dumps(LINE) + "\n")
    Image.new("RGB", (2000, 40), (200, 30, 30)).save(tmp / "strip.png")
    (tmp / "map.json").write_text(json.dumps({LINE["prompt"]: "strip.png"}))
    return scan_images(tmp / "map.json", read_geneval2(tmp / "suite.jsonl", full=False)).report()


# -- which side's σ ------------------------------------------------------------------------------------------------


def _pairs(tmp: Path, texts: np.ndarray) -> str:
    rng = np.random.default_rng(0)
    np.savez(tmp / "images.npz", embeddings=rng.normal(size=(30, 6)), ids=np.arange(30) % len(texts))
    np.savez(tmp / "prompts.npz", embeddings=texts, ids=np.arange(len(texts)))
    return cli("diversity", tmp / "images.npz", "--prompts", tmp / "prompts.npz")


@case(
    "r4-scendi-one-prompt",
    "`t2ibench diversity IMAGES --prompts PROMPTS` with one prompt embedding",
    "error naming the prompts file as the text side and --text-sigma (said 'X has 1 row(s) … (or give sigma)')",
    r"exit 2: .*prompts\.npz \(text embeddings\) has 1 row\(s\); 2 are needed for the median-heuristic σ \(or give "
    r"--text-sigma\)",
)
def _(tmp: Path) -> str:
    return _pairs(tmp, np.ones((1, 4)))


@case(
    "r4-scendi-constant-prompts",
    "`t2ibench diversity IMAGES --prompts PROMPTS` with three identical prompt embeddings",
    "error naming the prompts file as the text side and --text-sigma (said 'set sigma explicitly': the image σ's "
    "option)",
    r"exit 2: .*prompts\.npz \(text embeddings\): median pairwise distance is 0 .*: set --text-sigma explicitly",
)
def _(tmp: Path) -> str:
    return _pairs(tmp, np.ones((3, 4)))
