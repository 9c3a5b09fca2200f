"""Benchmarks in a refresh: the ``benchmarks:`` section (and its older spelling), which models run GenEval 2, the
calls it adds to a model's plan, and what its settings change — the GenEval 2 calls and the evaluation version,
never the model version, GenEval's results or the diversity scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from t2ibench.benchmarks.geneval2.steps import select_geneval2
from t2ibench.config import parse_config
from t2ibench.errors import InputError
from t2ibench.pipeline import plan_refresh, select_prompts
from t2ibench.pipeline.plan import ModelPlan
from t2ibench.pipeline.results import PromptSet
from t2ibench.workspace import Workspace
from tests.geneval2_lines import LINES

SUITE = {"seed": 43, "per_task": 100, "limit_per_task": 1}


OWN_SUITE = "suites/geneval2_lines.jsonl"  # not the release's place: that holds only the released file


def write_suite(root: Path, lines: list[dict[str, Any]] = LINES) -> Path:
    """A GenEval 2-shaped suite in the workspace ``root`` where ``raw_config`` names it (lines written here, not the
    CC BY-NC file)."""
    path = root / OWN_SUITE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def raw_config(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "name": "x",
        "benchmarks": {"geneval": SUITE, "geneval2": {"per_atom_count": 1, "data": OWN_SUITE}},
        "models": [{"name": "a"}, {"name": "b", "generator": {"model": "tiny-random:1"}}],
        "evaluators": {"geneval2": {"judge": {"model": "tiny-random:0", "dtype": "float32"}}},
    }
    raw.update(changes)
    return raw


def plans(tmp_path: Path, raw: dict[str, Any]) -> dict[str, ModelPlan]:
    config = parse_config(raw)
    ws = Workspace(tmp_path, config.outputs)
    return {m.model.name: m for m in plan_refresh(config, ws, select_prompts(config.spine_prompts), "r").models}


def test_the_older_top_level_geneval_key_reads_as_benchmarks_geneval():
    new = parse_config({"name": "x", "benchmarks": {"geneval": SUITE}, "models": [{"name": "a"}]})
    old = parse_config({"name": "x", "geneval": SUITE, "models": [{"name": "a"}]})
    assert old == new
    assert old.spine_prompts.limit_per_task == 1
    assert old.benchmarks.names == ("geneval",)
    with pytest.raises(InputError, match=r"cfg.yaml:geneval: the GenEval suite is given twice"):
        parse_config({"name": "x", "geneval": SUITE, "benchmarks": {"geneval": SUITE}, "models": [{"name": "a"}]},
                     source="cfg.yaml")  # fmt: skip


def test_benchmark_mistakes_are_one_line_errors_naming_the_key():
    folder = {"name": "f", "generator": {"backend": "folder", "source": "imgs"}}
    with pytest.raises(InputError, match=r"config:models\[0\]\.benchmarks: f: the folder backend makes GenEval"):
        parse_config(raw_config(models=[folder]))
    # the same model may stay in the config when it runs GenEval only
    config = parse_config(raw_config(models=[{**folder, "benchmarks": ["geneval"]}, {"name": "a"}]))
    assert [config.benchmarks_of(m) for m in config.models] == [("geneval",), ("geneval", "geneval2")]
    with pytest.raises(InputError, match=r"models\[0\]\.benchmarks: unknown benchmark 'geneval3'.*geneval2"):
        parse_config(raw_config(models=[{"name": "a", "benchmarks": ["geneval", "geneval3"]}]))
    with pytest.raises(InputError, match=r"models\[0\]\.benchmarks: must list geneval"):
        parse_config(raw_config(models=[{"name": "a", "benchmarks": ["geneval2"]}]))
    no_geneval2 = {"name": "x", "benchmarks": {"geneval": SUITE}, "models": [{"name": "a", "benchmarks":
                   ["geneval", "geneval2"]}]}  # fmt: skip
    with pytest.raises(InputError, match=r"models\[0\]\.benchmarks: geneval2 is not configured"):
        parse_config(no_geneval2)
    with pytest.raises(InputError, match=r"evaluators\.geneval2\.answer_rule: unknown answer_rule 'uniq'"):
        parse_config(raw_config(evaluators={"geneval2": {"answer_rule": "uniq"}}))
    with pytest.raises(InputError, match=r"evaluators\.geneval2\.judge\.backend: unknown VQA judge backend"):
        parse_config(raw_config(evaluators={"geneval2": {"judge": {"backend": "qwen-vl"}}}))
    with pytest.raises(InputError, match=r"benchmarks\.geneval2\.per_atom_count: must be in \[1, 100\]"):
        parse_config(raw_config(benchmarks={"geneval": SUITE, "geneval2": {"per_atom_count": 0}}))


def test_a_tiny_judge_makes_the_run_smoke():
    assert parse_config(raw_config()).smoke_evaluators
    real = raw_config(evaluators={"geneval2": {"judge": {"model": "Qwen/Qwen3-VL-8B-Instruct"}}})
    assert not parse_config({**real, "models": [{"name": "a", "generator": {"model": "x/y"}}]}).smoke_evaluators


def test_the_suite_must_be_in_the_workspace_and_is_read_checked(tmp_path):
    with pytest.raises(InputError, match=r"geneval2_data.jsonl: GenEval 2's suite is not in the workspace.*"
                                         r"t2ibench data fetch geneval2"):  # fmt: skip
        plans(tmp_path, raw_config(benchmarks={"geneval": SUITE, "geneval2": {"per_atom_count": 1}}))
    with pytest.raises(InputError, match=r"benchmarks.geneval2.data suites/geneval2_lines.jsonl: no such file"):
        plans(tmp_path, raw_config())
    broken = [dict(LINES[0], skills=LINES[0]["skills"][:-1]), *LINES[1:]]
    write_suite(tmp_path, broken)
    with pytest.raises(InputError, match=r"geneval2_lines.jsonl:1: skills has 3 entries for 4 questions"):
        plans(tmp_path, raw_config())
    # a subset is read as one; the whole suite must have the release's shape
    write_suite(tmp_path)
    with pytest.raises(InputError, match=r"3 prompts, not GenEval 2's 800"):
        plans(tmp_path, raw_config(benchmarks={"geneval": SUITE, "geneval2": {"data": OWN_SUITE}}))


def test_selection_by_atom_count_and_by_index(tmp_path):
    path = write_suite(tmp_path)
    first, stamp = select_geneval2(parse_config(raw_config()).benchmarks.geneval2, path)  # type: ignore[arg-type]
    assert [i for i, _ in first] == [0, 1]  # atom counts 3, 4, 4: the first of each count
    assert dict(first)[1] == LINES[1]  # the publisher's line, as generation's metadata.jsonl will hold it
    own = {"geneval": SUITE, "geneval2": {"prompts": "2,0", "data": OWN_SUITE}}
    chosen = parse_config(raw_config(benchmarks=own)).benchmarks
    picked, _ = select_geneval2(chosen.geneval2, path)  # type: ignore[arg-type]
    assert [i for i, _ in picked] == [0, 2]  # in suite order, as GenEval's selection
    assert stamp.path == str(path)
    assert len(stamp.sha256) == 64


def test_a_geneval2_model_gets_its_own_generation_judge_and_tables(tmp_path):
    write_suite(tmp_path)
    raw = raw_config(models=[{"name": "a"}, {"name": "b", "benchmarks": ["geneval"]}])
    found = plans(tmp_path, raw)
    a, b = found["a"], found["b"]
    steps_a = [c.step for c in a.calls]
    assert {"geneval2", "geneval2-scores"} <= set(steps_a)
    assert steps_a.count("generate") == 2
    assert not {"geneval2", "geneval2-scores"} & {c.step for c in b.calls}
    calls = {c.id: c for c in a.calls}
    gen2, judge = calls["a/generate-geneval2"], calls["a/geneval2"]
    assert isinstance(gen2.params["prompts"], PromptSet)
    assert len(gen2.params["prompts"]) == 2
    # its images go to a folder of their own, named by their generation's settings; the model version is GenEval's
    assert gen2.params["out"] != a.images
    assert gen2.params["out"] in a.image_folders
    assert judge.params["out"].name == "geneval2_results.jsonl"
    assert judge.params["out"].parent in a.folders
    # its rows reach the store write through its own rows call, which takes its images, answers and tables
    rows = calls["a/geneval2-rows"]
    assert set(rows.upstream()) == {"a/generate-geneval2", "a/geneval2", "a/geneval2-scores"}
    assert [r.call for r in calls["a/store"].params["benchmarks"]] == ["a/geneval2-rows"]
    assert "benchmarks" not in next(c for c in b.calls if c.step == "store").params
    assert "geneval2" not in a.protocol  # GenEval 2's settings make its own version (ModelPlan.benchmarks)
    assert "geneval2" not in b.protocol


def key_of(plan: ModelPlan, call_id: str) -> str | None:
    """A call's cache key with every upstream result stood in by its call id (the keys then differ exactly when
    the call's own inputs do)."""
    call = next(c for c in plan.calls if c.id == call_id)
    stand_ins = {u: PromptSet.of([(0, {"upstream": u})]) for u in call.upstream()}
    return call.key(stand_ins)


