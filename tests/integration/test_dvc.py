"""The DVC pipeline from a fresh copy of the tree: the committed lock matches it, stages reproduce offline (external
data through the documented local override), a second `dvc repro` does nothing, `dvc repro` after `t2ibench run`
does no model work, outputs travel through a remote, and the agreement flow writes what the CLI writes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from t2ibench.store import Store
from tests.conftest import GENEVAL2_DATA, GENEVAL_DATA, GENEVAL_REWRITTEN_DATA
from tests.integration._workspace import STEP_COLUMNS, noise, summary_table

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
needs_geneval = pytest.mark.skipif(not GENEVAL_DATA.is_dir(), reason="GenEval's released files are not available")


def dvc(root: Path, *args: str, env: dict[str, str]) -> str:
    """Run the project environment's dvc in ``root``; its output (the run must succeed)."""
    exe = Path(sys.executable).with_name("dvc")
    proc = subprocess.run([str(exe), *args], cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"dvc {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy_tree(root: Path) -> Path:
    """What a fresh clone holds of the pipeline: dvc.yaml, dvc.lock, params, the code and configs (no git)."""
    root.mkdir()
    for name in ("dvc.yaml", "dvc.lock", "params.yaml", ".dvcignore"):
        shutil.copy(REPO / name, root / name)
    for folder in ("src", "flows", "tasks", "configs"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(REPO / ".dvc", root / ".dvc", ignore=shutil.ignore_patterns("cache", "tmp", "config.local"))
    return root


def project_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment `make repro` gives dvc: the project's .venv first on PATH, offline GenEval data."""
    env = dict(os.environ)
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": str(root),
            "PREFECT_HOME": str(root / ".prefect"),
            "T2IBENCH_GENEVAL_DATA": str(GENEVAL_DATA),
            "T2IBENCH_GENEVAL2_DATA": str(GENEVAL2_DATA),
            "T2IBENCH_GENEVAL_REWRITTEN_DATA": str(GENEVAL_REWRITTEN_DATA),
            **extra,
        }
    )
    dvc(root, "config", "core.no_scm", "true", env=env)
    return env


@pytest.fixture
def project(tmp_path):
    """A fresh copy of the pipeline files, with a faster digits setting."""
    root = copy_tree(tmp_path / "project")
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["digits"]["repeats"] = 2
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    return root, project_env(root)


def test_the_committed_lock_matches_the_tree(tmp_path):
    """Every stage's code, params and command are what dvc.lock recorded: a fresh clone re-runs a stage only for
    outputs it lacks, never because the lock is stale (regenerate it with `make repro` before committing)."""
    root = copy_tree(tmp_path / "fresh")
    status = json.loads(dvc(root, "status", "--json", env=project_env(root)).strip().splitlines()[-1])
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    locked = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    assert set(locked) == set(stages), "dvc.lock lacks stages (or holds removed ones)"
    params = yaml.safe_load((root / "params.yaml").read_text())

    def resolve(path: str) -> str:  # dvc.yaml's ${group.key} templates, from params.yaml
        return re.sub(r"\$\{(\w+)\.(\w+)\}", lambda m: str(params[m[1]][m[2]]), path)

    produced = {
        resolve(str(out if isinstance(out, str) else next(iter(out)))) for s in stages.values() for out in s["outs"]
    }
    stale = []
    for stage, changes in status.items():
        for change in changes:
            if not isinstance(change, dict):  # "changed command", "always changed"
                stale.append(f"{stage}: {change}")
                continue
            for path, what in change.get("changed deps", {}).items():
                upstream = any(path == out or path.startswith(out.rstrip("/") + "/") for out in produced)
                if not (what == "deleted" and upstream):  # another stage's output, absent in a fresh clone: fine
                    stale.append(f"{stage}: {path} {what}")
    assert not stale, "dvc.lock does not match the tree (run `make repro` and commit dvc.lock): " + "; ".join(stale)


