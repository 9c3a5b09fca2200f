"""The benchmark system end to end: the smoke config through the Prefect flow, the store, the reports.

Slow (Prefect starts a local API per run): runs share one temporary workspace, in order — cold, fully cached,
one model changed, outputs deleted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from t2ibench.store import Store
from tests.integration._workspace import (
    PROGRESS_RATES,
    STEP_COLUMNS,
    make_workspace,
    noise,
    refresh_cmd,
    spawn,
    summary_paths,
    summary_table,
)

REPO = Path(__file__).resolve().parents[2]
MODEL_WORK = ("generate", "embed", "geneval", "scores", "fkea-shard", "diversity", "scendi")
pytestmark = pytest.mark.slow


def run_flow(
    workspace: Path, env: dict[str, str], name: str, config: str = "smoke.yaml", data: str = "data", **request: Any
) -> dict:
    """Run a refresh as a program (the one `t2ibench run` starts; ``request``: more RefreshRequest fields) with its
    console on pipes (as under cron or CI); the --summary JSON, plus what it
    printed (``console``), each stderr line with the seconds since the start it arrived at (``arrived``), and what it
    appended to the log file (``logged``)."""
    summary = workspace / f"{name}.json"
    cmd = refresh_cmd(workspace / "configs" / config, summary=str(summary), **request)
    log = workspace / data / "logs" / "refresh.log"
    offset = log.stat().st_size if log.exists() else 0
    start = time.monotonic()
    proc = spawn(cmd, env, merged=False)
    assert proc.stdout is not None
    assert proc.stderr is not None
    arrived: list[tuple[float, str]] = []
    reader = threading.Thread(target=lambda: arrived.extend((time.monotonic() - start, line) for line in proc.stderr))
    reader.start()
    out = proc.stdout.read()
    proc.wait(timeout=900)
    reader.join()
    err = "".join(line for _, line in arrived)
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    result = json.loads(summary.read_text())
    result["console"] = out + err  # what the user sees: progress lines and the summary table
    result["arrived"] = arrived
    result["ended"] = time.monotonic() - start
    with open(log, encoding="utf-8") as fh:  # what this run sent to its log file (appended run after run)
        fh.seek(offset)
        result["logged"] = fh.read()
    return result


def states(summary: dict, model: str) -> set[str]:
    return {s for step in MODEL_WORK for s in summary["states"][model][step].split(",")}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, model_cache):
    root = tmp_path_factory.mktemp("workspace")
    _config, env = make_workspace(root, model_cache)
    return root, env


@pytest.fixture(scope="module")
def cold(workspace):
    root, env = workspace
    return run_flow(root, env, "cold")


@pytest.fixture(scope="module")
def cached(workspace, cold):
    root, env = workspace
    store = Store(root / "data" / "t2ibench.duckdb")
    before = {t: store.query(f"SELECT count(*) FROM {t}")[1][0][0] for t in ("images", "verdicts", "metrics", "modes")}
    report = {p: p.stat().st_mtime_ns for p in (root / "reports").rglob("*") if p.is_file()}
    summary = run_flow(root, env, "cached")
    after = {t: store.query(f"SELECT count(*) FROM {t}")[1][0][0] for t in ("images", "verdicts", "metrics", "modes")}
    summary["report_files"] = (report, {p: p.stat().st_mtime_ns for p in (root / "reports").rglob("*") if p.is_file()})
    return summary, before, after


@pytest.fixture(scope="module")
def changed(workspace, cached):
    root, env = workspace
    path = root / "configs" / "smoke.yaml"
    config = yaml.safe_load(path.read_text())
    config["models"][1]["generator"]["steps"] = 2
    path.write_text(yaml.safe_dump(config))
    return run_flow(root, env, "changed")


def test_cold_run_computes_and_stores_everything(workspace, cold):
    root, _ = workspace
    for model in ("tiny-a", "tiny-b"):
        assert states(cold, model) == {"Completed"}
    store = Store(root / "data" / "t2ibench.duckdb")
    board = store.rows("SELECT * FROM leaderboard ORDER BY model")
    assert [r["model"] for r in board] == ["tiny-a", "tiny-b"]
    assert all(r["smoke"] for r in board)
    counts = store.rows("SELECT model, count(*) AS n FROM verdicts GROUP BY model ORDER BY model")
    assert counts == [{"model": "tiny-a", "n": 24}, {"model": "tiny-b", "n": 24}]  # 12 prompts × 2 images
    metrics = {r["metric"] for r in store.rows("SELECT DISTINCT metric FROM metrics")}
    assert {"fkea", "rke", "fkea_curve", "scendi", "scendi_model_share"} <= metrics
    assert store.rows("SELECT count(*) AS n FROM modes WHERE source = 'scendi'")[0]["n"] > 0
    assert store.rows("SELECT status FROM runs") == [{"status": "completed"}]
    report = (root / "reports" / "leaderboard.md").read_text()
    assert "SMOKE RUN" in report
    assert report.count("(smoke) |") == 2
    for name in ("leaderboard.html", "tasks.png", "diversity_vs_n.png", "galleries/tiny-a/scendi/summary.png"):
        assert (root / "reports" / name).exists(), name


def test_the_console_shows_only_the_progress_and_the_summary(workspace, cold, cached):
    """The console ends with the summary (computed or cached per model and step, then the paths) and holds nothing
    else of note: no warnings, no Prefect log lines, no library progress bars. They went to the run's log file."""
    root, _ = workspace
    console = cold["console"]
    assert noise(console) == [], console
    table = summary_table(console)
    assert set(table) == {"tiny-a", "tiny-b"}, console
    for model, row in table.items():
        assert row["generate"] == "computed (24 new)", (model, row)  # 12 prompts × 2 images, none there before
        assert [row[step] for step in STEP_COLUMNS[1:]] == ["computed"] * 5, (model, row)
    assert summary_paths(console) == {
        "report": root / "reports" / "leaderboard.html",
        "store": root / "data" / "t2ibench.duckdb",
        "log": root / "data" / "logs" / "refresh.log",
    }
    assert (root / "reports" / "leaderboard.html").is_file()
    # the fully cached second run says so for every step of every model
    console = cached[0]["console"]
    assert noise(console) == [], console
    table = summary_table(console)
    assert set(table) == {"tiny-a", "tiny-b"}, console
    for model, row in table.items():
        assert [row[step] for step in STEP_COLUMNS] == ["cached"] * len(STEP_COLUMNS), (model, row)
    assert summary_paths(console)["report"].is_file()
    # what the console did not show is in the log file: Prefect's lines and the libraries' warnings
    assert "Task run 'tiny-a-generate' - Finished in state" in cold["logged"]
    assert "Flow run '" in cold["logged"]
    # a refresh with nothing to compute answers every step from the task cache without starting Prefect
    assert (
        "every step's result is in the task cache (keys unchanged, files present): Prefect not started"
        in (cached[0]["logged"])
    )
    assert "Flow run '" not in cached[0]["logged"]
    assert "Starting temporary server" not in cached[0]["logged"]
    # the model libraries' warnings and progress bars (which ones depends on the versions and on what the tiny
    # models' cache already holds: diffusers' 'Loading pipeline components' bar comes with every pipeline load)
    third_party = [
        line for line in cold["logged"].splitlines() if "warn" in line.lower() or any(r in line for r in PROGRESS_RATES)
    ]
    assert third_party, cold["logged"][-3000:]
    generate = {"step": "generate", "status": "computed", "made": 24, "reused": 0}
    assert cold["summary"]["models"][0]["steps"][0] == generate  # the same summary in --summary's JSON


