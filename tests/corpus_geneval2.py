"""Bad-input corpus: GenEval 2 — malformed suite lines, a suite of the wrong shape, image maps that miss or add
prompts, and a judge whose tokenizer cannot spell an answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.corpus import case
from tests.geneval2_lines import LINE

__all__: list[str] = []

BIRDS = [["How many birds are in the image?", "one"], ["Are there any birds in the image?", "Yes"]]
OTHER = {**LINE, "prompt": "two dogs and a bird", "vqa_list": [*LINE["vqa_list"][:2], *BIRDS]}


def suite_file(tmp: Path, *lines: object) -> Path:
    path = tmp / "geneval2_data.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def read(path: Path, *, full: bool = False) -> Any:
    from t2ibench.benchmarks.geneval2.suite import read_geneval2

    return read_geneval2(path, full=full)


def image_map(tmp: Path, mapping: dict[str, str]) -> str:
    """The scan report of an image map against the two-prompt suite."""
    from PIL import Image

    from t2ibench.benchmarks.geneval2.evaluate import scan_images

    Image.new("RGB", (16, 16), (200, 30, 30)).save(tmp / "a.png")
    path = tmp / "images.json"
    path.write_text(json.dumps(mapping))
    return scan_images(path, read(suite_file(tmp, LINE, OTHER))).report()


@case(
    "geneval2-broken-line",
    "GenEval 2 suite with a line that is not JSON",
    "error naming the file and line",
    r"geneval2_data\.jsonl:2: not valid JSON",
)
def _(tmp: Path) -> Any:
    return read(suite_file(tmp, LINE, '{"prompt": "a cat", '))


@case(
    "geneval2-skills-count",
    "GenEval 2 line with fewer skills than questions",
    "error naming the file, line and both counts",
    r"geneval2_data\.jsonl:1: skills has 3 entries for 4 questions \(one skill per question\)",
)
def _(tmp: Path) -> Any:
    return read(suite_file(tmp, {**LINE, "skills": LINE["skills"][:3]}))


@case(
    "geneval2-digit-count-answer",
    "GenEval 2 count question answered with a digit ('2')",
    "error naming the line and question (the reference would score it against 'other')",
    r"geneval2_data\.jsonl:1: question 1: a count answer must be a number word",
)
def _(tmp: Path) -> Any:
    pairs = [["How many dogs are in the image?", "2"], *LINE["vqa_list"][1:]]
    return read(suite_file(tmp, {**LINE, "vqa_list": pairs}))


@case(
    "geneval2-unknown-skill",
    "GenEval 2 question with a misspelt skill",
    "error naming the line and question, with a did-you-mean",
    r":1: question 2: unknown skill 'objects'; did you mean 'object'\?",
)
def _(tmp: Path) -> Any:
    return read(suite_file(tmp, {**LINE, "skills": ["count", "objects", "count", "object"]}))


@case(
    "geneval2-wrong-shape",
    "a GenEval 2 file that is not the 800-prompt benchmark, read as the benchmark",
    "error giving the counts per atom count that are off",
    r"geneval2_data\.jsonl: 2 prompts, not GenEval 2's 800 with 100 per atom count 3\.\.10 \(3 atoms: 2",
)
def _(tmp: Path) -> Any:
    return read(suite_file(tmp, LINE, OTHER), full=True)


@case(
    "geneval2-map-missing-prompt",
    "GenEval 2 image map without a suite prompt",
    "listed as a missing prompt; the evaluation refuses to start",
    r"missing prompts \(1\): 1",
)
def _(tmp: Path) -> Any:
    return image_map(tmp, {LINE["prompt"]: "a.png"})


@case(
    "geneval2-map-unknown-prompt",
    "GenEval 2 image map with a prompt the suite does not have",
    "listed as a problem naming the map and the prompt",
    r"images\.json: prompt 'a photo of a cat' is not in the suite",
)
def _(tmp: Path) -> Any:
    return image_map(tmp, {LINE["prompt"]: "a.png", OTHER["prompt"]: "a.png", "a photo of a cat": "a.png"})


@case(
    "geneval2-map-missing-image",
    "GenEval 2 image map naming an image that does not exist",
    "listed as a problem naming the prompt and the file",
    r"prompt 'two dogs and a bird': .*nowhere\.png",
)
def _(tmp: Path) -> Any:
    return image_map(tmp, {LINE["prompt"]: "a.png", OTHER["prompt"]: "nowhere.png"})


@case(
    "geneval2-judge-without-answer-token",
    "a VQA judge whose tokenizer has no token for an answer variant",
    "error naming the suite line, the question and the variant",
    r"geneval2_data\.jsonl:1 question 2.*'Yes'",
)
def _(tmp: Path) -> Any:
    from PIL import Image

    from t2ibench.benchmarks.geneval2.evaluate import judge_images, scan_images

    class Judge:  # a character tokenizer that cannot spell 'Yes' (never asked: the ids are refused first)
        def describe(self) -> dict[str, str]:
            return {"backend": "scripted"}

        def encode(self, text: str) -> list[int]:
            return [] if text == "Yes" else [ord(c) for c in text]

        def decode(self, token_id: int) -> str:
            return chr(token_id)

        def ask(self, requests: Any) -> Any:
            raise AssertionError("asked despite a missing answer token")

    Image.new("RGB", (16, 16), (20, 30, 200)).save(tmp / "a.png")
    suite = read(suite_file(tmp, LINE))
    (tmp / "images.json").write_text(json.dumps({LINE["prompt"]: "a.png"}))
    scan = scan_images(tmp / "images.json", suite)
    return judge_images(scan.items, Judge(), suite=suite, rule="reference", show_progress=False)


def refresh_config(tmp: Path, **changes: Any) -> Any:
    """Plan a refresh of a GenEval + GenEval 2 config in the scratch workspace ``tmp`` (what `t2ibench run` does
    before any model work)."""
    from t2ibench.config import load_config
    from t2ibench.pipeline import plan_refresh, select_prompts
    from t2ibench.workspace import Workspace

    raw: dict[str, Any] = {
        "name": "c",
        "benchmarks": {"geneval": {"limit_per_task": 1}, "geneval2": {"per_atom_count": 1}},
        "models": [{"name": "a"}],
        **changes,
    }
    (tmp / "configs").mkdir(exist_ok=True)
    path = tmp / "configs" / "c.yaml"
    path.write_text(json.dumps(raw))
    config = load_config(path)
    return plan_refresh(config, Workspace.for_config(config, path), select_prompts(config.spine_prompts), "r")


@case(
    "geneval2-refresh-no-suite",
    "refresh config with benchmarks.geneval2 whose suite file is not in the workspace",
    "error naming the file and how to fetch it, before any model work",
    r"geneval2_data\.jsonl: GenEval 2's suite is not in the workspace \(benchmarks\.geneval2\.data\): run "
    r"`t2ibench data fetch geneval2`",
)
def _(tmp: Path) -> Any:
    return refresh_config(tmp)


@case(
    "geneval2-refresh-folder-model",
    "refresh config running GenEval 2 for a model whose images are imported from a GenEval folder",
    "error naming the model's key and the way out (benchmarks: [geneval], or evaluate geneval2)",
    r"c\.yaml:models\[0\]\.benchmarks: a: the folder backend makes GenEval images only",
)
def _(tmp: Path) -> Any:
    return refresh_config(tmp, models=[{"name": "a", "generator": {"backend": "folder", "source": "imgs"}}])


@case(
    "geneval2-refresh-both-spellings",
    "refresh config giving the GenEval suite as top-level geneval: and as benchmarks.geneval",
    "error naming the key, keeping one spelling",
    r"c\.yaml:geneval: the GenEval suite is given twice",
)
def _(tmp: Path) -> Any:
    return refresh_config(tmp, geneval={"per_task": 100})