def test_a_judge_setting_changes_geneval2_s_call_and_its_own_version_only(tmp_path):
    """GenEval 2 is versioned apart: a judge setting changes its judge call and its evaluation hash, never the model
    version or the evaluation version of GenEval and diversity (their rows, groups and ranks stay as they were)."""
    write_suite(tmp_path)
    before = plans(tmp_path, raw_config())["a"]
    evaluators = {"geneval2": {"judge": {"model": "tiny-random:0", "dtype": "float32"}, "answer_rule": "unique"}}
    after = plans(tmp_path, raw_config(evaluators=evaluators))["a"]
    assert (after.model_hash, after.evaluator_hash) == (before.model_hash, before.evaluator_hash)
    assert after.protocol == before.protocol
    assert after.benchmarks["geneval2"] != before.benchmarks["geneval2"]
    rows = next(c for c in after.calls if c.id == "a/geneval2-rows")
    assert rows.params["evaluator_hash"] == after.benchmarks["geneval2"]
    changed = {c.id for c in before.calls if key_of(before, c.id) != key_of(after, c.id)}
    assert changed == {"a/geneval2"}  # its tables and the store take its result: they follow it, keys unchanged
    # the GenEval 2 prompts are a setting of its generation: a different selection makes other images elsewhere
    one = {"geneval": SUITE, "geneval2": {"prompts": "0", "data": OWN_SUITE}}
    fewer = plans(tmp_path, raw_config(benchmarks=one))["a"]
    gen = next(c for c in fewer.calls if c.id == "a/generate-geneval2")
    assert gen.params["out"] != next(c for c in before.calls if c.id == "a/generate-geneval2").params["out"]
    assert key_of(fewer, "a/generate") == key_of(before, "a/generate")


