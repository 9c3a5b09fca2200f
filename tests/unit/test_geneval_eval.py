"""GenEval folder accounting, results I/O, summaries and the evaluation loop (with stand-in models)."""

import json

import pytest
from PIL import Image

from t2ibench.benchmarks.geneval.evaluate import (
    ResultRow,
    evaluate_scan,
    judge_image,
    read_results,
    scan_folder,
    summarise,
    write_results,
)
from t2ibench.benchmarks.geneval.metrics import Detection, GenEvalParams
from t2ibench.benchmarks.geneval.suite import generate_suite, write_suite
from t2ibench.cli import main
from t2ibench.errors import InputError
from t2ibench.models.detection import DetectionSet

SUITE = generate_suite(seed=3, per_task=2)  # small: 80 single-object prompts + 2 per other task


def make_folder(root, suite, prompts=None, per_prompt=2, colour=(200, 30, 30)):
    for index in prompts if prompts is not None else range(len(suite)):
        folder = root / f"{index:05d}"
        (folder / "samples").mkdir(parents=True)
        (folder / "metadata.jsonl").write_text(json.dumps(suite[index]) + "\n")
        for k in range(per_prompt):
            Image.new("RGB", (64, 48), colour).save(folder / "samples" / f"{k:05d}.png")
    return root


# -- scanning ----------------------------------------------------------------------------------------------------


def test_complete_folder_scans_clean(tmp_path):
    scan = scan_folder(make_folder(tmp_path, SUITE), SUITE, images_per_prompt=2)
    assert scan.ok
    assert len(scan.items) == 2 * len(SUITE)
    assert scan.report().startswith(f"{tmp_path}: prompts expected {len(SUITE)}, found {len(SUITE)}")


def test_every_departure_is_listed(tmp_path):
    root = make_folder(tmp_path, SUITE, prompts=range(1, 20))
    (root / "notes").mkdir()  # non-digit folder
    make_folder(root, [*SUITE, SUITE[0]], prompts=[len(SUITE)])  # beyond the suite
    (root / "00001" / "metadata.jsonl").unlink()
    (root / "00002" / "metadata.jsonl").write_text("{broken\n")
    (root / "00003" / "metadata.jsonl").write_text(json.dumps(SUITE[4]) + "\n")  # disagrees with prompt 3
    for p in (root / "00004" / "samples").iterdir():
        p.unlink()
    (root / "00005" / "samples" / "00000.png").write_bytes(b"")
    (root / "00006" / "samples" / "00001.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    Image.new("RGB", (8, 8)).save(root / "00007" / "samples" / "00002.png")  # a third sample
    (root / "00008" / "samples" / "notes.txt").write_text("x")
    (root / "stray.txt").write_text("x")
    scan = scan_folder(root, SUITE, images_per_prompt=2)
    assert not scan.ok
    assert scan.missing_prompts[:1] == (0,)
    assert len(scan.missing_prompts) == len(SUITE) - 19
    assert scan.extra_prompts == (f"{len(SUITE):05d}",)
    assert scan.non_digit == ("notes",)
    problems = "\n".join(scan.problems)
    assert "00001: missing metadata.jsonl" in problems
    assert "00002/metadata.jsonl: malformed metadata" in problems
    assert "00003/metadata.jsonl: metadata disagrees with suite prompt 3" in problems
    assert "00004: no samples" in problems
    assert "00005/samples/00000.png: zero-byte file" in problems
    assert "00006/samples/00001.png: unreadable image" in problems
    assert "00007: 3 samples, expected 2" in problems
    assert any("notes.txt: not an image" in n for n in scan.notes)
    assert any("stray.txt" in n for n in scan.notes)
    report = scan.report()
    assert "missing prompt folders" in report
    assert "non-digit folders (1): notes" in report


@pytest.mark.parametrize(
    ("size", "why"),
    [
        ((1, 20_000), "a side under 8 px"),  # was judged: a transformers ValueError traceback, a .partial left
        ((7, 64), "a side under 8 px"),
        ((8 * 41, 8), "aspect ratio 41:1"),
    ],
)
def test_an_image_of_a_degenerate_size_is_a_problem_naming_it(tmp_path, size, why):
    root = make_folder(tmp_path, SUITE[:2], per_prompt=1)
    Image.new("RGB", size, (200, 30, 30)).save(root / "00001" / "samples" / "00000.png")
    scan = scan_folder(root, SUITE[:2], images_per_prompt=1)
    assert not scan.ok
    assert len(scan.items) == 1
    (problem,) = scan.problems
    assert problem.startswith(f"{root / '00001' / 'samples' / '00000.png'}: degenerate size {size[0]}×{size[1]} px")
    assert f"({why}; images to judge have each side ≥ 8 px, aspect ratio ≤ 40:1, ≤ 89,478,485 pixels)" in problem


def test_the_size_rule_holds_at_its_bounds_and_refuses_a_bomb_before_decoding(tmp_path, monkeypatch):
    from PIL import Image as PILImage
    from PIL import ImageFile

    from t2ibench.errors import InputError
    from t2ibench.images import MAX_ASPECT, MIN_SIDE, load_rgb, size_problem

    assert size_problem(MIN_SIDE, MIN_SIDE * MAX_ASPECT) is None  # the extremes allowed
    assert size_problem(MIN_SIDE - 1, MIN_SIDE) is not None
    assert size_problem(100, 100 * MAX_ASPECT + 1) is not None
    path = tmp_path / "big.png"
    PILImage.new("1", (3000, 2000)).save(path)  # 6 megapixels, a few kB
    monkeypatch.setattr(PILImage, "MAX_IMAGE_PIXELS", 4_000_000)  # PIL would warn and decode up to 8 M
    decoded = []
    original = ImageFile.ImageFile.load
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: decoded.append(1) or original(self))
    said = r"big\.png: degenerate size 3000×2000 px \(6,000,000 pixels; .*≤ 4,000,000 pixels\)"
    with pytest.raises(InputError, match=said):
        load_rgb(path)
    assert decoded == [], "refused from the header, before decoding"
    monkeypatch.setattr(PILImage, "MAX_IMAGE_PIXELS", 8_000_000)
    load_rgb(path)
    assert decoded, "the same file within the limit is decoded"


