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
    """A stage reads a params section only through `--params params.yaml:SECTION` (its cmd) or a path template
    (deps/outs), and lists exactly the sections it reads."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        used = {p.split(".")[0] for p in stage.get("params", [])}
        read = set(re.findall(r"--params params\.yaml:(\w+)", stage["cmd"]))
        paths = " ".join([*map(str, stage.get("deps", [])), *map(str, stage.get("outs", []))])
        read |= set(re.findall(r"\$\{(\w+)\.", paths))
        assert used == read, f"stage {name} lists params {sorted(used)} but reads {sorted(read)}"


def test_no_stage_splices_a_parameter_into_its_shell_command():
    """`${...}` in a cmd would put params.yaml's text into a shell line; commands read their section instead."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        assert "${" not in stage["cmd"], f"stage {name} splices a parameter into its shell command"


def test_every_t2ibench_stage_command_parses_with_the_committed_params(monkeypatch):
    """Each `t2ibench ...` in a stage's cmd, with its params section expanded, is a valid command line."""
    import shlex

    from t2ibench.cli import build_parser
    from t2ibench.params import expand_params

    monkeypatch.chdir(REPO)  # DVC runs commands in the project root, where params.yaml is
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    parsed = 0
    for stage in stages.values():
        for command in stage["cmd"].split("&&"):
            argv = shlex.split(command)
            if argv[0] == "t2ibench":
                build_parser().parse_args(expand_params(build_parser(), argv[1:]))
                parsed += 1
    assert parsed >= 4
