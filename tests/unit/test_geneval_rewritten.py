"""GenEval on rewritten prompts: the pinned file is GenEval's official suite reworded line for line (checked on
read), a model's ``wording`` gives it those texts — a suite and protocol of its own, keyed by the texts — and
nothing else changes; hostile files and settings are refused in one line naming the file, line or setting."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from t2ibench.benchmarks.geneval.suite import REWRITTEN, REWRITTEN_DATA, REWRITTEN_FILE, generate_suite, read_rewritten
from t2ibench.config import parse_config
from t2ibench.errors import InputError
from tests.conftest import GENEVAL_REWRITTEN_DATA

RELEASED = GENEVAL_REWRITTEN_DATA / REWRITTEN_FILE
pytestmark = pytest.mark.skipif(not RELEASED.is_file(), reason="GenEval's rewritten prompts are not available")


def judged(record: dict) -> tuple:
    return record["tag"], record["include"], record.get("exclude", [])


def test_the_released_file_rewords_every_official_prompt_and_keeps_what_is_judged():
    from t2ibench.hashing import file_sha256

    assert file_sha256(RELEASED) == REWRITTEN.file(REWRITTEN_FILE).sha256
    texts = read_rewritten(RELEASED)
    official = generate_suite()
    assert sorted(texts) == list(range(len(official))) == list(range(553))
    import json

    lines = [json.loads(line) for line in RELEASED.read_text().splitlines()]
    assert [judged(r) for r in lines] == [judged(r) for r in official]  # an independent reading of the same claim
    assert all(texts[i] != r["prompt"] for i, r in enumerate(official))
    words = sorted(len(t.split()) for t in texts.values())
    assert words[len(words) // 2] > 5 * sorted(len(r["prompt"].split()) for r in official)[len(official) // 2]


def reworded(tmp_path: Path, change) -> Path:
    """A copy of the released file with its lines changed by ``change(lines)``."""
    lines = RELEASED.read_text().splitlines()
    change(lines)
    path = tmp_path / REWRITTEN_FILE
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda ls: ls.__setitem__(9, ls[9].replace('"count": 1', '"count": 2', 1)),
         r":10: not a rewrite of GenEval's prompt 9"),
        (lambda ls: ls.__setitem__(300, ls[301]), r":301: not a rewrite of GenEval's prompt 300"),
        (lambda ls: ls.pop(), r"552 rewritten prompts; GenEval's official suite has 553"),
        (lambda ls: ls.append(ls[0]), r":554: GenEval's official suite has 553 prompts; this file has more"),
        (lambda ls: ls.__setitem__(0, ls[0].replace('"prompt"', '"promt"')), r":1: .*unknown key 'promt'"),
        (lambda ls: ls.__setitem__(4, "{not json"), r":5:"),
    ],
    ids=["count-changed", "lines-swapped", "truncated", "extra-line", "misspelt-key", "not-json"],
)  # fmt: skip
def test_a_file_that_is_not_the_official_suite_reworded_is_refused_naming_the_line(tmp_path, change, message):
    path = reworded(tmp_path, change)
    with pytest.raises(InputError, match=message) as err:
        read_rewritten(path)
    assert "\n" not in str(err.value)


def config(*, wording: str = "rewritten", **extra) -> dict:
    """Two tiny models with the same generator, the second given ``wording``; one prompt per task."""
    generator = {"model": "tiny-random:0", "steps": 2, "images_per_prompt": 1, "dtype": "float32"}
    raw = {
        "name": "x",
        "benchmarks": {"geneval": {"limit_per_task": 1}},
        "models": [{"name": "a", "generator": generator}, {"name": "r", "generator": generator, "wording": wording}],
        "evaluators": {"clip": {"backend": "open_clip", "model": "tiny-random"}},
    }
    for key, value in extra.items():
        raw[key] = {**raw.get(key, {}), **value}
    return raw


def plan_of(raw: dict, root: Path):
    from t2ibench.pipeline import plan_refresh, select_prompts
    from t2ibench.workspace import Workspace

    cfg = parse_config(raw)
    ws = Workspace(root, cfg.outputs)
    return plan_refresh(cfg, ws, select_prompts(cfg.spine_prompts), "r")


def place_release(root: Path) -> Path:
    target = root / REWRITTEN_DATA
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(RELEASED, target)
    return target


def test_a_models_wording_gives_it_the_rewrites_under_a_suite_of_their_own_and_changes_nothing_else(tmp_path):
    place_release(tmp_path)
    plan = plan_of(config(), tmp_path)
    a, r = plan.models
    texts = read_rewritten(RELEASED)
    calls = {m.model.name: {c.step: c for c in m.calls} for m in plan.models}
    given = {m: dict(calls[m]["generate"].params["prompts"]) for m in ("a", "r")}
    assert given["a"].keys() == given["r"].keys()
    assert len(given["a"]) == 6
    for i, record in given["r"].items():
        assert record["prompt"] == texts[i]  # the generator reads the rewrite
        assert judged(record) == judged(given["a"][i])  # and is judged on the same objects
        assert record["prompt"] != given["a"][i]["prompt"]
    assert dict(calls["r"]["geneval"].params["prompts"]) == given["r"]
    assert calls["a"]["store"].params["suite"] == "geneval"
    assert calls["r"]["store"].params["suite"] == "geneval-rewritten"
    assert a.model_hash != r.model_hash  # keyed by the texts
    assert a.evaluator_hash != r.evaluator_hash
    alone = plan_of({**config(), "models": config()["models"][:1]}, tmp_path / "alone")
    assert (alone.models[0].model_hash, alone.models[0].evaluator_hash) == (a.model_hash, a.evaluator_hash)
    # the same wording and file again: the same versions (nothing random, nothing from the clock)
    again = plan_of(config(), tmp_path).models[1]
    assert (again.model_hash, again.evaluator_hash) == (r.model_hash, r.evaluator_hash)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (config(benchmarks={"geneval": {"seed": 1}}),
         r"models\[1\]\.wording: rewritten prompts exist for GenEval's official suite only"),
        (config(benchmarks={"geneval": {"per_task": 10}}),
         r"models\[1\]\.wording: .*official suite only.*per_task 10"),
        (config(evaluators={"clip": {"backend": "mobilenet+structure"}}),
         r"models\[1\]\.wording: the structure embedder"),
    ],
    ids=["another-seed", "another-size", "structure-embedder"],
)  # fmt: skip
def test_a_wording_the_refresh_cannot_honour_is_refused_naming_the_model(tmp_path, raw, message):
    """Refused when the config is read (before a run is recorded or anything is fetched), naming the file."""
    with pytest.raises(InputError, match=message) as err:
        parse_config(raw, source="c.yaml")
    assert str(err.value).startswith("c.yaml")
    assert "\n" not in str(err.value)


def test_an_unknown_wording_is_a_config_error_with_a_suggestion():
    with pytest.raises(InputError, match=r"models\[1\]\.wording.*rewriten.*did you mean 'rewritten'"):
        parse_config(config(wording="rewriten"), source="c.yaml")


def test_a_missing_or_edited_file_is_refused_before_any_work(tmp_path, monkeypatch):
    """The refresh acquires the file where a model needs it: from the local copy the release's variable names
    (verified), never over an edited copy at the release's own place; nothing when no model is reworded."""
    from t2ibench.benchmarks.geneval.plan import acquire_rewritten
    from t2ibench.hashing import file_sha256

    monkeypatch.setenv(REWRITTEN.env, str(GENEVAL_REWRITTEN_DATA))
    cfg = parse_config(config())
    (got,) = acquire_rewritten(cfg, tmp_path)
    assert got == tmp_path / REWRITTEN_DATA
    assert file_sha256(got) == REWRITTEN.file(REWRITTEN_FILE).sha256
    assert acquire_rewritten(parse_config(config(wording="original")), tmp_path / "none") == []
    got.write_text(got.read_text().replace("bench", "bunch", 1))
    with pytest.raises(InputError, match=r"benchmarks\.geneval\.rewritten .*edited or damaged"):
        acquire_rewritten(cfg, tmp_path)
    with pytest.raises(
        InputError,
        match=r"models\[1\]\.wording: .*empty/data/external/geneval_rewritten/.*: no "
        r"rewritten prompt file \(benchmarks\.geneval\.rewritten\); `t2ibench data fetch",
    ):
        plan_of(config(), tmp_path / "empty")  # a plan without the file (gc, say): refused, naming it and the fix


