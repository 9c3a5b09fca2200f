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
    recipe = makefile.split("\ntest: ", 1)[1].split("\n\n", 1)[0]
    assert "( $(LINT) )" in recipe  # the tests' target lints too,
    assert "exit $$linted" in recipe  # and fails with it
    assert re.search(r"^lint: .*\n\t\$\(LINT\)$", makefile, flags=re.M)  # one list of lint commands for both


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


def stage_commands(stage: dict) -> list[list[str]]:
    """The commands of a stage's cmd (split at `&&`), each as its argv."""
    import shlex

    return [shlex.split(command) for command in stage["cmd"].split("&&")]


def test_every_stage_command_is_the_t2ibench_command_line():
    """One command line: DVC runs `t2ibench ...` only (never `python -m flows...`, a second set of options)."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    assert "python -m" not in (REPO / "dvc.yaml").read_text()
    for name, stage in stages.items():
        for argv in stage_commands(stage):
            assert argv[0] == "t2ibench", f"stage {name} runs {argv[0]!r}, not the t2ibench command"


def test_every_stage_lists_the_code_it_runs(monkeypatch):
    """A stage whose `t2ibench` command runs a workspace flow (flows/X.py, as the CLI says) depends on flows/X.py and
    the workspace's Prefect settings (tasks/); every stage depends on the library."""
    from t2ibench.cli import build_parser, flow_program
    from t2ibench.params import expand_params

    monkeypatch.chdir(REPO)
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    flows = set()
    for name, stage in stages.items():
        deps = [str(d) for d in stage["deps"]]
        assert "src/t2ibench" in deps, f"stage {name} does not list src/t2ibench"
        for argv in stage_commands(stage):
            program = flow_program(build_parser().parse_args(expand_params(build_parser(), argv[1:])))
            if program is None:
                continue
            flows.add(program)
            module = program.removeprefix("flows.")
            assert f"flows/{module}.py" in deps, f"stage {name} runs {program} without listing flows/{module}.py"
            assert "flows/__init__.py" in deps, f"stage {name} does not list flows/__init__.py"
            assert "tasks/__init__.py" in deps or "tasks" in deps, f"stage {name} does not list tasks/"
    assert flows == {"flows.paper_tables", "flows.human_agreement", "flows.leaderboard_refresh"}


def test_flows_and_tasks_parse_no_arguments():
    """The CLI is the only argument parser: a flow's program takes one typed request (t2ibench.requests), so no
    module of flows/ or tasks/ imports argparse, and none reads sys.argv but through ``request_main``."""
    import ast

    for path in sorted([*(REPO / "flows").glob("*.py"), *(REPO / "tasks").glob("*.py")]):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [(node.module or "").split(".")[0]]
            else:
                names = []
            for parser in ("argparse", "optparse", "getopt", "click", "typer"):
                assert parser not in names, f"{path.relative_to(REPO)} imports {parser}"
        assert "sys.argv" not in path.read_text(), f"{path.relative_to(REPO)} reads sys.argv"
        if "__main__" in path.read_text():
            assert "request_main(" in path.read_text(), f"{path.relative_to(REPO)}: its program takes a request"


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
    from t2ibench.cli import build_parser
    from t2ibench.params import expand_params

    monkeypatch.chdir(REPO)  # DVC runs commands in the project root, where params.yaml is
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    parsed = 0
    for stage in stages.values():
        for argv in stage_commands(stage):
            if argv[0] == "t2ibench":
                build_parser().parse_args(expand_params(build_parser(), argv[1:]))
                parsed += 1
    assert parsed >= 7
