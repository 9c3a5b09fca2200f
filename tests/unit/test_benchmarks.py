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
KINDS = {r.kind for r in vars(registry).values() if isinstance(r, registry.Registry)}  # every model registry


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
    # every registered benchmark, GenEval too, declares its own command: suite, evaluator and inputs from its options,
    # defaults equal to its config section's
    from t2ibench.config import Evaluators

    for name in benchmarks.names():
        bench = benchmarks.benchmark(name)
        assert bench.has_command(), name
        args = parser.parse_args(["evaluate", name, "x"])
        assert args.func.__name__ == "_cmd_evaluate"
        assert bench.evaluator_from(args) == bench.evaluator_from(parser.parse_args(["evaluate", name, "y"]))
        if benchmarks.benchmark_options(name) is not None:  # a benchmark a refresh runs: the config's section
            assert bench.evaluator_from(args) == getattr(Evaluators(), name)
        else:  # `evaluate` only so far: its defaults are its evaluator class's (T2I-CompBench++)
            assert bench.evaluator_from(args) == type(bench.evaluator_from(args))()
        assert hasattr(args, "store") == bench.can_store()  # --store only where the entry can write a folder's rows


@pytest.mark.parametrize("name", benchmarks.names())
def test_a_name_is_an_identifier_its_views_and_config_keys_can_carry(name):
    """The store makes views named <name>_scores from it and the config a field named <name>: a lowercase
    identifier, never something SQL or YAML would read otherwise."""
    import re

    assert re.fullmatch(r"[a-z][a-z0-9_]{0,30}", name), name


def test_config_sections_and_stored_columns_follow_the_registry():
    """`benchmarks:` and `evaluators:` have one field per benchmark with options (its SELECTION / EVALUATOR types),
    the store one set of views per benchmark with StoredColumns — derived, never listed beside the registry."""
    import dataclasses

    from t2ibench.config import BENCHMARK_OPTIONS, Benchmarks, Evaluators
    from t2ibench.store.schema import VIEWS

    with_options = [n for n in benchmarks.names() if benchmarks.benchmark_options(n) is not None]
    assert with_options, "no benchmark with options: nothing checked"
    assert with_options == list(BENCHMARK_OPTIONS)
    selections = {f.name: f for f in dataclasses.fields(Benchmarks)}
    evaluators = {f.name: f for f in dataclasses.fields(Evaluators)}
    for name in with_options:
        options = benchmarks.benchmark_options(name)
        assert isinstance(getattr(Evaluators(), name), options.EVALUATOR)
        assert set(getattr(Evaluators(), name).models())  # its model specs, for hub resolution and the smoke check
        if name == benchmarks.SPINE:  # always run, with its selection's defaults unless given
            assert Benchmarks().selection(name) == options.SELECTION()
        else:  # not run unless given
            assert selections[name].default is None
            assert Benchmarks().selection(name) is None
    assert benchmarks.SPINE in with_options
    assert set(selections) == set(with_options)
    assert set(with_options) <= set(evaluators)
    stored = benchmarks.stored_columns()
    for name, cols in stored.items():
        assert {f"{name}_scores", f"{name}_current"} <= set(VIEWS)
        assert (f"{name}_skill_rates" in VIEWS) == (cols.skill_rates is not None)
        assert cols.headline in {suffix for _, suffix in cols.keys}
        assert benchmarks.report_section(name).html_section([]) == ""  # nothing stored: no section
    with pytest.raises(InputError, match=r"unknown benchmark with options 'genevel'.*did you mean 'geneval'"):
        Benchmarks().selection("genevel")


def test_exactly_one_entry_is_the_refresh_spine_and_owns_its_steps():
    """The spine (GenEval) is found through the registry, not by name, and its steps come from its entry."""
    from t2ibench.pipeline.plan import STEPS, spine, step_specs

    spines = [n for n in benchmarks.names() if benchmarks.benchmark(n).spine]
    assert spines == ["geneval"]
    assert spine().name == "geneval"
    own = spine().refresh_steps()
    assert set(own) == {"geneval", "verdicts", "scores", "selftest"}  # its evaluator's self-test too
    assert not set(own) & set(STEPS)  # the core's table no longer lists them
    assert {n for n, s in step_specs().items() if s.protocol} == {
        "geneval", "scores", "embed", "reference-bandwidth", "median-bandwidth", "fkea-shard", "diversity", "scendi"
    }  # fmt: skip  # the steps whose settings make the evaluation version, as before GenEval's moved