def test_adding_geneval2_keeps_every_models_geneval_and_diversity_versions(tmp_path):
    """Adding the section — for a model or beside it — leaves the GenEval and diversity versions (and the rows stored
    under them) as they were: no model moves to another protocol group because of GenEval 2."""
    write_suite(tmp_path)
    models = [{"name": "a"}, {"name": "b"}]
    plain = plans(tmp_path, {"name": "x", "benchmarks": {"geneval": SUITE}, "models": models})
    mixed = plans(tmp_path, raw_config(models=[{"name": "a"}, {"name": "b", "benchmarks": ["geneval"]}]))
    for name in ("a", "b"):
        assert (mixed[name].model_hash, mixed[name].evaluator_hash) == (
            plain[name].model_hash,
            plain[name].evaluator_hash,
        )
    assert set(mixed["a"].benchmarks) == {"geneval2"}
    assert mixed["b"].benchmarks == {}


def test_an_empty_geneval2_key_is_refused_not_read_as_absent():
    with pytest.raises(
        InputError, match=r"c.yaml:benchmarks.geneval2: is empty \(null\): give \{\} for geneval2 with its defaults"
    ):
        parse_config({"name": "x", "benchmarks": {"geneval": SUITE, "geneval2": None}, "models": [{"name": "a"}]},
                     source="c.yaml")  # fmt: skip


