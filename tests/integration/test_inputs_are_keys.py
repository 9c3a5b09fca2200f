"""Every leaf field of the config schema, changed alone, re-runs exactly the steps that read it.

The fields are enumerated from the config dataclasses (never listed by hand); each one is changed to another valid
value, the refresh's plan is rebuilt and run in this process against the baseline's results (``Call.key``: the same
key function every Prefect task uses), and what ran is compared with what each call *read*: a tracer records every
config field read while a call's parameters are built and while its step runs.

* soundness: a call that read the field runs again (its key changed) — unless an upstream result it takes changed
  first, then it runs anyway;
* precision: a call whose settings changed read the field; a call whose key changed with the same settings took a
  changed content value (an upstream result, a fixed bandwidth) or writes elsewhere (an output path);
* the fields that change no key at all are exactly the ones docs/architecture.md lists as changing no number.

A meta-test plants a step that reads a field it is not given (the bug class: a step reading ``ws.config`` beside its
key) and checks that the same checker reports it.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import re
import types
import typing
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import pytest

from t2ibench.config import Config, parse_config
from t2ibench.errors import InputError
from t2ibench.pipeline import plan as plan_module
from t2ibench.pipeline import select_prompts
from t2ibench.pipeline.identity import fingerprint, roles
from t2ibench.pipeline.plan import Call, building, current_call, plan_refresh
from t2ibench.pipeline.results import PromptSet
from t2ibench.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

BASE: dict[str, Any] = {
    "name": "keys",
    "description": "one tiny model, six prompts",
    "benchmarks": {
        "geneval": {"seed": 43, "per_task": 100, "limit_per_task": 1},
        # the suite: tests/geneval2_lines.py's, written into the workspace (not at the release's place, which holds
        # only the release)
        "geneval2": {"per_atom_count": 1, "data": "suite.jsonl"},
        # the two categories that read no phrase table, one prompt each
        "t2i_compbench": {"categories": ["numeracy", "non_spatial"], "per_category": 1},
    },
    "models": [
        {
            "name": "tiny",
            "label": "tiny-random",
            "generator": {"model": "tiny-random:0", "steps": 2, "images_per_prompt": 2, "seed": 42, "dtype": "float32"},
        }
    ],
    "evaluators": {
        "geneval": {
            "detector": {"model": "tiny-random", "resize": [64, 96]},
            "colour": {"arch": "tiny-random", "pretrained": None},
        },
        "geneval2": {"judge": {"model": "tiny-random:0", "dtype": "float32"}},
        "t2i_compbench": {
            "vqa": {"backend": "blip-vqa", "model": "tiny-random"},
            "detector": {"backend": "owlv2", "model": "tiny-random", "threshold": 0.0},
            "depth": {"backend": "dpt", "model": "tiny-random"},
            "clip": {"backend": "open_clip", "model": "tiny-random"},
        },
        "image_embedder": {"backend": "dinov2", "model": "tiny-random"},
        "clip": {"backend": "open_clip", "model": "tiny-random", "normalize": True},
        "diversity": {
            "rff_dim": 64,
            "shards": 2,
            "n_curve": [4],
            "modes": 2,
            "top": 2,
            "bootstrap": 10,
            "convergence": False,
        },
        "scendi": {"rff_dim": 32, "modes": 2, "top": 2, "convergence": False},
        "selftest": {"per_task": 1, "images_per_prompt": 1, "variants": ["faithful"], "photos": False},
    },
    "runtime": {"device": "cpu", "retries": 1, "retry_delay_seconds": [1]},
    "outputs": {"data": "data", "reports": "reports", "store": "data/t2ibench.duckdb", "cache": "data/cache"},
}

# Values to try for fields whose type alone does not say what else is valid and runnable here (strings naming
# models or backends, optional values); every other field gets a value derived from its type and current value.
CANDIDATES: dict[str, list[Any]] = {
    "models[0].name": ["tiny2"],
    "models[0].label": ["another label"],
    "models[0].generator.model": ["tiny-random:1"],
    "models[0].generator.revision": ["main"],
    "models[0].generator.negative_prompt": ["blurry"],
    "models[0].generator.batch_size": [1],
    "models[0].generator.scheduler": ["DDIMScheduler"],
    "models[0].generator.stage2": ["tiny-random:2"],
    "models[0].generator.dtype": ["auto"],
    "evaluators.geneval.detector.model": ["tiny-random:1"],
    "evaluators.geneval.detector.revision": ["main"],
    "evaluators.geneval.detector.resize": [[64, 128]],
    "evaluators.geneval.colour.arch": ["tiny-random:1"],
    "evaluators.geneval.colour.pretrained": ["openai"],
    "evaluators.geneval.colour.background": ["original"],
    "evaluators.image_embedder.backend": ["open_clip"],
    "evaluators.image_embedder.model": ["tiny-random:1"],
    "evaluators.image_embedder.dtype": ["auto"],
    "evaluators.clip.backend": ["mobilenet+structure"],
    "evaluators.clip.model": ["tiny-random:1"],
    "evaluators.clip.pretrained": ["x"],
    "evaluators.clip.dtype": ["auto"],
    "evaluators.diversity.sigma": [0.5],
    "evaluators.scendi.image_sigma": [0.5],
    "evaluators.scendi.text_sigma": [0.5],
    "evaluators.diversity.alphas": [[1.0, 2.0]],
    "benchmarks.geneval.prompts": ["0-30"],
    "benchmarks.geneval.classes": [["person", "dog", "cat", "car", "horse", "bench"]],
    "benchmarks.geneval2.data": ["suite-copy.jsonl"],  # the same bytes elsewhere: the same prompts and numbers
    "benchmarks.geneval.rewritten": ["rewritten-copy.jsonl"],  # read by a reworded model only (none here)
    "models[0].wording": ["rewritten"],  # a stand-in for the rewrites, placed where the refresh fetches them
    "benchmarks.geneval2.prompts": ["0"],
    "models[0].benchmarks": [["geneval"]],
    "evaluators.geneval2.judge.model": ["tiny-random:1"],
    "evaluators.geneval2.judge.revision": ["main"],
    "evaluators.geneval2.judge.dtype": ["auto"],
    "evaluators.geneval2.judge.attn_implementation": ["eager"],
    "evaluators.geneval2.answer_rule": ["unique"],
    "benchmarks.t2i_compbench.categories": [["numeracy"]],
    "evaluators.t2i_compbench.vqa.model": ["tiny-random:1"],
    "evaluators.t2i_compbench.vqa.revision": ["main"],
    "evaluators.t2i_compbench.vqa.dtype": ["float32"],
    "evaluators.t2i_compbench.vqa.attn_implementation": ["eager"],
    "evaluators.t2i_compbench.detector.model": ["tiny-random:1"],
    "evaluators.t2i_compbench.detector.revision": ["main"],
    "evaluators.t2i_compbench.detector.query": ["a picture of a {}"],
    "evaluators.t2i_compbench.depth.model": ["tiny-random:1"],
    "evaluators.t2i_compbench.depth.revision": ["main"],
    "evaluators.t2i_compbench.clip.model": ["tiny-random:1"],
    "evaluators.t2i_compbench.clip.pretrained": ["x"],
    "evaluators.t2i_compbench.clip.dtype": ["auto"],
    "evaluators.t2i_compbench.rule": ["corrected"],
    "evaluators.t2i_compbench.phrases": ["phrases.json"],  # a stand-in table the baseline writes (not read here)
    "evaluators.selftest.variants": [["sloppy:0.5"]],
    "runtime.address": ["tcp://127.0.0.1:8786"],
    "runtime.device": ["auto"],
    "runtime.retry_delay_seconds": [[2.0]],
    "outputs.data": ["data2"],
    "outputs.reports": ["reports2"],
    "outputs.store": ["data/other.duckdb"],
    "outputs.cache": ["cache2"],
    "report.published": [[]],
    "models[0].checkpoints": [],  # see NOT_ALONE
    "description": ["another description"],
    "name": ["keys2"],
}

# Fields that cannot be changed alone from this baseline: the config refuses every other value unless another field
# changes with it. The test fails when a field not listed here cannot be changed.
NOT_ALONE = {
    "models[0].generator.backend": "compositor and folder refuse the diffusers keys the baseline sets (steps, dtype)",
    "models[0].generator.source": "read by the folder backend only",
    "models[0].generator.prompt_rewriting": "declared by an imported folder only (backend: folder)",
    "models[0].generator.height": "height and width go together",
    "models[0].generator.width": "height and width go together",
    "evaluators.geneval.detector.backend": "opencv-ssd and mmdet refuse the baseline's resize",
    "evaluators.geneval.detector.mmdet_config": "read by the mmdet backend only",
    "evaluators.geneval.detector.mmdet_checkpoint": "read by the mmdet backend only",
    "evaluators.geneval.colour.backend": "the lite colour namer refuses the baseline's arch",
    "evaluators.image_embedder.pretrained": "read by the open_clip backend only",
    "evaluators.clip.pooling": "read by the dinov2 backend only",
    "runtime.address": "a running Dask scheduler needs task_runner: dask",
    "runtime.devices": "one worker per device needs task_runner: dask",
    "evaluators.geneval2.judge.backend": "qwen3-vl is the only VQA judge backend",
    "evaluators.t2i_compbench.vqa.backend": "the attribute rule reads BLIP's yes-probability: blip-vqa only",
    "evaluators.t2i_compbench.detector.backend": "owlv2 is the only open-vocabulary detector backend",
    "evaluators.t2i_compbench.depth.backend": "dpt is the only depth model backend",
    "evaluators.t2i_compbench.clip.backend": "CLIPScore needs an image-text embedder: open_clip only",
    "evaluators.t2i_compbench.clip.pooling": "read by the dinov2 backend only",
    "models[0].series": "series and step go together (a point of a series)",
    "models[0].step": "series and step go together (a point of a series)",
    "models[0].checkpoints": "not tried: a series replaces the model by its points, models of other names and calls "
    "(tests/unit/test_series.py: each point is a version of its own, and adding one keeps the others')",
}

# Valid but not runnable here (no such weights or backend on this machine): their calls' keys are compared with
# the baseline's, and what they read is the baseline's trace; nothing of them is executed
KEYS_ONLY = {
    "models[0].generator.stage2": "no DeepFloyd IF stage-II model here",
    "evaluators.geneval.colour.pretrained": "open_clip has no 'openai' weights for the tiny architecture",
    "evaluators.clip.pretrained": "no such weights",
    "evaluators.clip.backend": "the prompt-structure embedder reads GenEval-templated prompts of the real detector",
    "evaluators.geneval2.judge.revision": "a local tiny checkpoint has no hub revisions",
    "evaluators.t2i_compbench.vqa.revision": "a local tiny checkpoint has no hub revisions",
    "evaluators.t2i_compbench.detector.revision": "a local tiny checkpoint has no hub revisions",
    "evaluators.t2i_compbench.depth.revision": "a local tiny checkpoint has no hub revisions",
    "evaluators.t2i_compbench.clip.pretrained": "no such weights",
}


def _empty(f: dataclasses.Field[Any]) -> bool:
    """Whether a field's default is an empty tuple (a list of sections the baseline does not have: one leaf)."""
    return f.default == () or (f.default_factory is not dataclasses.MISSING and f.default_factory() == ())


