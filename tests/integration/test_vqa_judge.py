"""GenEval 2's VQA judge (``t2ibench.models.vqa``) on a tiny random-weight Qwen3-VL built locally and loaded through
``VQA_JUDGES`` from its folder, the same path as a hub id.

The reference is facebookresearch/GenEval2's evaluation.py, rebuilt by hand here from transformers' own calls: one
user message (image, then text), ``processor.apply_chat_template(tokenize=True, add_generation_prompt=True)``,
``generate(max_new_tokens=1, do_sample=False, output_scores=True)`` or one forward pass, softmax of the last
position's float32 logits over the whole vocabulary.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from t2ibench.errors import InputError
from t2ibench.models.registry import VQA_JUDGES
from t2ibench.models.tiny import build_tiny_qwen3_vl
from t2ibench.models.vqa import JudgeAnswer, JudgeRequest
from t2ibench.specs import VQAJudgeConfig

TOLERANCE = 1e-5  # float32: batched vs one at a time, and vs the reference's forward pass
QUESTIONS = [
    "How many dogs are in the image? Answer in one word.",
    "Are there any cats in the image? Answer in one word.",
    "Is the cat green? Answer in one word.",
    'Does this image show "a green dog"? Answer the question with Yes or No.',
]
SIZES = [(64, 64), (96, 128), (200, 120), (256, 256), (48, 300)]  # (height, width): 4 to 64 image tokens
QWEN3_VL_PROMPT = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>{}<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def judge_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen3_vl(tmp_path_factory.mktemp("tiny-qwen3-vl") / "model")


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from PIL import Image

    folder = tmp_path_factory.mktemp("judge-images")
    rng = np.random.default_rng(0)
    paths = []
    for n, (h, w) in enumerate(SIZES):
        path = folder / f"image{n}.png"
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


def make_judge(folder: Path | str, batch_size: int = 8, **fields: object):
    spec = VQAJudgeConfig(model=str(folder), dtype="float32", batch_size=batch_size, **fields)  # type: ignore[arg-type]
    return VQA_JUDGES.build("qwen3-vl", spec, device="cpu")


@pytest.fixture(scope="module")
def one_at_a_time(judge_folder: Path):
    return make_judge(judge_folder, batch_size=1)


@pytest.fixture(scope="module")
def token_ids(one_at_a_time) -> tuple[int, ...]:
    """GenEval 2's answer variants' first tokens (' 4' starts with the lone space token, as in Qwen's vocabulary),
    the end of turn, an unused padded row of the vocabulary, and the first id again (the reference sums duplicates)."""
    first = [one_at_a_time.encode(v)[0] for v in ("Yes", "yes", " yes", " Yes", "four", " 4", " four", "4")]
    return (*first, one_at_a_time.encode("<|im_end|>")[0], 447, first[0])


@pytest.fixture(scope="module")
def requests_(images: list[Path], token_ids: tuple[int, ...]) -> list[JudgeRequest]:
    """Every image asked every question, question-major (as a Soft-TIFA run sends them), plus a PIL image."""
    from PIL import Image

    pil = Image.open(images[1]).convert("RGB")
    out = [JudgeRequest(path, q, token_ids) for q in QUESTIONS for path in images]
    return [*out, JudgeRequest(pil, QUESTIONS[0], token_ids), JudgeRequest(pil, QUESTIONS[2], token_ids[:3])]


@pytest.fixture(scope="module")
def expected(one_at_a_time, requests_: list[JudgeRequest]) -> list[JudgeAnswer]:
    return one_at_a_time.ask(requests_)


def reference_probabilities(judge, image: object, text: str, *, generate: bool = False):
    """GenEval 2's evaluation.py by hand: the full-vocabulary probability vector (float32) of one question."""
    import torch

    processor = judge._load_processor()
    model, _ = judge._load()
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}]
    inputs = processor.apply_chat_template(
        messages, tokenize=True, add_generation_prompt=True, return_dict=True, return_tensors="pt"
    )
    with torch.inference_mode():
        if generate:
            out = model.generate(
                **inputs, max_new_tokens=1, do_sample=False, output_scores=True, return_dict_in_generate=True
            )
            scores = out.scores[0]
        else:
            scores = model(**inputs).logits[:, -1].to(torch.float32)
    return torch.softmax(scores, dim=-1)[0].numpy(), inputs["input_ids"][0].tolist()