def test_a_run_with_nothing_new_does_no_model_work(cached):
    summary, before, after = cached
    for model in ("tiny-a", "tiny-b"):
        assert states(summary, model) == {"Cached"}, summary["states"][model]
    assert before == after  # upserts again, no duplicates


def test_away_from_a_terminal_each_model_is_reported_as_it_finishes(cold):
    """On pipes (cron, CI) a line per model arrives when that model is done, saying when: not all at the end."""
    lines = [(at, line) for at, line in cold["arrived"] if re.search(r"refresh smoke: tiny-[ab] done at", line)]
    assert [line.split()[2] for _, line in lines] == ["tiny-a", "tiny-b"], cold["console"]
    said = [float(re.search(r"done at (\d+) s", line).group(1)) for _, line in lines]
    (a_at, _), (b_at, _) = lines
    # the two models finish seconds apart (one worker thread: tiny-b's work starts after tiny-a's), and each line
    # arrived then, not at the end; the seconds it states move with its arrival (both count from the start)
    assert b_at - a_at > 1.0, lines
    assert abs((b_at - a_at) - (said[1] - said[0])) < 2.0, lines
    assert a_at < cold["ended"] - 1.0, lines


def test_a_cached_refresh_keeps_the_report_it_shows(workspace, cached):
    """A fully cached refresh leaves the report's files untouched once its rows are the same: the second run's report
    says what it found (every model unchanged since the first, which found every model new) and the third, finding
    the same again, rewrites not one file."""
    root, env = workspace
    assert cached[0]["report"]["rendered"] is True  # "since the last refresh" changed: new → unchanged
    since = (root / "reports" / "leaderboard.md").read_text().split("## Since the last refresh")[1]
    assert "2 unchanged; 0 flagged" in since.split("\n\n")[1]
    before = {p: p.stat().st_mtime_ns for p in (root / "reports").rglob("*") if p.is_file()}
    again = run_flow(root, env, "cached-again")
    assert "(unchanged: its rows are the same)" in again["console"]
    assert again["report"]["rendered"] is False
    assert len(before) > 10
    assert {p: p.stat().st_mtime_ns for p in (root / "reports").rglob("*") if p.is_file()} == before


