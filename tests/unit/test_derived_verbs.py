"""Every verb's options are the fields of typed classes (t2ibench.options): no option is declared by hand (but the
few listed here, with their reason), no field of a verb's request is missing from its command line, the parsed
defaults are the fields' defaults, and a value out of a field's range or choices is refused naming the option."""

from __future__ import annotations

import argparse
import dataclasses
import typing

import pytest

from t2ibench.benchmarks.geneval.benchmark_cli import SuiteFile, SuiteWording
from t2ibench.benchmarks.geneval.commands import (
    AgreementMode,
    FailuresRequest,
    PromptsRequest,
    SelftestRequest,
    SummaryRequest,
)
from t2ibench.benchmarks.geneval.options_agreement import AgreementRequest
from t2ibench.benchmarks.geneval2.options import Geneval2SuiteFile
from t2ibench.cli import build_parser, main
from t2ibench.commands.common import DataFolder, Device
from t2ibench.commands.data import DataRequest
from t2ibench.commands.diversity_request import DiversityRequest
from t2ibench.commands.evaluate import EvaluateRequest, GenerateRequest
from t2ibench.commands.store import DiffRequest, GcRequest, ReportRequest, SqlRequest
from t2ibench.fields import Option, annotated, meta
from t2ibench.options import field_of
from t2ibench.requests import DigitsRequest, PaperTablesRequest, RefreshRequest, ScheduleRequest

SHARED = {"-h", "--help", "--params", "--version"}
"""Options every verb has from argparse and t2ibench.params, not from a request."""
HAND_DECLARED = {
    # DetectorConfig.resize (a pair or None) as SHORT,LONG or 'checkpoint': parsed when the evaluator is built, its
    # error an InputError naming --resize (not argparse's), as before
    ("evaluate geneval", "--resize"),
    ("selftest", "--resize"),
}


def verbs() -> dict[str, argparse.ArgumentParser]:
    """Every (sub)command's parser by its words ('paper digits', 'evaluate geneval')."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        found[" ".join(path)] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])

    walk(build_parser(), [])
    return found


def _name(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def test_no_verb_declares_an_option_by_hand():
    """An option the typed classes lack cannot exist: every action of every verb comes from a field."""
    by_hand = []
    for path, parser in verbs().items():
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) or SHARED & set(action.option_strings):
                continue
            if field_of(action) is None and (path, _name(action)) not in HAND_DECLARED:
                by_hand.append(f"t2ibench {path}: {_name(action)}")
    assert by_hand == []


def _cli_fields(cls: type) -> set[str]:
    """The fields of ``cls`` that are options (not those the command sets itself)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name for f in dataclasses.fields(cls) if (meta(annotated(hints[f.name])[1], Option) or Option()).cli}


@pytest.mark.parametrize(
    ("verb", "cls", "absent"),
    [
        ("diversity", DiversityRequest, set()),
        ("gc", GcRequest, set()),
        ("gc", DataFolder, set()),
        ("report", ReportRequest, set()),
        ("sql", SqlRequest, set()),
        ("diff", DiffRequest, set()),
        ("failures", FailuresRequest, set()),
        ("data", DataRequest, set()),
        ("run", RefreshRequest, set()),
        ("run", DataFolder, set()),
        ("schedule", ScheduleRequest, set()),
        ("paper tables", PaperTablesRequest, set()),
        ("paper tables", DataFolder, set()),
        ("paper digits", DigitsRequest, set()),
        ("evaluate geneval", EvaluateRequest, {"store", "model"}),  # GenEval's entry does not store
        ("evaluate geneval", Device, set()),
        ("evaluate geneval", SuiteFile, set()),
        ("evaluate geneval", SuiteWording, set()),
        ("evaluate geneval2", EvaluateRequest, set()),
        ("evaluate geneval2", Geneval2SuiteFile, set()),
        ("generate", GenerateRequest, set()),
        ("generate", Device, set()),
        ("generate", SuiteFile, set()),
        ("generate", SuiteWording, set()),
        ("generate", Geneval2SuiteFile, set()),
        ("prompts", PromptsRequest, set()),
        ("prompts", SuiteWording, set()),
        ("selftest", SelftestRequest, set()),
        ("selftest", Device, set()),
        ("summary", SummaryRequest, set()),
        ("summary", SuiteFile, set()),
        ("summary", SuiteWording, set()),
        ("agreement", AgreementRequest, set()),
        ("agreement", AgreementMode, set()),
    ],
)
def test_no_field_of_a_verbs_request_is_missing_from_its_command_line(verb, cls, absent):
    parser = verbs()[verb]
    declared = [f for a in parser._actions if (f := field_of(a)) is not None and f[0] is cls]
    assert len(declared) == len(set(declared))  # each field once
    assert {name for _, name in declared} == _cli_fields(cls) - absent


