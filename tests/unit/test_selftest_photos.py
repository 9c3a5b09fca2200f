"""The self-test's real-photograph truth set and its calibration across truth sets: the reviewed data file is
refused when a stated truth disagrees with the photos' inventories or the pixels are not the reviewed ones; photo
probes never name a class a photo may show; calibration weighs each truth set the same and reports what
construction truth alone would have chosen; the self-test is stored once per content and shown on the leaderboard."""

from __future__ import annotations

import copy
import re
from collections import Counter
from datetime import UTC, datetime

import numpy as np
import pytest
import yaml

from t2ibench.benchmarks.geneval import suite_photos as photo_module
from t2ibench.benchmarks.geneval.metrics import Detection, GenEvalParams
from t2ibench.benchmarks.geneval.suite import TASKS, parse_prompt
from t2ibench.benchmarks.geneval.suite_photos import CELL, GAP, compose, load_photo_truth, parse_photo_truth
from t2ibench.errors import InputError

BUILTIN = photo_module.resources.files("t2ibench.benchmarks.geneval") / "data" / photo_module.BUILTIN


def raw() -> dict:
    return yaml.safe_load(BUILTIN.read_text(encoding="utf-8"))


def parse(data: dict):
    return parse_photo_truth(data, source="t.yaml", sha256="0" * 64)


# -- the data file ----------------------------------------------------------------------------------------------


def test_the_builtin_truth_set_covers_every_task_with_both_truths_and_its_reviewed_pixels():
    truth = load_photo_truth()
    asked = Counter((p.record["tag"], p.truth) for image in truth.images for p in image.prompts)
    for task in TASKS:
        assert asked[(task, True)] >= 1, task
        assert asked[(task, False)] >= 1, task
    assert truth.prompts == sum(asked.values()) >= 60
    for photo in truth.photos.values():  # every photo's pixels are the ones reviewed (refused otherwise)
        assert photo_module.photo_pixels(photo.source, photo.sha256).ndim == 3
    assert len(truth.sha256) == 64


def test_a_stated_truth_the_inventory_contradicts_is_refused_naming_the_prompt():
    data = raw()
    n = next(i for i, e in enumerate(data["images"]) if e["rows"] == [["coffee"]])
    k = next(j for j, p in enumerate(data["images"][n]["prompts"]) if p[0] == "a photo of a blue cup")
    data["images"][n]["prompts"][k][1] = True
    with pytest.raises(InputError, match=rf"images\[{n}\]\.prompts\[{k}\] \('a photo of a blue cup'\): stated "
                                         r"true, but .* make it false"):  # fmt: skip
        parse(data)


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("a photo of a bed", "listed as unsure"),  # chelsea's background might be bedding: never asked
        ("a photo of a brown cat", "colour of 'cat', not reviewed"),
        ("a photo of a banana", None),  # absent, stated false: fine
    ],
)
def test_the_inventory_decides_or_refuses(prompt, message):
    data = raw()
    data["images"].append({"rows": [["chelsea"], ["chelsea"]], "prompts": [[prompt, False, "test"]]})
    if message is None:
        truth = parse(data)
        assert truth.images[-1].prompts[0].record == parse_prompt(prompt)
    else:
        with pytest.raises(InputError, match=message):
            parse(data)


