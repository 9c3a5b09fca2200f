"""Every resume fingerprints the prompt record it worked for: work made for another record is redone, with a note.

Pure parts, with stand-in models: GenEval's ``.partial`` verdicts, the generation log (``OutputFolder``), the folder
importer and the compositor. (The diffusers generator's resume is in ``tests/integration/test_generation_records.py``.)
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from PIL import Image

from t2ibench.benchmarks.geneval.evaluate import evaluate_scan, read_results, scan_folder
from t2ibench.benchmarks.geneval.metrics import Detection
from t2ibench.hashing import file_sha256, record_sha256
from t2ibench.models.detection import DetectionSet
from t2ibench.models.generation import FolderImporter, OutputFolder

CAT = {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"}
DOG = {"tag": "single_object", "include": [{"class": "dog", "count": 1}], "prompt": "a photo of a dog"}
RED_CAR = {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}], "prompt": "a photo of a red car"}
BLUE_CAR = {
    "tag": "colors",
    "include": [{"class": "car", "count": 1, "color": "blue"}],
    "prompt": "a photo of a blue car",
}
CUPS = {
    "tag": "counting",
    "include": [{"class": "cup", "count": 2}],
    "exclude": [{"class": "cup", "count": 3}],
    "prompt": "a photo of two cups",
}


@pytest.fixture
def notes(caplog):
    """The lines the library tells the user through ``t2ibench.errors.note``."""
    caplog.set_level(logging.WARNING, logger="t2ibench")

    def lines():
        return [r.getMessage() for r in caplog.records if r.name == "t2ibench"]

    return lines


def make_folder(root, suite, per_prompt=2):
    for index, record in enumerate(suite):
        folder = root / f"{index:05d}"
        (folder / "samples").mkdir(parents=True, exist_ok=True)
        (folder / "metadata.jsonl").write_text(json.dumps(record) + "\n")
        for k in range(per_prompt):
            Image.new("RGB", (40, 32), (200, 30 + 20 * index, 30 + 40 * k)).save(folder / "samples" / f"{k:05d}.png")
    return root


def set_record(root, index, record):
    (root / f"{index:05d}" / "metadata.jsonl").write_text(json.dumps(record) + "\n")


def stamps(paths):
    return {str(p): (p.stat().st_ino, p.stat().st_mtime_ns) for p in paths}


# -- GenEval's .partial file ------------------------------------------------------------------------------------------


class CountingDetector:
    """Finds a cat and a car in every image; remembers which images it was shown (by their pixels' first value)."""

    def __init__(self, die_after=None):
        self.seen = []
        self.die_after = die_after

    def describe(self):
        return {"backend": "counting"}

    def detect(self, images):
        if self.die_after is not None and len(self.seen) >= self.die_after:
            raise KeyboardInterrupt
        self.seen.append(images[0].getpixel((0, 0)))
        found = [Detection("cat", (0, 0, 10, 10), 0.9), Detection("car", (20, 0, 30, 10), 0.9)]
        return [DetectionSet(detections=found, masks=None, image_size=images[0].size)]


class RedColour:
    def classify(self, image, objects, classname):
        return ["red"] * len(objects)


SUITE = [CAT, RED_CAR, CUPS]


def interrupted(tmp_path, suite, judged):
    """A folder for ``suite`` whose evaluation was killed after ``judged`` images (they are in the .partial)."""
    root = make_folder(tmp_path / "imgs", suite)
    scan = scan_folder(root, suite, images_per_prompt=2)
    out = tmp_path / "results.jsonl"
    with pytest.raises(KeyboardInterrupt):
        evaluate_scan(scan, CountingDetector(die_after=judged), RedColour(), out=out, show_progress=False)
    return root, out


def test_a_partial_verdict_for_another_prompt_record_is_judged_again(tmp_path, notes):
    root, out = interrupted(tmp_path, SUITE, judged=4)  # prompts 0 and 1 judged
    set_record(root, 1, BLUE_CAR)  # prompt 1 was "a red car", now "a blue car": same images, same settings
    suite = [CAT, BLUE_CAR, CUPS]
    scan = scan_folder(root, suite, images_per_prompt=2)
    assert scan.ok, scan.report()
    detector = CountingDetector()
    rows = evaluate_scan(scan, detector, RedColour(), out=out, show_progress=False)
    prompt_1 = [scan.items[2].path, scan.items[3].path]
    first_pixels = [Image.open(p).getpixel((0, 0)) for p in prompt_1]
    assert detector.seen[:2] == first_pixels, "prompt 1's two images are judged again"
    assert len(detector.seen) == 4, "prompt 0's verdicts are reused; prompt 2 was never judged"
    assert [r.prompt for r in rows] == [r["prompt"] for r in suite for _ in range(2)]
    assert [dict(r.metadata) for r in rows[2:4]] == [BLUE_CAR, BLUE_CAR]
    assert [r.correct for r in rows] == [True, True, False, False, False, False]  # a red car is not a blue car
    assert read_results(out) == rows
    partial = f"{out}.partial"
    assert notes() == [f"{partial}: 2 partial verdicts are stale (2 for changed prompt records); judging them again"]


def test_the_partial_note_counts_each_reason(tmp_path, notes):
    root, out = interrupted(tmp_path, SUITE, judged=5)
    set_record(root, 1, BLUE_CAR)
    Image.new("RGB", (40, 32), (0, 0, 255)).save(root / "00000" / "samples" / "00000.png")  # regenerated in place
    (root / "00002" / "samples" / "00000.png").unlink()  # left the folder
    scan = scan_folder(root, [CAT, BLUE_CAR, CUPS])
    detector = CountingDetector()
    evaluate_scan(scan, detector, RedColour(), out=out, show_progress=False)
    assert len(detector.seen) == 4  # 00000/00000 (changed), prompt 1 (changed record), 00002/00001 (never judged)
    reasons = "1 for changed images, 2 for changed prompt records, 1 for images that left"
    assert notes() == [f"{out}.partial: 4 partial verdicts are stale ({reasons}); judging them again"]


def test_a_partial_record_compares_as_canonical_json(tmp_path, notes):
    root, out = interrupted(tmp_path, SUITE, judged=4)
    reordered = {"prompt": RED_CAR["prompt"], "include": RED_CAR["include"], "tag": RED_CAR["tag"]}
    set_record(root, 1, reordered)  # the same record, keys in another order
    detector = CountingDetector()
    evaluate_scan(scan_folder(root, SUITE), detector, RedColour(), out=out, show_progress=False)
    assert len(detector.seen) == 2  # only prompt 2
    assert not [n for n in notes() if ".partial" in n]


def edit_partial(out, number, change):
    """Rewrite line ``number`` (1: the settings line) of ``out``.partial through ``change(record)``, by hand."""
    partial = out.with_name(out.name + ".partial")
    lines = partial.read_text().splitlines()
    record = json.loads(lines[number - 1])
    change(record)
    lines[number - 1] = json.dumps(record, sort_keys=True)
    partial.write_text("\n".join(lines) + "\n")


def test_a_partial_verdict_edited_by_hand_is_judged_again_and_the_note_says_so(tmp_path, notes):
    """A row whose content no longer matches its own digest (a verdict flipped, image and prompt untouched) is
    never reused: its image is judged again and one note names the file and counts it."""
    root, out = interrupted(tmp_path, SUITE, judged=4)  # prompts 0 and 1 judged

    def flip(record):
        record["correct"], record["reason"] = False, "edited"

    edit_partial(out, 2, flip)  # 00000/00000's verdict: was True
    detector = CountingDetector()
    rows = evaluate_scan(scan_folder(root, SUITE), detector, RedColour(), out=out, show_progress=False)
    assert len(detector.seen) == 3, "the edited row and prompt 2's two images"
    assert rows[0].correct
    assert rows[0].reason != "edited"
    assert rows == evaluate_scan(scan_folder(root, SUITE), CountingDetector(), RedColour(), show_progress=False)
    edited = "1 edited (the row's digest does not match its content)"
    assert notes() == [f"{out}.partial: judging 1 stored row(s) again: {edited}"]


def test_a_partial_written_before_row_digests_is_judged_again_with_a_note(tmp_path, notes):
    """Rows without a digest (the format before it) cannot be told from edited ones: judged again, noted."""
    root, out = interrupted(tmp_path, SUITE, judged=4)
    for number in range(2, 6):
        edit_partial(out, number, lambda record: record.pop("row_sha256"))
    detector = CountingDetector()
    evaluate_scan(scan_folder(root, SUITE), detector, RedColour(), out=out, show_progress=False)
    assert len(detector.seen) == 6, "nothing of the old partial file is reused"
    old = "4 without a row digest (written by an older t2ibench)"
    assert notes() == [f"{out}.partial: judging 4 stored row(s) again: {old}"]


def test_a_garbled_row_is_counted_but_a_torn_last_line_is_not(tmp_path, notes):
    root, out = interrupted(tmp_path, SUITE, judged=4)
    partial = out.with_name(out.name + ".partial")
    lines = partial.read_text().splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # a row cut in the middle of the file: not what a kill leaves
    partial.write_text("\n".join(lines) + "\n" + '{"filename": "00002/sam')  # and a torn last line (a kill)
    detector = CountingDetector()
    evaluate_scan(scan_folder(root, SUITE), detector, RedColour(), out=out, show_progress=False)
    assert len(detector.seen) == 3
    assert notes() == [f"{out}.partial: judging 1 stored row(s) again: 1 unreadable"]


def test_a_settings_line_edited_to_match_does_not_pass_rows_off_as_made_under_it(tmp_path, notes):
    """Each row's digest covers the settings it was made under: rows made at threshold 0.3 whose settings line was
    edited to say 0.6 are judged again at 0.6."""
    from t2ibench.benchmarks.geneval.metrics import GenEvalParams

    root, out = interrupted(tmp_path, SUITE, judged=4)
    edit_partial(out, 1, lambda record: record["partial_settings"]["params"].update(threshold=0.6))
    detector = CountingDetector()
    params = GenEvalParams(threshold=0.6)
    evaluate_scan(scan_folder(root, SUITE), detector, RedColour(), params=params, out=out, show_progress=False)
    assert len(detector.seen) == 6
    assert notes() == [f"{out}.partial: judging 4 stored row(s) again: 4 edited (the row's digest does not match "
                       "its content)"]  # fmt: skip


# -- the generation log -------------------------------------------------------------------------------------------


def logged_folder(tmp_path, suite, *, old_format=False):
    """An OutputFolder with two logged images per record of ``suite``; ``old_format``: lines without the digest."""
    folder = OutputFolder(tmp_path / "out", identity={"spec": 1})
    folder.open()
    for index, record in enumerate(suite):
        folder.write_metadata(index, record)
        for k in range(2):
            folder.save(index, k, Image.new("RGB", (8, 8), (index, k, 0)), 7, record)
    if old_format:
        lines = [json.loads(line) for line in folder.log_path.read_text().splitlines()]
        assert all("record_sha256" in e for e in lines)
        folder.log_path.write_text(
            "".join(json.dumps({k: v for k, v in e.items() if k != "record_sha256"}) + "\n" for e in lines)
        )
    return folder


def test_the_log_records_a_digest_of_the_whole_prompt_record(tmp_path):
    folder = logged_folder(tmp_path, SUITE)
    entries = [json.loads(line) for line in folder.log_path.read_text().splitlines()]
    assert [e["record_sha256"] for e in entries] == [record_sha256(r) for r in SUITE for _ in range(2)]
    assert record_sha256(CUPS) == record_sha256(dict(reversed(list(CUPS.items()))))  # canonical JSON
    assert record_sha256(CAT) != record_sha256(DOG)


def test_completed_keeps_only_images_logged_for_the_record_now_requested(tmp_path):
    folder = logged_folder(tmp_path, SUITE)
    assert sorted(folder.completed()) == [(i, k) for i in range(3) for k in range(2)]  # no records: hashes only
    resume = folder.resume({0: CAT, 1: BLUE_CAR, 2: CUPS})
    assert sorted(resume.done) == [(0, 0), (0, 1), (2, 0), (2, 1)]
    assert resume.changed == ((1, 0), (1, 1))
    assert sorted(folder.completed({1: RED_CAR})) == [(i, k) for i in range(3) for k in range(2)]
    assert sorted(folder.completed({1: BLUE_CAR})) == [(0, 0), (0, 1), (2, 0), (2, 1)]  # other prompts unasked


def test_an_old_log_line_without_the_digest_is_judged_by_its_prompt_text(tmp_path):
    folder = logged_folder(tmp_path, SUITE, old_format=True)
    same_text = {**RED_CAR, "include": [{"class": "car", "count": 1, "color": "blue"}]}  # the text is all it kept
    resume = folder.resume({0: CAT, 1: same_text, 2: DOG})
    assert sorted(resume.done) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert resume.changed == ((2, 0), (2, 1))  # logged for "a photo of two cups", now "a photo of a dog"
    assert resume.done[(0, 0)].record_sha256 is None


def test_a_later_log_line_supersedes_an_earlier_one(tmp_path):
    folder = logged_folder(tmp_path, SUITE)
    path = folder.root / "00001" / "samples" / "00000.png"
    folder.save(1, 0, Image.open(path), 7, BLUE_CAR)  # the same bytes, made again for another record
    assert (1, 0) in folder.completed({1: BLUE_CAR})
    assert (1, 0) not in folder.completed({1: RED_CAR})
    # the latest line is authoritative: a file that no longer matches it is not complete, whatever came before
    earlier = path.read_bytes()
    folder.save(1, 0, Image.new("RGB", (8, 8), (9, 9, 9)), 7, RED_CAR)
    path.write_bytes(earlier)
    assert (1, 0) not in folder.completed({1: RED_CAR})
    assert (1, 0) not in folder.completed({1: BLUE_CAR})


# -- the folder importer ----------------------------------------------------------------------------------------------


def test_an_import_for_another_prompt_record_is_imported_again(tmp_path, notes):
    source = make_folder(tmp_path / "source", SUITE)
    importer = FolderImporter(source)
    importer.generate(list(enumerate(SUITE)), tmp_path / "imported")
    kept = sorted((tmp_path / "imported").glob("0000[02]/samples/*.png"))
    redone = sorted((tmp_path / "imported").glob("00001/samples/*.png"))
    before = stamps(kept + redone)
    set_record(source, 1, BLUE_CAR)  # the source now says "a blue car" for the same image bytes
    suite = [CAT, BLUE_CAR, CUPS]
    records = importer.generate(list(enumerate(suite)), tmp_path / "imported")
    assert [r.prompt for r in records] == [r["prompt"] for r in suite for _ in range(2)]
    assert [r.record_sha256 for r in records] == [record_sha256(r) for r in suite for _ in range(2)]
    after = stamps(kept + redone)
    assert all(after[str(p)] == before[str(p)] for p in kept), "prompts 0 and 2 are kept"
    assert all(after[str(p)] != before[str(p)] for p in redone), "prompt 1 is copied again"
    assert json.loads((tmp_path / "imported" / "00001" / "metadata.jsonl").read_text()) == BLUE_CAR
    folder = OutputFolder(tmp_path / "imported", identity={})
    assert sorted(folder.completed(dict(enumerate(suite)))) == [(i, k) for i in range(3) for k in range(2)]
    assert importer.reimported == [], "the source files did not change"
    redo = "2 images were imported for another prompt record (prompt 1); importing them again"
    assert notes() == [f"{tmp_path / 'imported'}: {redo}"]


def test_an_old_import_log_line_is_judged_by_its_prompt_text(tmp_path, notes):
    source = make_folder(tmp_path / "source", SUITE)
    FolderImporter(source).generate(list(enumerate(SUITE)), tmp_path / "imported")
    log = tmp_path / "imported" / "samples.jsonl"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    log.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "record_sha256"}) + "\n" for e in entries))
    kept = sorted((tmp_path / "imported").glob("0000[01]/samples/*.png"))
    redone = sorted((tmp_path / "imported").glob("00002/samples/*.png"))
    before = stamps(kept + redone)
    set_record(source, 2, DOG)
    FolderImporter(source).generate(list(enumerate([CAT, RED_CAR, DOG])), tmp_path / "imported")
    after = stamps(kept + redone)
    assert all(after[str(p)] == before[str(p)] for p in kept)
    assert all(after[str(p)] != before[str(p)] for p in redone)
    redo = "2 images were imported for another prompt record (prompt 2); importing them again"
    assert notes() == [f"{tmp_path / 'imported'}: {redo}"]