@pytest.mark.parametrize(
    ("argv", "cls", "required"),
    [
        (["diversity"], DiversityRequest, {}),
        (["sql", "SELECT 1"], SqlRequest, {"query": "SELECT 1"}),
        (["failures"], FailuresRequest, {}),
        (["gc", "--config", "c.yaml"], GcRequest, {"config": "c.yaml"}),
        (["report", "--config", "c.yaml"], ReportRequest, {"config": "c.yaml"}),
        (
            ["data", "fetch", "geneval", "--out", "o"],
            DataRequest,
            {"action": "fetch", "dataset": "geneval", "out": "o"},
        ),
        (["prompts", "geneval"], PromptsRequest, {"suite": "geneval"}),
        (["selftest", "--out", "o"], SelftestRequest, {"out": "o"}),
        (["summary", "r.jsonl"], SummaryRequest, {"results": "r.jsonl"}),
        (["evaluate", "geneval2", "imgs"], EvaluateRequest, {"images": "imgs"}),
        (["generate", "geneval", "--out", "o"], GenerateRequest, {"suite": "geneval", "out": "o"}),
    ],
)
def test_a_verbs_defaults_are_its_requests_field_defaults(argv, cls, required):
    from t2ibench.options import from_args

    args = build_parser().parse_args(argv)
    assert from_args(cls, args, args.request_options) == cls(**required)


def test_evaluate_takes_each_benchmarks_own_images_per_prompt_default():
    from t2ibench.benchmarks import benchmark
    from t2ibench.options import from_args

    for name in ("geneval", "geneval2"):
        args = build_parser().parse_args(["evaluate", name, "imgs"])
        made = from_args(EvaluateRequest, args, args.request_options)
        assert made.images_per_prompt == benchmark(name).images_per_prompt


def test_diversitys_defaults_and_choices_are_the_refresh_sections():
    """What a refresh measures with is `diversity`'s default: DiversityConfig's kernel, seed, shards, orthogonal;
    ScendiConfig's epsilon and inverse; the digits figure's; the kernel names metrics.checks.KERNELS."""
    from t2ibench.config import DiversityConfig, ScendiConfig
    from t2ibench.metrics.checks import KERNELS

    made = DiversityRequest()
    for name in ("kernel", "seed", "shards", "orthogonal"):
        assert getattr(made, name) == getattr(DiversityConfig(), name)
    assert (made.epsilon, made.inverse) == (ScendiConfig().epsilon, ScendiConfig().inverse)
    assert (made.n_per_condition, made.sigma_scale) == (DigitsRequest.n_per_condition, DigitsRequest.sigma_scale)
    kernel = next(a for a in verbs()["diversity"]._actions if "--kernel" in a.option_strings)
    assert tuple(kernel.choices or ()) == KERNELS


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sql", "q", "--limit", "-1"], "argument --limit: must be in [0, 1000000]; got -1"),
        (["sql", "q", "--timeout", "0"], "argument --timeout: must be in (0, 1000000000]; got 0"),
        (["failures", "--wait", "-1"], "argument --wait: must be in [0, 1000000000]; got -1"),
        (["diversity", "--kernel", "rbf"], "argument --kernel: invalid choice: 'rbf'"),
        (["diversity", "--method", "slow"], "argument --method: invalid choice: 'slow'"),
        (["diversity", "--top", "0"], "argument --top: must be in [1, 10000]; got 0"),
        (["diversity", "--shards", "0"], "argument --shards: must be in [1, 4096]; got 0"),
        (["diversity", "--sigma-scale", "0"], "argument --sigma-scale: must be in (0, inf); got 0"),
        (["diversity", "--text-sigma", "x"], "argument --text-sigma: expected a number, got 'x' (or 'median'"),
        (["data", "fetch", "nope", "--out", "o"], "argument dataset: invalid choice: 'nope'"),
        (["evaluate", "geneval", "i", "--images-per-prompt", "0"], "argument --images-per-prompt: must be in [1, "),
        (["generate", "geneval", "--out", "o", "--limit", "0"], "argument --limit: must be ≥ 1; got 0"),
        (["selftest", "--out", "o", "--calibrate", "1"], "argument --calibrate: must be in [2, 100]; got 1"),
        (["selftest", "--out", "o", "--seed", "-1"], "argument --seed: must be in [0, 2147483647]; got -1"),
        (["selftest", "--out", "o", "--photo-truth", "f", "--no-photos"], "argument --no-photos: not allowed with"),
        (["summary", "r", "--images-per-prompt", "0"], "argument --images-per-prompt: must be in [1, 10000]; got 0"),
        (["prompts", "other"], "argument suite: invalid choice: 'other'"),
    ],
)
def test_a_value_out_of_its_fields_range_or_choices_is_refused_naming_the_option(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"t2ibench {argv[0]}")
    assert message in last


