"""README opens with the two set-up commands and .ci/run calls the README's test command."""

import re
from pathlib import Path

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