def max_difference(a: list[JudgeAnswer], b: list[JudgeAnswer]) -> float:
    assert [len(x.token_probabilities) for x in a] == [len(y.token_probabilities) for y in b]
    return max(
        abs(p - q)
        for x, y in zip(a, b, strict=True)
        for p, q in zip(x.token_probabilities, y.token_probabilities, strict=True)
    )


@pytest.mark.parametrize("batch_size", [3, 8, 64])
def test_batched_answers_equal_one_question_at_a_time(judge_folder, requests_, expected, batch_size, monkeypatch):
    judge = make_judge(judge_folder, batch_size=batch_size)
    passes: list[tuple[int, int]] = []  # (questions, images) per question pass
    prefix_passes: list[int] = []  # images per prefix pass
    run_questions, run_prefixes = judge._run_questions, judge._run_prefixes
    monkeypatch.setattr(
        judge, "_run_questions", lambda p, of, q: passes.append((len(q), len(p))) or run_questions(p, of, q)
    )
    monkeypatch.setattr(judge, "_run_prefixes", lambda i, h, t: prefix_passes.append(len(i)) or run_prefixes(i, h, t))
    got = judge.ask(requests_)
    assert max_difference(got, expected) <= TOLERANCE
    assert [a.top_token for a in got] == [a.top_token for a in expected]
    assert [a.top_text for a in got] == [a.top_text for a in expected]
    # batch_size questions per pass, several images' questions together; each image's prefix run once
    assert [n for n, _ in passes] == [min(batch_size, len(requests_) - s) for s in range(0, len(requests_), batch_size)]
    assert max(m for _, m in passes) > 1
    n_images = len(SIZES) + 1
    assert prefix_passes == [min(batch_size, n_images - s) for s in range(0, n_images, batch_size)]
    # duplicated ids answer twice, identically
    for answer in got:
        if len(answer.token_probabilities) > 3:
            assert answer.token_probabilities[0] == answer.token_probabilities[-1]


def test_the_answers_vary_with_the_image_and_the_question(expected):
    """A sanity check of the fixture: the tiny model's answers depend on what it is shown and asked."""
    first = [a.token_probabilities[0] for a in expected[: len(SIZES)]]
    assert len(set(first)) == len(SIZES)
    per_question = [expected[q * len(SIZES)].token_probabilities[0] for q in range(len(QUESTIONS))]
    assert len(set(per_question)) == len(QUESTIONS)
    assert len({a.top_token for a in expected}) > 1


