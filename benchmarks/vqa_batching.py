"""GenEval 2's judge, one question at a time vs batched: seconds for N images × Q questions on the tiny Qwen3-VL.

    OMP_NUM_THREADS=1 python benchmarks/vqa_batching.py   # ~1 min; writes its section of docs/performance.md

The tiny judge (``t2ibench.models.tiny.build_tiny_qwen3_vl``: 2+2 layers, hidden 32, 64 image tokens for the
256×256 images used here) is built into benchmarks/_scratch/ and loaded through ``VQA_JUDGES`` like a hub id. Each
way answers the same N × Q requests (every image asked every question, requests in question-major order as a
Soft-TIFA run sends them) and is timed ``--repeats`` times after a warm-up; the table gives medians:

* ``reference``: GenEval 2's evaluation.py loop: per question ``processor.apply_chat_template(tokenize=True)`` with
  the image path, one forward pass, softmax of the last logits (the image decoded and preprocessed every time);
* ``one at a time``: ``Qwen3VLJudge.ask`` with ``batch_size=1`` (each image preprocessed and its prompt prefix run
  once; one question per forward pass);
* ``plain batched``: what was tried first: each row the whole prompt (image tokens included), left-padded, the
  vision tower run once per image and its features repeated per row (``mm_encoder_outputs``), ``batch_size`` rows
  per forward pass: defined here, not kept in the library;
* ``shared prefix``: ``Qwen3VLJudge.ask`` with ``batch_size`` (the library's path: each image's prefix run once,
  its key/value cache shared by its questions, ``batch_size`` questions per forward pass).

Every way's probabilities are compared with the reference's (max absolute difference: the exactness the tests
assert, ≤ 1e-5, measured here at this size too). The tiny model's arithmetic is trivial, so the times are mostly
per-call overhead (preprocessing, Python, kernel launches); on the real 8B judge the prefix (1024 image tokens for
a 1024² image) dominates the work and shared prefixes save more (docs/models.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCRATCH = REPO / "benchmarks" / "_scratch"
sys.path.insert(0, str(REPO / "src"))

QUESTIONS = [
    "How many dogs are in the image? Answer in one word.",
    "Are there any dogs in the image? Answer in one word.",
    "Is the dog green? Answer in one word.",
    "How many cats are in the image? Answer in one word.",
    "Are there any cats in the image? Answer in one word.",
    "Is the cat to the left of the dog? Answer in one word.",
    "How many bicycles are in the image? Answer in one word.",
    "Are there any bicycles in the image? Answer in one word.",
]


def reference_answers(judge: Any, requests: list[Any]) -> list[list[float]]:
    """GenEval 2's evaluation.py: one apply_chat_template and forward pass per question."""
    import torch

    processor = judge._load_processor()
    model, device = judge._load()
    out = []
    with torch.inference_mode():
        for request in requests:
            messages = [
                {
                    "role": "user",
                    "content": [{"type": "image", "image": str(request.image)}, {"type": "text", "text": request.text}],
                }
            ]
            inputs = processor.apply_chat_template(
                messages, tokenize=True, add_generation_prompt=True, return_dict=True, return_tensors="pt"
            ).to(device)
            probs = torch.softmax(model(**inputs).logits[:, -1].to(torch.float32), dim=-1)
            out.append([probs[0, t].item() for t in request.token_ids])
    return out


