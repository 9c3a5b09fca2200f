"""The run summary a refresh ends with: computed/cached per model and step, and how each step is classified."""

from __future__ import annotations

import io
import os

from t2ibench.pipeline.summary import (
    LEGEND,
    STEPS,
    ModelSummary,
    RunSummary,
    Status,
    StepOutcome,
    embed_outcome,
    embedding_cache_shards,
    generate_outcome,
    images_on_disk,
    step_outcome,
    store_outcome,
)
from t2ibench.progress import RunProgress


def model(name: str, generate: StepOutcome, status: Status, seconds: float, work: float = 0.0) -> ModelSummary:
    rest = tuple(StepOutcome(step, status) for step in STEPS[1:])
    return ModelSummary(model=name, steps=(generate, *rest), seconds=seconds, work=work)


def summary(
    *models: ModelSummary, log: str | None = "/w/data/logs/refresh.log", seconds: float = 42.0, shared=()
) -> RunSummary:
    return RunSummary(
        config="smoke",
        run_id="abc123",
        prompts=12,
        models=models,
        report_html="/w/reports/leaderboard.html",
        store="/w/data/t2ibench.duckdb",
        log=log,
        seconds=seconds,
        shared=shared,
    )


def test_the_table_has_a_row_per_model_and_a_column_per_step():
    text = summary(
        model("tiny-a", StepOutcome("generate", "computed", made=20, reused=4), "computed", 3.25, work=2.5),
        model("a-much-longer-name", StepOutcome("generate", "cached", made=0, reused=24), "cached", 125.0, work=0.0),
        seconds=130.0,
        shared=(("selftest", 61.0),),
    ).render()
    lines = text.splitlines()
    assert lines[0] == "refresh smoke (run abc123): 2 models × 12 prompts"
    header, first, second = lines[1:4]
    assert header.split() == ["model", *STEPS, "work", "done", "at"]
    assert first.split()[0] == "tiny-a"
    assert "computed (20 new, 4 reused)" in first
    assert first.count("computed") == len(STEPS)
    assert first.endswith("2.5 s  3.2 s")  # its own work, then when it was done (since the start)
    assert second.split()[0] == "a-much-longer-name"
    assert second.split()[1 : 1 + len(STEPS)] == ["cached"] * len(STEPS)
    assert second.endswith("0.0 s  2 min 05 s")
    # columns line up: every cell starts where its header does
    for step in ("embed", "store", "work", "done at"):
        column = header.index(step)
        assert first[column - 2 : column] == "  "
        assert first[column] != " "
        assert second[column] != " "
    assert lines[4] == LEGEND
    # the wall time, and where it went: it adds up (2.5 + 61 + 66.5 = 130 s)
    assert lines[5] == (
        "time: 2 min 10 s wall; work: models 2.5 s, shared steps 1 min 01 s; the rest 1 min 06 s (start-up, "
        "planning, cache look-ups, the report)"
    )
    assert lines[6:] == [
        "report: /w/reports/leaderboard.html",
        "store:  /w/data/t2ibench.duckdb",
        "log:    /w/data/logs/refresh.log",
    ]
    assert text.endswith("\n")
    assert "warn" not in text.lower()
    assert "prefect" not in text.lower()


def test_work_on_several_workers_is_named_as_side_by_side():
    text = summary(model("a", StepOutcome("generate", "computed", made=1), "computed", 30.0, work=50.0), seconds=40.0)
    assert "work adds up to more than the wall time" in text.render()


def test_without_a_log_file_the_log_line_is_left_out_and_a_missing_step_shows_a_dash():
    partial = ModelSummary("m", (StepOutcome("generate", "computed", made=3, reused=0),), seconds=0.5)
    text = summary(partial, log=None).render()
    row = text.splitlines()[2]
    assert row.split() == ["m", "computed", "(3", "new)", "-", "-", "-", "-", "-", "0.0", "s", "0.5", "s"]
    assert "log:" not in text