def test_the_one_call_numbers_on_a_refreshs_features_are_the_leaderboards(workspace, cold, model_cache, monkeypatch):
    """`t2ibench diversity FILE` on a model's image features, with the config's diversity settings, prints exactly the
    stored VENDI-α and RKE: the same σ (the embedding space's reference σ, found through the embedding_spaces.json
    the refresh wrote beside the features, recomputed through the same embedder), the same FKEA shards and centre;
    and its output names the σ's source and the settings a default refresh would differ in."""
    from t2ibench.cli import main
    from t2ibench.config import DiversityConfig, load_config

    root, _ = workspace
    config = load_config(root / "configs" / "smoke.yaml")
    div = config.evaluators.diversity
    monkeypatch.setenv("T2IBENCH_CACHE", str(model_cache))  # the tiny embedders the refresh built
    store = Store(root / "data" / "t2ibench.duckdb")
    for model in ("tiny-a", "tiny-b"):
        (features,) = (root / "data" / "embeddings" / model).glob("*/image_features.npy")
        out = root / f"one-call-{model}.json"
        argv = ["diversity", str(features), "--rff-dim", str(div.rff_dim), "--shards", str(div.shards)]
        argv += ["--device", config.runtime.device, "--quiet", "--json", str(out)]
        assert main(argv) == 0
        payload = json.loads(out.read_text())
        rows = store.rows(
            "SELECT metric, alpha, value, sigma, sigma_source FROM metrics WHERE model = ? AND metric IN ('fkea', "
            "'rke') ORDER BY metric, alpha",
            [model],
        )
        assert len(rows) == 4, rows
        (result,) = payload["results"]
        got = {("fkea", float(a)): v for a, v in result["vendi"].items()} | {("rke", 2.0): result["rke"]}
        assert got == {(r["metric"], r["alpha"]): r["value"] for r in rows}  # exactly, to the last bit
        assert {(payload["sigma"]["value"], payload["sigma"]["source"])} == {
            (r["sigma"], r["sigma_source"]) for r in rows
        }
        assert payload["sigma"]["comparable"] is True
        differ = {
            k: getattr(div, k) for k in ("rff_dim", "seed", "shards") if getattr(div, k) != getattr(DiversityConfig, k)
        }
        section = ", ".join(f"{k}: {v}" for k, v in differ.items())
        assert f"as a refresh whose evaluators.diversity sets {section} measures them" in payload["note"]
        assert "Method auto → fkea" in payload["note"]


