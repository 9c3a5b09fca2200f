"""T2I-CompBench++'s report section from stored rows: one row per evaluation with its categories ×100, protocol
letters when two protocols are shown, what each evaluation covers, hostile names escaped; and each image's details
said in words."""

from __future__ import annotations

from typing import Any

from t2ibench.benchmarks.t2i_compbench import report
from t2ibench.benchmarks.t2i_compbench.suite import pinned_sha256


def cell(model: str, key: str, estimate: float, *, protocol: str = "p1", prompts: int = 4) -> dict[str, Any]:
    """A t2i_compbench_scores view row."""
    return {"model": model, "model_hash": "h" * 16, "evaluator_hash": "e" * 16, "protocol_key": protocol,
            "rule": "reference", "vqa_model": None, "detector_model": "owl", "depth_model": None,
            "clip_model": "ViT-B-32", "categories": "non_spatial,numeracy", "suite_sha256": pinned_sha256(),
            "source": "refresh", "provenance": None, "table_name": "category", "key": key, "estimate": estimate,
            "ci_low": estimate - 1, "ci_high": estimate + 1, "prompts": prompts, "questions": prompts}  # fmt: skip


def test_the_section_ranks_within_a_protocol_flags_two_and_escapes_names():
    scores = [cell("<script>x</script>", "mean", 20.0), cell("<script>x</script>", "numeracy", 30.0),
              cell("b", "mean", 40.0), cell("c", "mean", 90.0, protocol="p2")]  # fmt: skip
    found = report.versions(scores)
    assert [(v["model"], v["protocol"]) for v in found] == [("b", "A"), ("<script>x</script>", "A"), ("c", "B")]
    html = report.html_section(scores)
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert 'id="t2i_compbench-protocol-flag"' in html  # two protocols: said, and never one ranking
    assert "4 of 2400 prompts" in html
    md = report.markdown_section(scores)
    assert "| b | A | 40.00 [39.00, 41.00] |" in md
    assert report.html_section([]) == ""
    assert report.markdown_section([]) == ""


def test_coverage_says_a_subset_and_another_suite():
    assert report.coverage_labels(pinned_sha256(), 2400) == []
    assert report.coverage_labels(pinned_sha256(), 600) == ["600 of 2400 prompts"]
    assert report.coverage_labels("0" * 64, 2400) == ["not the pinned suite"]
    assert report.coverage_labels(None, 2400) == ["suite not recorded"]


def test_each_images_details_are_said_in_words():
    assert report.said({"questions": ["a red book?"], "answers": ["0.8123"]}) == "'a red book?' 0.8123"
    numeracy = {"objects": ["boy"], "counts": [2], "detections": [["person", [0, 0, 1, 1], 0.91]]}
    assert report.said(numeracy) == "looked for: 2 × boy; 1 boxes: person 0.91"
    spatial = {"objects": ["dog", "lamp"], "relation": "next to", "detections": []}
    assert report.said(spatial) == "looked for 'next to': dog, lamp; 0 boxes"
    assert report.said({"text": "a man running", "truncated": True}) == "CLIP text 'a man running' (truncated)"
    complex_ = {"kind": "spatial", "attribute": 0.5, "spatial": 1.0, "action": 0.3,
                "blip": {"questions": ["a cat?"], "answers": ["0.9000"]},
                "clip": {"text": "a cat", "truncated": False}}  # fmt: skip
    assert report.said(complex_) == (
        "spatial: attribute 0.5, spatial 1.0, action 0.3; 'a cat?' 0.9000; CLIP text 'a cat'"
    )
    many = {"detections": [["cup", [0, 0, 1, 1], 0.5]] * 10}
    assert report.said(many).endswith("cup 0.50 …")
