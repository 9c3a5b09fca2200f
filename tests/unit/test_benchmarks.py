"""The benchmark registry: every entry loads, says where its prompts come from and which model registries judge
it, and `t2ibench evaluate` offers exactly the registered benchmarks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from t2ibench import benchmarks, datasets
from t2ibench.errors import InputError
from t2ibench.models import registry

REPO = Path(__file__).resolve().parents[2]
KINDS = {r.kind for r in (registry.GENERATORS, registry.DETECTORS, registry.COLOUR_CLASSIFIERS, registry.VQA_JUDGES)}


@pytest.mark.parametrize("name", benchmarks.names())
def test_every_entry_loads_and_names_its_data_judges_and_docs(name):
    bench = benchmarks.benchmark(name)
    assert bench.name == name
    assert bench.title
    assert bench.release is None or bench.release in datasets.RELEASES
    assert bench.judges
    assert set(bench.judges) <= KINDS, bench.judges
    assert (REPO / bench.docs).is_file()


def test_an_unknown_benchmark_gets_a_did_you_mean():
    with pytest.raises(InputError, match=r"unknown benchmark 'genevel2'; did you mean 'geneval2'\?"):
        benchmarks.benchmark("genevel2")


def test_the_registry_loads_no_plugin_until_asked():
    code = "import sys, t2ibench.benchmarks; print(sorted(m for m in sys.modules if m.startswith('t2ibench.')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "t2ibench.benchmarks.geneval.benchmark" not in loaded
    assert "t2ibench.benchmarks.geneval.evaluate" not in loaded


def test_the_evaluate_verb_offers_exactly_the_registered_benchmarks(capsys):
    from t2ibench.cli import build_parser

    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["evaluate", "dpg-bench", "x"])
    err = capsys.readouterr().err
    for name in benchmarks.names():
        assert f"'{name}'" in err
    # every registered benchmark but GenEval (whose options the CLI shares with selftest, summary and generate)
    # declares its own command: suite, evaluator and inputs from its options
    for name in benchmarks.names():
        bench = benchmarks.benchmark(name)
        assert bench.has_command() == (name != "geneval"), name
        if bench.has_command():
            args = parser.parse_args(["evaluate", name, "x"])
            assert args.func.__name__ == "_cmd_evaluate"
            assert bench.evaluator_from(args) == bench.evaluator_from(parser.parse_args(["evaluate", name, "y"]))