def test_cells():
    assert StepOutcome("generate", "computed", made=24, reused=0).cell() == "computed (24 new)"
    assert StepOutcome("generate", "computed", made=2, reused=22).cell() == "computed (2 new, 22 reused)"
    assert StepOutcome("generate", "cached", made=0, reused=24).cell() == "cached"
    assert StepOutcome("embed", "computed").cell() == "computed"


def test_generation_counts_made_and_kept_images_from_file_stamps(tmp_path):
    folder = tmp_path / "images"
    paths = []
    for prompt in range(2):
        (folder / f"{prompt:05d}" / "samples").mkdir(parents=True)
        for sample in range(2):
            paths.append(folder / f"{prompt:05d}" / "samples" / f"{sample:05d}.png")
    for p in paths[:3]:
        p.write_bytes(b"old")
    before = images_on_disk(folder)
    assert set(before) == {str(p) for p in paths[:3]}
    # an unchanged image is kept; one rewritten atomically (a new file renamed over it) and a new one are made
    tmp = paths[1].with_name("x.tmp")
    tmp.write_bytes(b"new")
    os.replace(tmp, paths[1])
    paths[3].write_bytes(b"new")
    images = [str(p) for p in paths]
    assert generate_outcome(False, images, before) == StepOutcome("generate", "computed", made=2, reused=2)
    assert generate_outcome(False, images, images_on_disk(folder)).status == "cached"  # all there: nothing made
    assert generate_outcome(True, images, {}) == StepOutcome("generate", "cached", made=0, reused=4)
    assert images_on_disk(tmp_path / "absent") == {}


def test_embed_is_cached_when_the_embedding_cache_gained_no_shard(tmp_path):
    (tmp_path / "fp").mkdir()
    (tmp_path / "fp" / "shard-1.npy").write_bytes(b"")
    before = embedding_cache_shards(tmp_path)
    assert embed_outcome(False, before, embedding_cache_shards(tmp_path)).status == "cached"
    (tmp_path / "fp" / "shard-2.npy").write_bytes(b"")
    assert embed_outcome(False, before, embedding_cache_shards(tmp_path)).status == "computed"
    assert embed_outcome(True, before, embedding_cache_shards(tmp_path)).status == "cached"


def test_steps_of_several_tasks_and_the_store():
    assert step_outcome("diversity", [True, True, True]).status == "cached"
    assert step_outcome("diversity", [True, False, True]).status == "computed"
    assert store_outcome(unchanged=True).status == "cached"
    assert store_outcome(unchanged=False).status == "computed"


def test_run_progress_prints_one_line_per_model_away_from_a_terminal():
    stream = io.StringIO()
    display = RunProgress(2, len(STEPS), label="refresh smoke", stream=stream)
    display.step_done("shared", "selftest", 40.2, 38.0)  # a shared step with 10 s or more of work: said
    display.step_done("shared", "reference-bandwidth/mobilenet", 41.0, 0.8)  # a short one: not
    for name in ("tiny-a", "tiny-b"):
        for step in STEPS:
            display.at(name, step)
            display.advance()
        display.model_done(name, 12.4)
    display.close()
    assert stream.getvalue().splitlines() == [
        "refresh smoke: shared selftest done at 40 s (38 s of work)",
        "refresh smoke: tiny-a done at 12 s (1/2 models)",
        "refresh smoke: tiny-b done at 12 s (2/2 models)",
    ]


def test_run_progress_says_what_it_waits_for_when_a_minute_passes_without_a_line():
    """Off a terminal a long step still shows life: a line naming what the run waits for (here every 0.2 s)."""
    import time

    stream = io.StringIO()
    display = RunProgress(1, len(STEPS), label="refresh smoke", stream=stream, heartbeat=0.2)
    display.at("tiny-a", "generate")
    time.sleep(0.7)  # the heartbeat looks every min(heartbeat, 5 s)
    display.close()
    lines = stream.getvalue().splitlines()
    assert lines
    assert all(line.startswith("refresh smoke: working on tiny-a generate (") for line in lines)
