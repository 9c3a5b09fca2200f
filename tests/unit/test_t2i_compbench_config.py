"""A config's T2I-CompBench++ sections: the models a refresh must find and whose tiny builds make its numbers smoke
are those its categories read (numeracy and non-spatial need no BLIP or depth model)."""

from __future__ import annotations

from typing import Any

from t2ibench.config import parse_config


def config(categories: list[str] | None, vqa: str) -> Any:
    raw = {
        "name": "c",
        "benchmarks": {
            "geneval": {"limit_per_task": 1},
            "t2i_compbench": {"categories": categories, "per_category": 1},
        },
        "models": [{"name": "m", "generator": {"model": "org/generator"}}],
        "evaluators": {"t2i_compbench": {"vqa": {"backend": "blip-vqa", "model": vqa}}},
    }
    return parse_config(raw)


def test_only_the_models_the_categories_read_are_required_or_make_a_run_smoke():
    numeracy = config(["numeracy", "non_spatial"], vqa="tiny-random")
    assert sorted(numeracy.evaluator_models("t2i_compbench")) == ["clip", "detector"]
    sections = {section for section, _ in numeracy.hub_sources()}
    assert "evaluators.t2i_compbench.detector" in sections
    assert "evaluators.t2i_compbench.clip" in sections
    assert not {"evaluators.t2i_compbench.vqa", "evaluators.t2i_compbench.depth"} & sections
    assert not numeracy.smoke_evaluators  # the tiny BLIP is built by no chosen category
    colour = config(["color"], vqa="tiny-random")
    assert sorted(colour.evaluator_models("t2i_compbench")) == ["vqa"]
    assert colour.smoke_evaluators
    every = config(None, vqa="org/blip")
    assert sorted(every.evaluator_models("t2i_compbench")) == ["clip", "depth", "detector", "vqa"]
    assert "evaluators.t2i_compbench.vqa" in {section for section, _ in every.hub_sources()}
