"""GenEval's detector and colour classifier through the production loaders, with tiny random-weight models."""

import json
import sys
import types

import numpy as np
import pytest
from PIL import Image

from t2ibench.benchmarks.geneval.metrics import COLORS
from t2ibench.benchmarks.geneval.suite import vocabulary
from t2ibench.errors import InputError
from t2ibench.models.colour import ClipColourClassifier
from t2ibench.models.detection import HFMask2Former, MMDetMask2Former, masks_to_boxes
from t2ibench.specs import ColourConfig, DetectorConfig


@pytest.fixture(scope="module")
def photos():
    from skimage import data

    return [Image.fromarray(data.astronaut()), Image.fromarray(data.coffee()), Image.fromarray(data.chelsea())]


def test_mask2former_loads_saved_weights_and_maps_labels(tiny_mask2former):
    import torch
    from transformers import Mask2FormerForUniversalSegmentation

    detector = HFMask2Former(
        DetectorConfig(model=str(tiny_mask2former), resize=(64, 96)), device="cpu", label_space=vocabulary().labels
    )
    _, model, labels, _, _ = detector._load()
    saved = Mask2FormerForUniversalSegmentation.from_pretrained(tiny_mask2former).state_dict()
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, saved[name]), name
    assert labels == list(vocabulary().classes)  # HF's "mouse", "remote", "keyboard" → GenEval's names
    # without a label space, the model's own labels
    own = HFMask2Former(DetectorConfig(model=str(tiny_mask2former), resize=(64, 96)), device="cpu")._load()[2]
    assert own == [model.config.id2label[i] for i in range(len(own))]
    assert "mouse" in own
    assert detector.describe()["postprocess"] == "mmdet-mask2former-instance"


def test_mask2former_detections_on_real_photos(tiny_mask2former, photos):
    import torch

    detector = HFMask2Former(
        DetectorConfig(model=str(tiny_mask2former), resize=(64, 96)),
        device="cpu",
        max_per_image=50,
        label_space=vocabulary().labels,
    )
    results = detector.detect(photos[:2])
    for image, found in zip(photos[:2], results, strict=True):
        assert found.image_size == image.size
        assert len(found.detections) == 50
        assert found.masks.shape == (50, image.height, image.width)
        boxes = masks_to_boxes(found.masks)
        for det in found.detections:
            assert det.label in vocabulary().classes
            assert 0.0 <= det.score <= 1.0
            assert det.box == tuple(boxes[det.ref])
            x1, y1, x2, y2 = det.box
            assert 0 <= x1 <= x2 <= image.width
            assert 0 <= y1 <= y2 <= image.height
    # the score is class probability × mean mask probability: recompute the best one independently
    _, model, _, _, _ = detector._load()
    processor = detector._load()[0]
    inputs = processor(images=[photos[0]], return_tensors="pt")
    with torch.inference_mode():
        out = model(pixel_values=inputs["pixel_values"])
    probs = out.class_queries_logits[0].softmax(-1)[:, :-1]
    best = float(probs.max())
    assert max(d.score for d in results[0].detections) <= best + 1e-6


def test_masks_to_boxes_are_tight_and_exclusive():
    masks = np.zeros((2, 10, 12), dtype=bool)
    masks[0, 2:5, 3:8] = True
    assert masks_to_boxes(masks).tolist() == [[3, 2, 8, 5], [0, 0, 0, 0]]


def test_colour_classifier_loads_the_checkpoint(tiny_clip):
    import torch

    arch, checkpoint = tiny_clip
    clf = ClipColourClassifier(colors=COLORS, spec=ColourConfig(arch=arch, pretrained=str(checkpoint)), device="cpu")
    model = clf._load()[0]
    saved = torch.load(checkpoint, weights_only=True)["state_dict"]
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, saved[name]), name


