"""The layering rules of docs/architecture.md, checked on the source so they cannot silently erode."""

import ast
import functools
import re
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "t2ibench"


def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a file's syntax tree (``ast.walk`` order), parsed once per text: the rules below walk the same
    ~300 files several times."""
    return _nodes(path.read_text(), str(path))


@functools.cache
def _nodes(text: str, filename: str) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(ast.parse(text, filename=filename)))


def imported_roots(path: Path) -> set[str]:
    """Top-level modules imported anywhere in a file (absolute imports; relative ones map to t2ibench)."""
    roots = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            roots.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            roots.add("t2ibench" if node.level else (node.module or ""))
    return roots


def py_files(folder: Path):
    return sorted(folder.rglob("*.py"))


def arithmetic_files() -> list[Path]:
    """The pure arithmetic: the metrics package and each benchmark's own ``metrics.py`` (e.g. Soft-TIFA) with its
    ``metrics_<part>.py`` modules (e.g. GenEval's task names, numpy-free for the store's schema)."""
    return py_files(SRC / "metrics") + sorted((SRC / "benchmarks").glob("*/metrics*.py"))


def test_metrics_use_only_numpy_scipy_and_the_standard_library():
    # plus two statistics libraries built on them, for the agreement statistics ("use a library" for κ):
    # scikit-learn (Cohen's κ) and statsmodels (Fleiss' κ), both imported lazily inside the functions
    allowed_third_party = {"numpy", "scipy", "sklearn", "statsmodels"}
    assert (SRC / "benchmarks" / "geneval2" / "metrics.py") in arithmetic_files()
    for path in arithmetic_files():
        for name in imported_roots(path):
            root = name.split(".")[0]
            if root in sys.stdlib_module_names or root in allowed_third_party or root == "__future__":
                continue
            # t2ibench.fields: a field's range as typing metadata (standard library only, checked below); a
            # benchmark's arithmetic may import its own metrics_<part> modules (arithmetic files themselves)
            own = f"t2ibench.benchmarks.{path.parent.name}.metrics_"
            # t2ibench.vision: the detections a verdict engine reads (standard library only, checked below)
            allowed = ("t2ibench.metrics", "t2ibench.errors", "t2ibench.fields", "t2ibench.vision", own)
            assert name.startswith(allowed), f"{path.name} imports {name}"
    for stdlib_only in ("fields.py", "vision.py"):
        roots = {n.split(".")[0] for n in imported_roots(SRC / stdlib_only)}
        assert roots <= {*sys.stdlib_module_names, "__future__", "t2ibench"}, (stdlib_only, roots)


@pytest.mark.parametrize(("module", "home"), [("torch", "models"), ("duckdb", "store"), ("prefect", None)])
def test_heavy_dependencies_stay_in_their_layer(module, home):
    for path in py_files(SRC):
        rel = path.relative_to(SRC)
        if home is not None and (rel.parts[0] == home or str(rel) == home):
            continue
        roots = {n.split(".")[0] for n in imported_roots(path)}
        assert module not in roots, f"{rel} imports {module} (allowed only in {home or 'flows/ and tasks/'})"


def test_core_import_pulls_in_no_heavy_module():
    code = (
        "import sys, t2ibench.metrics, t2ibench.cli, t2ibench.io, t2ibench.examples.digits,"
        " t2ibench.benchmarks.geneval.evaluate, t2ibench.models.detection, t2ibench.models.colour,"
        " t2ibench.benchmarks.geneval.suite;"
        "print(','.join(m for m in ('torch', 'prefect', 'duckdb', 'open_clip') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_store_loads_no_numpy():
    """The store (its schema reads every benchmark's columns and task names) imports no numpy: opening a store for
    SQL stays light (numpy loads where arrays are read or computed, and where a damaged store's blocks are checked)."""
    code = "import sys, t2ibench.store; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_nothing_unpickles_or_evaluates_untrusted_data():
    """No pickle, no unsafe YAML, no eval; torch checkpoints only with weights_only=True; task results as JSON."""
    import re

    root = Path(__file__).resolve().parents[2]
    files = [*py_files(SRC), *py_files(root / "flows"), *py_files(root / "tasks")]
    forbidden = {
        r"\bimport pickle\b|\bfrom pickle\b|\bcloudpickle\b|\bdill\b": "pickle",
        r"allow_pickle\s*=\s*True": "allow_pickle=True",
        r"yaml\.(unsafe_)?load\(": "yaml.load (use safe_load)",
        r"(?<![\w.])eval\(|(?<![\w.])exec\(": "eval/exec",
    }
    for path in files:
        text = path.read_text()
        for pattern, what in forbidden.items():
            assert not re.search(pattern, text), f"{path.relative_to(root)} uses {what}"
        for call in re.finditer(r"torch\.load\(([^)]*)\)", text):
            assert "weights_only=True" in call.group(1), f"{path.relative_to(root)}: torch.load without weights_only"
    assert "weights_only=True" in (SRC / "models" / "colour.py").read_text()  # open_clip checkpoints
    tasks_src = (root / "tasks" / "benchmark.py").read_text()
    assert '"result_serializer": "json"' in tasks_src  # Prefect would pickle task results by default


def test_guarantees_in_the_reliability_doc_point_at_real_tests():
    import re

    from tests.corpus import OTHER_GUARANTEES

    root = Path(__file__).resolve().parents[2]
    for _, _, test in OTHER_GUARANTEES:
        path, name = test.split("::")
        assert re.search(rf"def {name}\(", (root / path).read_text()), test


def test_every_name_in_metrics_all_is_importable():
    """`from t2ibench.metrics import *` and each documented name work (nine did not, found by review)."""
    import t2ibench.metrics as metrics

    missing = [name for name in metrics.__all__ if not hasattr(metrics, name)]
    assert not missing, f"t2ibench.metrics.__all__ lists names it does not import: {missing}"
    namespace: dict[str, object] = {}
    exec("from t2ibench.metrics import *", namespace)
    assert set(metrics.__all__) <= set(namespace)


def t2ibench_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, imported names) of every ``t2ibench`` import in a file, relative imports resolved."""
    package = ["t2ibench", *path.relative_to(SRC).parent.parts]
    found = []
    for node in nodes(path):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("t2ibench")]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = ".".join(package[: len(package) - node.level + 1] + ([module] if module else []))
            if module.startswith("t2ibench"):
                found.append((module, [a.name for a in node.names]))
    return found


def module_of(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["t2ibench", *parts])


# what each layer may import from inside the library (prefixes); the map in docs/architecture.md
ALLOWED_INSIDE = {
    # the model and evaluator specs sit below both the config and the models: neither is imported by them
    "t2ibench.specs": ("t2ibench.specs", "t2ibench.errors", "t2ibench.fields"),
    # the config reads specs and checks their backend names against the registries: the registry module alone, not
    # the adapters (models.registry imports those lazily, when a builder runs)
    "t2ibench.config": (
        "t2ibench.config",
        "t2ibench.specs",
        "t2ibench.fields",
        "t2ibench.errors",
        "t2ibench.io",
        "t2ibench.metrics",
        "t2ibench.suites",
        "t2ibench.models.registry",
        # the registry's names, a benchmark's arithmetic and suite reader (answer rules, the suite's bounds); never
        # its evaluation (the floors below keep the config under it)
        "t2ibench.benchmarks",
    ),
    "t2ibench.metrics": ("t2ibench.metrics", "t2ibench.errors", "t2ibench.fields"),  # fields: typed ranges, stdlib only
    # the store reads each stored benchmark's StoredColumns (data: its views and leaderboard columns) through the
    # registry module; the floors keep it from anything above
    "t2ibench.store": ("t2ibench.store", "t2ibench.errors", "t2ibench.metrics", "t2ibench.benchmarks"),
    "t2ibench.suites": (
        "t2ibench.suites",
        "t2ibench.errors",
        "t2ibench.io",
        "t2ibench.metrics",
        "t2ibench.hashing",
        "t2ibench.paths",
        "t2ibench.benchmarks.*.suite",  # a reference set made from a benchmark's prompts (geneval-prompts-v1)
    ),
    "t2ibench.models": (
        "t2ibench.models",
        "t2ibench.errors",
        "t2ibench.io",
        "t2ibench.images",
        "t2ibench.paths",
        "t2ibench.progress",
        "t2ibench.embed_cache",
        "t2ibench.hashing",
        "t2ibench.specs",  # never t2ibench.config: the adapters take their specs, the config imports the registry
        "t2ibench.suites",
        "t2ibench.metrics",
        "t2ibench.vision",  # detections and label spaces: a detector labels in the space its caller passes
        # the registry module alone (the spine's prompt structure, for the structure embedder), never a plugin's
        "t2ibench.benchmarks$",
        # T2I-CompBench++'s suite, phrase table and detection type: the spaCy phrase deriver and the tiny OWL
        # fixture read them (never an evaluation)
        "t2ibench.benchmarks.t2i_compbench.suite",
        "t2ibench.benchmarks.t2i_compbench.suite_phrases",
        "t2ibench.benchmarks.t2i_compbench.metrics",
    ),
    "t2ibench.report": (
        "t2ibench.report",
        "t2ibench.errors",
        "t2ibench.io",
        "t2ibench.metrics",
        "t2ibench.store",
        "t2ibench.benchmarks",  # the registry, the benchmarks' report sections and results readers
        "t2ibench.benchmarks.geneval.agreement",
        "t2ibench.suites",  # published reference tables are suite data
        "t2ibench.hashing",  # the code version in the report's render stamp
        "t2ibench.artifacts",  # the paper artifacts' writer at the stated precision
    ),
}


def test_library_internal_imports_follow_the_layers():
    """models never reach into evaluation or the pipeline, report never into examples or models, and so on."""
    for path in py_files(SRC):
        module = module_of(path)
        layer = next((k for k in ALLOWED_INSIDE if module == k or module.startswith(k + ".")), None)
        for imported, _ in t2ibench_imports(path):
            if imported == "t2ibench":
                continue
            assert imported != "t2ibench.cli" or module == "t2ibench.cli", f"{module} imports the CLI"
            verbs = imported == "t2ibench.commands" or imported.startswith("t2ibench.commands.")
            own_verbs = fnmatch(module, "t2ibench.benchmarks.*.commands")  # a benchmark's own verbs
            assert not verbs or module == "t2ibench.cli" or module.startswith("t2ibench.commands") or own_verbs, (
                f"{module} imports the command line's verbs ({imported})"
            )
            if layer is not None:
                allowed = ALLOWED_INSIDE[layer]
                ok = any(
                    imported == a[:-1] if a.endswith("$") else fnmatch(imported, a) or fnmatch(imported, a + ".*")
                    for a in allowed
                )
                assert ok, f"{module} imports {imported} (the {layer} layer may import only {', '.join(allowed)})"


# Every module's floor: a module imports only modules on its own floor or below (function-local and type-only
# imports included), so nothing reaches up. Keys are module prefixes (the longest one present decides); every
# top-level module and package of t2ibench has one, and a new one fails the test below until it is placed.
FLOORS = {
    "t2ibench.errors": 0,
    "t2ibench.fields": 1,  # typed fields' ranges, command-line spelling and docs (no argparse)
    "t2ibench.hashing": 0,
    "t2ibench.logs": 0,
    "t2ibench.metrics": 1,  # numpy/scipy arithmetic
    "t2ibench.paths": 1,
    "t2ibench.images": 1,
    "t2ibench.specs": 1,
    "t2ibench.progress": 1,
    "t2ibench.signals": 1,
    "t2ibench.benchmarks": 1,  # the registry module alone (its entries load by name); plugins: BENCHMARK_ROLES
    "t2ibench.vision": 1,  # detections, boxes, label spaces: what detectors and benchmarks exchange (stdlib)
    "t2ibench.pipeline.identity": 1,  # a step's inputs as its identity: hashing only
    "t2ibench.io": 2,
    "t2ibench.pipeline.results": 2,
    "t2ibench.artifacts": 3,
    "t2ibench.embed_cache": 3,
    "t2ibench.resume": 3,
    "t2ibench.params": 3,
    "t2ibench.options": 3,
    "t2ibench.requests": 3,
    "t2ibench.store": 3,
    "t2ibench.suites": 3,
    "t2ibench.pipeline.stamps": 3,
    "t2ibench.models": 4,
    "t2ibench.config": 5,
    "t2ibench.datasets": 6,
    "t2ibench.features": 6,
    "t2ibench.workspace": 6,
    "t2ibench.comparisons": 7,  # paired tests over stored results (the store, the metrics, the spine's queries)
    "t2ibench.benchmarks.geneval.selftest": 6,
    "t2ibench.diversity": 6,
    "t2ibench.benchmarks.geneval.agreement": 8,
    "t2ibench.report": 9,
    "t2ibench.examples": 10,
    "t2ibench.pipeline": 11,
    "t2ibench.commands": 13,  # the verbs (one module per group), beside the parser that gathers them
    "t2ibench.cli": 13,
}

# A benchmark plugin's modules (t2ibench.benchmarks.<name>.<role>) sit at the floor of their role: its arithmetic
# with the metrics, its suite with the suites, its evaluation above the models and the config, its report section
# with the report, its steps beside the pipeline's, its plan above the pipeline's, and its registry entry (what
# `benchmark(name)` loads by name and the plan and the CLI call) on top, tying its parts together.
BENCHMARK_ROLES = {
    "": 1,  # the package's __init__: a docstring, no imports
    "metrics": 1,
    "columns": 1,  # how its stored tables show in SQL and on the leaderboard: data the store and report read
    "suite": 3,  # suite_<part>: more of its data (annotations, photographs), same floor
    "options": 3,
    "selftest": 6,  # the evaluator's self-test against known truth (above the models it runs, below its evaluation)
    "evaluate": 7,
    "agreement": 8,  # human agreement with its verdicts
    "rows": 7,
    "report": 9,  # report_<part>: further pages of its section
    "steps": 10,
    "plan": 12,
    "benchmark": 12,  # benchmark_cli: its command-line spelling, which the entry and its verbs share
    "commands": 13,  # its own verbs (``add_verbs``), beside the command line's
}


def floor_of(module: str) -> int | None:
    """The floor of a package module (None: it has none)."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "benchmarks":
        return BENCHMARK_ROLES.get(".".join(parts[3:4]).partition("_")[0])  # suite_photos: the suite role
    while parts:
        if ".".join(parts) in FLOORS:
            return FLOORS[".".join(parts)]
        parts.pop()
    return None


def test_every_module_has_a_floor_and_nothing_reaches_up():
    """Each top-level module or package has its own floor, and every benchmark module a known role; an import
    (anywhere in a file) goes to the same floor or below."""
    graph = module_graph()
    tops = {m.split(".")[1] for m in graph if m != "t2ibench"}
    assert not sorted(t for t in tops if f"t2ibench.{t}" not in FLOORS), "top-level modules without a floor"
    assert not sorted(m for m in graph if m != "t2ibench" and floor_of(m) is None), "modules without a floor"
    up = [
        f"{m} (floor {floor_of(m)}) imports {i} (floor {floor_of(i)})"
        for m, imported in sorted(graph.items())
        for i in sorted(imported)
        if i in graph and m != "t2ibench" and floor_of(i) > floor_of(m)  # type: ignore[operator]
    ]
    assert not up, "imports that reach up:\n" + "\n".join(up)


def test_the_floor_rule_places_modules_by_prefix_and_benchmark_role():
    assert floor_of("t2ibench.benchmarks.geneval2.metrics") == FLOORS["t2ibench.metrics"]
    assert floor_of("t2ibench.benchmarks.dpg.plan") == BENCHMARK_ROLES["plan"]
    assert floor_of("t2ibench.benchmarks.dpg.unplaced") is None
    assert floor_of("t2ibench.benchmarks.geneval.suite_photos") == BENCHMARK_ROLES["suite"]
    assert floor_of("t2ibench.benchmarks") == 1
    assert floor_of("t2ibench.pipeline.identity") < floor_of("t2ibench.pipeline.plan")  # type: ignore[operator]
    assert floor_of("t2ibench.store.connection") < floor_of("t2ibench.report.site")  # type: ignore[operator]


def module_graph() -> dict[str, set[str]]:
    """Every module of the package → the package modules it imports: at module level, inside functions and under
    ``TYPE_CHECKING`` alike (a function-local import hides a circle from the interpreter, not from this graph)."""
    modules = {module_of(path): path for path in py_files(SRC)}

    def home(name: str) -> str:  # the module a dotted name lives in: 't2ibench.config.GeneratorConfig' → config
        while name not in modules and "." in name:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        edges: set[str] = set()
        for node in nodes(path):
            if isinstance(node, ast.Import):
                edges |= {home(a.name) for a in node.names if a.name.startswith("t2ibench")}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                if base.startswith("t2ibench"):
                    edges |= {home(f"{base}.{a.name}") for a in node.names}
        graph[module] = edges - {module, "t2ibench"}  # the root package holds only __version__
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan): each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(frozenset(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


# Import circles that remain, each named with why; a circle not listed here fails the test below. Remove an entry
# when its circle is broken (the test then keeps it broken).
KNOWN_CYCLES = {
    # type-only: sandbox annotates with Store under TYPE_CHECKING, connection imports sandbox at run time
    frozenset({"t2ibench.store.connection", "t2ibench.store.sandbox"}),
}


def test_the_package_has_no_import_cycle():
    """No module reaches itself through imports — counting function-local and type-only imports — except the named
    ones above; in particular config, specs, models/* (the old config ↔ models.registry/compositor/generation
    circle) and everything else."""
    cycles = import_cycles(module_graph())
    unknown = [sorted(c) for c in cycles if c not in KNOWN_CYCLES]
    assert not unknown, f"import cycles: {unknown}"


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [frozenset({"a", "b", "c"})]
    # the registry's builders import their adapters inside the functions: those are edges too
    assert "t2ibench.models.ssd" in module_graph()["t2ibench.models.registry"]


def test_specs_and_models_stay_below_the_config():
    """specs import neither the config nor the models; no model module imports the config or the pipeline; the config
    reaches the models through the registry alone."""
    graph = module_graph()
    assert not {m for m in graph["t2ibench.specs"] if m.startswith(("t2ibench.config", "t2ibench.models"))}
    for module, imported in graph.items():
        if module.startswith("t2ibench.models"):
            bad = {m for m in imported if m.startswith(("t2ibench.config", "t2ibench.pipeline"))}
            assert not bad, f"{module} imports {sorted(bad)}"
    assert {m for m in graph["t2ibench.config"] if m.startswith("t2ibench.models")} == {"t2ibench.models.registry"}
    # the registry imports only specs and errors when it loads (the adapters when a builder runs): the config can
    # check backend names without loading any adapter
    tree = ast.parse((SRC / "models" / "registry.py").read_text())
    top = {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("t2ibench")}
    assert top == {"t2ibench.errors", "t2ibench.specs"}, f"models.registry imports {sorted(top)} at module level"


def test_every_spec_names_its_registry_and_its_default_backend_is_registered():
    """Each spec section names its registry (``config.BACKENDS``); its default backend is registered, and a typo is a
    did-you-mean error when a config is read."""
    import dataclasses

    from t2ibench.config import BACKENDS, parse_config
    from t2ibench.errors import InputError
    from t2ibench.specs import ColourConfig, DetectorConfig, EmbedderConfig, GeneratorConfig, VQAJudgeConfig

    assert set(BACKENDS) == {GeneratorConfig, DetectorConfig, ColourConfig, EmbedderConfig, VQAJudgeConfig}
    for spec, registry in BACKENDS.items():
        default = next(f.default for f in dataclasses.fields(spec) if f.name == "backend")
        assert registry.check(default) == default, spec.__name__
    raw = {"name": "x", "models": [{"name": "a"}], "evaluators": {"image_embedder": {"backend": "dinov3"}}}
    with pytest.raises(InputError, match=r"evaluators\.image_embedder\.backend: unknown embedder backend 'dinov3'"):
        parse_config(raw)


def test_no_private_name_crosses_a_module():
    """`from t2ibench.x import _name` (or a private module) outside its package is a hidden dependency.

    A private name belongs to its module, or to its subpackage (``t2ibench.models._torch`` serves ``models``).
    """

    def owner(imported: str) -> str:
        parent = imported.rsplit(".", 1)[0]
        return imported if parent == "t2ibench" else parent  # top-level modules keep their privates to themselves

    for path in py_files(SRC):
        module = module_of(path)
        for imported, names in t2ibench_imports(path):
            if any(part.startswith("_") for part in imported.split(".")[1:]):
                package = imported.split("._")[0]
                assert module.startswith(package + "."), f"{module} imports the private module {imported}"
            for name in names:
                if name.startswith("_"):
                    home = owner(imported)
                    assert module == home or module.startswith(home + "."), (
                        f"{module} imports the private name {name} from {imported}"
                    )


def test_sql_lives_behind_store_methods():
    """No connection is handed out for ad-hoc SQL: outside the store package nothing executes SQL or opens
    transactions."""
    import re

    root = Path(__file__).resolve().parents[2]
    for path in [*py_files(SRC), *py_files(root / "flows"), *py_files(root / "tasks")]:
        if path.is_relative_to(SRC / "store"):
            continue
        text = path.read_text()
        for pattern in (r"\.execute\(", r"\.write\(\)\s+as\s+con", r"\.upsert\(con", r"\.replace\(con"):
            assert not re.search(pattern, text), f"{path.relative_to(root)} runs SQL itself ({pattern})"


# SQL text as t2ibench writes it (upper-case keywords): a statement's head, a FROM or JOIN naming a relation, a clause
SQL_TEXT = re.compile(r"\bSELECT\s|\bFROM\s+[a-z_(]|\bJOIN\s+[a-z_]|\bORDER BY\b|\bGROUP BY\b|\bWHERE\s+[a-z_]")


def sql_literals(node: ast.AST) -> list[str]:
    """The string constants under ``node`` (f-string pieces and docstrings included) that hold SQL text."""
    strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return [s for s in strings if SQL_TEXT.search(s)]


def test_the_report_holds_no_sql_and_reads_the_store_through_named_queries():
    """report/ and every benchmark's report modules read the store only through ``t2ibench.store.queries`` (one
    named, typed function per thing they show): none holds SQL text or calls the store's raw ``rows``/``query``; the
    same detector finds the SQL of every query function and of the schema's views, and every query is one a report
    module uses."""
    queries_path = SRC / "store" / "queries.py"
    tree = ast.parse(queries_path.read_text(), filename=str(queries_path))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    assert len(functions) >= 20, sorted(functions)
    for name, function in functions.items():
        if name == "spine_rows":  # the spine benchmark's reads: their SQL is the spine's data (SpineSQL.queries)
            from t2ibench.store.schema import SPINE_SQL

            assert SPINE_SQL.queries
            assert all(SQL_TEXT.search(q) for q in SPINE_SQL.queries.values())
            continue
        if name == "paired_results":  # the spine's read, or a stored benchmark's data (StoredColumns.paired)
            from t2ibench.store.schema import STORED_BENCHMARKS

            paired = [c.paired for c in STORED_BENCHMARKS.values() if c.paired is not None]
            assert paired
            assert all(SQL_TEXT.search(q) for q in paired)
            continue
        assert sql_literals(function), f"the SQL detector finds no SQL in queries.{name}: it is broken"
    assert len(sql_literals(ast.parse((SRC / "store" / "schema.py").read_text()))) >= 20  # the views

    used: set[str] = set()
    sections = [p for p in py_files(SRC / "benchmarks") if p.stem.partition("_")[0] == "report"]
    assert len(sections) >= 6, sections  # GenEval's board, pages, failures, self-test, agreement; GenEval 2's
    for path in [*py_files(SRC / "report"), *sections]:
        rel = path.relative_to(SRC)
        report = ast.parse(path.read_text(), filename=str(path))
        assert not sql_literals(report), f"{rel} holds SQL: {sql_literals(report)[0][:80]!r} (add a query instead)"
        for node in ast.walk(report):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "queries":
                used.add(node.attr)
            called = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else ""
            assert called not in {"rows", "query", "user_query", "user_export"}, f"{rel} calls .{called}() itself"
    for path in [SRC / "comparisons.py", *py_files(SRC / "commands")]:  # the other readers of the named queries
        for node in nodes(path):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "queries":
                used.add(node.attr)
    assert used == set(functions), (
        f"unused queries: {sorted(set(functions) - used)}; unknown: {sorted(used - set(functions))}"
    )


def test_the_metrics_package_exports_each_name_from_its_own_submodule_lazily():
    """t2ibench.metrics loads its submodules on first use: every exported name has one home in its import block, and
    is that submodule's object (a name defined in several submodules is never taken from the wrong one)."""
    import importlib

    import t2ibench.metrics as metrics

    homes = metrics._homes()
    assert set(homes) == set(metrics.__all__)
    for name, home in homes.items():
        assert getattr(metrics, name) is getattr(importlib.import_module(home), name), name
    eager = (SRC / "metrics" / "__init__.py").read_text().split("if TYPE_CHECKING:")[0]
    assert "from t2ibench.metrics." not in eager  # no submodule is imported when the package is


# The files outside the benchmarks package that may name a benchmark in code (an identifier, or a string without
# whitespace: a module path, a table key, a set name) — messages, help text and docstrings aside. Everything else
# reaches a benchmark through the registry (``t2ibench.benchmarks``) or is handed what it needs by it (a detector's
# label space, a colour classifier's colours, the spine's prompt structure).
NAMED_OUTSIDE = {
    "geneval": {
        "src/t2ibench/config.py",  # the published reference tables and the self-test's photo truth (config checks)
        "src/t2ibench/suites/reference.py",  # the reference text set made from GenEval's prompts
        "flows/human_agreement.py",  # GenEval's MTurk annotations: the one benchmark with human verdicts
    },
    "geneval2": set(),
    "t2i_compbench": {  # the spaCy phrase deriver and the tiny OWL fixture (models: the only home of spaCy, torch)
        "src/t2ibench/models/spacy_parse.py",
        "src/t2ibench/models/tiny_compbench.py",
        "src/t2ibench/models/owl.py",
    },
}


def names_in_code(path: Path, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """(line, token) of each identifier or whitespace-free string literal of ``path`` matching ``pattern``."""
    import io
    import tokenize

    found = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        text = tok.string
        literal = tok.type in (
            tokenize.STRING,
            getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING),
        )  # 3.12+: f-strings
        key = tok.type == tokenize.NAME or (literal and not any(c.isspace() for c in text))
        if key and pattern.search(text):
            found.append((tok.start[0], text))
    return found


@pytest.mark.parametrize("name", sorted(NAMED_OUTSIDE))
def test_benchmarks_are_named_only_inside_their_package(name):
    """Outside ``t2ibench.benchmarks`` (store migrations aside: they record history), only the files listed in
    ``NAMED_OUTSIDE`` name a benchmark in code; a benchmark is one package plus one registry line."""
    from t2ibench.benchmarks import REGISTRY

    assert set(NAMED_OUTSIDE) == set(REGISTRY)
    root = SRC.parents[1]
    others = sorted(n for n in REGISTRY if n != name and n.startswith(name))  # geneval is a prefix of geneval2
    pattern = re.compile(re.escape(name) + "".join(f"(?!{re.escape(o[len(name) :])})" for o in others), re.I)
    files = [*py_files(SRC), *py_files(root / "flows"), *py_files(root / "tasks")]
    naming = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        if rel.startswith("src/t2ibench/benchmarks/") or rel == "src/t2ibench/store/migrations.py":
            continue
        if hits := names_in_code(path, pattern):
            naming[rel] = hits[:3]
    assert set(naming) <= NAMED_OUTSIDE[name], {k: v for k, v in naming.items() if k not in NAMED_OUTSIDE[name]}
    assert len(NAMED_OUTSIDE[name]) <= 3
    assert set(naming) == NAMED_OUTSIDE[name], "a listed file no longer names it: shorten NAMED_OUTSIDE"


MAX_FUNCTION_LINES = 150
"""The longest a function in the package may be (its ``def`` line to its last, decorators and docstring included)."""
MAX_CLI_LINES = 600
"""The command line's entry module stays a thin dispatcher: each verb's options and handler live with what it runs."""


def long_functions(path: Path, limit: int) -> list[str]:
    """``name (N lines)`` of each function (nested ones too) in ``path`` longer than ``limit`` lines."""
    return [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in nodes(path)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_no_function_in_the_package_is_longer_than_the_limit_and_the_cli_stays_thin():
    """A function over ``MAX_FUNCTION_LINES`` is split into named parts; ``cli.py`` stays ≤ ``MAX_CLI_LINES``."""
    too_long = {
        path.relative_to(SRC).as_posix(): found
        for path in py_files(SRC)
        if (found := long_functions(path, MAX_FUNCTION_LINES))
    }
    assert not too_long, too_long
    assert len((SRC / "cli.py").read_text().splitlines()) <= MAX_CLI_LINES


def test_the_length_rule_counts_a_long_function(tmp_path):
    """The rule's counter finds a planted 151-line function (nested in a class) and passes a 150-line one."""
    body = "".join(f"        x{i} = {i}\n" for i in range(149))
    planted = tmp_path / "planted.py"
    planted.write_text(f"class C:\n    def long(self):\n{body}        return 0\n\n    def short(self):\n{body}")
    assert long_functions(planted, MAX_FUNCTION_LINES) == ["long (151 lines)"]