def test_positions_hold_only_between_one_row_or_one_column():
    data = raw()
    data["images"].append({"rows": [["coffee", "rocket"], ["chelsea"]],
                           "prompts": [["a photo of a cup left of a cat", False, "diagonal"]]})  # fmt: skip
    with pytest.raises(InputError, match="not in one row or one column"):
        parse(data)
    data["images"][-1] = {"rows": [["rocket", "coffee"], ["rocket", "chelsea"]],
                          "prompts": [["a photo of a cup above a cat", True, "same column"]]}  # fmt: skip
    assert parse(data).images[-1].prompts[0].truth is True


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["photos"]["coffee"].update(presnt={}), "unknown key 'presnt'"),
        (lambda d: d["photos"]["coffee"]["present"].update(teacup=1), "'teacup' is not a GenEval class"),
        (lambda d: d["photos"]["coffee"]["present"].update(cup=0), r"present\.cup: expected a count ≥ 1"),
        (lambda d: d["photos"]["coffee"]["colours"].update(cup="crimson"), "'crimson' is not a GenEval colour"),
        (lambda d: d["images"][0].update(rows=[["nosuch"]]), "unknown photo 'nosuch'"),
        (lambda d: d["images"].append(copy.deepcopy(d["images"][0])), "appears twice"),
        (lambda d: d["images"][0]["prompts"].append(["a photo of a unicorn", False, "x"]), "not one of GenEval"),
        (lambda d: d["images"][0]["prompts"].append(["a photo of a dog", "no", "x"]), r"\[prompt, true\|false"),
        (lambda d: d["photos"]["chelsea"].update(unsure="bed"), r"unsure: expected a list of class names"),
        (lambda d: d["photos"]["chelsea"].update(unsure=5), r"unsure: expected a list of class names"),
        (lambda d: d["images"][0].update(rows=[[["astronaut"]]]), "unknown photo"),
        (lambda d: d.update(version="abc"), "version: expected an integer"),
        (lambda d: d["photos"].update({"a+b": d["photos"]["coffee"]}), "id 'a\\+b' must be letters"),
        # a path-like source or a malformed checksum: refused as the file is parsed, not when a photo is decoded
        (lambda d: d["photos"]["coffee"].update(source="skimage:../../etc/passwd"),
         r"photos\.coffee\.source: photo source 'skimage:\.\./\.\./etc/passwd': expected a bare name \(no path\)"),
        (lambda d: d["photos"]["coffee"].update(source="pip:x"), r"photos\.coffee\.source: .*unknown package 'pip'"),
        (lambda d: d["photos"]["coffee"].update(sha256="abc"), r"photos\.coffee\.sha256: expected the 64 hex digits"),
    ],
)  # fmt: skip
def test_hostile_entries_get_one_line_errors_naming_them(edit, message):
    data = raw()
    edit(data)
    with pytest.raises(InputError, match=message) as info:
        parse(data)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("t.yaml")


def test_an_object_in_several_colours_leaves_its_colour_prompt_undecided():
    """GenEval asks the colour of the objects it keeps, whichever they are: with a red and a blue cup, "a red cup"
    is neither true nor false by inventory alone, and the loader refuses to state it."""
    data = raw()
    data["photos"]["blue_cup"] = {**data["photos"]["coffee"], "colours": {"cup": "blue"}}
    data["images"].append({"rows": [["coffee", "blue_cup"]], "prompts": [["a photo of a red cup", True, "x"]]})
    with pytest.raises(InputError, match="several colours"):
        parse(data)
    data["images"][-1]["prompts"] = [["a photo of a green cup", False, "neither cup is green"]]
    assert parse(data).images[-1].prompts[0].truth is False


@pytest.mark.parametrize("source", ["sklearn:../__init__.py", "skimage:__name__", "matplotlib:msft.csv"])
def test_photo_sources_name_bundled_images_only(source):
    photo_module.photo_pixels.cache_clear()
    with pytest.raises(InputError, match=f"photo source {re.escape(repr(source))}"):
        photo_module.photo_pixels(source, "0" * 64)


def test_pixels_other_than_the_reviewed_ones_are_refused(monkeypatch):
    photo = load_photo_truth().photos["coffee"]
    photo_module.photo_pixels.cache_clear()
    monkeypatch.setattr(photo_module, "_decode", lambda source: np.zeros((4, 4, 3), np.uint8))
    try:
        with pytest.raises(InputError, match="not the ones reviewed"):
            photo_module.photo_pixels(photo.source, photo.sha256)
    finally:
        photo_module.photo_pixels.cache_clear()


def bad_checksum_file(tmp_path):
    """The built-in truth set with one photo's checksum changed by one digit."""
    text = BUILTIN.read_text(encoding="utf-8")
    good = load_photo_truth().photos["astronaut"].sha256
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace(good, ("1" if good[0] != "1" else "2") + good[1:]))
    return path


def test_a_wrong_pixel_checksum_is_refused_when_the_set_is_loaded(tmp_path):
    with pytest.raises(InputError, match=r"bad\.yaml: photos\.astronaut: photo 'skimage:astronaut': its pixels "):
        load_photo_truth(bad_checksum_file(tmp_path))


def test_selftest_refuses_a_bad_photo_truth_file_before_building_any_model(tmp_path, monkeypatch, capsys):
    """Was refused only when the photos were judged, after the compositor set (minutes of detector work)."""
    from t2ibench.cli import main
    from t2ibench.models import registry

    def no_models(*args, **kwargs):
        raise AssertionError("a model was built before the photo truth set was checked")

    monkeypatch.setattr(registry.DETECTORS, "build", no_models)
    monkeypatch.setattr(registry.COLOUR_CLASSIFIERS, "build", no_models)
    bad = bad_checksum_file(tmp_path)
    argv = ["selftest", "--detector", "opencv-ssd", "--colour", "lite", "--out", str(tmp_path / "out"), "--quiet"]
    assert main([*argv, "--photo-truth", str(bad)]) == 2
    assert "bad.yaml: photos.astronaut: photo 'skimage:astronaut': its pixels" in capsys.readouterr().err
    path_like = tmp_path / "path.yaml"
    path_like.write_text(BUILTIN.read_text(encoding="utf-8").replace("skimage:astronaut", "'skimage:../x'"))
    assert main([*argv, "--photo-truth", str(path_like)]) == 2
    assert "photos.astronaut.source: photo source 'skimage:../x': expected a bare name" in capsys.readouterr().err