def test_changing_one_model_recomputes_that_model_only(workspace, changed):
    root, _ = workspace
    assert states(changed, "tiny-a") == {"Cached"}
    assert changed["states"]["tiny-b"]["generate"] == "Completed"
    table = summary_table(changed["console"])
    assert [table["tiny-a"][step] for step in STEP_COLUMNS] == ["cached"] * len(STEP_COLUMNS)
    assert table["tiny-b"]["generate"] == "computed (24 new)"  # another step count: another images folder
    store = Store(root / "data" / "t2ibench.duckdb")
    versions = store.rows("SELECT model, count(DISTINCT model_hash) AS n FROM images GROUP BY model ORDER BY model")
    assert versions == [{"model": "tiny-a", "n": 1}, {"model": "tiny-b", "n": 2}]  # history is kept
    board = store.rows("SELECT model, model_hash FROM leaderboard ORDER BY model")
    current = store.rows("SELECT model_hash FROM models WHERE model = 'tiny-b' AND sampling->>'steps' = '2'")
    assert board[1]["model_hash"] == current[0]["model_hash"]
    # cold, cached, cached again (test_a_cached_refresh_keeps_the_report_it_shows) and this one
    assert store.rows("SELECT count(*) AS n FROM runs WHERE status = 'completed'") == [{"n": 4}]
    since = {r["model"]: r for r in store.rows("SELECT * FROM paired_comparisons WHERE kind = 'since' AND run_id = ?",
                                               [changed["run_id"]])}  # fmt: skip
    assert (since["tiny-a"]["status"], since["tiny-b"]["status"]) == ("unchanged", "changed")


def test_deleted_or_altered_outputs_are_recomputed_not_trusted(workspace, changed):
    """Files a cached result relies on that are gone (tiny-a's images) or changed behind it (tiny-b's GenEval
    results, rewritten in place) make their steps run again: never a stale number, never a refresh stuck on them."""
    root, env = workspace
    images = root / "data" / "images" / "tiny-a"
    before = sorted(p.read_bytes() for p in images.glob("*/*/samples/*.png"))
    assert len(before) == 24
    shutil.rmtree(images)
    store = Store(root / "data" / "t2ibench.duckdb")
    (shown,) = store.rows("SELECT model_hash FROM current_models WHERE model = 'tiny-b'")
    (results,) = (root / "data" / "results" / "tiny-b").glob(f"{shown['model_hash']}-*/geneval_results.jsonl")
    judged = results.read_bytes()
    results.write_bytes(judged.replace(b'"correct": false', b'"correct": true', 1))
    assert results.read_bytes() != judged
    summary = run_flow(root, env, "deleted")
    assert summary["states"]["tiny-a"]["generate"] == "Completed"
    assert summary_table(summary["console"])["tiny-a"]["generate"] == "computed (24 new)"
    assert sorted(p.read_bytes() for p in images.glob("*/*/samples/*.png")) == before  # deterministic regeneration
    assert summary["states"]["tiny-b"]["geneval"] == "Completed"  # judged again, not served from the cache
    assert results.read_bytes() == judged  # the verdicts as they were made


