"""The lite evaluator's pure parts: the CIELAB colour rule, templated prompts read back, suites over a class subset,
the compositor's plans (truth by construction) and the threshold calibration."""

from __future__ import annotations

import json

import numpy as np
import pytest

from t2ibench.benchmarks.geneval.metrics import COLORS, Detection, GenEvalParams, relations
from t2ibench.benchmarks.geneval.suite import STRUCTURE_DIM, generate_suite, parse_prompt, structure_vector
from t2ibench.errors import InputError
from t2ibench.models.colour import COLOUR_ANCHORS, LabColourClassifier

pytest.importorskip("skimage")

# CSS colours (matplotlib's table) a person would name with each of GenEval's ten words
CSS = {
    "red": ["crimson", "red", "firebrick", "darkred", "tomato"],
    "orange": ["darkorange", "orange", "coral"],
    "yellow": ["gold", "yellow", "khaki"],
    "green": ["forestgreen", "limegreen", "green", "olivedrab", "seagreen"],
    "blue": ["royalblue", "blue", "navy", "steelblue", "dodgerblue"],
    "purple": ["purple", "darkviolet", "indigo", "darkmagenta"],
    "pink": ["hotpink", "pink", "lightpink", "deeppink"],
    "brown": ["saddlebrown", "sienna"],
    "black": ["black", "dimgray"],
    "white": ["white", "whitesmoke", "lightgray"],
}


def patch(rgb: tuple[float, float, float], n: int = 16) -> np.ndarray:
    return np.tile(np.round(np.asarray(rgb) * 255).astype(np.uint8), (n, 1))


@pytest.mark.parametrize("name", COLORS)
def test_css_colours_are_named_as_people_name_them(name):
    import matplotlib.colors as mc

    namer = LabColourClassifier(colors=COLORS)
    for css in CSS[name]:
        assert namer.name_pixels(patch(mc.to_rgb(css))) == name, css


def test_the_compositor_anchors_are_named_back():
    namer = LabColourClassifier(colors=COLORS)
    for name, rgb in COLOUR_ANCHORS.items():
        assert namer.name_pixels(np.tile(np.asarray(rgb, dtype=np.uint8), (9, 1))) == name


def test_the_dominant_colour_wins_and_grey_pixels_do_not_outvote_a_coloured_object():
    namer = LabColourClassifier(colors=COLORS)
    red, blue, grey = (
        np.tile(np.asarray(c, dtype=np.uint8), (n, 1))
        for c, n in (((200, 30, 35), 40), ((40, 80, 200), 20), ((120, 120, 120), 60))
    )
    assert namer.name_pixels(np.concatenate([red, blue])) == "red"
    assert namer.name_pixels(np.concatenate([red, blue, grey])) == "red"  # 50 % chromatic ≥ the 25 % share
    assert namer.name_pixels(np.concatenate([red[:5], grey])) in ("black", "white")  # 8 % chromatic: achromatic
    with pytest.raises(InputError, match="no pixels"):
        namer.name_pixels(np.zeros((0, 3), dtype=np.uint8))


def test_classify_uses_only_the_masked_pixels_inside_the_box():
    from PIL import Image

    canvas = np.full((40, 40, 3), 240, dtype=np.uint8)
    canvas[15:25, 15:25] = (40, 80, 200)  # 6 % of the image
    mask = np.zeros((40, 40), dtype=bool)
    mask[16:24, 16:24] = True
    namer = LabColourClassifier(colors=COLORS)
    image = Image.fromarray(canvas)
    assert namer.classify(image, [((5, 5, 35, 35), mask)], "cup") == ["blue"]
    assert namer.classify(image, [((0, 0, 40, 40), None)], "cup") == ["white"]  # no mask: the box, mostly white
    with pytest.raises(InputError, match="mask shape"):
        namer.classify(image, [((0, 0, 4, 4), np.ones((3, 3), dtype=bool))], "cup")