def leaves(tp: type, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, type) of every leaf field under dataclass ``tp``; a tuple of dataclasses is entered at [0] (one
    empty by default, such as a model's checkpoints, is one leaf)."""
    hints = get_type_hints(tp)
    for f in dataclasses.fields(tp):
        hint = hints[f.name]
        path = f"{prefix}{f.name}"
        inner = [a for a in get_args(hint) if a is not Ellipsis] if get_origin(hint) is tuple else []
        optional = [a for a in get_args(hint) if a is not type(None)] if get_origin(hint) in (typing.Union,
                    types.UnionType) else []  # fmt: skip
        if len(optional) == 1 and isinstance(optional[0], type) and dataclasses.is_dataclass(optional[0]):
            yield from leaves(optional[0], path + ".")  # an optional section (benchmarks.geneval2)
        elif isinstance(hint, type) and dataclasses.is_dataclass(hint):
            yield from leaves(hint, path + ".")
        elif inner and isinstance(inner[0], type) and dataclasses.is_dataclass(inner[0]) and not _empty(f):
            yield from leaves(inner[0], path + "[0].")
        else:
            yield path, hint


def instances(config: Any, prefix: str = "") -> Iterator[tuple[Any, str]]:
    """(dataclass instance, dotted path) of every section in a config tree."""
    yield config, prefix.rstrip(".")
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value):
            yield from instances(value, f"{prefix}{f.name}.")
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            for i, item in enumerate(value):
                yield from instances(item, f"{prefix}{f.name}[{i}].")