def test_repro_is_idempotent_and_outputs_round_trip_a_remote(project, tmp_path):
    root, env = project
    stages = ("geneval_prompts", "digits_figure")
    dvc(root, "repro", *stages, env=env)
    prompts = root / "data" / "paper" / "evaluation_metadata.jsonl"
    assert len(prompts.read_text().splitlines()) == 553
    figure = root / "data" / "paper" / "digits" / "digits.png"
    assert figure.stat().st_size > 1000
    again = dvc(root, "repro", *stages, env=env)
    assert "didn't change, skipping" in again
    assert "Running stage" not in again
    metrics = dvc(root, "metrics", "show", env=env)
    assert "vendi_exact_10_classes" in metrics
    assert "monotone" in metrics

    before = {p: digest(p) for p in (prompts, figure)}
    dvc(root, "remote", "add", "-d", "shared", str(tmp_path / "remote"), env=env)
    dvc(root, "push", *stages, env=env)
    shutil.rmtree(root / "data")
    shutil.rmtree(root / ".dvc" / "cache")
    dvc(root, "pull", *stages, env=env)
    assert {p: digest(p) for p in (prompts, figure)} == before
    status = dvc(root, "status", *stages, env=env)
    assert "up to date" in status


@needs_geneval
@pytest.mark.skipif(
    not (GENEVAL2_DATA.is_dir() and GENEVAL_REWRITTEN_DATA.is_dir()), reason="GenEval 2's file or the rewrites absent"
)
def test_external_data_and_agreement_stages_run_offline_with_the_local_override(project):
    root, env = project
    dvc(root, "repro", "human_agreement", "geneval2_data", "geneval_rewritten_data", env=env)
    for name in ("geneval2_data.jsonl", "LICENSE"):  # GenEval 2's file: fetched from the override, verified
        assert (root / "data" / "external" / "geneval2" / name).read_bytes() == (GENEVAL2_DATA / name).read_bytes()
    for name in ("evaluation_metadata_long.jsonl", "LICENSE"):  # the rewritten prompts: the same way
        got = root / "data" / "external" / "geneval_rewritten" / name
        assert got.read_bytes() == (GENEVAL_REWRITTEN_DATA / name).read_bytes()
    for name in ("evaluation_metadata.jsonl", "annotations_clip.csv", "annotations_sdv2.csv", "LICENSE"):
        assert (root / "data" / "external" / "geneval" / name).read_bytes() == (GENEVAL_DATA / name).read_bytes()
    metrics = json.loads((root / "data" / "paper" / "agreement" / "metrics.json").read_text())
    assert metrics, "the agreement stage wrote no headline numbers"
    again = dvc(root, "repro", "human_agreement", "geneval2_data", "geneval_rewritten_data", env=env)
    assert "Running stage" not in again


def smoke_project(root: Path, model_cache: Path) -> tuple[Path, dict[str, str]]:
    """A fresh copy of the pipeline whose leaderboard stage refreshes one tiny smoke model (one prompt per task).
    (The mechanism does not depend on the config; to keep the suite fast the stage points at one tiny model.)"""
    copy_tree(root)
    params = yaml.safe_load((root / "params.yaml").read_text())
    wanted = params["leaderboard"]["config"]
    assert f"t2ibench run --config {wanted}" in (REPO / "Makefile").read_text(), (
        "params.yaml's leaderboard is not make run's"
    )
    params["leaderboard"] = {"config": "configs/smoke.yaml", "data": "data/smoke"}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    config = yaml.safe_load((root / "configs" / "smoke.yaml").read_text())
    config["models"] = config["models"][:1]
    config["benchmarks"]["geneval"]["limit_per_task"] = 1
    (root / "configs" / "smoke.yaml").write_text(yaml.safe_dump(config))
    return root, project_env(root, T2IBENCH_CACHE=str(model_cache))