def test_the_report_marks_rewritten_rows_and_says_why():
    from t2ibench.benchmarks.geneval.report_pages import REWRITTEN_MARK, row_mark, wording_of

    data = {"verdicts": [{"model": "a", "suite": "geneval"}, {"model": "r", "suite": "geneval-rewritten"}]}
    assert (row_mark(data, "a"), row_mark(data, "r")) == ("", REWRITTEN_MARK)
    assert wording_of("geneval") is None
    assert "rewritten" in (wording_of("geneval-rewritten") or "")


# -- the command line: `--wording rewritten` on GenEval's verbs -----------------------------------------------------


def test_the_command_lines_wording_gives_the_official_records_their_rewrites(tmp_path, capsys):
    """`prompts geneval --wording rewritten` writes the official records with the file's texts (what `generate` makes
    images for and `evaluate` / `summary` check folders against); nothing else of a record changes."""
    from t2ibench.cli import main

    out = tmp_path / "m.jsonl"
    assert main(["prompts", "geneval", "--wording", "rewritten", "--rewritten", str(RELEASED), "--out", str(out)]) == 0
    import json

    written = [json.loads(line) for line in out.read_text().splitlines()]
    texts = read_rewritten(RELEASED)
    official = generate_suite()
    assert [r["prompt"] for r in written] == [texts[i] for i in range(553)]
    assert [{k: v for k, v in r.items() if k != "prompt"} for r in written] == [
        {k: v for k, v in r.items() if k != "prompt"} for r in official
    ]
    capsys.readouterr()
    # the default place, where `t2ibench data fetch` puts it, missing here: one line naming the option and the fix
    monkey_cwd = tmp_path / "empty"
    monkey_cwd.mkdir()
    import os

    here = os.getcwd()
    os.chdir(monkey_cwd)
    try:
        assert main(["prompts", "geneval", "--wording", "rewritten"]) == 2
    finally:
        os.chdir(here)
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "--wording rewritten (--rewritten): data/external/geneval_rewritten/evaluation_metadata_long.jsonl: no "
        "rewritten prompt file; `t2ibench data fetch geneval_rewritten --out data/external/geneval_rewritten` "
        "fetches the pinned one"
    )
    assert len(err.splitlines()) == 1
    # a damaged file is refused naming its line, as the refresh refuses it
    bad = reworded(tmp_path, lambda ls: ls.__setitem__(9, ls[9].replace('"count": 1', '"count": 2', 1)))
    assert main(["prompts", "geneval", "--wording", "rewritten", "--rewritten", str(bad)]) == 2
    assert ":10: not a rewrite of GenEval's prompt 9" in capsys.readouterr().err


