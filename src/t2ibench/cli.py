"""The ``t2ibench`` command: the one parser, built from the verbs of ``t2ibench.commands`` (one module per group
of verbs), and ``main``, which runs the chosen verb with its errors and signals reported in one line. Argument
parsing lives here and in ``t2ibench.commands`` only; library code never reads command-line state."""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from t2ibench import __version__
from t2ibench.benchmarks import names, role_module
from t2ibench.commands.common import EXIT_INTERRUPTED, EXIT_USAGE
from t2ibench.commands.data import add_data
from t2ibench.commands.diversity import add_diversity
from t2ibench.commands.evaluate import add_evaluate, add_generate
from t2ibench.commands.flows import add_paper, add_run, add_schedule
from t2ibench.commands.store import add_diff, add_gc, add_report, add_sql
from t2ibench.errors import NOTES, InputError, StateMismatchError


def flow_program(args: argparse.Namespace) -> str | None:
    """The workspace program (``flows.<module>``) a parsed command runs, or None when it runs in-process."""
    kind = getattr(args, "request", None)
    if kind is None or (getattr(args, "verb", "") == "agreement" and not args.flow):
        return None
    return str(kind.program)


# The command line's own verbs, each added by one function (which adds that verb only: tests/unit/test_derived_verbs.py
# checks it against the parser it builds). A command naming one of them builds that verb's parser alone, so it
# imports only what that verb needs (`t2ibench sql` starts without the config, numpy or the model registries); the
# benchmarks' own verbs, help and unknown verbs build the whole parser.
VERBS: dict[str, Callable[[Any], Any]] = {
    "diversity": add_diversity,
    "evaluate": add_evaluate,
    "generate": add_generate,
    "run": add_run,
    "gc": add_gc,
    "report": add_report,
    "sql": add_sql,
    "diff": add_diff,
    "data": add_data,
    "schedule": add_schedule,
    "paper": add_paper,
}


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The argument parser for every verb, or for ``verb`` alone when it is one of ``VERBS`` (defaults come from
    the config classes: one place for each)."""
    parser = argparse.ArgumentParser(prog="t2ibench", description="Benchmark system for text-to-image models.")
    parser.add_argument("--version", action="version", version=f"t2ibench {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    nested = []
    if verb in VERBS:
        nested.append(VERBS[verb](verbs))
    else:
        for name, add in VERBS.items():
            nested.append(add(verbs))
            if name == "generate":  # each benchmark's own verbs (its ``commands`` module), e.g. GenEval's selftest
                for benchmark_name in names():
                    own = role_module(benchmark_name, "commands")
                    if own is not None:
                        own.add_verbs(verbs)

    from t2ibench.params import add_params_option

    kinds = [k for k in nested if isinstance(k, argparse._SubParsersAction)]  # paper's kinds
    for parsed in [*verbs.choices.values(), *(c for k in kinds for c in k.choices.values())]:
        add_params_option(parsed)  # every verb reads a params file the same way
    return parser


def verb_of(argv: Sequence[str]) -> str | None:
    """The verb a command line starts with (None when it starts with an option: ``--version``, or ``-h`` before a
    verb, which asks for the whole command's help)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``t2ibench`` console script; returns the process exit status."""
    try:
        from t2ibench.signals import exit_code, signal_name, signal_number, stop_on_signals
    except KeyboardInterrupt:  # Ctrl-C in the first tenth of a second, before any handler can be installed
        print("t2ibench: interrupted (SIGINT)", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        with stop_on_signals("t2ibench"):
            from t2ibench.params import expand_params

            words = sys.argv[1:] if argv is None else list(argv)
            parser = build_parser(verb_of(words))  # inside: building the parser imports modules
            args = parser.parse_args(expand_params(parser, words))  # --params reads files
    except InputError as exc:
        print(f"t2ibench: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        signum = signal_number(exc) or EXIT_INTERRUPTED - 128
        print(f"t2ibench: interrupted ({signal_name(signum)})", file=sys.stderr)
        return exit_code(signum)
    notes = logging.StreamHandler(sys.stderr)
    notes.setFormatter(logging.Formatter(f"t2ibench {args.verb}: note: %(message)s"))
    NOTES.addHandler(notes)
    NOTES.setLevel(logging.INFO)
    shown = warnings.showwarning

    def one_line(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        print(f"t2ibench {args.verb}: warning: {' '.join(str(message).split())}", file=sys.stderr)

    warnings.showwarning = one_line  # no source paths and code lines in the user's console

    try:
        with stop_on_signals(f"t2ibench {args.verb}"):  # SIGTERM and SIGHUP stop a command as Ctrl-C does
            status: int = args.func(args)
    except (InputError, StateMismatchError) as exc:
        print(f"t2ibench {args.verb}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return int(getattr(exc, "exit_code", EXIT_USAGE))
    except KeyboardInterrupt as exc:
        signum = signal_number(exc) or EXIT_INTERRUPTED - 128
        print(f"t2ibench {args.verb}: interrupted ({signal_name(signum)})", file=sys.stderr)
        return exit_code(signum)
    finally:
        NOTES.removeHandler(notes)
        warnings.showwarning = shown
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