def test_a_suite_file_changed_after_selection_is_refused(tmp_path):
    """Between planning and judging the suite file is read again: other bytes, or a prompt that is no longer the one
    selected, stop the judge step with a one-line error instead of judging other questions."""
    from t2ibench.benchmarks.geneval2.steps import selected_geneval2

    path = write_suite(tmp_path)
    prompts, stamp = select_geneval2(parse_config(raw_config()).benchmarks.geneval2, path)  # type: ignore[arg-type]
    assert [p.prompt for p in selected_geneval2(prompts, stamp).prompts] == [LINES[0]["prompt"], LINES[1]["prompt"]]
    write_suite(tmp_path, [LINES[1], LINES[0], LINES[2]])
    with pytest.raises(InputError, match=r"geneval2_lines.jsonl: the GenEval 2 suite file changed since the prompts"):
        selected_geneval2(prompts, stamp)
    from t2ibench.hashing import file_sha256

    moved = type(stamp)(stamp.path, file_sha256(path))  # a stamp of the new bytes, with the old selection
    with pytest.raises(InputError, match=r"geneval2_lines.jsonl:1: prompt 0 is not the one selected"):
        selected_geneval2(prompts, moved)


def test_explicit_geneval2_indices_are_checked_against_the_suite_file_read(tmp_path):
    """`prompts` is read for its syntax with the config and checked against the file when the run is planned (a
    user's own suite may be longer than the release's 800 lines); a range beyond the file names the key."""
    write_suite(tmp_path)
    with pytest.raises(InputError, match=r"benchmarks\.geneval2\.prompts: index 900 is beyond the suite \(3 prompts"):
        plans(tmp_path, raw_config(benchmarks={"geneval": SUITE, "geneval2": {"prompts": "0,900", "data": OWN_SUITE}}))
    with pytest.raises(InputError, match=r"benchmarks\.geneval2\.prompts: index 100000 is beyond the suite"):
        parse_config(raw_config(benchmarks={"geneval": SUITE, "geneval2": {"prompts": "0-100000"}}))


def test_a_benchmark_s_steps_join_the_refresh_through_the_registry_and_lists_follow_them(monkeypatch):
    """A benchmark's refresh steps come from its entry (``refresh_steps``): the step table, the Prefect tasks' step
    names, the steps counted as model work and the run summary's columns are derived from the registry and the step
    specs, never listed beside them; a benchmark that adds a step the refresh already has is refused."""
    from t2ibench.benchmarks import REGISTRY, benchmark
    from t2ibench.pipeline import plan as plan_module
    from t2ibench.pipeline.summary import BENCHMARK_COLUMNS, STEPS

    specs = plan_module.step_specs()
    for name in REGISTRY:
        for step, spec in benchmark(name).refresh_steps().items():
            assert specs[step] is spec
    assert {"geneval2", "geneval2-scores", "geneval2-rows"} <= set(specs) - set(plan_module.STEPS)
    work = {s for s, spec in specs.items() if spec.model_work}
    assert "geneval2" in work
    assert not {"geneval2-scores", "geneval2-rows", "store"} & work
    assert tuple(n for n in REGISTRY if n != "geneval") == BENCHMARK_COLUMNS
    assert STEPS[:3] == ("generate", "embed", "geneval")
    assert set(BENCHMARK_COLUMNS) <= set(STEPS)

    class Clash:
        def refresh_steps(self):
            return {"embed": plan_module.STEPS["embed"]}

    monkeypatch.setitem(REGISTRY, "clash", "t2ibench.benchmarks.geneval2.benchmark:Geneval2Benchmark")
    monkeypatch.setattr("t2ibench.benchmarks.benchmark", lambda name: Clash())
    plan_module.benchmark_steps.cache_clear()
    try:
        with pytest.raises(TypeError, match="adds a step 'embed' the refresh already has"):
            plan_module.benchmark_steps()
    finally:
        plan_module.benchmark_steps.cache_clear()