def test_scan_of_a_missing_directory(tmp_path):
    from t2ibench.errors import InputError

    with pytest.raises(InputError, match="not a directory"):
        scan_folder(tmp_path / "nope", SUITE)


# -- results and summaries ------------------------------------------------------------------------------------------


def row(index, tag, correct, sample="00000"):
    meta = {"tag": tag, "include": [{"class": "cat", "count": 1}], "prompt": f"p{index}"}
    return ResultRow(f"out/{index:05d}/samples/{sample}.png", tag, f"p{index}", correct, "", meta)


def test_summary_is_table2_arithmetic():
    rows = [
        row(0, "single_object", True),
        row(0, "single_object", False, "00001"),
        row(1, "two_object", False),
        row(2, "counting", True),
        row(3, "colors", True),
        row(4, "position", False),
        row(4, "position", True, "00001"),
        row(5, "color_attr", False),
    ]
    s = summarise(rows)
    acc = {t.task: t.accuracy for t in s.tasks}
    assert acc == {
        "single_object": 0.5,
        "two_object": 0.0,
        "counting": 1.0,
        "colors": 1.0,
        "position": 0.5,
        "color_attr": 0.0,
    }
    assert s.overall == pytest.approx(3.0 / 6)
    assert (s.images, s.correct_images, s.prompts, s.correct_prompts) == (8, 4, 6, 4)
    assert s.prompt_correct["00004"] is True
    one_task = summarise(rows[:2]).to_dict()  # like the reference summary_scores.py: over the tasks present
    assert one_task["overall"] == pytest.approx(0.5)
    assert one_task["tasks_present"] == 1


def test_results_round_trip_and_reference_format(tmp_path):
    rows = [row(0, "single_object", True), row(1, "two_object", False)]
    path = write_results(tmp_path / "results.jsonl", rows)
    assert read_results(path) == rows
    line = json.loads(path.read_text().splitlines()[0])
    assert set(line) == {"filename", "tag", "prompt", "correct", "reason", "metadata", "details"}
    assert isinstance(line["metadata"], str)
    assert isinstance(line["details"], str)


