"""README opens with the two set-up commands, .ci/run calls the README's test command, dvc.yaml is complete."""

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def first_code_block(text: str) -> list[str]:
    match = re.search(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M)
    assert match, "README.md has no code block"
    return [line.split("#")[0].strip() for line in match.group(1).splitlines() if line.strip()]


def test_readme_opens_with_exactly_two_setup_commands():
    text = (REPO / "README.md").read_text()
    before = text[: text.index("```")]
    assert before.strip().startswith("# t2ibench")
    assert before.count("\n") <= 2, "the two commands must come right after the title"
    assert first_code_block(text) == ["make run", "make test"]


def test_makefile_defines_both_targets_with_their_own_setup():
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^run: \$\(VENV\)/\.installed-core", makefile, flags=re.M)
    assert re.search(r"^test: \$\(VENV\)/\.installed-dev", makefile, flags=re.M)
    assert "python -m pytest" in makefile.replace("$(PY)", "python")


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    test_command = first_code_block((REPO / "README.md").read_text())[1]
    assert re.search(rf"^{re.escape(test_command)}$", ci, flags=re.M)
    assert "set -euo pipefail" in ci


def test_no_stage_reads_outside_the_project():
    """dvc.yaml and params.yaml name no path above the project (a user's machine has no ../shared)."""
    for name in ("dvc.yaml", "params.yaml"):
        text = (REPO / name).read_text()
        assert "../" not in text, f"{name} reaches outside the project"
        assert "shared/" not in text, f"{name} names the shared data folder"


def test_every_stage_lists_the_code_it_runs():
    """A stage running `python -m flows.X` depends on flows/X.py; every stage depends on the library."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        deps = [str(d) for d in stage["deps"]]
        assert "src/t2ibench" in deps, f"stage {name} does not list src/t2ibench"
        for module in re.findall(r"python -m flows\.(\w+)", stage["cmd"]):
            assert f"flows/{module}.py" in deps, f"stage {name} runs flows.{module} without listing it"
            assert "tasks/__init__.py" in deps or "tasks" in deps, f"stage {name} does not list tasks/"


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