def plain_batched_answers(judge: Any, requests: list[Any], batch_size: int) -> list[list[float]]:
    """Whole prompts, left-padded, ``batch_size`` rows per pass; vision once per image, repeated per row."""
    import torch
    from transformers.models.qwen3_vl.modeling_qwen3_vl import BaseModelOutputWithDeepstackFeatures

    from t2ibench.models.vqa import open_image

    processor = judge._load_processor()
    model, device = judge._load()
    head, tail = judge._split_template()
    image_id = processor.tokenizer.get_vocab()[processor.image_token]
    merge = processor.image_processor.merge_size
    order = sorted(range(len(requests)), key=lambda i: str(requests[i].image))
    out: list[list[float]] = [[] for _ in requests]
    features: dict[str, tuple[Any, Any, Any]] = {}
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            for i in chunk:
                key = str(requests[i].image)
                if key not in features:
                    pixels = processor.image_processor(images=[open_image(requests[i].image)], return_tensors="pt")
                    grid = pixels["image_grid_thw"].to(device)
                    vision = model.model.get_image_features(pixels["pixel_values"].to(device), grid, return_dict=True)
                    features[key] = (grid, vision.pooler_output[0], [d[0] for d in vision.deepstack_features])
            rows = []
            for i in chunk:
                grid = features[str(requests[i].image)][0]
                question = judge._question_ids(requests[i].text, head, tail)
                rows.append([*head, *[image_id] * (int(grid.prod()) // merge**2), *tail, *question])
            width = max(len(r) for r in rows)
            ids = torch.full((len(rows), width), processor.tokenizer.pad_token_id or 0, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for r, row in enumerate(rows):
                ids[r, width - len(row) :] = torch.tensor(row)
                mask[r, width - len(row) :] = 1
            ids, mask = ids.to(device), mask.to(device)
            chosen = [features[str(requests[i].image)] for i in chunk]
            vision = BaseModelOutputWithDeepstackFeatures(
                pooler_output=tuple(c[1] for c in chosen),
                deepstack_features=[tuple(c[2][layer] for c in chosen) for layer in range(len(chosen[0][2]))],
            )
            logits = model(
                input_ids=ids,
                attention_mask=mask,
                mm_token_type_ids=(ids == image_id).long(),
                image_grid_thw=torch.cat([c[0] for c in chosen]),
                mm_encoder_outputs={"image": vision},
                logits_to_keep=1,
            ).logits
            probs = torch.softmax(logits[:, -1].to(torch.float32), dim=-1)
            for r, i in enumerate(chunk):
                out[i] = [probs[r, t].item() for t in requests[i].token_ids]
            for i in chunk:  # an image whose questions are all done is dropped
                key = str(requests[i].image)
                if all(str(requests[j].image) != key for j in order[start + batch_size :]):
                    features.pop(key, None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--questions", type=int, default=7, help="per image (GenEval 2 averages 7.5)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--side", type=int, default=256, help="image side in pixels (256: 64 image tokens)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-write", action="store_true", help="print, do not update docs/performance.md")
    args = ap.parse_args()

    import numpy as np
    import torch
    from PIL import Image

    from t2ibench.models.registry import VQA_JUDGES
    from t2ibench.models.tiny import build_tiny_qwen3_vl
    from t2ibench.models.vqa import JudgeRequest
    from t2ibench.specs import VQAJudgeConfig

    folder = SCRATCH / "vqa_batching"
    model_dir = folder / "tiny-qwen3-vl"
    if not (model_dir / "model.safetensors").exists():
        build_tiny_qwen3_vl(model_dir)
    rng = np.random.default_rng(0)
    paths = []
    for n in range(args.images):
        path = folder / f"image{n}.png"
        Image.fromarray(rng.integers(0, 256, (args.side, args.side, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    questions = (QUESTIONS * (args.questions // len(QUESTIONS) + 1))[: args.questions]
    requests = [JudgeRequest(p, q, (5, 7, 5, 300)) for q in questions for p in paths]

    def judge(batch_size: int) -> Any:
        spec = VQAJudgeConfig(model=str(model_dir), dtype="float32", batch_size=batch_size)
        return VQA_JUDGES.build("qwen3-vl", spec, device="cpu")

    one, batched = judge(1), judge(args.batch_size)
    ways = {
        "reference": lambda: reference_answers(one, requests),
        "one at a time": lambda: [list(a.token_probabilities) for a in one.ask(requests)],
        "plain batched": lambda: plain_batched_answers(batched, requests, args.batch_size),
        "shared prefix": lambda: [list(a.token_probabilities) for a in batched.ask(requests)],
    }
    seconds: dict[str, float] = {}
    diffs: dict[str, float] = {}
    expected = ways["reference"]()
    for name, way in ways.items():
        got = way()  # warm-up, and the answers compared
        diffs[name] = max(abs(a - b) for x, y in zip(got, expected, strict=True) for a, b in zip(x, y, strict=True))
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            way()
            times.append(time.perf_counter() - start)
        seconds[name] = statistics.median(times)
        print(f"{name}: {seconds[name]:.3f} s (max |Δp| {diffs[name]:.1e})", file=sys.stderr, flush=True)

    # in bfloat16 the rounding depends on what shares a pass: batched vs one at a time, no timing
    low = {size: VQA_JUDGES.build("qwen3-vl", VQAJudgeConfig(model=str(model_dir), dtype="bfloat16",
                                                             batch_size=size), device="cpu")
           for size in (1, args.batch_size)}  # fmt: skip
    vocab = json.loads((model_dir / "config.json").read_text())["text_config"]["vocab_size"]
    every = [JudgeRequest(r.image, r.text, tuple(range(vocab))) for r in requests]  # the whole distribution
    alone, together = ([list(a.token_probabilities) for a in low[size].ask(every)] for size in low)
    bf16 = max(abs(a - b) for x, y in zip(alone, together, strict=True) for a, b in zip(x, y, strict=True))
    print(f"bfloat16: batched vs one at a time, max |Δp| {bf16:.1e}", file=sys.stderr, flush=True)

    threads = torch.get_num_threads()
    lines = [
        f"GenEval 2 judge batching (`benchmarks/vqa_batching.py`): tiny random-weight Qwen3-VL on CPU "
        f"({threads} thread{'s' if threads != 1 else ''}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}), "
        f"{args.images} images ({args.side}² px, {args.side**2 // 1024} image tokens) × {args.questions} questions, "
        f"batch size {args.batch_size}; median of {args.repeats} runs.",
        "",
        "| way | seconds | per image | vs reference | vs one at a time | max abs Δp vs reference |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in seconds.items():
        lines.append(
            f"| {name} | {s:.3f} | {1000 * s / args.images:.1f} ms | {seconds['reference'] / s:.1f}× "
            f"| {seconds['one at a time'] / s:.1f}× | {diffs[name]:.1e} |"
        )
    head, tail = one._split_template()
    prefix = len(head) + args.side**2 // 1024 + len(tail)
    question = statistics.mean(len(one._question_ids(q, head, tail)) for q in questions)
    full, shared = args.questions * (prefix + question), prefix + args.questions * question
    real = 1024 + len(head) + len(tail)  # the 8B judge's prefix for a 1024² image (1024 image tokens)
    real_ratio = args.questions * (real + question) / (real + args.questions * question)
    lines += [
        "",
        f"Language-model tokens per image: {full:.0f} one question at a time (prefix {prefix} + question "
        f"{question:.1f}, × {args.questions}), {shared:.0f} with shared prefixes ({full / shared:.1f}× fewer); the "
        f"vision tower runs once per image instead of {args.questions} times. With the real judge's 1024 image "
        f"tokens (a 1024² image) and these question lengths, {real_ratio:.1f}× fewer (arithmetic, not a timing).",
        "",
        f"In bfloat16 the same requests batched ({args.batch_size}) and one at a time differ by up to {bf16:.1e} in "
        "probability over the whole vocabulary (rounding depends on what shares a pass): there the judge runs each "
        "image's questions in passes of their own and records the batch size in the protocol.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        from _perfdoc import write_section

        body = "## GenEval 2 judge batching (`benchmarks/vqa_batching.py`)\n\n" + text
        print(f"wrote {write_section('vqa_batching', body)}", file=sys.stderr)


if __name__ == "__main__":
    main()
