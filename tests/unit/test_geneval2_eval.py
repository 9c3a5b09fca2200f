"""GenEval 2 evaluation of an image folder or map with a scripted judge: every image accounted for, results
written and read back, resumed after an interruption only under the same protocol, tables equal to brute force."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from statistics import mean

import numpy as np
import pytest
from PIL import Image

from t2ibench.benchmarks.geneval2.evaluate import (
    evaluate_scan,
    judge_images,
    read_results,
    scan_images,
    summarise,
)
from t2ibench.benchmarks.geneval2.suite import Geneval2Suite, read_geneval2
from t2ibench.errors import InputError
from t2ibench.models.vqa import JudgeAnswer, JudgeRequest
from tests.geneval2_lines import LINES

# as Qwen's tokenizer: a space and a word are one token, a space and a digit two (the bare space, then the digit)
WORDS = ["Yes", "yes", " yes", " Yes", " ", "No", "x", "1", "2", "3"] + [
    w for word in ("one", "two", "three") for w in (word, word.capitalize(), " " + word, " " + word.capitalize())
]


class ScriptedJudge:
    """A judge over a 22-token vocabulary whose answers depend only on the image's bytes and the question."""

    def __init__(self, *, name: str = "scripted") -> None:
        self.name = name
        self.calls: list[int] = []

    def describe(self) -> dict[str, object]:
        return {"backend": self.name}

    def encode(self, text: str) -> list[int]:
        if text in WORDS:
            return [WORDS.index(text)]
        if text.startswith(" ") and len(text) > 1:
            return [WORDS.index(" "), *self.encode(text[1:])]
        return [WORDS.index("x")]

    def decode(self, token_id: int) -> str:
        return WORDS[token_id]

    def probabilities(self, image: Path, text: str) -> np.ndarray:
        seed = hashlib.sha256(Path(image).read_bytes() + text.encode()).digest()
        p = np.random.default_rng(list(seed[:8])).dirichlet(np.ones(len(WORDS)) * 0.3).astype(np.float32)
        return p

    def ask(self, requests: list[JudgeRequest]) -> list[JudgeAnswer]:
        self.calls.append(len(requests))
        out = []
        for r in requests:
            p = self.probabilities(Path(r.image), r.text)
            top = int(np.argmax(p))
            out.append(JudgeAnswer(tuple(float(p[i]) for i in r.token_ids), top, WORDS[top]))
        return out


@pytest.fixture
def suite(tmp_path: Path) -> Geneval2Suite:
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    return read_geneval2(path, full=False)


def folder(root: Path, suite: Geneval2Suite, samples: int = 2) -> Path:
    for p in suite.prompts:
        d = root / f"{p.index:05d}"
        (d / "samples").mkdir(parents=True)
        (d / "metadata.jsonl").write_text(json.dumps(p.record()) + "\n")
        for k in range(samples):
            colour = (40 * p.index, 90 * k, 17 * (p.index + k))
            Image.new("RGB", (24, 20), colour).save(d / "samples" / f"{k:04d}.png")
    return root


def test_a_folder_is_judged_and_its_results_read_back_with_their_protocol(tmp_path, suite):
    scan = scan_images(folder(tmp_path / "imgs", suite), suite, images_per_prompt=2)
    assert scan.ok, scan.report()
    judge = ScriptedJudge()
    out = tmp_path / "results.jsonl"
    results = evaluate_scan(scan, judge, suite=suite, rule="reference", out=out, show_progress=False)
    assert len(results) == 6
    assert read_results(out) == results
    assert not Path(str(out) + ".partial").exists()
    from t2ibench import __version__

    expected = {"answer_rule": "reference", "judge": {"backend": "scripted"}, "suite_sha256": suite.sha256}
    assert {json.dumps(r.protocol, sort_keys=True) for r in results} == {
        json.dumps(expected | {"t2ibench": __version__}, sort_keys=True)
    }
    # results name images relative to the folder: another spelling of the same folder finds them
    assert results[0].filename == "00000/samples/0000.png"
    # each question's probability is the scripted judge's probabilities summed over its variants' first tokens
    first = results[0]
    image = scan.items[0].path
    p = judge.probabilities(image, "How many dogs are in the image? Answer in one word.")
    expected = sum(float(p[WORDS.index(w)]) for w in ("two", "Two", " two", " Two", "2", " "))
    assert first.questions[0].probability == pytest.approx(expected, abs=1e-7)
    assert first.questions[0].correct == (WORDS[int(np.argmax(p))].lower() in ("two", "Two", " two", " Two", "2", " 2"))