def test_the_prompt_is_qwen3_vl_s_format(one_at_a_time, images):
    processor = one_at_a_time._load_processor()
    for text in QUESTIONS:
        messages = [
            {"role": "user", "content": [{"type": "image", "image": str(images[0])}, {"type": "text", "text": text}]}
        ]
        rendered = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert rendered == QWEN3_VL_PROMPT.format(text)
        assert one_at_a_time._render(text) == rendered
    # the judge's token sequence is the processor's, the image's placeholders expanded
    head, tail = one_at_a_time._split_template()
    _, reference_ids = reference_probabilities(one_at_a_time, str(images[2]), QUESTIONS[0])
    image_id = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    n = reference_ids.count(image_id)
    assert n == (192 // 16) * (128 // 16) // 4  # 200×120 px resized to 192×128 (multiples of 32): 24 tokens
    assert [*head, *[image_id] * n, *tail, *one_at_a_time._question_ids(QUESTIONS[0], head, tail)] == reference_ids


def test_probabilities_are_the_reference_softmax_over_the_whole_vocabulary(judge_folder, images):
    """Every id of the vocabulary (its padded unused rows included) asked at once: the whole vector is the reference's
    ``softmax(scores[0])`` from ``generate``, for an image given by path and one given as a PIL image."""
    import torch
    from PIL import Image

    judge = make_judge(judge_folder, batch_size=4)
    model, _ = judge._load()
    vocabulary = tuple(range(model.config.text_config.vocab_size))
    pil = Image.open(images[3]).convert("RGB")
    cases = [(images[0], QUESTIONS[0]), (images[4], QUESTIONS[3]), (pil, QUESTIONS[1])]
    answers = judge.ask([JudgeRequest(image, text, vocabulary) for image, text in cases])
    for (image, text), answer in zip(cases, answers, strict=True):
        reference, _ = reference_probabilities(
            judge, str(image) if isinstance(image, Path) else image, text, generate=True
        )
        got = np.array(answer.token_probabilities)
        assert np.abs(got - reference).max() <= TOLERANCE
        assert abs(got.sum() - 1.0) < 1e-5
        assert answer.top_token == int(np.argmax(reference))
        # the reference's own decoding: processor.batch_decode([torch.argmax(probs)])[0]
        assert answer.top_text == judge._load_processor().batch_decode([torch.argmax(torch.from_numpy(reference))])[0]


def test_an_exif_rotated_image_is_judged_upright_as_the_reference_loads_it(one_at_a_time, tmp_path, token_ids):
    from PIL import Image, ImageOps
    from transformers.image_utils import load_image

    rng = np.random.default_rng(1)
    raw = Image.fromarray(rng.integers(0, 256, (120, 200, 3), dtype=np.uint8))
    exif = raw.getexif()
    exif[0x0112] = 6  # orientation: rotate 90° clockwise to display
    path = tmp_path / "rotated.jpg"
    raw.save(path, exif=exif, quality=95)
    upright = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
    assert upright.size == (120, 200)
    stored = Image.fromarray(np.asarray(Image.open(path).convert("RGB")))  # the pixels as stored, no orientation

    by_path, by_upright, by_stored = one_at_a_time.ask(
        [JudgeRequest(image, QUESTIONS[0], token_ids) for image in (path, upright, stored)]
    )
    assert by_path == by_upright
    assert max_difference([by_path], [by_stored]) > 1e-6
    reference, _ = reference_probabilities(one_at_a_time, load_image(str(path)), QUESTIONS[0])
    assert max(abs(p - reference[t]) for p, t in zip(by_path.token_probabilities, token_ids, strict=True)) <= TOLERANCE


def test_tokens_encode_without_specials_and_decode_with_them(one_at_a_time):
    tokenizer = one_at_a_time._load_processor().tokenizer
    assert one_at_a_time.encode("Yes") == tokenizer.encode("Yes", add_special_tokens=False)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert one_at_a_time.decode(im_end) == "<|im_end|>"
    space = one_at_a_time.encode(" ")
    assert one_at_a_time.encode(" 4")[0] == space[0]  # Qwen's digits never merge with a space (GenEval 2's oddity)
    assert one_at_a_time.decode(one_at_a_time.encode(" four")[0]).startswith(" ")


def test_describe_names_the_model_and_library(one_at_a_time, judge_folder):
    import transformers

    identity = one_at_a_time.describe()
    assert identity["backend"] == "qwen3-vl"
    assert identity["model"] == str(judge_folder)
    assert identity["revision"] is None
    assert identity["commit"] is None  # a local folder has no hub commit
    assert identity["dtype"] == identity["loaded_dtype"] == "float32"
    assert identity["transformers"] == transformers.__version__
    assert identity["image_processor"]["patch_size"] == 16
    json.dumps(identity)  # storable


# -- refusals --------------------------------------------------------------------------------------------------------


def one_line_error(excinfo: pytest.ExceptionInfo[InputError], *names: str) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    for name in names:
        assert name in message
    return message


@pytest.fixture
def copied_folder(judge_folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(judge_folder, tmp_path / "model"))


def test_a_processor_without_a_chat_template_is_refused(copied_folder, images):
    (copied_folder / "chat_template.jinja").unlink()
    judge = make_judge(copied_folder)
    with pytest.raises(InputError, match="no chat template") as excinfo:
        judge.ask([JudgeRequest(images[0], QUESTIONS[0], (1,))])
    one_line_error(excinfo, str(copied_folder))


def test_a_tokenizer_without_the_image_token_is_refused(copied_folder, images):
    for name, edit in [
        (
            "tokenizer.json",
            lambda t: {**t, "added_tokens": [a for a in t["added_tokens"] if a["content"] != "<|image_pad|>"]},
        ),
        (
            "tokenizer_config.json",
            lambda t: {**t, "extra_special_tokens": [x for x in t["extra_special_tokens"] if x != "<|image_pad|>"]},
        ),
    ]:
        path = copied_folder / name
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    judge = make_judge(copied_folder)
    with pytest.raises(InputError, match="no image token") as excinfo:
        judge.ask([JudgeRequest(images[0], QUESTIONS[0], (1,))])
    one_line_error(excinfo, str(copied_folder), "<|image_pad|>")


def test_an_unreadable_image_is_a_one_line_error_naming_the_file(one_at_a_time, images, tmp_path):
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    missing = tmp_path / "missing.png"
    for path in (broken, missing):
        with pytest.raises(InputError, match="unreadable image") as excinfo:
            one_at_a_time.ask([JudgeRequest(images[0], QUESTIONS[0], (1,)), JudgeRequest(path, QUESTIONS[0], (1,))])
        one_line_error(excinfo, str(path))


def test_bad_token_ids_and_empty_questions_are_refused(one_at_a_time, images):
    with pytest.raises(InputError, match=r"judge request 1: token id 448 is outside the vocabulary \[0, 448\)"):
        one_at_a_time.ask([JudgeRequest(images[0], QUESTIONS[0], (1,)), JudgeRequest(images[0], QUESTIONS[1], (448,))])
    with pytest.raises(InputError, match="judge request 0: the question text is empty"):
        one_at_a_time.ask([JudgeRequest(images[0], " ", (1,))])
    assert one_at_a_time.ask([]) == []


def test_an_unknown_dtype_and_a_mistyped_backend_are_refused_with_suggestions():
    with pytest.raises(InputError, match=r"dtype: unknown dtype 'fp16'; did you mean 'float16'\?"):
        VQAJudgeConfig(dtype="fp16")
    with pytest.raises(InputError, match=r"batch_size: must be in \[1, 4096\]"):
        VQAJudgeConfig(batch_size=0)
    with pytest.raises(InputError, match=r"unknown VQA judge backend 'qwen3vl'; did you mean 'qwen3-vl'\?"):
        VQA_JUDGES.build("qwen3vl", VQAJudgeConfig(), device="cpu")


def test_a_model_that_cannot_be_loaded_is_named(tmp_path, images):
    judge = make_judge(tmp_path / "no-such-model")
    with pytest.raises(InputError) as excinfo:
        judge.encode("Yes")
    one_line_error(excinfo, str(tmp_path / "no-such-model"))


# -- laziness ----------------------------------------------------------------------------------------------------


def test_building_the_judge_loads_nothing_until_it_is_used(judge_folder, images):
    """Built through the registry, the judge holds no processor or model (and, in a fresh interpreter, neither torch
    nor transformers is imported) until its first question; the registry module imports no torch."""
    judge = make_judge(judge_folder)
    assert (judge._processor, judge._loaded) == (None, None)
    judge.ask([JudgeRequest(images[0], QUESTIONS[0], (1,))])
    assert judge._processor is not None
    assert judge._loaded is not None

    code = (
        "import sys; from t2ibench.models.registry import VQA_JUDGES; from t2ibench.specs import VQAJudgeConfig;"
        f"VQA_JUDGES.build('qwen3-vl', VQAJudgeConfig(model={str(judge_folder)!r}), device='cpu');"
        "print(','.join(m for m in ('torch', 'transformers', 'PIL') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