def test_colour_crops_grey_background_outside_the_mask(tiny_clip):
    arch, checkpoint = tiny_clip
    image = Image.new("RGB", (40, 20), (0, 0, 255))
    image.paste((255, 0, 0), (0, 0, 20, 20))
    mask = np.zeros((20, 40), dtype=bool)
    mask[5:15, 5:15] = True
    grey = ClipColourClassifier(colors=COLORS, spec=ColourConfig(arch=arch, pretrained=str(checkpoint)), device="cpu")
    (crop,) = grey.crops(image, [((2, 2, 30, 18), mask)])
    assert crop.size == (28, 16)
    assert crop.getpixel((5, 5)) == (255, 0, 0)  # inside the mask: the object
    assert crop.getpixel((0, 0)) == (153, 153, 153)  # outside: #999999
    original = ClipColourClassifier(
        colors=COLORS, spec=ColourConfig(arch=arch, pretrained=str(checkpoint), background="original"), device="cpu"
    )
    (kept,) = original.crops(image, [((2, 2, 30, 18), mask)])
    assert kept.getpixel((25, 8)) == (0, 0, 255)
    with pytest.raises(InputError, match="mask shape"):
        grey.crops(image, [((0, 0, 5, 5), np.zeros((3, 3), dtype=bool))])


def test_colour_classifier_returns_colour_names(tiny_clip, photos):
    arch, checkpoint = tiny_clip
    clf = ClipColourClassifier(colors=COLORS, spec=ColourConfig(arch=arch, pretrained=str(checkpoint)), device="cpu")
    boxes = [((0, 0, 100, 100), None), ((50, 50, 300, 200), None), ((10, 10, 20, 20), None)]
    first = clf.classify(photos[1], boxes, "cup")
    assert len(first) == 3
    assert set(first) <= set(COLORS)
    assert clf.classify(photos[1], boxes, "cup") == first  # deterministic
    assert clf.classify(photos[1], [], "cup") == []


def test_unknown_architecture_is_a_clear_error():
    with pytest.raises(InputError, match="unknown open_clip architecture 'ViT-Nope'"):
        ClipColourClassifier(colors=COLORS, spec=ColourConfig(arch="ViT-Nope", pretrained=None), device="cpu")._load()