LEAVES = dict(leaves(Config))


@contextlib.contextmanager
def tracing(config: Config) -> Iterator[dict[str, set[str]]]:
    """Record, per call id (``current_call``), every leaf field of ``config`` read while it is set."""
    paths = {id(obj): path for obj, path in instances(config)}
    reads: dict[str, set[str]] = defaultdict(set)
    classes = {type(obj) for obj, _ in instances(config)}
    patched = []
    for cls in classes:
        names = {f.name for f in dataclasses.fields(cls)}

        def getattribute(self: Any, name: str, _names: set[str] = names) -> Any:
            if name in _names:
                call = current_call.get()
                where = paths.get(id(self))
                if call is not None and where is not None:
                    path = f"{where}.{name}" if where else name
                    if path in LEAVES:
                        reads[call].add(path)
            return object.__getattribute__(self, name)

        patched.append(cls)
        cls.__getattribute__ = getattribute  # type: ignore[method-assign]
    try:
        yield reads
    finally:
        for cls in patched:
            del cls.__getattribute__


def get(raw: dict[str, Any], path: str) -> Any:
    node: Any = raw
    for part in re.findall(r"[^.\[\]]+", path):
        node = node[int(part)] if isinstance(node, list) else node.get(part) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def put(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    parts = re.findall(r"[^.\[\]]+", path)
    node: Any = out
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[parts[-1]] = value
    return out


def current(path: str) -> Any:
    """The baseline config's value of a field (its default where the raw baseline does not set it)."""
    obj: Any = parse_config(BASE)
    for part in re.findall(r"[^.\[\]]+", path):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    return obj


def candidates(path: str, hint: Any, value: Any) -> list[Any]:
    """Values to try for a field: the table's, else derived from its type and current value."""
    if path in CANDIDATES:
        return CANDIDATES[path]
    options = (
        [a for a in get_args(hint) if a is not type(None)]
        if get_origin(hint) in (typing.Union, types.UnionType)
        else [hint]
    )
    found: list[Any] = []
    for tp in options:
        if tp is bool:
            found.append(not value)
        elif tp is int:
            found += [value + 1, value * 2, value - 1] if isinstance(value, int) else [5]
        elif tp is float:
            found += [round(value * 1.5, 6), round(value * 0.5, 6), value + 0.01] if isinstance(value, float) else [0.5]
        elif get_origin(tp) is Literal:
            found += [a for a in get_args(tp) if a != value]
        elif get_origin(tp) is tuple and isinstance(value, tuple):
            found.append([*value, value[-1] * 2] if value and isinstance(value[-1], (int, float)) else list(value)[:-1])
    if type(None) in get_args(hint) and value is not None:
        found.append(None)
    return [v for v in found if v != value]


def changed_config(path: str) -> tuple[Config, Any] | tuple[None, str]:
    """The baseline with ``path`` changed to the first valid candidate, or (None, why none is valid)."""
    value = current(path)
    errors = []
    for candidate in candidates(path, LEAVES[path], value):
        raw = put(BASE, path, candidate)
        try:
            return parse_config(raw), candidate
        except InputError as exc:
            errors.append(str(exc))
    return None, "; ".join(errors) or "no candidate value"


# -- running a plan against the baseline -----------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    """One run of a plan: per call, its key, its keyed parameters, its settings, its result (and digest), its status
    ('ran', 'hit', 'upstream': an upstream result changed so it must run, 'moved': only its output paths changed,
    'would run': keys-only mode, 'always': a never-cached step after the baseline), and what each call read."""

    keys: dict[str, str | None]
    params: dict[str, dict[str, Any]]
    settings: dict[str, dict[str, Any]]
    results: dict[str, Any]
    digests: dict[str, Any]
    status: dict[str, str]
    reads: dict[str, set[str]]
    prompts: Any
    selections: dict[str, Any] = dataclasses.field(default_factory=dict)  # a call's prompt selections (PromptSets)


def run(config: Config, root: Path, memo: dict[str, Any], base: Outcome | None, *, keys_only: bool = False) -> Outcome:
    """Run ``config``'s plan in this process, store calls left out. A call whose key is in ``memo`` is answered from
    it. Against a ``base``: a call whose upstream result changed is not run (its key holds that result, so it would);
    one whose only changed parameters are output paths is not run either (same settings, same inputs: the base's
    result, written elsewhere); with ``keys_only`` nothing new is run (the base's results stand in)."""
    ws = Workspace(root=root, outputs=config.outputs)
    out = Outcome({}, {}, {}, {}, {}, {}, defaultdict(set), None)
    with tracing(config) as reads:
        with building("prompts"):
            prompts = select_prompts(config.spine_prompts)
        plan = plan_refresh(config, ws, prompts, "run")
        out.prompts = fingerprint(prompts)
        changed: set[str] = set()
        if base is not None and out.prompts != base.prompts:
            changed.add("prompts")
        known = set() if base is None else {repr(d) for d in base.digests.values()}
        for call in plan.calls():
            if call.step == "store":
                continue
            out.settings[call.id] = call.settings()
            upstream = call.upstream()
            # a prompt selection made when the plan is built (GenEval 2's, from its suite file) is upstream of the
            # calls that take it, as the prompts task is of GenEval's
            out.selections[call.id] = {k: fingerprint(v) for k, v in call.params.items() if isinstance(v, PromptSet)}
            selection_changed = (
                base is not None and call.id in base.selections and out.selections[call.id] != base.selections[call.id]
            )
            if base is not None and (
                any(u in changed or u not in out.results for u in upstream)
                or ("prompts" in changed and "prompts" in call.params)
                or selection_changed
            ):
                out.status[call.id] = "upstream"
                changed.add(call.id)
                continue
            if keys_only and base is not None and call.id not in base.results:
                out.status[call.id] = "upstream"  # a new call in keys-only mode: counted as changed, not run
                changed.add(call.id)
                continue
            params = call.resolve(out.results)
            kinds = roles(call.spec.fn)
            out.params[call.id] = {k: fingerprint(v) for k, v in params.items() if kinds[k] != "placement"}
            key = call.key(out.results)
            out.keys[call.id] = key
            if key is not None and key in memo and all(p.exists() for p in call.outputs):
                result, status = memo[key], "hit"
            elif base is not None and call.id in base.results and (keys_only or _moved(call, out, base)):
                result, status = base.results[call.id], ("would run" if keys_only else "moved")
            else:
                with building(call.id):
                    result = call.spec.fn(**params)
                # a step that is never cached (merges, a benchmark's rows for the store) runs every time by design,
                # checking its inputs: after the baseline that is 'always', not a miss
                status = "ran" if key is not None or base is None else "always"
                if key is not None:
                    memo[key] = result
            out.results[call.id] = result
            out.status[call.id] = status
            out.digests[call.id] = fingerprint(result)
            # a new call holding a result the base had (e.g. a merge of shards) is not a change
            new_content = call.id in base.digests or repr(out.digests[call.id]) not in known if base else False
            if base is not None and out.digests[call.id] != base.digests.get(call.id) and new_content:
                changed.add(call.id)
    for call_id, fields in reads.items():
        out.reads[call_id] |= fields
    return out


def _moved(call: Call, now: Outcome, base: Outcome) -> bool:
    """True when a call's only changed parameters are outputs (where it writes), with the same content inputs."""
    kinds = roles(call.spec.fn)
    before, after = base.params.get(call.id, {}), now.params[call.id]
    differ = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    return bool(differ) and all(kinds[k] == "output" for k in differ)


def check(path: str, base: Outcome, now: Outcome) -> list[str]:
    """What is wrong with how changing ``path`` propagated (empty: exactly the calls that read it ran again)."""
    problems = []
    readers = {c for c, f in base.reads.items() if path in f} | {c for c, f in now.reads.items() if path in f}
    for call in sorted(set(base.keys) & set(now.keys)):
        if now.status[call] == "upstream" or base.keys[call] is None:
            continue
        key_changed = base.keys[call] != now.keys[call]
        settings_changed = base.settings[call] != now.settings[call]
        if call in readers and not key_changed:
            problems.append(f"{call} reads {path} but its key did not change")
        if settings_changed and call not in readers:
            differ = sorted(k for k in now.settings[call] if now.settings[call].get(k) != base.settings[call].get(k))
            problems.append(f"{call}'s settings changed ({', '.join(differ)}) though it does not read {path}")
        if key_changed and not settings_changed and base.params[call] == now.params[call]:
            problems.append(f"{call}'s key changed with the same inputs")
        if now.status[call] in ("ran", "moved", "would run") and not key_changed:
            problems.append(f"{call} ran again with an unchanged key")
    return problems


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, model_cache):
    import os

    os.environ["T2IBENCH_CACHE"] = str(model_cache)
    root = tmp_path_factory.mktemp("keys")
    import json

    from tests.geneval2_lines import LINES

    text = "".join(json.dumps(line) + "\n" for line in LINES)
    (root / "suite.jsonl").write_text(text)
    (root / "suite-copy.jsonl").write_text(text)
    from t2ibench.benchmarks.geneval.suite import REWRITTEN_DATA, generate_suite

    # a stand-in for the rewrites (the plan reads, not the release, is under test here), where the refresh puts them
    reworded = "".join(json.dumps({**r, "prompt": f"a long rewrite of {r['prompt']}"}) + "\n" for r in generate_suite())
    (root / REWRITTEN_DATA).parent.mkdir(parents=True)
    (root / REWRITTEN_DATA).write_text(reworded)
    (root / "rewritten-copy.jsonl").write_text(reworded)
    from t2ibench.benchmarks.t2i_compbench.suite import pinned_sha256
    from t2ibench.benchmarks.t2i_compbench.suite_phrases import table_json

    (root / "phrases.json").write_text(table_json({"library": "test", "version": "0", "model": "none"}, pinned_sha256(),
                                                  {}))  # fmt: skip
    memo: dict[str, Any] = {}
    outcome = run(parse_config(BASE), root, memo, None)
    assert set(outcome.status.values()) == {"ran"}, outcome.status
    return root, memo, outcome


def test_the_baseline_runs_and_a_second_run_is_all_hits(baseline):
    root, memo, base = baseline
    again = run(parse_config(BASE), root, memo, base)
    assert set(again.status.values()) <= {"hit", "always"}, again.status
    always = {c for c, status in again.status.items() if status == "always"}
    assert always == {c for c, k in again.keys.items() if k is None}  # only the steps that are never cached
    assert again.keys == base.keys


@pytest.fixture(scope="module")
def effects(baseline):
    """Per leaf field: ('changed', value, outcome) or ('not alone', why no other value is valid)."""
    root, memo, base = baseline
    found: dict[str, Any] = {}
    for path in sorted(LEAVES):
        config, value = changed_config(path)
        if config is None:
            found[path] = ("not alone", value)
            continue
        found[path] = ("changed", value, run(config, root, memo, base, keys_only=path in KEYS_ONLY))
    return found


def test_every_field_changes_exactly_the_calls_that_read_it(baseline, effects):
    _root, _memo, base = baseline
    problems = []
    for path, effect in effects.items():
        if effect[0] == "changed":
            problems += [f"{path} → {effect[1]!r}: {p}" for p in check(path, base, effect[2])]
    assert not problems, "\n".join(problems)
    assert sum(e[0] == "changed" for e in effects.values()) >= 70  # the schema's fields, not a handful


def test_only_the_listed_fields_cannot_be_changed_alone(effects):
    alone = {path: effect[1] for path, effect in effects.items() if effect[0] == "not alone"}
    assert set(alone) == set(NOT_ALONE), alone


def test_the_fields_that_change_no_key_are_the_documented_ones(baseline, effects):
    """A field that is in no call's key (labels, report-only settings, runtime placement) runs nothing again;
    docs/architecture.md lists exactly those fields."""
    _root, _memo, base = baseline
    no_key = set()
    for path, effect in effects.items():
        if effect[0] != "changed":
            continue
        now = effect[2]
        if set(now.keys) == set(base.keys) and all(now.keys[c] == base.keys[c] for c in base.keys):
            assert set(now.status.values()) <= {"hit", "always"}, (path, now.status)
            no_key.add(path)
    doc = (REPO / "docs" / "architecture.md").read_text()
    section = doc.split("<!-- fields that change no key -->")[1]
    listed = set(re.findall(r"`([a-z_\[\]0-9.]+)`", section))
    assert no_key == listed, f"change no key: {sorted(no_key)}; documented: {sorted(listed)}"


def test_a_step_reading_a_field_it_is_not_given_is_caught(baseline, monkeypatch):
    """The bug class of a step reading the workspace's config beside its key (the old Scendi step read the
    diversity section, the old diversity step ``evaluators.ci_level``): a Scendi step that reads ``ci_level`` from
    a config it is not given is answered from the cache at the old level — and the checker says so."""
    root, memo, _base = baseline
    original = plan_module.STEPS["scendi"]
    seen: dict[str, Config] = {}

    def leaky(embedded: Any, scendi: Any, image_sigma: Any, text_sigma: Any) -> Any:
        seen["level"] = seen["config"].evaluators.ci_level  # what the old steps did through ws.config
        return original.fn(embedded, scendi, image_sigma, text_sigma)

    monkeypatch.setitem(plan_module.STEPS, "scendi", dataclasses.replace(original, fn=leaky))
    seen["config"] = parse_config(BASE)
    memo = {k: v for k, v in memo.items() if not k.startswith("scendi-")}  # the planted step runs once, traced
    leaky_base = run(seen["config"], root, memo, None)
    path = "evaluators.ci_level"
    config, _ = changed_config(path)
    assert config is not None
    seen["config"] = config
    now = run(config, root, memo, leaky_base)
    problems = check(path, leaky_base, now)
    assert "tiny/scendi reads evaluators.ci_level but its key did not change" in problems, problems
    assert now.status["tiny/scendi"] == "hit"  # served from the cache: the stale number the checker exists for
