"""Bad-input corpus, round three: pipeline parameters that would reach a shell, and interrupted commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.corpus import case


def expand(tmp: Path, params: str, *argv: str) -> Any:
    """Expand ``--params`` for a t2ibench command line, as the CLI does before parsing; nothing may run."""
    from t2ibench.cli import build_parser
    from t2ibench.params import expand_params

    (tmp / "params.yaml").write_text(params)
    marker = tmp / "pwned"
    try:
        return expand_params(build_parser(), [*argv, "--params", f"{tmp / 'params.yaml'}:p"])
    finally:
        assert not marker.exists(), "a parameter value ran as a shell command"


@case(
    "param-shell-metacharacters",
    "params.yaml value with a shell command (`seed: 43; touch …`)",
    "error naming the file and key; nothing runs (dvc.yaml splices no value into a shell)",
    r"params\.yaml: p\.seed: expected an integer, got '43; touch",
)
def _(tmp: Path) -> Any:
    return expand(tmp, f"p:\n  seed: 43; touch {tmp}/pwned\n", "prompts", "geneval")


@case(
    "param-command-substitution",
    "params.yaml path value with `$(…)`",
    "passed in process as a path (no shell); the config is refused by name",
    r"\$\(touch .*\)\.yaml: no such config file",
)
def _(tmp: Path) -> Any:
    from t2ibench.cli import build_parser
    from t2ibench.commands.flows import _cmd_run

    args = build_parser().parse_args(expand(tmp, f"p:\n  config: $(touch {tmp}/pwned).yaml\n", "run"))
    return _cmd_run(args)


@case(
    "param-boolean-for-integer",
    "params.yaml `seed: true`",
    "error naming the key: must be a number or a string",
    r"p\.seed: must be a number or a string, got bool True",
)
def _(tmp: Path) -> Any:
    return expand(tmp, "p:\n  seed: true\n", "prompts", "geneval")


@case(
    "param-unknown-key",
    "params.yaml key the command has no option for (`per_tsk`)",
    "error naming the key, with a did-you-mean",
    r"p\.per_tsk: not an option of this command; did you mean 'per_task'\?",
)
def _(tmp: Path) -> Any:
    return expand(tmp, "p:\n  per_tsk: 3\n", "prompts", "geneval")


@case(
    "param-given-twice",
    "an option both in params.yaml and on the command line",
    "error: give it once (neither silently wins)",
    r"p\.seed: --seed is also given on the command line; give it once",
)
def _(tmp: Path) -> Any:
    return expand(tmp, "p:\n  seed: 1\n", "prompts", "geneval", "--seed", "2")


@case(
    "param-nested-value",
    "params.yaml value that is a mapping",
    "error naming the key",
    r"p\.seed: must be a number or a string, got dict",
)
def _(tmp: Path) -> Any:
    return expand(tmp, "p:\n  seed: {a: 1}\n", "prompts", "geneval")


@case(
    "param-missing-section",
    "`--params params.yaml:SECTION` naming no section",
    "error listing the file's sections",
    r"unknown section of .*params\.yaml 'p' \(choose from: q\)",
)
def _(tmp: Path) -> Any:
    return expand(tmp, "q:\n  seed: 1\n", "prompts", "geneval")


@case(
    "param-choice-out-of-range",
    "params.yaml value outside the option's range (`per_task: 0`)",
    "the option's own check, naming the key",
    r"p\.per_task: .*(at least|>=|must be).*1",
)
def _(tmp: Path) -> Any:
    return expand(tmp, "p:\n  per_task: 0\n", "prompts", "geneval")


@case(
    "param-data-not-the-configs",
    "params.yaml `leaderboard.data` other than the config's outputs.data",
    "refused before any work (DVC would track folders the run never writes)",
    r"--data .*elsewhere: config .* writes its data to .*, not there",
)
def _(tmp: Path) -> Any:
    from t2ibench.cli import build_parser
    from t2ibench.commands.common import check_data
    from t2ibench.config import load_config

    config = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
    args = build_parser().parse_args(expand(tmp, f"p:\n  config: {config}\n  data: {tmp}/elsewhere\n", "gc"))
    return check_data(args, load_config(args.config))