def test_the_tables_equal_a_brute_force_of_the_reference_formulas(tmp_path, suite):
    scan = scan_images(folder(tmp_path / "imgs", suite, samples=1), suite)
    results = evaluate_scan(scan, ScriptedJudge(), suite=suite, rule="reference", show_progress=False)
    tables = summarise(results, resamples=50)
    am = 100 * mean(mean(q.probability for q in r.questions) for r in results)
    gm = 100 * mean(float(np.exp(np.mean(np.log([q.probability for q in r.questions])))) for r in results)
    tifa = 100 * mean(mean(float(q.correct) for q in r.questions) for r in results)
    vqa = 100 * mean(r.vqascore for r in results)
    assert tables.overall["soft_tifa_am"].estimate == pytest.approx(am, abs=1e-9)
    assert tables.overall["soft_tifa_gm"].estimate == pytest.approx(gm, abs=1e-9)
    assert tables.overall["tifa"].estimate == pytest.approx(tifa, abs=1e-9)
    assert tables.overall["vqascore"].estimate == pytest.approx(vqa, abs=1e-9)
    counts = [q.probability for r in results for q in r.questions if q.skill == "count"]
    assert tables.skills["count"].estimate == pytest.approx(100 * mean(counts), abs=1e-9)
    assert tables.skills["count"].questions == len(counts)


def test_an_interrupted_run_resumes_only_the_missing_images_and_only_under_the_same_protocol(tmp_path, suite):
    scan = scan_images(folder(tmp_path / "imgs", suite), suite)
    out = tmp_path / "results.jsonl"
    judge = ScriptedJudge()
    stop = {"after": 0}

    def interrupt(requests):  # the first call's images are stored, then Ctrl-C
        stop["after"] += 1
        if stop["after"] > 1:
            raise KeyboardInterrupt
        return ScriptedJudge.ask(judge, requests)

    judge.ask = interrupt  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        judge_images_in_chunks(scan, judge, suite, out)
    partial = Path(str(out) + ".partial")
    kept = partial.read_text().splitlines()
    assert len(kept) == 1 + 2  # the protocol line, the first call's two images
    again = ScriptedJudge()
    results = evaluate_scan(scan, again, suite=suite, rule="reference", out=out, show_progress=False)
    assert sum(again.calls) == sum(len(p.questions) + 1 for p in suite.prompts[1:] for _ in range(2))
    fresh = evaluate_scan(scan, ScriptedJudge(), suite=suite, rule="reference", show_progress=False)
    assert results == fresh
    # another answer rule is another protocol: nothing is reused
    partial.write_text("\n".join(kept) + "\n")
    other = ScriptedJudge()
    evaluate_scan(scan, other, suite=suite, rule="unique", out=out, show_progress=False)
    assert sum(other.calls) == sum(len(p.questions) + 1 for p in suite.prompts for _ in range(2))


def judge_images_in_chunks(scan, judge, suite, out, expect_stop=False):
    """evaluate_scan with two images per judge call (so an interruption lands between calls)."""
    if expect_stop:
        with pytest.raises(KeyboardInterrupt):
            judge_images_in_chunks(scan, judge, suite, out)
        return None
    import t2ibench.benchmarks.geneval2.evaluate as module

    original = module.judge_images

    def two_per_call(*args, **kwargs):
        kwargs["images_per_call"] = 2
        return original(*args, **kwargs)

    module.judge_images = two_per_call
    try:
        return evaluate_scan(scan, judge, suite=suite, rule="reference", out=out, show_progress=False)
    finally:
        module.judge_images = original