def test_evaluate_cli_end_to_end_on_real_photos(tiny_mask2former, tiny_clip, photos, tmp_path, capsys):
    from t2ibench.benchmarks.geneval.suite import write_suite
    from t2ibench.cli import main

    arch, checkpoint = tiny_clip
    suite = [
        {"tag": "single_object", "include": [{"class": "person", "count": 1}], "prompt": "a photo of a person"},
        {
            "tag": "colors",
            "include": [{"class": "cup", "count": 1, "color": "white"}],
            "prompt": "a photo of a white cup",
        },
        {
            "tag": "position",
            "include": [{"class": "cat", "count": 1}, {"class": "bed", "count": 1, "position": ["below", 0]}],
            "prompt": "a photo of a bed below a cat",
        },
    ]
    write_suite(tmp_path / "suite.jsonl", suite)
    for index, photo in enumerate(photos):
        folder = tmp_path / "imgs" / f"{index:05d}"
        (folder / "samples").mkdir(parents=True)
        (folder / "metadata.jsonl").write_text(json.dumps(suite[index]) + "\n")
        for k in range(2):
            photo.resize((128, 96)).save(folder / "samples" / f"{k:05d}.png")
    config = tmp_path / f"{arch}.json"
    config.write_text((checkpoint.parent / f"{arch}.json").read_text())
    argv = [
        "evaluate",
        "geneval",
        str(tmp_path / "imgs"),
        "--metadata",
        str(tmp_path / "suite.jsonl"),
        "--images-per-prompt",
        "2",
        "--detector-model",
        str(tiny_mask2former),
        "--resize",
        "64,96",
        "--clip-arch",
        str(config),
        "--clip-pretrained",
        str(checkpoint),
        "--device",
        "cpu",
        "--threshold",
        "0.0",
        "--quiet",
        "--json",
        str(tmp_path / "summary.json"),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| imgs | " in out
    results = [json.loads(line) for line in (tmp_path / "imgs" / "results.jsonl").read_text().splitlines()]
    assert len(results) == 6
    assert {r["tag"] for r in results} == {"single_object", "colors", "position"}
    colour_rows = [r for r in results if r["tag"] == "colors"]
    for r in colour_rows:  # random weights: the cup (if any was found) got some colour, and the reason says so
        assert r["correct"] or "white cup" in r["reason"] or "expected cup>=1" in r["reason"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["images"] == 6
    assert summary["prompts"] == 3


def mmdet(config, checkpoint=None):
    return DetectorConfig(backend="mmdet", mmdet_config=config, mmdet_checkpoint=checkpoint)


def test_mmdet_backend_converts_per_class_results(monkeypatch):
    """mmdet is never installed in CI: a stand-in module checks the conversion of (bbox, segm) results."""
    classes = list(vocabulary().classes)
    classes[64] = "mouse"

    class FakeModel:
        CLASSES = classes

    def inference_detector(model, array):
        bbox = [np.zeros((0, 5), np.float32) for _ in classes]
        segm = [[] for _ in classes]
        bbox[15] = np.array([[1, 2, 30, 40, 0.95], [5, 5, 9, 9, 0.2]], np.float32)
        segm[15] = [np.ones(array.shape[:2], bool), np.zeros(array.shape[:2], bool)]
        bbox[64] = np.array([[0, 0, 4, 4, 0.5]], np.float32)
        segm[64] = [np.zeros(array.shape[:2], bool)]
        return bbox, segm

    fake = types.ModuleType("mmdet")
    apis = types.ModuleType("mmdet.apis")
    apis.init_detector = lambda config, checkpoint, device: FakeModel()
    apis.inference_detector = inference_detector
    monkeypatch.setitem(sys.modules, "mmdet", fake)
    monkeypatch.setitem(sys.modules, "mmdet.apis", apis)
    detector = MMDetMask2Former(mmdet("config.py", "ckpt.pth"), device="cpu", label_space=vocabulary().labels)
    (found,) = detector.detect([Image.new("RGB", (50, 60))])
    assert [(d.label, d.score) for d in found.detections] == [
        ("cat", pytest.approx(0.95)),
        ("cat", pytest.approx(0.2)),
        ("computer mouse", pytest.approx(0.5)),
    ]
    assert found.detections[0].box == (1.0, 2.0, 30.0, 40.0)
    assert found.masks.shape == (3, 60, 50)
    assert found.mask(0).all()


def test_mmdet_backend_without_mmdet_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mmdet", None)
    monkeypatch.setitem(sys.modules, "mmdet.apis", None)
    with pytest.raises(InputError, match=r"t2ibench\[mmdet\]"):
        MMDetMask2Former(mmdet("config.py")).detect([Image.new("RGB", (4, 4))])


def test_postprocessing_is_mmdets_per_detection_formula():
    """mmdet's Mask2Former instance post-processing transcribed (the k picked (query, class) pairs' masks upsampled to
    the padded input, cropped, upsampled to the image, each scored by its mean sigmoid inside the mask) gives the same
    masks and boxes bit for bit, and the same scores to float32 rounding, as the detector's, which upsamples each
    distinct query's mask once."""
    import torch
    from torch.nn import functional

    def reference(class_logits, mask_logits, padded, valid, original, k):
        scores = functional.softmax(class_logits, dim=-1)[:, :-1]
        top, index = scores.flatten().topk(k, sorted=True)
        query = torch.div(index, scores.shape[1], rounding_mode="floor")
        masks = functional.interpolate(mask_logits[query][None], size=padded, mode="bilinear")  # all k picks at once
        masks = functional.interpolate(masks[:, :, : valid[0], : valid[1]], size=original, mode="bilinear")[0]
        binary = masks > 0
        score = top * (masks.sigmoid() * binary).flatten(1).sum(1) / (binary.flatten(1).sum(1) + 1e-6)
        return list(zip(score.tolist(), binary.numpy(), strict=True))

    detector = HFMask2Former.__new__(HFMask2Former)
    detector.max_per_image = 100
    generator = torch.Generator().manual_seed(0)
    for queries, classes in [(10, 80), (100, 80), (3, 5)]:
        class_logits = torch.randn(queries, classes + 1, generator=generator)
        mask_logits = 3 * torch.randn(queries, 12, 16, generator=generator)
        found = detector._postprocess(
            class_logits,
            mask_logits,
            (48, 64),
            (45, 61),
            (90, 120),
            [str(c) for c in range(classes)],
            functional,
            torch,
        )
        expected = reference(class_logits, mask_logits, (48, 64), (45, 61), (90, 120), min(100, queries * classes))
        assert len(found.detections) == len(expected)
        assert len({d.ref for d in found.detections}) == len(expected)
        for det, (score, mask) in zip(found.detections, expected, strict=True):
            assert det.score == pytest.approx(score, rel=1e-6, abs=0)  # float32 sums in another order
            assert np.array_equal(found.masks[det.ref], mask)
            assert det.box == tuple(float(v) for v in masks_to_boxes(mask[None])[0])