def test_the_rule_names_the_callers_colours_and_breaks_ties_in_their_order():
    """The colour list is the caller's (GenEval hands over its ten): a tie between two names goes to the one listed
    first, and a list missing a name the rule can give is refused when the classifier is made."""
    red, blue = (np.tile(np.asarray(c, dtype=np.uint8), (10, 1)) for c in ((200, 30, 35), (40, 80, 200)))
    tie = np.concatenate([red, blue])
    assert LabColourClassifier(colors=COLORS).name_pixels(tie) == "red"  # red before blue in GenEval's list
    reordered = ("blue", *(c for c in COLORS if c != "blue"))
    assert LabColourClassifier(colors=reordered).name_pixels(tie) == "blue"
    with pytest.raises(InputError, match=r"the lite colour rule names \['pink'\]"):
        LabColourClassifier(colors=tuple(c for c in COLORS if c != "pink"))


def test_the_compositor_draws_in_geneval_s_classes_and_colours():
    """The compositor names no benchmark: its classes are COCO's names of its cut-outs and its colours the ones it
    can paint. Both must be GenEval's, in GenEval's order (the colour a sloppy image draws instead depends on it)."""
    from t2ibench.benchmarks.geneval.suite import vocabulary
    from t2ibench.models.compositor import CUTOUT_CLASSES
    from t2ibench.models.ssd import COCO90

    vocab = vocabulary()
    assert tuple(COLOUR_ANCHORS) == COLORS == vocab.colors
    assert [vocab.canonical_class(name) for name in COCO90.values()] == list(vocab.classes)  # COCO's order
    assert all(vocab.canonical_class(c) == c for c in CUTOUT_CLASSES)  # no alias between COCO's and GenEval's name


def test_a_label_space_names_a_models_labels_or_refuses_them():
    from t2ibench.benchmarks.geneval.suite import vocabulary
    from t2ibench.vision import LabelSpace

    space = vocabulary().labels
    assert space.canonical("mouse") == "computer mouse"
    assert space.canonical("cat") == "cat"
    with pytest.raises(InputError, match="'unicorn' is not one of the 80 GenEval classes"):
        space.canonical("unicorn")
    assert repr(space) == repr(vocabulary().labels)  # Registry.reuse keys on it
    assert repr(space) != repr(LabelSpace(space.classes, {}, title=space.title))


def test_the_structure_embedder_reads_the_spines_prompt_structure():
    from t2ibench.benchmarks import SPINE, prompt_structure

    structure = prompt_structure()
    assert SPINE == "geneval"
    assert (structure.name, structure.dim) == ("geneval-structure-v1", STRUCTURE_DIM)
    text = "a photo of a red horse and a blue person"
    assert structure.parse(text) == parse_prompt(text)
    assert np.array_equal(structure.vector(text), structure_vector(text))


# -- prompts read back -----------------------------------------------------------------------------------------------


def test_every_official_prompt_reads_back_to_its_record():
    for record in generate_suite():
        assert json.dumps(parse_prompt(record["prompt"]), sort_keys=True) == json.dumps(record, sort_keys=True)


def test_structure_vectors_encode_classes_counts_colours_and_relation():
    v = structure_vector("a photo of three cats")
    assert v.shape == (STRUCTURE_DIM,)
    assert np.isclose(np.linalg.norm(v), 1.0)
    assert v.nonzero()[0].tolist() == [15]  # cat
    a, b = (
        structure_vector("a photo of a red cat and a blue dog"),
        structure_vector("a photo of a blue cat and a red dog"),
    )
    assert not np.allclose(a, b)  # colour bound to its class
    left, right = (
        structure_vector("a photo of a cat left of a dog"),
        structure_vector("a photo of a cat right of a dog"),
    )
    assert not np.allclose(left, right)
    with pytest.raises(InputError, match="not one of GenEval's templates"):
        structure_vector("a painting of a cat")


