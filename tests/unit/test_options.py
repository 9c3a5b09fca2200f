"""Options derived from typed fields (t2ibench.options): a class's fields are its command's options — type, default,
range, choices, spelling and help from the field — and the same ranges bind a JSON request; a verb built this way
has no option its class lacks and lacks no field."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Annotated, Literal

import pytest

from t2ibench.benchmarks.geneval.options_agreement import AgreementRequest
from t2ibench.cli import build_parser
from t2ibench.errors import FieldError, InputError
from t2ibench.fields import Option, Range, check_ranges, field_docs
from t2ibench.options import add_fields, from_args
from t2ibench.requests import DigitsRequest, RefreshRequest, ScheduleRequest


@dataclasses.dataclass(frozen=True)
class Planted:
    """A class with one field of every supported kind."""

    out: str
    """Where it goes."""
    count: Annotated[int, Range(1, 10)] = 3
    """How many."""
    scale: Annotated[float, Range(0.0, 1.0, open_low=True, open_high=True)] = 0.5
    mode: Literal["fast", "exact"] = "fast"
    """Which way."""
    quick: bool = False
    names: tuple[str, ...] = ()
    sources: Annotated[tuple[str, ...], Option(flag="--source", metavar="DIR", repeat=True)] = ()
    limit: int | None = None
    stamp: Annotated[float | None, Option(cli=False)] = None


def parser_of(cls: type) -> tuple[argparse.ArgumentParser, list]:
    parser = argparse.ArgumentParser(exit_on_error=False)
    return parser, add_fields(parser, cls)


def test_every_field_kind_becomes_its_option():
    parser, options = parser_of(Planted)
    assert [o.flag for o in options] == ["--out", "--count", "--scale", "--mode", "--quick", "--names", "--source",
                                         "--limit"]  # fmt: skip
    args = parser.parse_args(["--out", "o"])
    assert from_args(Planted, args, options) == Planted(out="o")  # every default is the field's
    args = parser.parse_args(["--out", "o", "--count", "10", "--scale", "0.25", "--mode", "exact", "--quick",
                              "--names", "a", "b", "--source", "x", "--source", "y", "--limit", "-4"])  # fmt: skip
    made = from_args(Planted, args, options, stamp=1.5)
    assert made == Planted("o", 10, 0.25, "exact", True, ("a", "b"), ("x", "y"), -4, 1.5)
    helps = {o.flag: o.kwargs["help"] for o in options}
    assert helps["--count"] == "How many (default 3)"  # the field's docstring and default
    assert helps["--out"] == "Where it goes."
    assert field_docs(Planted)["mode"] == "Which way."


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--count", "11"], "must be in [1, 10]; got 11"),
        (["--count", "x"], "expected an integer, got 'x'"),
        (["--scale", "1"], "must be in (0, 1); got 1"),
        (["--scale", "nan"], "must be in (0, 1); got nan"),
        (["--mode", "slow"], "invalid choice: 'slow'"),
    ],
)
def test_the_range_and_choices_refuse_at_the_command_line(argv, message):
    parser, _ = parser_of(Planted)
    with pytest.raises(argparse.ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)").replace(
            "[", r"\[").replace("]", r"\]")):  # fmt: skip
        parser.parse_args(["--out", "o", *argv])


def test_the_same_ranges_bind_a_value_from_json_or_yaml():
    with pytest.raises(FieldError, match=r"must be in \[1, 10\]; got 0"):
        check_ranges(Planted(out="o", count=0))
    check_ranges(Planted(out="o", limit=None))  # None is an absent value, not out of range
    with pytest.raises(InputError, match=r"^RefreshRequest.dask: must be in \[1, 1024\]; got 0$"):
        RefreshRequest.from_json('{"config": "c", "dask": 0}')
    with pytest.raises(InputError, match=r"^DigitsRequest.n_per_condition: must be in \[10, 100000\]; got 9$"):
        DigitsRequest(out="o", n_per_condition=9)


def test_a_field_without_a_command_line_form_is_refused_when_the_parser_is_built():
    @dataclasses.dataclass(frozen=True)
    class Bad:
        table: dict[str, int] = dataclasses.field(default_factory=dict)

    with pytest.raises(TypeError, match="no command-line form"):
        parser_of(Bad)

    @dataclasses.dataclass(frozen=True)
    class OnFlag:
        on: bool = True

    with pytest.raises(TypeError, match="a flag's default must be False"):
        parser_of(OnFlag)


@pytest.mark.parametrize(
    ("argv", "cls", "extra"),
    [
        (["run", "--config", "c"], RefreshRequest, {"--data", "--params"}),
        (["schedule", "--list"], ScheduleRequest, {"--params"}),
        (["paper", "digits", "--out", "o"], DigitsRequest, {"--params"}),
        (
            ["agreement", "--annotations", "a.csv"],
            AgreementRequest,
            {"--params", "--flow", "--seed", "--per-task", "--classes"},
        ),
    ],
)
def test_a_derived_verb_has_exactly_its_requests_fields_as_options(argv, cls, extra):
    """No option the request lacks (beyond the verb's shared ones) and no field left off by accident."""
    parser = build_parser()
    args = parser.parse_args(argv)
    sub = parser
    for token in argv:
        if token.startswith("-"):
            break
        sub = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction)).choices[token]
    flags = {o for a in sub._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
    fields = {o.flag for o in args.request_options}
    assert flags == fields | extra
    hidden = {f.name for f in dataclasses.fields(cls)} - {o.field for o in args.request_options}
    assert hidden <= {"begun"}  # set by the command itself (Option(cli=False)), never by a user


def test_evaluate_geneval2s_judge_options_are_its_evaluator_sections_fields():
    """`evaluate geneval2`'s judge options are VQAJudgeConfig's fields (the config's evaluators.geneval2.judge) and
    the answer rule Geneval2Config's: every field reaches the evaluator, attn_implementation included (it had no
    option when the options were typed by hand)."""
    from t2ibench.benchmarks import benchmark
    from t2ibench.specs import VQAJudgeConfig

    args = build_parser().parse_args(
        [
            "evaluate",
            "geneval2",
            "imgs",
            "--judge-model",
            "m",
            "--judge-revision",
            "r",
            "--dtype",
            "float32",
            "--batch-size",
            "3",
            "--attn-implementation",
            "eager",
            "--answer-rule",
            "unique",
        ]
    )
    evaluator = benchmark("geneval2").evaluator_from(args)
    assert evaluator.judge == VQAJudgeConfig("qwen3-vl", "m", "r", "float32", 3, "eager")
    assert evaluator.answer_rule == "unique"
    judge, rule = args.geneval2_options
    assert {o.field for o in judge} == {f.name for f in dataclasses.fields(VQAJudgeConfig)}
    assert [o.field for o in rule] == ["answer_rule"]
    defaults = benchmark("geneval2").evaluator_from(build_parser().parse_args(["evaluate", "geneval2", "imgs"]))
    assert defaults.judge == VQAJudgeConfig()  # the fields' defaults
    assert defaults.answer_rule == "reference"
    bad = build_parser().parse_args(["evaluate", "geneval2", "imgs", "--dtype", "float8"])
    with pytest.raises(InputError, match=r"^--dtype: unknown dtype 'float8'"):
        benchmark("geneval2").evaluator_from(bad)  # the section's own check, under the option that set it


@pytest.mark.parametrize(
    ("hint", "value", "message"),
    [
        (int | None, True, "expected an integer, got True"),
        (float, float("nan"), "expected a number, got nan"),
        (str, "a\x00b", "a string with a NUL character"),
        (tuple[str, ...], ["a", 2], r"w\[1\]: expected a string, got 2"),
        (Literal["x", "y"], "z", "unknown value 'z'"),
    ],
)
def test_one_decoder_words_a_config_value_and_a_request_value_alike(hint, value, message):
    """The config's YAML sections and the flows' JSON requests go through one decoder (t2ibench.fields.decode)."""
    from t2ibench.config import parse_section
    from t2ibench.fields import decode

    with pytest.raises(InputError, match=message):
        decode(hint, value, "w")
    if hint is str:  # the same refusal from a config file's section and from a request's JSON
        from t2ibench.specs import VQAJudgeConfig

        with pytest.raises(InputError, match=r"^c.yaml:judge.model: a string with a NUL character"):
            parse_section(VQAJudgeConfig, {"model": "a\x00b"}, where="c.yaml:judge")
        with pytest.raises(InputError, match=r"^RefreshRequest.config: a string with a NUL character"):
            RefreshRequest(config="a\x00b")


@pytest.mark.parametrize("verb", [["evaluate", "geneval", "imgs"], ["selftest", "--out", "o"]])
def test_genevals_evaluator_options_are_its_sections_fields(verb):
    """`evaluate geneval` and `selftest` take DetectorConfig's, ColourConfig's and GenEvalParams' fields (the
    config's evaluators.geneval): every field reaches the evaluator; --resize is the detector's resize field."""
    from t2ibench.benchmarks.geneval.benchmark_cli import geneval_config as _geneval_config
    from t2ibench.benchmarks.geneval.metrics import GenEvalParams
    from t2ibench.benchmarks.geneval.options import GenEvalConfig
    from t2ibench.config import ColourConfig, DetectorConfig

    parser = build_parser()
    args = parser.parse_args(verb)
    assert _geneval_config(args) == GenEvalConfig()  # every default is the sections' own
    detector, colour, params = args.geneval_options
    assert {o.field for o in detector} | {"resize"} == {f.name for f in dataclasses.fields(DetectorConfig)}
    assert {o.field for o in colour} == {f.name for f in dataclasses.fields(ColourConfig)}
    assert {o.field for o in params} == {f.name for f in dataclasses.fields(GenEvalParams)}
    given = parser.parse_args(
        [
            *verb,
            "--detector",
            "opencv-ssd",
            "--colour",
            "lite",
            "--background",
            "original",
            "--threshold",
            "0.5",
            "--max-objects",
            "3",
            "--max-overlap",
            "0.5",
        ]
    )
    made = _geneval_config(given)
    assert (made.detector.backend, made.colour.backend, made.colour.background) == ("opencv-ssd", "lite", "original")
    assert (made.threshold, made.max_objects, made.max_overlap) == (0.5, 3, 0.5)
    assert made.detector.resize is None  # the opencv-ssd backend's own default where the hf one was left
    with pytest.raises(SystemExit):
        parser.parse_args([*verb, "--threshold", "1"])  # GenEvalParams' range, [0, 1), at the command line
    with pytest.raises(InputError, match=r"^--background: must be a colour"):
        _geneval_config(parser.parse_args([*verb, "--background", "nocolour"]))


def test_generates_generator_options_are_the_generator_specs_fields(tmp_path, capsys):
    """`generate`'s generator options are GeneratorConfig's fields (a refresh's models[].generator): every field but
    the backend (which --import-from chooses) has its option — prompt_rewriting had none when they were typed by
    hand —, the defaults are the spec's, and an option the folder importer would not read is refused naming it
    (it was silently ignored)."""
    from t2ibench.cli import main
    from t2ibench.specs import GeneratorConfig

    parser = build_parser()
    args = parser.parse_args(["generate", "geneval", "--out", "o"])
    assert {o.field for o in args.generator_options} == {f.name for f in dataclasses.fields(GeneratorConfig)} - {
        "backend"
    }
    assert from_args(GeneratorConfig, args, args.generator_options) == GeneratorConfig()
    given = parser.parse_args(["generate", "geneval", "--out", "o", "--steps", "7", "--seed-images", "3", "--grid"])
    made = from_args(GeneratorConfig, given, given.generator_options)
    assert (made.steps, made.seed, made.grid) == (7, 3, True)
    (tmp_path / "src").mkdir()
    status = main(["generate", "geneval", "--out", str(tmp_path / "o"), "--import-from", str(tmp_path / "src"),
                   "--steps", "7"])  # fmt: skip
    assert status == 2
    err = capsys.readouterr().err
    assert "--steps" in err
    assert "backend: folder" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()  # refused before anything is written


@pytest.mark.parametrize("verb", [["prompts", "geneval"], ["evaluate", "geneval", "imgs"], ["summary", "r.jsonl"]])
def test_genevals_suite_options_are_its_selections_fields(verb, capsys):
    """GenEval's suite options (`prompts`, `evaluate geneval`, `summary`, `generate`, `agreement`) are GenEvalSuite's
    fields (a refresh's benchmarks.geneval) but its refresh-only fields, checked by its own rules with each
    error under its option; --classes is one comma-separated value (Option(sep=","))."""
    from t2ibench.benchmarks.geneval.benchmark_cli import suite_records
    from t2ibench.benchmarks.geneval.options import GenEvalSuite
    from t2ibench.benchmarks.geneval.suite import generate_suite
    from t2ibench.cli import main

    parser = build_parser()
    args = parser.parse_args(verb)
    fields = {f.name for f in dataclasses.fields(GenEvalSuite)}
    # not a suite's: the refresh's subset (limit_per_task, prompts); these verbs all have --wording and its file
    assert {o.field for o in args.geneval_suite} == fields - {"limit_per_task", "prompts"}
    assert args.wording == "original"
    assert from_args(GenEvalSuite, args, args.geneval_suite) == GenEvalSuite()  # the defaults are the section's
    given = parser.parse_args([*verb, "--classes", " person, motorcycle ,horse", "--per-task", "2", "--seed", "7"])
    assert from_args(GenEvalSuite, given, given.geneval_suite).classes == ("person", "motorcycle", "horse")
    assert suite_records(given) == generate_suite(seed=7, per_task=2, classes=["person", "motorcycle", "horse"])
    with pytest.raises(InputError, match=r"--wording rewritten \(--rewritten\): rewritten prompts exist for .*offic"):
        suite_records(parser.parse_args([*verb, "--seed", "7", "--wording", "rewritten"]))
    with pytest.raises(InputError, match=r"--rewritten names the rewritten prompts' file: give --wording"):
        suite_records(parser.parse_args([*verb, "--rewritten", "long.jsonl"]))
    agreement = parser.parse_args(["agreement", "--annotations", "a.csv"])
    assert {o.field for o in agreement.geneval_suite} == fields - {"limit_per_task", "prompts", "rewritten"}
    assert not hasattr(agreement, "wording")  # the annotations are of the original prompts' images
    with pytest.raises(SystemExit):
        parser.parse_args([*verb, "--classes", "person,,dog"])
    assert "none empty" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # the field's Range, at parse time (and in a params file: the same)
        main(["prompts", "geneval", "--per-task", "0"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().endswith("error: argument --per-task: must be in [1, 100000]; got 0")


def _odd(text: str) -> int:
    """A value of its own form: an odd integer."""
    value = int(text)
    if value % 2 == 0:
        raise argparse.ArgumentTypeError(f"must be odd; got {text}")
    return value


@dataclasses.dataclass(frozen=True)
class Positioned:
    """A class with a positional argument, a custom parser, a value-less flag and an exclusive pair."""

    source: Annotated[str, Option(positional=True)]
    """What is read."""
    target: Annotated[str | None, Option(positional=True, metavar="TARGET")] = None
    width: Annotated[int, Option(parse=_odd)] = 3
    """An odd width."""
    prompts: Annotated[str | bool | None, Option(bare=True, metavar="FILE")] = None
    left: Annotated[bool, Option(exclusive="side")] = False
    right: Annotated[bool, Option(exclusive="side")] = False
    size: Annotated[int, Range(1, 100)] = 4
    """The size."""


def test_positional_parsed_bare_and_exclusive_fields():
    """Option(positional) is an argument (optional with a default), Option(parse) the value's own parser,
    Option(bare) a flag that may go without its value (True), Option(exclusive) a mutually exclusive group."""
    parser, options = parser_of(Positioned)
    assert [o.flag for o in options] == ["source", "TARGET", "--width", "--prompts", "--left", "--right", "--size"]
    assert from_args(Positioned, parser.parse_args(["s"]), options) == Positioned("s")
    made = from_args(Positioned, parser.parse_args(["s", "t", "--width", "5", "--prompts", "--left"]), options)
    assert made == Positioned("s", "t", 5, True, True, False)
    assert from_args(Positioned, parser.parse_args(["s", "--prompts", "p.npz"]), options).prompts == "p.npz"
    with pytest.raises(argparse.ArgumentError, match="must be odd; got 4"):
        parser.parse_args(["s", "--width", "4"])
    with pytest.raises(argparse.ArgumentError, match="not allowed with argument --left"):
        parser.parse_args(["s", "--left", "--right"])
    helps = {o.field: o.kwargs["help"] for o in options}
    assert helps["width"] == "An odd width (default 3)"


def test_only_defaults_and_notes_shape_one_commands_options():
    """``only`` declares some fields (a command may interleave its classes' options), ``defaults`` gives a field
    another default for one command, ``notes`` adds what the command says of it to the field's help."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    first = add_fields(parser, Positioned, only=("source", "size"), defaults={"size": 9}, notes={"size": "(per side)"})
    rest = add_fields(parser, Positioned, skip=("source", "size"))
    assert [o.field for o in first] == ["source", "size"]
    assert first[1].kwargs["help"] == "The size (per side) (default 9)"
    made = from_args(Positioned, parser.parse_args(["s"]), [*first, *rest])
    assert made.size == 9
    with pytest.raises(argparse.ArgumentError, match=r"must be in \[1, 100\]; got 0"):
        parser.parse_args(["s", "--size", "0"])