def test_failure_facts_round_trip_and_stay_out_of_reference_lines(tmp_path):
    extra = ResultRow(
        "out/00003/samples/00000.png",
        "position",
        "a photo of a dog right of a cat",
        False,
        "r",
        {
            "tag": "position",
            "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1, "position": ["right of", 0]}],
            "prompt": "a photo of a dog right of a cat",
        },
        details={"cat": [[0, 0, 1, 1, 0.9]]},
        colours={"cat": ["red", None]},
        relation="left of+above",
    )
    path = write_results(tmp_path / "results.jsonl", [extra, row(1, "two_object", False)])
    assert read_results(path)[0] == extra
    # rows without these facts write exactly GenEval's keys (reference tools read our files unchanged)
    assert "relation" not in json.loads(path.read_text().splitlines()[1])


def test_reference_results_lines_are_read(tmp_path):
    reference = {
        "filename": "outputs/00012/samples/00003.png",
        "tag": "counting",
        "prompt": "a photo of two clocks",
        "correct": False,
        "reason": "expected clock>=2, found 1",
        "metadata": json.dumps(
            {
                "tag": "counting",
                "include": [{"class": "clock", "count": 2}],
                "exclude": [{"class": "clock", "count": 3}],
                "prompt": "a photo of two clocks",
            }
        ),
        "details": json.dumps({"clock": [[1, 2, 3, 4, 0.99]]}),
    }
    (tmp_path / "r.jsonl").write_text(json.dumps(reference) + "\n")
    (parsed,) = read_results(tmp_path / "r.jsonl")
    assert parsed.prompt_index == 12
    assert parsed.sample == "00003"
    assert parsed.details == {"clock": [[1, 2, 3, 4, 0.99]]}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{nope", "r.jsonl:1: not valid JSON"),
        ('{"filename": "a"}', "r.jsonl:1: missing tag, prompt, correct, metadata"),
        ('{"filename": "a", "tag": "x", "prompt": "p", "correct": true, "metadata": "{}"}', "unknown tag 'x'"),
        (
            '{"filename": "a", "tag": "colors", "prompt": "p", "correct": true, "metadata": "{oops"}',
            "metadata: not valid JSON",
        ),
        (
            '{"filename": "a", "tag": "colors", "prompt": "p", "correct": true, "metadata": "{}", '
            '"colours": "{\\"car\\": [\\"teal\\"]}"}',
            "r.jsonl:1: colours must map classes to lists of GenEval colour names",
        ),
    ],
)
def test_bad_results_lines_are_named(tmp_path, line, message):
    from t2ibench.errors import InputError

    (tmp_path / "r.jsonl").write_text(line + "\n")
    with pytest.raises(InputError, match=message):
        read_results(tmp_path / "r.jsonl")


# -- the evaluation loop with stand-in models ----------------------------------------------------------------------


class OracleDetector:
    """Finds exactly the objects each prompt asks for, left to right, and counts its calls."""

    name = "oracle"

    def __init__(self):
        self.calls = 0

    def describe(self):
        return {"backend": self.name}

    def detect(self, images):
        self.calls += 1
        return [DetectionSet(detections=list(self.current), masks=None, image_size=images[0].size)]


class RedColour:
    def classify(self, image, objects, classname):
        return ["red"] * len(objects)