def test_an_image_map_accounts_for_every_prompt_and_image(tmp_path, suite):
    imgs = folder(tmp_path / "imgs", suite, samples=1)
    paths = {p.prompt: str(imgs / f"{p.index:05d}" / "samples" / "0000.png") for p in suite.prompts}
    good = tmp_path / "map.json"
    good.write_text(json.dumps(paths))
    scan = scan_images(good, suite)
    assert scan.ok, scan.report()
    assert [i.prompt.index for i in scan.items] == [0, 1, 2]
    # relative paths are read from the map's folder
    rel = tmp_path / "rel.json"
    rel.write_text(json.dumps({k: str(Path(v).relative_to(tmp_path)) for k, v in paths.items()}))
    assert scan_images(rel, suite).ok
    bad = dict(paths)
    del bad[suite.prompts[1].prompt]
    bad["a prompt of another suite"] = paths[suite.prompts[0].prompt]
    bad[suite.prompts[2].prompt] = paths[suite.prompts[0].prompt]  # one file for two prompts
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(bad))
    scan = scan_images(broken, suite)
    assert not scan.ok
    assert scan.missing_prompts == (1,)
    text = scan.report()
    assert "'a prompt of another suite' is not in the suite" in text
    assert "the same file as the image of prompt 'two dogs and a cat'" in text
    (tmp_path / "unreadable.png").write_bytes(b"not a png")
    unreadable = tmp_path / "unreadable.json"
    unreadable.write_text(json.dumps({suite.prompts[0].prompt: str(tmp_path / "unreadable.png")}))
    assert "unreadable.png" in scan_images(unreadable, suite).report()
    for content, message in (("[1]", "must be a JSON object"), ('{"a": 1, "a": 2}', "given twice")):
        odd = tmp_path / "odd.json"
        odd.write_text(content)
        with pytest.raises(InputError, match=message):
            scan_images(odd, suite)
    with pytest.raises(InputError, match=r"neither an image folder nor a \.json image map"):
        scan_images(tmp_path / "nothing.txt", suite)


def test_a_folder_with_an_unknown_or_missing_prompt_is_reported(tmp_path, suite):
    imgs = folder(tmp_path / "imgs", suite, samples=1)
    extra = imgs / "00007" / "samples"
    extra.mkdir(parents=True)
    import shutil

    shutil.rmtree(imgs / "00001")
    scan = scan_images(imgs, suite, images_per_prompt=1)
    assert scan.missing_prompts == (1,)
    assert "prompt 00007 is not in the suite" in scan.report()


def test_results_of_two_protocols_are_not_summarised_together(tmp_path, suite):
    scan = scan_images(folder(tmp_path / "imgs", suite, samples=1), suite)
    a = evaluate_scan(scan, ScriptedJudge(), suite=suite, rule="reference", show_progress=False)
    b = evaluate_scan(scan, ScriptedJudge(name="other"), suite=suite, rule="reference", show_progress=False)
    with pytest.raises(InputError, match="measured under 2 protocols"):
        summarise(a[:2] + b[2:])
    with pytest.raises(InputError, match="no GenEval 2 results"):
        summarise([])


def test_a_judge_without_an_answer_token_is_refused_naming_the_line_and_question(tmp_path, suite):
    class NoYes(ScriptedJudge):
        def encode(self, text: str) -> list[int]:
            return [] if text.strip().lower() == "yes" else super().encode(text)

    scan = scan_images(folder(tmp_path / "imgs", suite, samples=1), suite)
    with pytest.raises(InputError, match=r"suite\.jsonl:1 question 2") as info:
        judge_images(scan.items, NoYes(), suite=suite, rule="reference", show_progress=False)
    assert "\n" not in str(info.value)


