"""T2I-CompBench++'s stored rows: one protocol per evaluation (its categories' merged, conflicts refused), the mean
over categories with its stratified bootstrap (checked against a brute-force recomputation), table cells ×100 and
every judged image with what its models said."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from t2ibench.benchmarks.t2i_compbench.evaluate import CompResult
from t2ibench.benchmarks.t2i_compbench.metrics import CATEGORIES, category_scores, mean_score
from t2ibench.benchmarks.t2i_compbench.rows import image_rows, one_protocol, score_rows
from t2ibench.errors import InputError
from t2ibench.metrics.bootstrap import cluster_draws

BASE = {"rule": "reference", "suite_sha256": "s", "t2ibench": "0.1.0"}
CLIP = {"arch": "ViT-B-32", "weights": "openai"}
OWL = {"model": "owl", "threshold": 0.1}


def result(category: str, prompt: int, score: float, protocol: dict[str, Any], sample: int = 0) -> CompResult:
    return CompResult(category, prompt, f"prompt {prompt}", sample, f"img{prompt}_{sample}.png", score,
                      {"text": "x"}, protocol)  # fmt: skip


def test_one_protocol_merges_the_categories_and_refuses_a_conflict():
    numeracy = {**BASE, "models": {"detector": OWL}, "frame": [479, 480]}
    clip = {**BASE, "models": {"clip": CLIP}}
    results = [result("numeracy", 1800, 0.5, numeracy), result("non_spatial", 1500, 0.3, clip)]
    prompts = [(1500, {"prompt": "a"}), (1800, {"prompt": "b"}), (0, {"prompt": "not judged"})]
    merged = one_protocol(results, prompts)
    assert merged["models"] == {"clip": CLIP, "detector": OWL}
    assert (merged["frame"], merged["rule"], merged["categories"]) == ([479, 480], "reference", "non_spatial,numeracy")
    # the prompt set is of the judged prompts only: an unjudged one in the selection does not change it
    assert merged["prompt_set"] == one_protocol(results, prompts[:2])["prompt_set"]
    assert (
        merged["prompt_set"] != one_protocol(results, [(1500, {"prompt": "a"}), (1800, {"prompt": "c"})])["prompt_set"]
    )
    other_clip = {**BASE, "models": {"clip": {**CLIP, "weights": "laion"}}}
    with pytest.raises(InputError, match="two protocols"):
        one_protocol([*results, result("non_spatial", 1501, 0.2, other_clip)], prompts)
    complex_ = {**BASE, "models": {"clip": {**CLIP, "weights": "laion"}}}
    with pytest.raises(InputError, match="complex was judged with another 'clip'"):
        one_protocol([*results, result("complex", 2100, 0.2, complex_)], prompts)
    with pytest.raises(InputError, match="no judged images"):
        one_protocol([], prompts)


def test_the_mean_is_the_categories_mean_with_a_stratified_bootstrap_recomputed_by_brute_force():
    rng = np.random.default_rng(3)
    rows = [(c, 300 * k + p, float(rng.random())) for k, c in enumerate(CATEGORIES[:3]) for p in range(7)
            for _ in range(2)]  # fmt: skip
    mean = mean_score(rows, resamples=200, level=0.9, seed=5)
    per = {s.category: s.score for s in category_scores(rows)}
    assert mean.score == pytest.approx(np.mean(list(per.values())), abs=1e-15)
    assert (mean.images, mean.prompts) == (42, 21)
    replicates = []
    for category in CATEGORIES[:3]:
        prompts = sorted({p for c, p, _ in rows if c == category})
        by_prompt = [[s for c, q, s in rows if c == category and q == p] for p in prompts]
        draws = cluster_draws(len(prompts), 200, 5 + 1 + CATEGORIES.index(category))
        replicates.append([np.mean([s for j in row for s in by_prompt[j]]) for row in draws])
    low, high = np.percentile(np.mean(replicates, axis=0), [5, 95])
    assert (mean.ci_low, mean.ci_high) == pytest.approx((low, high), abs=1e-12)
    assert mean.ci_low <= mean.score <= mean.ci_high


def test_the_table_cells_are_percent_points_with_the_mean_last_and_images_are_rows_with_details():
    protocol = {**BASE, "models": {"clip": CLIP}}
    results = [result("non_spatial", 1500 + p, 0.25 + 0.1 * p, protocol, sample=s) for p in range(3) for s in range(2)]
    cells = score_rows(results, level=0.95)
    assert [c["key"] for c in cells] == ["non_spatial", "mean"]
    assert cells[0]["estimate"] == pytest.approx(100 * np.mean([r.score for r in results]))
    assert cells[1]["estimate"] == pytest.approx(cells[0]["estimate"])
    assert (cells[0]["prompts"], cells[0]["questions"]) == (3, 6)
    assert "stratified" in cells[1]["ci_method"]
    assert "stratified" not in cells[0]["ci_method"]
    rows = image_rows(results)
    assert [r["sample"] for r in rows[:2]] == ["00000", "00001"]
    assert json.loads(rows[0]["details"]) == {"text": "x"}
    bad = result("non_spatial", 1500, float("nan"), protocol)
    with pytest.raises(ValueError, match="not JSON compliant"):
        image_rows([CompResult(**{**bad.__dict__, "details": {"similarity": float("nan")}})])


def test_one_image_number_of_a_prompt_twice_is_a_problem_and_never_two_stored_rows(tmp_path):
    """`x_1.png` and `x_01.png` (or `x_1.jpg`) are one image number of one prompt: the scan reports the second, and
    rows that still hold two results of one (prompt, sample) are refused — the store keeps one row per image and
    would otherwise drop one silently while the table counted both."""
    from PIL import Image

    from t2ibench.benchmarks.t2i_compbench.evaluate import scan_images
    from t2ibench.benchmarks.t2i_compbench.suite import load_suite, select

    suite = load_suite()
    (prompt,) = select(suite, ["numeracy"], 1)
    for name in (f"{prompt.text}_1.png", f"{prompt.text}_01.png", f"{prompt.text}_1.jpg", f"{prompt.text}_2.png"):
        Image.new("RGB", (8, 8), (len(name), 0, 0)).save(tmp_path / name)
    scan = scan_images(tmp_path, suite, [prompt])
    assert sorted(i.sample for i in scan.items) == [1, 2]
    assert len([p for p in scan.problems if "image 1 of its prompt again" in p]) == 2
    protocol = {**BASE, "models": {"detector": OWL}}
    twice = [result("numeracy", prompt.index, 0.5, protocol, sample=1),
             CompResult("numeracy", prompt.index, "p", 1, "other.png", 0.5, {}, protocol)]  # fmt: skip
    with pytest.raises(InputError, match=r"other.png: prompt 1800 sample 1 again \(also img1800_1.png\)"):
        image_rows(twice)


def test_the_judging_stamps_clip_weights_given_as_a_file_and_the_phrase_table(tmp_path):
    """Local files the judging reads are in its key: CLIP weights given as a file (not only model folders), the
    phrase table named in the config — and the packaged one when it exists (changing either re-judges)."""
    from t2ibench.benchmarks.t2i_compbench.options import T2ICompBenchConfig
    from t2ibench.benchmarks.t2i_compbench.plan import local_inputs
    from t2ibench.specs import EmbedderConfig

    class Ws:
        def path(self, relative: str) -> Path:
            return tmp_path / relative

    weights, table = tmp_path / "clip.pt", tmp_path / "phrases.json"
    weights.write_bytes(b"w")
    table.write_text("{}")
    clip = EmbedderConfig(backend="open_clip", model="ViT-B-32", pretrained=str(weights))
    models, phrases = local_inputs(T2ICompBenchConfig(clip=clip, phrases="phrases.json"), Ws())  # type: ignore[arg-type]
    assert str(weights) in models.path
    assert phrases.path == str(table)
    table.write_text('{"changed": 1}')
    assert local_inputs(T2ICompBenchConfig(clip=clip, phrases="phrases.json"), Ws())[1] != phrases  # type: ignore[arg-type]