class KilledAfter(OracleDetector):
    """Dies (like a SIGKILL would end the loop) after ``n`` images."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def detect(self, images):
        if self.calls >= self.n:
            raise KeyboardInterrupt
        return super().detect(images)


COLOUR_SUITE = [{"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"}] + [
    {"tag": "colors", "include": [{"class": "car", "count": 1, "color": c}], "prompt": f"a photo of a {c} car"}
    for c in ("red", "blue")
]
FOUND = [Detection("cat", (0, 0, 10, 10), 0.9), Detection("car", (20, 0, 30, 10), 0.9)]


def interrupted_run(tmp_path, params=None):
    scan = scan_folder(make_folder(tmp_path / "imgs", COLOUR_SUITE), COLOUR_SUITE, images_per_prompt=2)
    killed = KilledAfter(2)
    killed.current = FOUND
    out = tmp_path / "results.jsonl"
    with pytest.raises(KeyboardInterrupt):
        evaluate_scan(scan, killed, RedColour(), params=params, out=out, show_progress=False)
    partial = tmp_path / "results.jsonl.partial"
    with open(partial, "a") as fh:
        fh.write('{"filename": "torn')  # killed mid-line
    return scan, out, partial


def test_evaluate_scan_judges_every_image_and_resumes(tmp_path):
    scan, out, partial = interrupted_run(tmp_path)
    detector = OracleDetector()
    detector.current = FOUND
    rows = evaluate_scan(scan, detector, RedColour(), out=out, show_progress=False)
    assert detector.calls == 4  # only the 4 images not in the partial file
    assert not partial.exists()
    assert [r.correct for r in rows] == [True, True, True, True, False, False]
    assert rows[-1].reason == "expected blue car>=1, found 0 blue; and 1 red"
    assert read_results(out) == rows


def test_a_torn_partial_line_is_dropped_before_a_resume_appends(tmp_path):
    scan, out, partial = interrupted_run(tmp_path)
    again = KilledAfter(1)  # resumed, then stopped again after one more image
    again.current = FOUND
    with pytest.raises(KeyboardInterrupt):
        evaluate_scan(scan, again, RedColour(), out=out, show_progress=False)
    lines = partial.read_text().splitlines()
    assert [json.loads(line) for line in lines]  # every line whole: the torn fragment did not swallow a verdict
    assert len(lines) == 1 + 3  # the settings, the two verdicts kept and the one judged since


def test_a_resume_with_other_settings_starts_over(tmp_path, caplog):
    scan, out, _partial = interrupted_run(tmp_path)
    detector = OracleDetector()
    detector.current = FOUND
    evaluate_scan(scan, detector, RedColour(), params=GenEvalParams(threshold=0.95), out=out, show_progress=False)
    assert detector.calls == 6, "verdicts made under threshold 0.3 must not be reused under 0.95"
    assert "made with other settings (changed: params)" in caplog.text
    assert all(not r.correct for r in read_results(out)), "0.9-score detections fail a 0.95 threshold"


def test_a_resume_rejudges_images_that_changed(tmp_path, caplog):
    from PIL import Image

    scan, out, _partial = interrupted_run(tmp_path)
    Image.new("RGB", (32, 24), (0, 0, 255)).save(scan.items[0].path)  # regenerated in place
    detector = OracleDetector()
    detector.current = FOUND
    evaluate_scan(scan, detector, RedColour(), out=out, show_progress=False)
    assert detector.calls == 5
    assert "1 partial verdicts are stale (1 for changed images)" in caplog.text


def test_summary_cli_flags_missing_prompts(tmp_path, capsys):
    suite_path = write_suite(tmp_path / "suite.jsonl", SUITE)
    rows = [
        ResultRow(f"x/{i:05d}/samples/{k:05d}.png", r["tag"], r["prompt"], True, "", r)
        for i, r in enumerate(SUITE[:-3])
        for k in range(4)
    ]
    write_results(tmp_path / "results.jsonl", rows)
    argv = ["summary", str(tmp_path / "results.jsonl"), "--metadata", str(suite_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"prompts expected {len(SUITE)}, found {len(SUITE) - 3}" in err
    assert f"missing prompts (3): {len(SUITE) - 3:05d}" in err
    assert main([*argv, "--allow-missing", "--json", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["images"] == 4 * (len(SUITE) - 3)


def test_prompts_cli_writes_the_official_suite(tmp_path, capsys):
    assert main(["prompts", "geneval", "--out", str(tmp_path / "m.jsonl")]) == 0
    assert len((tmp_path / "m.jsonl").read_text().splitlines()) == 553
    assert "wrote 553 prompts" in capsys.readouterr().err
    assert main(["prompts", "geneval", "--seed", "1", "--per-task", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 80 + 10


def test_evaluate_cli_refuses_incomplete_folders(tmp_path, capsys):
    suite_path = write_suite(tmp_path / "suite.jsonl", SUITE)
    make_folder(tmp_path / "imgs", SUITE, prompts=range(5))
    argv = ["evaluate", "geneval", str(tmp_path / "imgs"), "--metadata", str(suite_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "missing prompt folders" in err
    assert "--allow-missing" in err


# -- identity after resolving (t2ibench.paths) ----------------------------------------------------------------------


def test_an_image_reached_twice_is_judged_once(tmp_path):
    import os

    root = make_folder(tmp_path / "imgs", SUITE, prompts=[0, 1])
    samples = root / "00000" / "samples"
    (samples / "00001.png").unlink()
    (samples / "00001.png").symlink_to("00000.png")  # a link to a sibling
    os.link(samples / "00000.png", root / "00001" / "samples" / "00002.png")  # a hard link from another prompt
    scan = scan_folder(root, SUITE[:2], images_per_prompt=None)
    judged = [item.path.name for item in scan.items]
    assert judged == ["00000.png", "00000.png", "00001.png"], "each file once, in folder order"
    assert [item.prompt_index for item in scan.items] == [0, 1, 1]
    problems = "\n".join(scan.problems)
    assert "00000/samples/00001.png: the same file as" in problems
    assert "00001/samples/00002.png: the same file as" in problems
    assert not scan.ok


def test_results_names_are_relative_to_the_workspace_even_through_a_link(tmp_path):
    from t2ibench.benchmarks.geneval.evaluate import FolderScan, ImageItem

    (tmp_path / "ws" / "data").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "ws")
    item = ImageItem(0, "00000", tmp_path / "alias" / "data" / "00000" / "samples" / "00000.png", SUITE[0])
    scan = FolderScan(tmp_path, (item,), 1, 1, 1, names_from=tmp_path / "ws")
    assert scan.name(item) == "data/00000/samples/00000.png"  # was a ValueError traceback


def test_a_stray_partial_fifo_is_refused_not_read(tmp_path):
    import os

    from t2ibench.errors import InputError

    scan = scan_folder(make_folder(tmp_path / "imgs", SUITE, prompts=[0]), SUITE[:1], images_per_prompt=2)
    os.mkfifo(tmp_path / "r.jsonl.partial")
    with pytest.raises(InputError, match=r"r\.jsonl\.partial: partial results file is a FIFO"):
        evaluate_scan(scan, detector=None, colour=None, out=tmp_path / "r.jsonl", show_progress=False)


def test_an_image_is_refused_when_its_detector_or_colour_classifier_speaks_another_vocabulary(tmp_path):
    """A detector built without GenEval's label space names a computer mouse 'mouse': judged as is, a prompt asking
    for one would fail silently. Such a label, or a colour GenEval does not have, stops the image in one line."""
    suite = [
        {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}], "prompt": "a photo of a red car"}
    ]
    scan = scan_folder(make_folder(tmp_path / "imgs", suite, per_prompt=1), suite, images_per_prompt=1)
    (item,) = scan.items
    native = OracleDetector()
    native.current = [Detection("mouse", (0, 0, 10, 10), 0.9), Detection("car", (20, 0, 30, 10), 0.9)]
    with pytest.raises(InputError, match=r"00000\.png: the detector labels \['mouse'\] are not GenEval classes"):
        judge_image(item, native, RedColour())
    oracle = OracleDetector()
    oracle.current = [Detection("car", (20, 0, 30, 10), 0.9)]

    class Crimson:
        def classify(self, image, objects, classname):
            return ["crimson"] * len(objects)

    with pytest.raises(InputError, match="the colour classifier named 'crimson', not one of GenEval's colours"):
        judge_image(item, oracle, Crimson())
    assert judge_image(item, oracle, RedColour()).correct


def test_build_models_hands_geneval_s_label_space_and_colours_to_the_registries(monkeypatch):
    """The one place GenEval builds its detector and colour classifier (the refresh, evaluate, selftest)."""
    from t2ibench.benchmarks.geneval.evaluate import build_models
    from t2ibench.benchmarks.geneval.metrics import COLORS
    from t2ibench.benchmarks.geneval.options import GenEvalConfig
    from t2ibench.benchmarks.geneval.suite import vocabulary
    from t2ibench.models import registry

    seen = []
    for reg in (registry.DETECTORS, registry.COLOUR_CLASSIFIERS):
        for how in ("build", "reuse"):
            monkeypatch.setattr(reg, how, lambda name, spec, /, _how=how, **options: seen.append((_how, options)))
    cfg = GenEvalConfig()
    build_models(cfg, device="cpu")
    build_models(cfg, device="cpu", reuse=True)
    labels = vocabulary().labels
    assert [(how, sorted(o)) for how, o in seen] == [
        ("build", ["device", "label_space"]), ("build", ["colors", "device"]),
        ("reuse", ["device", "label_space"]), ("reuse", ["colors", "device"]),
    ]  # fmt: skip
    assert all(o["label_space"] == labels for _, o in seen[::2])
    assert all(tuple(o["colors"]) == COLORS for _, o in seen[1::2])