def test_a_resume_reuses_nothing_of_another_suite_file_or_of_an_edited_question(tmp_path, suite):
    """An image map (no metadata to disagree with): a stored row is reused only under the same suite file, and
    only for the very questions the current suite asks."""
    from t2ibench.benchmarks.geneval2.evaluate import parse_result
    from t2ibench.resume import PartialResults

    imgs = folder(tmp_path / "imgs", suite, samples=1)
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({p.prompt: f"imgs/{p.index:05d}/samples/0000.png" for p in suite.prompts}))
    out = tmp_path / "results.jsonl"
    partial = Path(str(out) + ".partial")
    judge_images_in_chunks(scan_images(mapping, suite), StopAfter(1), suite, out, expect_stop=True)
    stopped = partial.read_text()
    assert len(PartialResults(out, {}, parse_result).read()[1]) == 2  # two images judged before the stop
    # the same suite: both reused
    again = ScriptedJudge()
    evaluate_scan(scan_images(mapping, suite), again, suite=suite, rule="reference", out=out, show_progress=False)
    assert sum(again.calls) == len(suite.prompts[2].questions) + 1
    # one question edited (another file, another hash): another protocol, nothing reused
    edited = json.loads(json.dumps(LINES))
    edited[1]["vqa_list"][1] = ["Is the car blue?", "Yes"]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(line) + "\n" for line in edited))
    changed = read_geneval2(other, full=False)
    partial.write_text(stopped)
    fresh = ScriptedJudge()
    results = evaluate_scan(scan_images(mapping, changed), fresh, suite=changed, rule="reference", out=out)
    assert sum(fresh.calls) == sum(len(p.questions) + 1 for p in changed.prompts)
    assert results[1].questions[1].question == "Is the car blue?"
    del imgs


class StopAfter(ScriptedJudge):
    """A judge interrupted (Ctrl-C) at its call after the first ``calls``."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.allowed = calls

    def ask(self, requests):
        if len(self.calls) >= self.allowed:
            raise KeyboardInterrupt
        return super().ask(requests)


def test_a_torn_partial_line_is_dropped_without_swallowing_the_next_row(tmp_path, suite):
    imgs = folder(tmp_path / "imgs", suite, samples=1)
    scan = scan_images(imgs, suite)
    out = tmp_path / "results.jsonl"
    partial = Path(str(out) + ".partial")
    judge_images_in_chunks(scan, StopAfter(1), suite, out, expect_stop=True)
    with open(partial, "a") as fh:
        fh.write('{"prompt_index": 2, "sam')  # a torn line, no newline
    judge_images_in_chunks(scan, StopAfter(0), suite, out, expect_stop=True)  # resumed, stopped again at once
    lines = partial.read_text().splitlines()
    assert [json.loads(line) for line in lines]  # the torn fragment is gone: every line whole
    assert len(lines) == 3  # the protocol and the two rows kept
    results = evaluate_scan(scan, ScriptedJudge(), suite=suite, rule="reference", out=out, show_progress=False)
    assert len(results) == 3
    assert len(read_results(out)) == 3


def test_a_probability_edited_in_the_partial_file_is_judged_again_not_reused(tmp_path, suite, caplog):
    """The reproducer of issue 36: a stored row whose probabilities were raised by hand (image, prompt and protocol
    untouched) no longer matches its own digest; its image is asked again and the tables equal an honest run."""
    import logging

    scan = scan_images(folder(tmp_path / "imgs", suite, samples=1), suite)
    out = tmp_path / "results.jsonl"
    honest = evaluate_scan(scan, ScriptedJudge(), suite=suite, rule="reference", show_progress=False)
    judge_images_in_chunks(scan, StopAfter(1), suite, out, expect_stop=True)  # two images stored
    partial = Path(str(out) + ".partial")
    lines = partial.read_text().splitlines()
    row = json.loads(lines[1])
    for q in row["questions"]:
        q["probability"] = 0.95
    lines[1] = json.dumps(row, sort_keys=True)
    partial.write_text("\n".join(lines) + "\n")
    caplog.set_level(logging.WARNING, logger="t2ibench")
    again = ScriptedJudge()
    resumed = evaluate_scan(scan, again, suite=suite, rule="reference", out=out, show_progress=False)
    assert resumed == honest
    assert sum(again.calls) == sum(len(p.questions) + 1 for p in (suite.prompts[0], suite.prompts[2]))
    said = [r.getMessage() for r in caplog.records if r.name == "t2ibench"]
    assert f"{partial}: judging 1 stored row(s) again: 1 edited (the row's digest does not match its content)" in said
    am = summarise(resumed, resamples=10).overall["soft_tifa_am"].estimate
    assert am == pytest.approx(summarise(honest, resamples=10).overall["soft_tifa_am"].estimate)


def test_an_image_of_a_degenerate_size_is_a_scan_problem_and_never_reaches_the_judge(tmp_path, suite):
    """GenEval 2's folder and map scans share GenEval's image check; the judge's own loader refuses it too."""
    from t2ibench.models.vqa import open_image

    imgs = folder(tmp_path / "imgs", suite, samples=1)
    strip = imgs / "00001" / "samples" / "0000.png"
    Image.new("RGB", (1, 20_000)).save(strip)
    scan = scan_images(imgs, suite)
    assert [scan.name(i) for i in scan.items] == ["00000/samples/0000.png", "00002/samples/0000.png"]
    assert scan.problems == (
        f"{strip}: degenerate size 1×20000 px (a side under 8 px; images to judge have each side ≥ 8 px, aspect "
        "ratio ≤ 40:1, ≤ 89,478,485 pixels)",
    )
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({p.prompt: f"imgs/{p.index:05d}/samples/0000.png" for p in suite.prompts}))
    (problem,) = scan_images(mapping, suite).problems
    assert f"prompt {suite.prompts[1].prompt!r}: {strip}: degenerate size 1×20000 px" in problem
    with pytest.raises(InputError, match=r"0000\.png: degenerate size 1×20000 px"):
        open_image(strip)
    with pytest.raises(InputError, match=r"a judge request's image: degenerate size 400×2 px"):
        open_image(Image.new("RGB", (400, 2)))