def make_run(root: Path, env: dict[str, str]) -> str:
    """`t2ibench run` of the stage's config, as `make run` does; its console."""
    exe = Path(sys.executable).with_name("t2ibench")
    proc = subprocess.run(
        [str(exe), "run", "--config", "configs/smoke.yaml"], cwd=root, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def test_repro_after_make_run_does_no_model_work_and_a_fresh_clone_reproduces_the_lock(tmp_path, model_cache):
    """`t2ibench run` (what `make run` does), then `dvc repro leaderboard`: the stage's refresh finds every step in
    its caches (nothing generated or stored twice, Prefect not even started) and its `t2ibench gc` prunes an older
    version from the tracked folders. A second fresh copy at another path then makes, with `t2ibench run`, exactly
    the images, results and embeddings the first one's dvc.lock records: after its `dvc repro` only the store file
    (run ids and times) differs, and `dvc status` is clean."""
    first, env = smoke_project(tmp_path / "first", model_cache)
    console = make_run(first, env)
    assert noise(console) == [], console  # the progress and the summary only
    assert next(iter(summary_table(console).values()))["generate"] == "computed (12 new)", console
    data = first / "data" / "smoke"
    made = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in (data / "images").rglob("*.png")}
    made |= {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in (data / "embeddings").rglob("*.npy")}
    assert len(made) >= 12
    store = Store(data / "t2ibench.duckdb")
    images = store.rows("SELECT count(*) AS n FROM images")
    stale = data / "images" / "tiny-a" / ("0" * 16)
    stale.mkdir(parents=True)
    (stale / "manifest.json").write_text("{}")  # an older version's folder, planned by an earlier refresh (recorded)
    (run_id,) = (r["run_id"] for r in store.rows("SELECT run_id FROM runs"))
    store.record_folders(run_id, [(f"images/tiny-a/{stale.name}", "tiny-a")])

    log = dvc(first, "repro", "leaderboard", env=env)
    assert "Running stage 'leaderboard'" in log
    (again,) = summary_table(log).values()  # the stage's `t2ibench run` ends with its summary
    assert [again[step] for step in STEP_COLUMNS] == ["cached"] * len(STEP_COLUMNS), log[-3000:]
    # the run's account in the log file (each run appends a section starting with its header): every step's result
    # came from the task cache, so Prefect was not even started
    logged = (data / "logs" / "refresh.log").read_text().rsplit("==== leaderboard_refresh", 1)[-1]
    assert "every step's result is in the task cache (keys unchanged, files present): Prefect not started" in logged
    assert "Task run '" not in logged, logged[-3000:]
    assert {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in made} == made, "images or embeddings were remade"
    assert store.rows("SELECT status FROM runs") == [{"status": "completed"}] * 2
    assert store.rows("SELECT count(*) AS n FROM images") == images  # upserted again, not duplicated
    assert not stale.exists(), "gc left an older version in the tracked folder"
    lock = yaml.safe_load((first / "dvc.lock").read_text())["stages"]["leaderboard"]
    outs = {o["path"]: o for o in lock["outs"]}
    assert outs["data/smoke/images"]["nfiles"] == 2 + 6 + 12  # manifest and sample log, 6 metadata, 12 PNGs
    assert "Running stage" not in dvc(first, "repro", "leaderboard", env=env)

    second, env2 = smoke_project(tmp_path / "second", model_cache)
    shutil.copy(first / "dvc.lock", second / "dvc.lock")
    make_run(second, env2)
    dvc(second, "repro", "leaderboard", env=env2)  # the fresh clone has no DVC cache: the stage runs (all cached)
    relocked = yaml.safe_load((second / "dvc.lock").read_text())["stages"]["leaderboard"]
    differ = sorted(o["path"] for o, p in zip(lock["outs"], relocked["outs"], strict=True) if o != p)
    assert differ == ["data/smoke/t2ibench.duckdb"], (lock["outs"], relocked["outs"])
    assert {k: v for k, v in relocked.items() if k != "outs"} == {k: v for k, v in lock.items() if k != "outs"}
    assert "up to date" in dvc(second, "status", "leaderboard", env=env2)


@needs_geneval
def test_the_agreement_flow_writes_what_the_cli_writes(tmp_path):
    """One library function behind both `t2ibench agreement` and `t2ibench agreement --flow` (the Prefect flow):
    same inputs, byte-identical agreement.json / .md / metrics.json."""
    inputs = [
        "--annotations",
        str(GENEVAL_DATA / "annotations_clip.csv"),
        str(GENEVAL_DATA / "annotations_sdv2.csv"),
        "--metadata",
        str(GENEVAL_DATA / "evaluation_metadata.jsonl"),
        "--folds",
        "3",
    ]
    env = dict(os.environ, PREFECT_HOME=str(tmp_path / ".prefect"))
    t2ibench = str(Path(sys.executable).with_name("t2ibench"))
    cli = subprocess.run(
        [t2ibench, "agreement", *inputs, "--seed-cv", "7", "--out", "cli"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr[-3000:]
    flow = subprocess.run(  # the same command, run as the checkout's Prefect flow (as the DVC stage runs it)
        [t2ibench, "agreement", *inputs, "--seed-cv", "7", "--flow", "--out", str(tmp_path / "flow")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert flow.returncode == 0, flow.stdout[-2000:] + flow.stderr[-3000:]
    names = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert names == ["agreement.json", "agreement.md", "metrics.json"]
    assert sorted(p.name for p in (tmp_path / "flow").iterdir()) == names
    for name in names:
        assert (tmp_path / "flow" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