# -- suites over a subset of the classes ---------------------------------------------------------------------------


def test_a_class_subset_yields_a_geneval_suite_over_those_classes_only():
    classes = ["person", "motorcycle", "horse"]
    suite = generate_suite(seed=43, per_task=8, classes=classes)
    used = {c["class"] for r in suite for c in r["include"] + r.get("exclude", [])}
    assert used == set(classes)
    assert sorted(r["prompt"] for r in suite if r["tag"] == "single_object") == [
        "a photo of a horse",
        "a photo of a motorcycle",
        "a photo of a person",
    ]
    for r in suite:  # colour prompts never ask for the colourless class
        assert all(c["class"] != "person" for c in r["include"] if "color" in c)
    assert len({json.dumps(r, sort_keys=True) for r in suite}) == len(suite)
    assert generate_suite(seed=43, per_task=8, classes=classes) == suite  # seeded


def test_bad_class_subsets_are_refused():
    with pytest.raises(InputError, match="did you mean 'horse'"):
        generate_suite(per_task=2, classes=["person", "hors"])
    with pytest.raises(InputError, match="at least two classes"):
        generate_suite(per_task=2, classes=["person", "cat"])


# -- compositor plans ------------------------------------------------------------------------------------------------


def test_variants_parse_strictly():
    from t2ibench.models.compositor import parse_variant

    assert parse_variant("sloppy:0.25").error_rate == 0.25
    assert parse_variant("faithful").kind == "faithful"
    for bad in ("sloppy", "sloppy:0", "sloppy:1.5", "sloppy:x", "faithful:0.2", "perfect"):
        with pytest.raises(InputError):
            parse_variant(bad)


def box_of(instance) -> tuple[float, float, float, float]:
    _, _, (x, y), size = instance
    return (x - size / 2, y - size / 2, x + size / 2, y + size / 2)


def test_faithful_plans_satisfy_geneval_rules_by_construction():
    from t2ibench.models.compositor import parse_variant, plan

    faithful = parse_variant("faithful")
    suite = generate_suite(seed=43, per_task=30, classes=["person", "motorcycle", "horse"])
    for i, record in enumerate(suite):
        p = plan(record, np.random.default_rng([0, i]), faithful)
        assert p.correct
        assert p.error is None
        wanted = {c["class"]: c["count"] for c in record["include"]}
        got: dict[str, int] = {}
        for name, colour, _, _ in p.instances:
            got[name] = got.get(name, 0) + 1
            clause = next(c for c in record["include"] if c["class"] == name)
            assert colour == clause.get("color")
        assert got == wanted, record["prompt"]
        if record["tag"] == "position":
            relation = record["include"][1]["position"][0]
            target, obj = box_of(p.instances[0]), box_of(p.instances[1])
            assert relation in relations(obj, target, 0.1)  # GenEval's own rule reads the intended relation
            assert len(relations(obj, target, 0.2)) == 1  # even at twice the margin, and no other relation
        boxes = [box_of(x) for x in p.instances]
        for a in range(len(boxes)):  # instances never overlap
            for b in range(a + 1, len(boxes)):
                ax1, ay1, ax2, ay2 = boxes[a]
                bx1, by1, bx2, by2 = boxes[b]
                assert ax2 <= bx1 or bx2 <= ax1 or ay2 <= by1 or by2 <= ay1, record["prompt"]