def test_a_folder_is_judged_against_the_wording_it_was_made_for_and_says_so(tmp_path):
    """A folder generated from the rewritten prompts matches only the reworded suite (its metadata holds the texts
    the generator read); `evaluate`'s caveat marks the numbers † whatever named the wording (also a --metadata
    file of rewrites), and says nothing for GenEval's templated prompts."""
    import json
    from types import SimpleNamespace

    from t2ibench.benchmarks import benchmark
    from t2ibench.benchmarks.geneval.evaluate import scan_folder
    from t2ibench.benchmarks.geneval.suite import reword_records

    official = generate_suite()
    long = reword_records(official, "rewritten", RELEASED, where="--wording rewritten")
    from PIL import Image

    for index in (0, 200):
        folder = tmp_path / "imgs" / f"{index:05d}"
        (folder / "samples").mkdir(parents=True)
        (folder / "metadata.jsonl").write_text(json.dumps(long[index]) + "\n")
        Image.new("RGB", (16, 16)).save(folder / "samples" / "00000.png")
    assert len(scan_folder(tmp_path / "imgs", long, images_per_prompt=1).items) == 2
    problems = "\n".join(scan_folder(tmp_path / "imgs", official, images_per_prompt=1).problems)
    assert "00000" in problems  # the templated suite is not what these images were made for
    assert "00200" in problems
    full = SimpleNamespace(lite=False)  # GenEval's own evaluator (its caveat reads only this of it)
    entry = benchmark("geneval")
    assert entry.caveat(official, full) is None
    assert "prompts not in GenEval's templated wording (rewritten" in (entry.caveat(long, full) or "")
    assert entry.caveat(long[:1] + official[1:], full)  # one reworded prompt is enough to be another protocol


def test_the_paper_table_lists_rewritten_prompt_models_apart_and_marked():
    from t2ibench.benchmarks.geneval.report_spine import paper_table

    tasks = {"single_object": 1.0, "two_object": 0.5, "counting": 0.5, "colors": 0.5, "position": 0.5,
             "color_attr": 0.5}  # fmt: skip
    board = [{"model": "r", "overall": 0.9, **tasks}, {"model": "a", "overall": 0.6, **tasks}]
    _, plain = paper_table(board, "")
    assert "†" not in plain
    assert plain.index("| r ") < plain.index("| a ")
    _, marked = paper_table(board, "", {"r": "†"})
    head, tail = marked.split("## † Rewritten prompts")
    assert "| a " in head
    assert "| r" not in head  # never in one ordering with the original-prompt rows
    assert "| r† | 0.90 |" in tail
    assert "rewritten long by an LLM" in tail