def test_a_refresh_config_with_the_photo_self_test_checks_the_photos_when_loaded(tmp_path, monkeypatch):
    """The refresh's selftest step judges the built-in set: a package that ships other pixels fails the config's
    load (before Prefect starts, before any model work), naming the key; without photos nothing is decoded."""
    from t2ibench.config import load_config

    config = tmp_path / "c.yaml"
    config.write_text("name: c\nmodels: [{name: a}]\nevaluators: {selftest: {per_task: 1}}\n")
    photo_module.photo_pixels.cache_clear()
    decoded = []

    def other_pixels(source):
        decoded.append(source)
        return np.zeros((4, 4, 3), np.uint8)

    monkeypatch.setattr(photo_module, "_decode", other_pixels)
    try:
        said = r"c\.yaml:evaluators\.selftest\.photos: .*photo_truth\.yaml: photos\.\w+: photo '.*': its pixels"
        with pytest.raises(InputError, match=said):
            load_config(config)
        config.write_text("name: c\nmodels: [{name: a}]\nevaluators: {selftest: {per_task: 1, photos: false}}\n")
        decoded.clear()
        load_config(config)
        assert decoded == []
    finally:
        photo_module.photo_pixels.cache_clear()


def test_a_composite_puts_each_photo_in_its_own_cell():
    truth = load_photo_truth()
    image = next(i for i in truth.images if i.rows == (("coffee", "chelsea"),))
    picture = compose(image, truth)
    assert picture.size == (2 * CELL + 3 * GAP, CELL + 2 * GAP)
    pixels = np.asarray(picture)
    assert (pixels[:, : GAP - 1] == 255).all()  # the margin is white
    left, right = pixels[:, GAP : GAP + CELL], pixels[:, 2 * GAP + CELL : 2 * GAP + 2 * CELL]
    assert left.mean(axis=2).std() > 10
    assert right.mean(axis=2).std() > 10


# -- probes and calibration across truth sets ------------------------------------------------------------------


class FakeSet:
    def __init__(self, detections):
        self.detections = detections

    def mask(self, ref):
        return None


def item(text: str, truth: bool, dets: list, *, truth_set: str = "compositor", n: int = 0, **kw):
    from t2ibench.benchmarks.geneval.selftest import JudgedImage

    model = "photos" if truth_set == "photos" else "m"
    return JudgedImage(model, n, 0, parse_prompt(text), truth, None, FakeSet(dets), None, truth_set=truth_set, **kw)