def test_a_params_file_value_is_checked_by_the_same_field(tmp_path, capsys):
    """A params.yaml key is the option of the same field: its range refuses the value, naming the file and key."""
    params = tmp_path / "params.yaml"
    params.write_text("div:\n  top: 0\n")
    assert main(["diversity", "--params", f"{params}:div"]) == 2
    assert capsys.readouterr().err.strip() == (f"t2ibench: error: {params}: div.top: must be in [1, 10000]; got 0")


def _spelling(parser: argparse.ArgumentParser) -> list[tuple[object, ...]]:
    """A parser's actions (option strings, dest, default, choices, nargs, type, required) and its set defaults (the
    verb's function and request type), sub-parsers entered."""

    def plain(value: object) -> object:  # functions and closures (made anew per build) by name, not address
        if hasattr(value, "flag") and hasattr(value, "field"):  # a FieldOption: which field, under which option
            return (value.field, value.flag, value.dest, value.positional)
        if isinstance(value, argparse.Action):
            return (value.option_strings, value.dest, repr(value.default), value.nargs, plain(value.type))
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if callable(value) and hasattr(value, "__qualname__"):
            return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
        return repr(value)

    out: list[tuple[object, ...]] = [("defaults", [(k, plain(v)) for k, v in sorted(parser._defaults.items())])]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += [(name, *row) for row in _spelling(sub)]
        else:
            out.append((tuple(action.option_strings), action.dest, repr(action.default), repr(action.choices),
                        action.nargs, plain(action.type), action.required))  # fmt: skip
    return out


@pytest.mark.parametrize("verb", sorted(__import__("t2ibench.cli", fromlist=["VERBS"]).VERBS))
def test_a_command_naming_one_verb_builds_that_verbs_parser_alone_and_the_same(verb):
    """``t2ibench <verb>`` builds only that verb (so it imports only what it needs): the same options, defaults and
    choices as in the whole parser, and each ``VERBS`` entry adds exactly the verb it is listed under."""
    from t2ibench.cli import verb_of

    whole = {name: sub for name, sub in verbs().items() if name.split(" ")[0] == verb and name}
    alone = build_parser(verb_of([verb, "--help"]))
    (subparsers,) = [a for a in alone._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(subparsers.choices) == [verb]
    assert _spelling(subparsers.choices[verb]) == _spelling(whole[verb])
    assert verb_of(["--version"]) is None
    assert verb_of(["-h", verb]) is None  # help before the verb: the whole command's


def test_help_before_a_verb_lists_every_verb(capsys):
    with pytest.raises(SystemExit):
        main(["-h", "sql"])
    listed = capsys.readouterr().out
    assert all(verb in listed for verb in ("diversity", "selftest", "sql", "paper"))


def test_sql_on_a_store_starts_without_the_config_or_the_model_registries(tmp_path):
    """The start-up of `t2ibench sql --store`: the parser of that verb only, no config, no benchmark evaluation,
    no model registry."""
    import subprocess
    import sys

    from t2ibench.store import Store

    store = Store(tmp_path / "s.duckdb", timeout=5)
    with store.write() as con:  # a store of the current schema, one row in it
        store.upsert(con, "prompts", [{"suite": "g", "prompt_index": 0, "task": "colors", "prompt": "p"}])
    code = (
        "import sys; from t2ibench.cli import main; "
        f"status = main(['sql', '--store', {str(tmp_path / 's.duckdb')!r}, 'SELECT 42 AS answer']); "
        "heavy = [m for m in ('t2ibench.config', 't2ibench.models.registry', 't2ibench.benchmarks.geneval.evaluate', "
        "'t2ibench.commands.diversity_request') if m in sys.modules]; print(status, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "0 []", out
    assert "42" in out