def test_a_sloppy_plan_is_wrong_at_its_rate_in_the_task_s_known_ways():
    from t2ibench.models.compositor import ERRORS, parse_variant, plan

    sloppy = parse_variant("sloppy:0.3")
    suite = generate_suite(seed=43, per_task=30, classes=["person", "motorcycle", "horse"])
    wrong, total = 0, 0
    for i, record in enumerate(suite):
        for k in range(20):
            p = plan(record, np.random.default_rng([1, i, k]), sloppy)
            total += 1
            wrong += not p.correct
            assert p.correct == (p.error is None)
            if p.error:
                assert p.error in ERRORS[record["tag"]]
                if p.error == "wrong count":
                    n = record["include"][0]["count"]
                    assert len(p.instances) in (n - 1, n + 1)
                if p.error == "missing object":
                    assert len(p.instances) == sum(c["count"] for c in record["include"]) - 1
                if p.error == "colour leaked to background":
                    assert p.tint == record["include"][0]["color"] != p.instances[0][1]
    assert abs(wrong / total - 0.3) < 0.03, wrong / total  # ≈ 1,800 draws: 3 standard errors ≈ 0.033


# -- calibration ---------------------------------------------------------------------------------------------------


class FakeSet:
    """A DetectionSet stand-in: detections only (no masks needed without colour prompts)."""

    def __init__(self, detections):
        self.detections = detections

    def mask(self, ref):
        return None


