"""Checkpoint series: a config's ``checkpoints:`` is one model per checkpoint (each a version of its own: adding a
checkpoint leaves the others' versions, so a refresh runs only it), refused in one line when malformed; stored, the
``series`` view gives each series' points in step order with every score, and the report draws them against the
step."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from t2ibench.config import parse_config
from t2ibench.errors import InputError
from t2ibench.store import Store
from tests.unit.test_comparisons import SUITE, verdicts, write
from tests.unit.test_published_rows import paper_version


def config(checkpoints: list[dict], **entry) -> dict:
    generator = {"model": "tiny-random:0", "steps": 2, "images_per_prompt": 1, "dtype": "float32"}
    return {
        "name": "x",
        "benchmarks": {"geneval": {"limit_per_task": 1}},
        "models": [{"name": "run", "generator": generator, "checkpoints": checkpoints, **entry},
                   {"name": "other", "generator": generator}],
        "evaluators": {"clip": {"backend": "open_clip", "model": "tiny-random"}},
    }  # fmt: skip


THREE = [{"step": 1000, "model": "tiny-random:1"}, {"step": 2000, "model": "tiny-random:2"},
         {"step": 3000, "model": "tiny-random:3"}]  # fmt: skip


def test_a_series_is_one_model_per_checkpoint():
    cfg = parse_config(config(THREE, label="my run"))
    names = [m.name for m in cfg.models]
    assert names == ["run@1000", "run@2000", "run@3000", "other"]
    point = cfg.models[1]
    assert (point.series, point.step, point.generator.model, point.label) == ("run", 2000, "tiny-random:2",
                                                                              "my run @ step 2000")  # fmt: skip
    assert point.generator.steps == 2  # the rest of the entry's generator
    assert [(m.series, m.step) for m in cfg.models] == [("run", 1000), ("run", 2000), ("run", 3000), (None, None)]
    revision = parse_config(config([{"step": 5, "revision": "abc123"}])).models[0]
    assert (revision.generator.model, revision.generator.revision) == ("tiny-random:0", "abc123")


def plans(checkpoints: list[dict]) -> dict[str, tuple[str, str]]:
    from t2ibench.pipeline import plan_refresh, select_prompts
    from t2ibench.workspace import Workspace

    cfg = parse_config(config(checkpoints))
    plan = plan_refresh(cfg, Workspace(Path(tempfile.mkdtemp()), cfg.outputs), select_prompts(cfg.spine_prompts), "r")
    return {m.model.name: (m.model_hash, m.evaluator_hash) for m in plan.models}


def test_adding_a_checkpoint_leaves_the_other_points_versions():
    """Each point's version comes from its own generator (its weights): a fourth checkpoint is a new version, the
    first three keep theirs, so the refresh finds them cached and runs only the new one."""
    three = plans(THREE)
    assert len({h for h, _ in three.values()}) == 4  # every point (and the other model) its own version
    four = plans([*THREE, {"step": 4000, "model": "tiny-random:4"}])
    assert {k: four[k] for k in three} == three
    assert "run@4000" in four


@pytest.mark.parametrize(
    ("checkpoints", "entry", "message"),
    [
        ([{"step": 1, "model": "a"}, {"step": 1, "model": "b"}], {}, r"models\[0\]\.checkpoints: lists a step twice"),
        ([{"step": 1}], {}, r"models\[0\]\.checkpoints\[0\]\.model: a checkpoint names its weights"),
        ([{"step": -1, "model": "a"}], {}, r"step: must be a training step"),
        ([{"step": 1, "model": "a"}], {"series": "s", "step": 3}, r"models\[0\]\.checkpoints: a series entry is not"),
        ([], {"series": "s"}, r"models\[0\]\.series: a point of a series gives both series and step"),
        ([{"step": 1, "model": "a", "revison": "x"}], {}, r"revison"),
        ([{"step": 1, "model": "tiny-random:1"}], {"name": "other@1"}, r"repeated: "),
    ],
    ids=["step-twice", "no-weights", "negative-step", "template-is-a-point", "half-a-point", "misspelt", "name-clash"],
)
def test_a_malformed_series_is_refused_in_one_line(checkpoints, entry, message):
    raw = config(checkpoints, **entry)
    if entry.get("name") == "other@1":  # a model named like a point of another series
        raw["models"] = [raw["models"][1] | {"name": "other", "checkpoints": checkpoints},
                         raw["models"][1] | {"name": "other@1"}]  # fmt: skip
    with pytest.raises(InputError, match=message) as err:
        parse_config(raw, source="c.yaml")
    assert str(err.value).startswith("c.yaml:")
    assert "\n" not in str(err.value)


@pytest.fixture(scope="module")
def stored_series(tmp_path_factory):
    """Three checkpoints of a run, getting better with the step, and a model outside any series."""
    rng = np.random.default_rng(1)
    store = Store(tmp_path_factory.mktemp("series") / "t.duckdb")
    full, _ = paper_version()
    truth = rng.uniform(0.1, 0.6, len(SUITE))
    for k, step in enumerate((1000, 2000, 3000)):
        name = f"run@{step}"
        write(store, name, "v1", full, verdicts(rng, np.minimum(truth + 0.15 * k, 1.0)), "r1", 1)
        with store.write() as con:
            con.execute("UPDATE models SET series = 'run', step = ? WHERE model = ?", [step, name])
    write(store, "other", "v1", full, verdicts(rng, truth), "r1", 1)
    return store


def test_the_series_view_and_the_report_draw_each_point_against_its_step(stored_series, tmp_path):
    from t2ibench.report.leaderboard import render_reports

    store = stored_series
    rows = store.rows("SELECT series, step, model, overall, overall_ci_low, overall_ci_high FROM series")
    assert [(r["series"], r["step"], r["model"]) for r in rows] == [
        ("run", 1000, "run@1000"), ("run", 2000, "run@2000"), ("run", 3000, "run@3000")]  # fmt: skip
    assert rows[0]["overall"] < rows[1]["overall"] < rows[2]["overall"]  # as planted
    assert all(r["overall_ci_low"] <= r["overall"] <= r["overall_ci_high"] for r in rows)
    out = render_reports(store.path, tmp_path / "r")
    figure = tmp_path / "r" / "series-run.png"
    assert figure.is_file()
    assert figure.stat().st_size > 5_000  # a drawn figure, not an empty canvas
    assert out["plots"]["series-run"] == "series-run.png"
    html = Path(out["html"]).read_text()
    section = html.split('id="series"')[1].split("</section>")[0]
    assert '<img src="series-run.png"' in section
    for r in rows:
        # each point's row: its step, its model, its overall with the interval below it (the report's table cells)
        row = section.split(f">{r['model']}</td>")[1].split("</tr>")[0]
        assert f">{r['step']}</td>" in section.split(f">{r['model']}</td>")[0].rsplit("<tr", 1)[1]
        assert f'>{r["overall"]:.2f}<br><span class="ci">[{r["overall_ci_low"]:.2f}, ' in row
    assert "other" not in section
    assert html.count('src="series-run.png"') == 1  # not repeated among the other figures
    md = Path(out["markdown"]).read_text()
    assert "## Checkpoint series: run" in md
    assert "![run by step](series-run.png)" in md


def test_a_point_stores_its_series_and_step_and_other_versions_keep_their_hash():
    """The store's model row of a point carries its series and step; a model outside any series hashes as before
    (its version is not rewritten by the upgrade)."""
    from t2ibench.benchmarks import SpineRows
    from t2ibench.config import ModelConfig
    from t2ibench.pipeline.results import Generated
    from t2ibench.pipeline.rows import version_rows
    from tests.unit.test_store_benchmarks import PRE_15, PROTOCOL, BenchmarkRows, answer, score

    def made(model: ModelConfig):
        rows = BenchmarkRows("geneval2", "g", PROTOCOL, [answer(0, 0, 0.9)], [score("soft_tifa_gm", 1.0)], [])
        return version_rows(
            model=model, model_hash="h", evaluator_hash="e", suite="geneval", smoke=False, prompts=[],
            generated=Generated(model="m", folder="/x", images=(), manifest={}),
            spine=SpineRows({"verdicts": [], "detections": [], "geneval_scores": []}, 0, "r", []),
            scores=(), protocol={}, lite=[], benchmarks=[rows],
        )  # fmt: skip

    plain = made(ModelConfig(name="m"))
    assert plain.content_hash == PRE_15
    point = made(ModelConfig(name="m", series="run", step=2000))
    assert (point.model_row["series"], point.model_row["step"]) == ("run", 2000)
    assert point.content_hash != PRE_15