def test_a_judge_answer_that_is_not_a_probability_stops_before_anything_is_stored(tmp_path, suite):
    class NaNJudge(ScriptedJudge):
        def ask(self, requests):
            answers = super().ask(requests)
            return [JudgeAnswer((float("nan"),) * len(a.token_probabilities), a.top_token, a.top_text) for a in answers]

    scan = scan_images(folder(tmp_path / "imgs", suite, samples=1), suite)
    out = tmp_path / "results.jsonl"
    with pytest.raises(InputError, match=r"0000\.png: the judge's probability nan for .* is not a probability") as info:
        evaluate_scan(scan, NaNJudge(), suite=suite, rule="reference", out=out, show_progress=False)
    assert "\n" not in str(info.value)
    assert not out.exists()
    assert len(Path(str(out) + ".partial").read_text().splitlines()) == 1  # the protocol line only


def test_a_partial_file_that_is_a_folder_or_not_text_is_a_one_line_error(tmp_path, suite):
    scan = scan_images(folder(tmp_path / "imgs", suite, samples=1), suite)
    out = tmp_path / "results.jsonl"
    partial = Path(str(out) + ".partial")
    partial.mkdir()
    with pytest.raises(InputError, match="partial results file"):
        evaluate_scan(scan, ScriptedJudge(), suite=suite, rule="reference", out=out, show_progress=False)
    partial.rmdir()
    partial.write_bytes(b"\xff\xfe\x00 not utf-8")
    with pytest.raises(InputError, match=r"cannot read the partial results \(UnicodeDecodeError\); remove it"):
        evaluate_scan(scan, ScriptedJudge(), suite=suite, rule="reference", out=out, show_progress=False)


def test_outside_float32_each_image_is_judged_in_passes_of_its_own(tmp_path, suite):
    class Bfloat16(ScriptedJudge):
        def describe(self) -> dict[str, object]:
            return {"backend": "scripted", "loaded_dtype": "bfloat16"}

    scan = scan_images(folder(tmp_path / "imgs", suite, samples=2), suite)
    low, full = Bfloat16(), ScriptedJudge()
    judge_images(scan.items, low, suite=suite, rule="reference", show_progress=False)
    judge_images(scan.items, full, suite=suite, rule="reference", show_progress=False)
    assert low.calls == [len(i.prompt.questions) + 1 for i in scan.items]  # one image per ask
    assert full.calls == [sum(len(i.prompt.questions) + 1 for i in scan.items)]  # several images per ask