def test_calibration_finds_the_separating_threshold_and_reports_held_out_agreement():
    """Synthetic detections: a right image's object scores 0.6-0.9, a wrong image has a distractor at 0.2-0.4
    only. The right threshold lies in [0.4, 0.6); the reference 0.3 passes the wrong images."""
    from t2ibench.benchmarks.geneval.selftest import JudgedImage, agreement, calibrate, judge

    rng = np.random.default_rng(3)
    meta = {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"}
    items = []
    for i in range(60):
        right = bool(i % 3)
        score = rng.uniform(0.6, 0.9) if right else rng.uniform(0.31, 0.4)
        dets = FakeSet([Detection("cat", (0, 0, 10, 10), float(score), ref=0)])
        items.append(JudgedImage("m", i, 0, meta, right, None if right else "missing object", dets, None))
    base = GenEvalParams()
    before = agreement(items, [judge(i, None, base) for i in items])[0]
    assert before.agreement == pytest.approx(40 / 60)
    assert before.false_pass == 20
    cal = calibrate(items, None, base, folds=5, seed=0)
    assert 0.4 <= cal.params.threshold < 0.6
    assert cal.by_prompt["compositor"][0].agreement == 1.0
    assert cal.by_image["compositor"][0].agreement == 1.0
    assert cal.transfer_params is None  # no photos: nothing to transfer to
    with pytest.raises(InputError, match="folds"):
        calibrate(items, None, base, folds=1)


def test_absent_object_probes_replace_one_object_and_keep_the_rest():
    """A probe is the prompt with one object replaced by a class it does not name: counting's exclusion follows the
    replaced class, colour and relation stay, the text says so; a class the prompt names is refused."""
    from t2ibench.benchmarks.geneval.selftest import absent_probe

    counting = {"tag": "counting", "include": [{"class": "horse", "count": 3}],
                "exclude": [{"class": "horse", "count": 4}], "prompt": "a photo of three horses"}  # fmt: skip
    probe = absent_probe(counting, "umbrella", 0)
    assert probe["include"] == [{"class": "umbrella", "count": 3}]
    assert probe["exclude"] == [{"class": "umbrella", "count": 4}]
    assert probe["prompt"] == "a photo of three umbrellas"
    position = {"tag": "position", "include": [{"class": "cup", "count": 1},
                {"class": "person", "count": 1, "position": ["right of", 0]}],
                "prompt": "a photo of a person right of a cup"}  # fmt: skip
    probe = absent_probe(position, "apple", 0)
    assert probe["include"][0] == {"class": "apple", "count": 1}
    assert probe["include"][1] == position["include"][1]
    assert probe["prompt"] == "a photo of a person right of an apple"
    assert "exclude" not in probe
    colour = {
        "tag": "colors",
        "include": [{"class": "cat", "count": 1, "color": "red"}],
        "prompt": "a photo of a red cat",
    }
    assert absent_probe(colour, "dog", 0)["include"] == [{"class": "dog", "count": 1, "color": "red"}]
    with pytest.raises(InputError, match="'person' is named by the prompt"):
        absent_probe(position, "person", 0)


def test_calibration_punishes_a_threshold_that_sees_absent_objects():
    """The failure the self-test used to miss: the detector finds the prompt's cat (0.6-0.9) on every image and also
    'sees' an umbrella (0.15-0.35) that is not there. Construction agreement alone is perfect at any threshold up to
    0.6, so it picked the lowest (0.1); the probes — weighted toward the umbrella, the detector's own confusion — pass
    at such a threshold, and calibration that counts them lifts it above the hallucinations."""
    from t2ibench.benchmarks.geneval.selftest import (
        JudgedImage,
        add_probes,
        agreement,
        calibrate,
        judge,
        probe_verdicts,
    )

    rng = np.random.default_rng(5)
    meta = {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"}
    items = []
    for i in range(60):
        dets = [Detection("cat", (0, 0, 10, 10), float(rng.uniform(0.6, 0.9)), ref=0),
                Detection("umbrella", (20, 20, 30, 30), float(rng.uniform(0.15, 0.35)), ref=1)]  # fmt: skip
        items.append(JudgedImage("m", i, 0, meta, True, None, FakeSet(dets), None))
    counts = add_probes(items, seed=0)
    assert counts == {"umbrella": 60}
    asked = [i.probe["include"][0]["class"] for i in items if i.probe is not None]
    assert len(asked) == 60
    assert asked.count("umbrella") > 15
    assert all(a != "cat" for a in asked)
    low = GenEvalParams(threshold=0.1)
    before = agreement(items, [judge(i, None, low) for i in items], probe_verdicts(items, None, low))[0]
    assert before.agreement == 1.0
    assert before.absent_pass == asked.count("umbrella")  # every umbrella probe passes at 0.1: a false pass
    cal = calibrate(items, None, low, folds=5, seed=0)
    assert 0.35 <= cal.params.threshold < 0.6  # every umbrella scores below 0.35
    assert cal.by_prompt["compositor"][0].absent_pass == 0
    assert cal.by_prompt["compositor"][0].agreement == 1.0
    # the same images without the objective's probes: the old calibration's choice
    for item in items:
        item.probe = None
    assert calibrate(items, None, low, folds=5, seed=0).params.threshold == 0.1


def test_processes_sharing_a_cache_build_the_cut_outs_once(tmp_path, monkeypatch):
    """Two refreshes (here: threads; ``flock`` locks conflict between open files either way) that need the
    cut-outs at the same time: one builds them, the other waits and reads its files; a changed key builds again."""
    import threading
    import time

    from t2ibench.models import compositor, ssd

    built = []

    class Detector:  # the key's detector part, without loading the network
        def __init__(self, spec):
            self.spec = spec

        def describe(self):
            return {"model": self.spec.model}

    def extract(detector):
        built.append(detector.spec.model)
        time.sleep(0.5)  # long enough that the second caller arrives mid-build
        rgba = np.zeros((4, 3, 4), np.uint8)
        rgba[..., 3] = 255
        return [compositor.Cutout("horse", "photo", 0.9, rgba)]

    monkeypatch.setenv("T2IBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(ssd, "SSDMobileNetDetector", Detector)
    monkeypatch.setattr(compositor, "extract_cutouts", extract)
    monkeypatch.setattr(compositor, "usable_cutouts", lambda detector, cutouts: cutouts)
    results = []
    threads = [threading.Thread(target=lambda: results.append(compositor.load_cutouts("m1"))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built == ["m1"]
    assert [[(c.label, c.source, c.rgba.shape) for c in r] for r in results] == [[("horse", "photo", (4, 3, 4))]] * 2
    compositor.load_cutouts("m2")  # another detector: another key, built again
    assert built == ["m1", "m2"]
