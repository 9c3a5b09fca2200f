"""T2I-CompBench++'s evaluators' models (BLIP VQA, OWLv2, DPT) on tiny random-weight checkpoints built locally and
loaded through their registries from a folder — the path a hub id takes — each checked against the reference's
computation rebuilt here from torchvision's transforms and transformers' modules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from t2ibench.errors import InputError
from t2ibench.models.registry import DEPTH_MODELS, OPEN_DETECTORS, VQA_JUDGES
from t2ibench.models.tiny_compbench import BLIP_NO, BLIP_YES, build_tiny_blip_vqa, build_tiny_dpt, build_tiny_owlv2
from t2ibench.models.vqa import JudgeRequest
from t2ibench.specs import DepthConfig, OpenDetectorConfig, VQAJudgeConfig


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from PIL import Image

    folder = tmp_path_factory.mktemp("compbench-images")
    rng = np.random.default_rng(0)
    paths = []
    for n, (h, w) in enumerate([(64, 64), (90, 130), (512, 512)]):
        path = folder / f"{n}.png"
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


def test_blip_answers_as_the_reference_computes_and_batching_changes_nothing(tmp_path: Path, images: list[Path]):
    import torch
    from PIL import Image
    from torchvision import transforms
    from transformers import AutoTokenizer, BlipForQuestionAnswering

    folder = build_tiny_blip_vqa(tmp_path / "blip")
    judge = VQA_JUDGES.build(
        "blip-vqa", VQAJudgeConfig(backend="blip-vqa", model=str(folder), batch_size=3), device="cpu"
    )
    questions = ["a green bench?", "a blue bowl?", "a very long question about a red apple and a car on the road?"]
    requests = [JudgeRequest(img, q, (BLIP_YES, BLIP_NO)) for img in images for q in questions]
    batched = judge.ask(requests)
    one_by_one = [judge.ask([r])[0] for r in requests]
    # the reference's vqa_prob rebuilt: its test transform, [ENC] first, one decoder step from [DEC]
    model = BlipForQuestionAnswering.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    transform = transforms.Compose([
        transforms.Resize((480, 480), interpolation=transforms.InterpolationMode.BICUBIC),
        transforms.ToTensor(),
        transforms.Normalize((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
    ])  # fmt: skip
    for request, got, alone in zip(requests, batched, one_by_one, strict=True):
        image = transform(Image.open(request.image).convert("RGB")).unsqueeze(0)
        q = tokenizer([request.text], padding="longest", truncation=True, max_length=35, return_tensors="pt")
        q.input_ids[:, 0] = 30523
        with torch.no_grad():
            emb = model.vision_model(pixel_values=image, interpolate_pos_encoding=True).last_hidden_state
            image_mask = torch.ones(emb.shape[:-1], dtype=torch.long)
            states = model.text_encoder(q.input_ids, attention_mask=q.attention_mask, encoder_hidden_states=emb,
                                        encoder_attention_mask=image_mask)[0]  # fmt: skip
            logits = model.text_decoder(torch.tensor([[30522]]), encoder_hidden_states=states,
                                        encoder_attention_mask=q.attention_mask).logits[:, 0, :]  # fmt: skip
        prob = torch.softmax(logits, dim=1)[0]
        expected = (float(prob[BLIP_YES]), float(prob[BLIP_NO]))
        assert np.allclose(got.token_probabilities, expected, rtol=0, atol=1e-6)
        assert np.allclose(alone.token_probabilities, got.token_probabilities, rtol=0, atol=1e-6)
        assert got.top_token == int(torch.argmax(prob))
    identity = judge.describe()
    assert identity["weights"]  # a local folder's checksum is recorded
    assert identity["commit"] is None  # a local folder has no hub commit (a hub id records the one it resolved)
    assert judge.encode("yes") == [BLIP_YES]


def test_the_tiny_blip_loads_by_name_and_a_missing_folder_is_refused(tmp_path: Path, images: list[Path]):
    judge = VQA_JUDGES.build("blip-vqa", VQAJudgeConfig(backend="blip-vqa", model="tiny-random"), device="cpu")
    (answer,) = judge.ask([JudgeRequest(images[0], "a cat?", (BLIP_YES, BLIP_NO))])
    assert 0 < answer.token_probabilities[0] < 1
    missing = VQA_JUDGES.build(
        "blip-vqa", VQAJudgeConfig(backend="blip-vqa", model=str(tmp_path / "nope")), device="cpu"
    )
    with pytest.raises(InputError, match="nope"):
        missing.ask([JudgeRequest(images[0], "a cat?", (BLIP_YES, BLIP_NO))])


def test_owlv2_keeps_scored_boxes_of_the_named_objects_after_per_label_nms(tmp_path: Path, images: list[Path]):
    import torch
    from PIL import Image
    from torchvision.ops import batched_nms, box_iou
    from transformers import Owlv2ForObjectDetection, Owlv2Processor

    folder = build_tiny_owlv2(tmp_path / "owl")
    spec = OpenDetectorConfig(model=str(folder), threshold=0.0, nms=0.3)
    detector = OPEN_DETECTORS.build("owlv2", spec, device="cpu")
    model, processor = Owlv2ForObjectDetection.from_pretrained(folder), Owlv2Processor.from_pretrained(folder)
    for path in images[:2]:
        image = Image.open(path)
        found = detector.detect(image, ["dog", "cat", "dog"])
        assert found, "threshold 0 keeps boxes"
        assert {d.label for d in found} <= {"dog", "cat"}
        assert [d.score for d in found] == sorted((d.score for d in found), reverse=True)
        assert all(
            0 <= d.box[0] <= d.box[2] <= image.width and 0 <= d.box[1] <= d.box[3] <= image.height for d in found
        )
        for label in ("dog", "cat"):
            boxes = torch.tensor([d.box for d in found if d.label == label])
            if len(boxes) > 1:
                iou = box_iou(boxes, boxes).fill_diagonal_(0)
                assert float(iou.max()) <= 0.3 + 1e-6
        # the same boxes from transformers' own post-processing and torchvision's NMS
        inputs = processor(
            text=[["a photo of a dog", "a photo of a cat"]], images=image.convert("RGB"), return_tensors="pt"
        )
        with torch.no_grad():
            out = model(**inputs)
        side = max(image.size)
        raw = processor.post_process_grounded_object_detection(out, threshold=0.0, target_sizes=[(side, side)])[0]
        boxes = raw["boxes"].clone()
        boxes[:, 0::2] = boxes[:, 0::2].clamp(0, image.width)
        boxes[:, 1::2] = boxes[:, 1::2].clamp(0, image.height)
        inside = (boxes[:, 2] - boxes[:, 0] >= 1) & (boxes[:, 3] - boxes[:, 1] >= 1)
        keep = batched_nms(boxes[inside], raw["scores"][inside], raw["labels"][inside], 0.3)
        kept = [(round(float(s), 5), *(round(float(v), 3) for v in b)) for s, b in
                zip(raw["scores"][inside][keep], boxes[inside][keep], strict=True)]  # fmt: skip
        assert sorted(kept) == sorted((round(d.score, 5), *(round(v, 3) for v in d.box)) for d in found)
    assert detector.detect(Image.open(images[0]), []) == []
    # names of different token lengths make one batch: each query is padded to the model's 16 text positions
    assert processor.tokenizer.model_max_length == 16
    mixed = detector.detect(Image.open(images[0]), ["dog", "traffic light"])
    assert mixed, "threshold 0 keeps boxes"
    assert {d.label for d in mixed} <= {"dog", "traffic light"}


def test_dpt_depth_is_the_references_normalised_8_bit_map_at_the_images_size(tmp_path: Path, images: list[Path]):
    import torch
    from PIL import Image
    from torchvision import transforms
    from transformers import DPTForDepthEstimation

    folder = build_tiny_dpt(tmp_path / "dpt")
    depth = DEPTH_MODELS.build("dpt", DepthConfig(model=str(folder)), device="cpu")
    model = DPTForDepthEstimation.from_pretrained(folder).eval()
    assert model.config.is_hybrid  # like DPT-Hybrid: its embeddings refuse a 480-pixel input unless told the size
    model.dpt.embeddings.image_size = (480, 480)
    transform = transforms.Compose(
        [transforms.Resize([480, 480]), transforms.ToTensor(), transforms.Normalize(mean=0.5, std=0.5)]
    )
    for path in images:
        image = Image.open(path).convert("RGB")
        got = depth.depth_image(image)
        assert got.mode == "L"
        assert got.size == image.size
        with torch.no_grad():
            pred = model(pixel_values=transform(image).unsqueeze(0)).predicted_depth[0]
        pred = (pred - pred.min()) / (pred.max() - pred.min())
        pred = torch.nn.functional.interpolate(
            pred[None, None], size=(image.height, image.width), mode="bilinear", align_corners=True
        )
        expected = Image.fromarray(255 * pred[0, 0].numpy()).convert("L")
        diff = np.abs(np.asarray(got, dtype=int) - np.asarray(expected, dtype=int))
        assert diff.max() == 0  # torchvision's Resize on a PIL image is PIL's bilinear resize
    with pytest.raises(InputError, match="nope"):
        DEPTH_MODELS.build("dpt", DepthConfig(model=str(tmp_path / "nope")), device="cpu").depth_image(
            Image.open(images[0])
        )