def test_report_renders_in_a_headless_browser(workspace, cold):
    root, _ = workspace
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        if os.environ.get("T2IBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is required (T2IBENCH_REQUIRE_BROWSER=1) but not installed")
        pytest.skip("no headless chromium on this machine")
    page = root / "reports" / "leaderboard.html"
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={root / '.chromium'}",
    ]
    dom = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    tables = dict(re.findall(r'<table id="([a-z-]+)"[^>]*>(.*?)</table>', html, flags=re.S))
    assert tables["leaderboard"].count("<tr>") == 3  # header + two models
    assert tables["failures"].count("<tr>") == 3  # the failure-pattern section: header + two models
    assert 'id="provenance"' in html
    assert "SMOKE RUN" in html
    assert 'href="models/tiny-a.html"' in html  # the drill-down page, with the galleries inline
    shot = root / "leaderboard.png"
    subprocess.run(
        [chromium, *flags, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1200, 900)
        assert len(np.unique(np.asarray(im.convert("L")))) > 10  # something was drawn: text, table borders, plots


def test_a_deployment_on_a_work_pool_runs_the_same_refresh_through_a_worker(workspace, cold):
    """`t2ibench schedule` makes a process work pool and a cron deployment; `prefect worker start` runs it: a refresh
    of the same config, recorded in the same store; `--list` says what is deployed and whether a worker is online."""
    root, env = workspace
    store = Store(root / "data" / "t2ibench.duckdb")
    runs_before = store.rows("SELECT count(*) AS n FROM runs WHERE status = 'completed'")[0]["n"]
    pool = f"t2ibench-test-{os.getpid()}"
    from t2ibench.requests import ScheduleRequest

    base = [sys.executable, "-m", "flows.schedule"]  # the program `t2ibench schedule` starts (its config is here)
    made = [*base, ScheduleRequest(config=str(root / "configs" / "smoke.yaml"), cron="0 3 * * *", pool=pool).to_json()]
    proc = subprocess.run(made, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "created deployment scheduled_refresh/nightly" in proc.stdout
    assert "│" not in proc.stdout  # Prefect's own table stays out
    listing = ScheduleRequest(listing=True).to_json()
    listed = subprocess.run([*base, listing], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    line = next(x for x in listed.stdout.splitlines() if x.startswith("scheduled_refresh/nightly"))
    assert "cron 0 3 * * *" in line
    assert f"pool {pool}" in line
    assert "none online" in line
    prefect = str(Path(sys.executable).with_name("prefect"))
    run = subprocess.run(
        [prefect, "deployment", "run", "scheduled_refresh/nightly"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    worker = subprocess.run(
        [prefect, "worker", "start", "--pool", pool, "--run-once"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert worker.returncode == 0, worker.stdout[-3000:] + worker.stderr[-3000:]
    assert "Finished in state Completed()" in worker.stdout + worker.stderr
    assert store.rows("SELECT count(*) AS n FROM runs WHERE status = 'completed'")[0]["n"] == runs_before + 1


def test_the_config_s_dask_runner_with_prompt_shards_gives_the_same_results(workspace, cold, tmp_path):
    """runtime.task_runner: dask (2 workers) and prompt shards, read from the config: the same images and verdicts as
    the local run, scores equal up to float noise, and none of Dask's own lines in the log."""
    root, env = workspace
    dask_root = tmp_path / "dask"
    (dask_root / "configs").mkdir(parents=True)
    config = yaml.safe_load((root / "configs" / "smoke.yaml").read_text())
    config["models"] = config["models"][:1]
    config["outputs"]["cache"] = str(root / "data" / "cache")
    config["runtime"] |= {"task_runner": "dask", "workers": 2, "prompts_per_shard": 5}  # 12 prompts: 3 shards
    (dask_root / "configs" / "smoke.yaml").write_text(yaml.safe_dump(config))
    dask_env = {
        **env,
        "PREFECT_HOME": str(dask_root / ".prefect"),
        "PREFECT_LOCAL_STORAGE_PATH": str(dask_root / ".prefect" / "storage"),
    }
    summary = run_flow(dask_root, dask_env, "dask")
    assert states(summary, "tiny-a") == {"Completed"}
    assert len(summary["states"]["tiny-a"]["generate"].split(",")) == 3  # 12 prompts in shards of 5
    assert "local Dask cluster (2 single-threaded workers)" in summary["logged"]
    assert not [x for x in summary["logged"].splitlines() if "distributed." in x or "Nanny" in x]
    ours = Store(dask_root / "data" / "t2ibench.duckdb")
    theirs = Store(root / "data" / "t2ibench.duckdb")
    current = "JOIN current_models c USING (model, model_hash, evaluator_hash) WHERE model = 'tiny-a'"
    images = "SELECT prompt_index, sample, sha256 FROM images WHERE model = 'tiny-a' ORDER BY 1, 2"
    assert ours.rows(images) == theirs.rows(images)  # the same pixels
    verdicts = "SELECT prompt_index, sample, correct, reason FROM verdicts v {} ORDER BY 1, 2"
    assert ours.rows(verdicts.format("")) == theirs.rows(verdicts.format(current))
    scores = "SELECT DISTINCT m.metric, m.params_key, m.value FROM metrics m {} AND metric IN ('fkea', 'scendi')"
    mine = ours.rows(scores.format("WHERE true") + " ORDER BY 1, 2")
    reference = theirs.rows(scores.format(current) + " ORDER BY 1, 2")
    assert [(r["metric"], r["params_key"]) for r in mine] == [(r["metric"], r["params_key"]) for r in reference]
    for a, b in zip(mine, reference, strict=True):
        # equal up to float noise: Dask workers run torch with one thread, which changes summation order in the
        # embedders (measured differences ~3e-6 relative)
        assert a["value"] == pytest.approx(b["value"], rel=1e-4)
    # run again: every task is a cache hit, answered in the flow's own process, and no Dask cluster is started
    again = run_flow(dask_root, dask_env, "dask-cached")
    assert states(again, "tiny-a") == {"Cached"}
    assert "Creating a new Dask cluster" in summary["logged"]
    assert "Creating a new Dask cluster" not in again["logged"]


def test_sql_report_and_run_verbs(workspace, cold, capsys, tmp_path):
    from t2ibench.cli import main

    root, _env = workspace
    store = str(root / "data" / "t2ibench.duckdb")
    assert main(["sql", "--store", store, "SELECT model, smoke FROM leaderboard ORDER BY model"]) == 0
    out = capsys.readouterr().out
    assert "| tiny-a | true |" in out
    assert main(["sql", "--store", store, "DELETE FROM runs"]) == 2  # read-only by default
    assert "not allowed in a read-only query" in capsys.readouterr().err
    assert main(["sql", "--store", store, "SELECT * FROM verdicts", "--out", str(tmp_path / "v.parquet")]) == 0
    assert (tmp_path / "v.parquet").stat().st_size > 0
    assert main(["report", "--config", str(root / "configs" / "smoke.yaml"), "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "leaderboard.html").exists()
    # `t2ibench run` needs a workspace with flows/: a config outside a checkout is refused before Prefect starts
    assert main(["run", "--config", str(root / "configs" / "smoke.yaml")]) == 2
    assert "not a t2ibench workspace" in capsys.readouterr().err


def test_failure_views_agree_with_the_engines_verdicts(workspace, cold, capsys):
    """On the rows a real refresh stored, every failure outcome is consistent with GenEval's own verdict."""
    from t2ibench.cli import main

    root, _env = workspace
    store = Store(root / "data" / "t2ibench.duckdb")
    current = "JOIN current_models USING (model, model_hash, evaluator_hash)"
    counting = store.rows(f"SELECT delta, correct FROM counting_outcomes {current}")
    assert counting
    assert all((r["delta"] == 0) == r["correct"] for r in counting)
    position = store.rows(f"SELECT requested, found, correct FROM position_outcomes {current}")
    assert position
    assert all(r["found"] is not None for r in position)
    assert all(r["correct"] == (r["requested"] in r["found"].split("+")) for r in position)
    two = store.rows(f"SELECT outcome, correct FROM two_object_outcomes {current}")
    assert two
    assert all(r["correct"] == (r["outcome"] == "both found") for r in two)
    attr = store.rows(f"SELECT outcome, correct FROM color_attr_outcomes {current}")
    assert attr
    assert all(r["outcome"] is not None for r in attr)
    assert all(r["correct"] == (r["outcome"] == "correct") for r in attr)
    # every pattern has a headline row per model, and the verb prints it
    assert [r["model"] for r in store.rows("SELECT model FROM failure_summary")] == ["tiny-a", "tiny-b"]
    assert main(["failures", "--config", str(root / "configs" / "smoke.yaml"), "--model", "tiny-a"]) == 0
    out = capsys.readouterr().out
    assert "# Failure patterns: tiny-a" in out
    assert "## Position" in out
    html = (root / "reports" / "leaderboard.html").read_text()
    assert 'id="failure-patterns"' in html


def test_a_failing_run_ends_with_its_real_cause(tmp_path, model_cache):
    """A config that passes validation but cannot run (a model folder holding no pipeline) fails with the cause as
    the last line and in the run record, never as Prefect's 'UnfinishedRun' of a downstream task; the other model,
    submitted in the same graph, still finishes and is stored."""
    config, env = make_workspace(tmp_path, model_cache, models=2, per_task=1)
    data = yaml.safe_load(config.read_text())
    (tmp_path / "not-a-model").mkdir()
    data["models"][0]["generator"]["model"] = str(tmp_path / "not-a-model")
    config.write_text(yaml.safe_dump(data))
    proc = spawn(refresh_cmd(config), env, merged=False)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, out[-2000:] + err[-2000:]
    last = (out + err).strip().splitlines()[-1]
    assert last.startswith("leaderboard_refresh: error: cannot load pipeline"), last
    assert "prefect.exceptions.UnfinishedRun" not in out + err
    assert noise(out + err) == [], out + err  # the traceback is in the log
    assert f"the full log is {tmp_path / 'data' / 'logs' / 'refresh.log'}" in err
    assert "Traceback" in (tmp_path / "data" / "logs" / "refresh.log").read_text()
    (run,) = Store(tmp_path / "data" / "t2ibench.duckdb").rows("SELECT status, details FROM runs")
    assert run["status"] == "failed"
    assert "cannot load pipeline" in json.loads(run["details"])["error"]
    stored = Store(tmp_path / "data" / "t2ibench.duckdb").rows("SELECT model FROM model_versions")
    assert stored == [{"model": "tiny-b"}]
    assert "refresh smoke: tiny-a failed after" in err
    assert "refresh smoke: tiny-b done at" in err


@pytest.fixture(scope="module")
def releveled(workspace, changed):
    """The refresh after changing evaluators.ci_level alone (0.95 → 0.9)."""
    root, env = workspace
    path = root / "configs" / "smoke.yaml"
    config = yaml.safe_load(path.read_text())
    config["evaluators"]["ci_level"] = 0.9
    path.write_text(yaml.safe_dump(config))
    return run_flow(root, env, "releveled")


def test_changing_the_confidence_level_recomputes_the_intervals_and_nothing_else(workspace, releveled):
    """The confidence level is read by the Table-2 and the diversity steps: they run again, every other step is
    answered from the cache, and every stored interval of the current versions is at the new level."""
    root, _ = workspace
    for model in ("tiny-a", "tiny-b"):
        steps = releveled["states"][model]
        assert {steps[s] for s in ("scores", "diversity")} == {"Completed"}, steps
        reused = ("generate", "embed", "geneval", "fkea-shard", "scendi")
        assert {x for s in reused for x in steps[s].split(",")} == {"Cached"}, steps
    store = Store(root / "data" / "t2ibench.duckdb")
    current = "JOIN current_models USING (model, model_hash, evaluator_hash)"
    levels = store.rows(f"SELECT DISTINCT ci_level FROM geneval_scores {current} WHERE ci_level IS NOT NULL")
    levels += store.rows(f"SELECT DISTINCT ci_level FROM metrics {current} WHERE ci_level IS NOT NULL")
    assert {r["ci_level"] for r in levels} == {0.9}


def test_a_copy_of_the_config_with_other_outputs_keeps_to_its_own_folders(workspace, releveled):
    """A copy of a config that writes elsewhere computes into its own folders (the output location is part of every
    file-writing step's key); the original's next refresh is still answered from the cache, its rows point at its
    own files, and deleting the copy's folders leaves it whole."""
    root, env = workspace
    config = yaml.safe_load((root / "configs" / "smoke.yaml").read_text())
    config["name"] = "copy"
    config["models"] = config["models"][:1]
    config["outputs"] = {
        "data": "copy",
        "reports": "copy/reports",
        "store": "copy/t2ibench.duckdb",
        "cache": "data/cache",
    }
    (root / "configs" / "copy.yaml").write_text(yaml.safe_dump(config))
    copy = run_flow(root, env, "copy", config="copy.yaml", data="copy")
    assert copy["states"]["tiny-a"]["generate"] == "Completed"  # its own images folder, not the original's
    assert len(list((root / "copy" / "images" / "tiny-a").glob("*/*/samples/*.png"))) == 24
    again = run_flow(root, env, "after-copy")
    assert states(again, "tiny-a") == {"Cached"}
    store = Store(root / "data" / "t2ibench.duckdb")
    paths = [
        Path(r["path"]) for r in store.rows("SELECT i.path FROM images i JOIN current_models USING (model, model_hash)")
    ]
    assert paths
    assert all(p.is_relative_to(root / "data") for p in paths)
    shutil.rmtree(root / "copy")
    assert all(p.is_file() for p in paths)


def test_a_config_naming_another_configs_store_is_refused(workspace, releveled):
    """The store belongs to the config that created it: another config naming it is refused before any work, and
    the store is left as it was."""
    root, env = workspace
    config = yaml.safe_load((root / "configs" / "smoke.yaml").read_text())
    config["name"] = "intruder"
    config["outputs"]["data"] = "intruder"
    (root / "configs" / "intruder.yaml").write_text(yaml.safe_dump(config))
    store = Store(root / "data" / "t2ibench.duckdb")
    tables = ("runs", "models", "images", "verdicts", "metrics")
    before = {t: store.rows(f"SELECT * FROM {t} ORDER BY ALL") for t in tables}
    proc = spawn(refresh_cmd(root / "configs" / "intruder.yaml"), env, merged=False)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, out[-2000:] + err[-2000:]
    last = err.strip().splitlines()[-1]
    assert "belongs to config 'smoke' (configs/smoke.yaml); config 'intruder' (configs/intruder.yaml)" in last, last
    assert {t: store.rows(f"SELECT * FROM {t} ORDER BY ALL") for t in tables} == before
