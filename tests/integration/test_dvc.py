"""The DVC pipeline: stages reproduce, a second `dvc repro` does nothing, outputs travel through a remote."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def dvc(root: Path, *args: str, env: dict[str, str]) -> str:
    exe = Path(sys.executable).with_name("dvc")
    proc = subprocess.run([str(exe), *args], cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"dvc {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def project(tmp_path):
    """A copy of the workspace's pipeline files (DVC without git), with a faster digits setting."""
    root = tmp_path / "project"
    root.mkdir()
    for name in ("dvc.yaml", ".dvcignore"):
        shutil.copy(REPO / name, root / name)
    for folder in ("src", "flows", "tasks", "configs"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / ".dvc", root / ".dvc", ignore=shutil.ignore_patterns("cache", "tmp", "config.local"))
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["digits"]["repeats"] = 2
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    env = dict(os.environ)
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": str(root),
            "PREFECT_HOME": str(root / ".prefect"),
        }
    )
    dvc(root, "config", "core.no_scm", "true", env=env)
    return root, env


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


def test_each_stage_lists_only_the_params_it_reads():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        used = {p.split(".")[0] for p in stage.get("params", [])}
        cmd = " ".join([stage["cmd"], *map(str, stage.get("deps", [])), *map(str, stage.get("outs", []))])
        for group in used:
            assert "${" + group in cmd, f"stage {name} lists params '{group}' it does not read"
        for group in ("geneval", "digits", "agreement", "leaderboard"):
            if "${" + group + "." in cmd:
                assert group in used, f"stage {name} reads '{group}' params without listing them"