# -- the compositor ---------------------------------------------------------------------------------------------------


def test_a_composed_image_for_another_prompt_record_is_composed_again(tmp_path, monkeypatch, notes):
    pytest.importorskip("skimage")
    from t2ibench.config import GeneratorConfig
    from t2ibench.models import compositor
    from t2ibench.models.compositor import CompositorGenerator, Cutout, read_truth

    rgba = np.zeros((40, 30, 4), dtype=np.uint8)
    rgba[5:35, 5:25] = (120, 60, 30, 255)
    cutouts = tuple(Cutout(name, "synthetic", 0.9, rgba) for name in ("car", "cat", "cup", "dog"))
    monkeypatch.setattr(compositor, "load_cutouts", lambda detector_model="x": cutouts)
    drawn = []
    real_render = compositor.render

    def render(record, rng, variant, cuts):
        drawn.append(record["prompt"])
        return real_render(record, rng, variant, cuts)

    monkeypatch.setattr(compositor, "render", render)
    spec = GeneratorConfig(backend="compositor", model="faithful", images_per_prompt=2, seed=0)
    out = tmp_path / "composed"
    CompositorGenerator(spec, show_progress=False).generate(list(enumerate(SUITE)), out)
    kept = sorted(out.glob("0000[02]/samples/*.png"))
    before = stamps(kept)
    drawn.clear()
    suite = [CAT, DOG, CUPS]
    records = CompositorGenerator(spec, show_progress=False).generate(list(enumerate(suite)), out)
    assert drawn == ["a photo of a dog"] * 2
    assert stamps(kept) == before
    assert [r.prompt for r in records] == [r["prompt"] for r in suite for _ in range(2)]
    fresh = CompositorGenerator(spec, show_progress=False).generate(list(enumerate(suite)), tmp_path / "fresh")
    assert [file_sha256(r.path) for r in records] == [file_sha256(r.path) for r in fresh]
    assert read_truth(out) == read_truth(tmp_path / "fresh")
    assert notes() == [f"{out}: 2 images were made for another prompt record (prompt 1); composing them again"]