def test_photo_probes_never_name_a_class_the_photo_may_show_and_confusions_count_images_once():
    from t2ibench.benchmarks.geneval.selftest import add_probes

    seen = {"cat", "bed", "couch"}  # present + unsure
    dets = [Detection("cat", (0, 0, 9, 9), 0.9, ref=0), Detection("bed", (0, 0, 9, 9), 0.5, ref=1),
            Detection("dog", (0, 0, 9, 9), 0.3, ref=2)]  # fmt: skip
    items = [
        item(text, False, dets, truth_set="photos", n=i // 2, not_absent=frozenset(seen), group=f"img{i // 2}")
        for i, text in enumerate(["a photo of a cat", "a photo of a dog"] * 30)
    ]
    counts = add_probes(items, seed=[0, 1])
    assert counts == {"dog": 30}  # 30 images (two prompts each); bed is unsure there: not a confusion
    for i in items:
        replaced = {c["class"] for c in i.probe["include"]}
        assert not replaced & seen - {c["class"] for c in i.metadata["include"]}


def test_calibration_weighs_each_truth_set_the_same_and_reports_the_construction_only_choice():
    """200 compositor images where a low threshold is right (the detector scores its true cats 0.15-0.35) and 40
    photo prompts where it is not (a hallucinated dog at 0.42 on 20 wrong prompts). Pooled, the compositor's 200
    votes would pick 0.1; each set weighing the same picks 0.45, and the construction-only fit (0.1) passes every
    photo dog."""
    from t2ibench.benchmarks.geneval.selftest import calibrate

    rng = np.random.default_rng(0)
    items = [
        item("a photo of a cat", k % 4 == 0,
             [Detection("cat", (0, 0, 9, 9), float(rng.uniform(0.15, 0.35)), ref=0)] if k % 4 == 0 else [], n=k)
        for k in range(200)
    ]  # fmt: skip
    for k in range(20):
        cat = [Detection("cat", (0, 0, 9, 9), 0.7, ref=0)]
        dog = [Detection("dog", (0, 0, 9, 9), 0.42, ref=0)]
        items.append(item("a photo of a cat", True, cat, truth_set="photos", n=k, group=f"c{k}"))
        items.append(item("a photo of a dog", False, dog, truth_set="photos", n=20 + k, group=f"d{k}"))
    cal = calibrate(items, None, GenEvalParams(), folds=5, seed=0)
    assert cal.params.threshold == 0.45
    assert set(cal.by_prompt) == set(cal.by_image) == {"compositor", "photos"}
    assert cal.transfer_params is not None
    assert cal.transfer_params.threshold == 0.1
    (single,) = cal.transfer
    assert single.false_pass == 20
    assert single.truth_wrong == 20
    (held,) = cal.by_image["photos"]
    assert held.agreement == 1.0  # every fold fits 0.45 again
    with pytest.raises(InputError, match="folds"):
        calibrate(items, None, GenEvalParams(), folds=1)


# -- stored and shown -------------------------------------------------------------------------------------------


def report_dict(agree: int) -> dict:
    from t2ibench.benchmarks.geneval.selftest import SelfTestReport, SetResult, agreement

    items = [item("a photo of a cat", True, [], n=k) for k in range(4)]
    rows = agreement(items, [k < agree for k in range(4)], [False] * 4)
    sets = {"compositor": SetResult("compositor", 4, 4, rows), "photos": SetResult("photos", 2, 4, rows)}
    evaluator = {"detector": {"backend": "opencv-ssd-mobilenet-v2"}, "colour": {"backend": "lab-colour-lite"}}
    return SelfTestReport(evaluator, ("cat",), ("faithful",), GenEvalParams(threshold=0.55), sets).to_dict()


def test_a_selftest_is_stored_once_per_content_and_shown_on_the_evaluator_card(tmp_path):
    from t2ibench.benchmarks.geneval import report_selftest as card
    from t2ibench.pipeline.results import SelfTest
    from t2ibench.pipeline.rows import selftest_rows
    from t2ibench.store import Store, queries
    from tests.unit.test_store_benchmarks import complete, version

    store = Store(tmp_path / "t.duckdb", timeout=2)
    store.initialise()
    measured = selftest_rows(SelfTest(report=report_dict(3)))
    for model in ("a", "b"):
        v = version(model, "h" + model, "e", "c" + model)
        store.write_version("r1", type(v)(**{**v.__dict__, "selftest": measured}))
    store.write_version("r1", version("c", "hc", "e", "cc"))  # a model stored without one
    complete(store, "r1", datetime.now(UTC))
    assert store.query("SELECT count(*) FROM evaluator_selftests")[1][0][0] == 1
    rows = queries.evaluator_selftests(store)
    assert [(r["model"], r["selftest_hash"] is not None) for r in rows] == [("a", True), ("b", True), ("c", False)]
    md = "\n".join(card.markdown_section(rows))
    assert "threshold 0.55" in md
    assert "(models: a, b)" in md
    assert "| compositor images (construction truth) | 4 | 75.0% (3/4) | — | 25.0% (1/4) | 0.0% (0/4) |" in md
    assert "c: not measured" in md
    html = card.html_section(rows)
    assert 'id="evaluator-selftest"' in html
    assert "75.0% (3/4)" in html
    # a later run of model a without a self-test: its card says so (the link is per run, never stale)
    store.write_version("r2", version("a", "ha", "e", "ca"))
    complete(store, "r2", datetime.now(UTC))
    rows = {r["model"]: r["selftest_hash"] for r in queries.evaluator_selftests(store)}
    assert rows["a"] is None
    assert rows["b"] is not None


def test_selftest_settings_are_checked_when_the_config_is_read():
    from t2ibench.config import parse_config

    base = {"name": "x", "models": [{"name": "a"}]}
    assert parse_config({**base, "evaluators": {"selftest": {}}}).evaluators.selftest.per_task == 8
    assert parse_config(base).evaluators.selftest is None
    for bad, key in (({"per_task": 0}, "per_task"), ({"variants": ["sloppy:2"]}, "variants"),
                     ({"images_per_prompt": True}, "images_per_prompt")):  # fmt: skip
        with pytest.raises(InputError, match=rf"evaluators\.selftest\.{key}") as info:
            parse_config({**base, "evaluators": {"selftest": bad}})
        assert "\n" not in str(info.value)
