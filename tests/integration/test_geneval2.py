"""`t2ibench evaluate geneval2` end to end: the tiny random-weight Qwen3-VL judge (built locally, loaded from its
folder as a hub checkpoint would be) over a balanced subset of GenEval 2's prompts, as a folder with two images
per prompt and as the reference's image map; numbers labelled as what they are, results resumable, every image
accounted for."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from t2ibench.benchmarks.geneval2.evaluate import read_results
from t2ibench.benchmarks.geneval2.suite import first_per_atom_count, read_geneval2
from t2ibench.cli import main
from t2ibench.models.tiny import build_tiny_qwen3_vl
from tests.conftest import GENEVAL2_DATA

RELEASED = GENEVAL2_DATA / "geneval2_data.jsonl"
pytestmark = pytest.mark.skipif(not RELEASED.is_file(), reason="GenEval 2's file is not available")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from PIL import Image

    root = tmp_path_factory.mktemp("geneval2")
    suite = read_geneval2(RELEASED)
    chosen = first_per_atom_count(suite, 1)  # one prompt per atom count: 8 prompts
    lines = RELEASED.read_text().splitlines()
    subset = root / "subset.jsonl"
    subset.write_text("".join(lines[i] + "\n" for i in chosen))  # a scratch copy for the test only, never kept
    rng = np.random.default_rng(1)
    images = root / "images"
    mapping = {}
    for position, index in enumerate(chosen):
        record = json.loads(lines[index])
        folder = images / f"{position:05d}"
        (folder / "samples").mkdir(parents=True)
        (folder / "metadata.jsonl").write_text(json.dumps(record) + "\n")
        for k in range(2):
            path = folder / "samples" / f"{k:04d}.png"
            Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(path)
        mapping[record["prompt"]] = str(path.relative_to(root))
    (root / "images.json").write_text(json.dumps(mapping))
    return {
        "root": root,
        "suite": subset,
        "images": images,
        "map": root / "images.json",
        "judge": build_tiny_qwen3_vl(root / "judge"),
    }


def evaluate(ws: dict[str, Path], source: Path, *extra: str) -> int:
    return main(
        [
            "evaluate",
            "geneval2",
            str(source),
            "--suite",
            str(ws["suite"]),
            "--subset",
            "--judge-model",
            str(ws["judge"]),
            "--dtype",
            "float32",
            "--device",
            "cpu",
            "--quiet",
            *extra,
        ]
    )


@pytest.fixture(scope="module")
def folder_run(workspace: dict[str, Path]) -> tuple[Path, Path, str, str]:
    """The folder judged once: (results, tables JSON, stdout, stderr)."""
    import contextlib
    import io

    out = workspace["root"] / "folder.results.jsonl"
    summary = workspace["root"] / "tables.json"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = evaluate(
            workspace, workspace["images"], "--out", str(out), "--json", str(summary), "--images-per-prompt", "2"
        )
    assert code == 0, stderr.getvalue()
    return out, summary, stdout.getvalue(), stderr.getvalue()


def test_a_folder_is_judged_into_the_reference_tables(workspace, folder_run):
    from types import SimpleNamespace

    out, summary, stdout, stderr = folder_run
    printed = SimpleNamespace(out=stdout, err=stderr)

    # labelled: another suite file and another judge than the paper's
    assert "(not the released GenEval 2 file; judge " in printed.out
    assert "not the paper's Qwen/Qwen3-VL-8B-Instruct: not comparable with published numbers)" in printed.out
    assert "Loading weights" not in printed.err  # transformers' own bars stay off the console
    assert "wrote " in printed.err
    assert "Soft-TIFA AM" in printed.out
    assert "3 atoms" in printed.out
    assert "10 atoms" in printed.out
    results = read_results(out)
    assert len(results) == 16  # 8 prompts × 2 images, every one accounted for
    questions = sum(len(r.questions) for r in results)
    assert questions == 2 * sum(len(json.loads(x)["vqa_list"]) for x in workspace["suite"].read_text().splitlines())
    assert all(0.0 <= q.probability <= 1.0 + 1e-6 for r in results for q in r.questions)
    protocol = results[0].protocol
    assert protocol["answer_rule"] == "reference"
    assert protocol["judge"]["backend"] == "qwen3-vl"
    assert protocol["judge"]["loaded_dtype"] == "float32"
    tables = json.loads(summary.read_text())
    assert {row["table"] for row in tables["rows"]} == {"overall", "skill", "atom_count"}
    overall = {row["key"]: row for row in tables["rows"] if row["table"] == "overall"}
    assert set(overall) == {"soft_tifa_am", "soft_tifa_gm", "tifa", "vqascore"}
    am = overall["soft_tifa_am"]
    assert am["ci_low"] <= am["estimate"] <= am["ci_high"]
    assert am["prompts"] == 8
    # the two images of a prompt are averaged per image, then over prompts (the tables' k-image rule)
    per_prompt: dict[int, list[float]] = {}
    for r in results:
        per_prompt.setdefault(r.prompt_index, []).append(float(np.mean([q.probability for q in r.questions])))
    assert am["estimate"] == pytest.approx(100 * np.mean([np.mean(v) for v in per_prompt.values()]), abs=1e-9)


def test_the_image_map_gives_the_same_answers_as_the_folder_for_the_same_images(workspace, folder_run, capsys):
    out = workspace["root"] / "map.results.jsonl"
    assert evaluate(workspace, workspace["map"], "--out", str(out), "--answer-rule", "unique") == 0
    capsys.readouterr()
    by_map = {r.prompt_index: r for r in read_results(out)}
    folder = {(r.prompt_index, r.sample): r for r in read_results(folder_run[0])}
    assert len(by_map) == 8
    for index, r in by_map.items():
        same = folder[(index, "0001")]  # the map names each prompt's second image
        assert [q.top_text for q in r.questions] == [q.top_text for q in same.questions]
        for mine, theirs in zip(r.questions, same.questions, strict=True):
            if mine.skill == "count":  # 'unique' leaves out the bare space the reference rule adds
                assert mine.probability <= theirs.probability + 1e-6
            else:
                assert mine.probability == pytest.approx(theirs.probability, abs=1e-5)
    assert r.protocol["answer_rule"] == "unique"


def test_a_missing_prompt_stops_the_evaluation_unless_allowed(workspace, capsys):
    mapping = json.loads(workspace["map"].read_text())
    mapping.pop(next(iter(mapping)))
    partial = workspace["root"] / "partial-map.json"
    partial.write_text(json.dumps(mapping))
    out = workspace["root"] / "partial.results.jsonl"
    assert evaluate(workspace, partial, "--out", str(out)) == 1
    err = capsys.readouterr().err
    assert "missing prompts (1): 0" in err
    assert "--allow-missing" in err
    assert not out.exists()
    assert evaluate(workspace, partial, "--out", str(out), "--allow-missing") == 0
    assert len(read_results(out)) == 7


def test_the_default_out_works_and_an_output_onto_a_judged_image_is_refused(workspace, capsys):
    assert evaluate(workspace, workspace["map"]) == 0  # the default: images.results.jsonl beside the map
    assert (workspace["root"] / "images.results.jsonl").is_file()
    capsys.readouterr()
    image = workspace["root"] / json.loads(workspace["map"].read_text())[json.loads(
        workspace["suite"].read_text().splitlines()[0])["prompt"]]  # fmt: skip
    before = image.read_bytes()
    assert evaluate(workspace, workspace["map"], "--json", str(image)) == 2
    assert "--json" in capsys.readouterr().err
    assert image.read_bytes() == before


def test_a_partial_evaluation_says_so_in_its_label_and_its_json_records_the_protocol(workspace, capsys):
    mapping = json.loads(workspace["map"].read_text())
    for key in list(mapping)[:5]:
        del mapping[key]
    three = workspace["root"] / "three.json"
    three.write_text(json.dumps(mapping))
    summary = workspace["root"] / "three.tables.json"
    assert evaluate(workspace, three, "--allow-missing", "--json", str(summary)) == 0
    assert "3 of 8 prompts" in capsys.readouterr().out
    evaluation = json.loads(summary.read_text())["evaluation"]
    assert evaluation["prompts_judged"] == 3
    assert evaluation["suite_prompts"] == 8
    assert evaluation["released_suite"] is False
    assert "3 of 8 prompts" in evaluation["caveats"]
    assert evaluation["protocol"]["judge"]["weights"].startswith("sha256:")  # a local folder: its files' checksum
    assert evaluation["protocol"]["suite_sha256"] == evaluation["suite_sha256"]


def test_an_evaluation_stored_twice_keeps_one_copy_and_its_tables_agree_with_sql(workspace, capsys):
    from t2ibench.store import Store

    store = workspace["root"] / "results.duckdb"
    out = workspace["root"] / "stored.results.jsonl"
    summary = workspace["root"] / "stored.tables.json"
    args = ("--out", str(out), "--json", str(summary), "--store", str(store), "--model", "folder-model")
    for _ in range(2):  # the same images and protocol twice: one version, its rows replaced, never duplicated
        assert evaluate(workspace, workspace["images"], *args) == 0
    assert "answers and" in capsys.readouterr().err
    s = Store(store)
    results = read_results(out)
    answers = s.rows("SELECT count(*) AS n, count(DISTINCT evaluator_hash) AS protocols FROM vqa_answers")
    assert answers == [{"n": sum(len(r.questions) + 1 for r in results), "protocols": 1}]
    cells = json.loads(summary.read_text())["rows"]
    stored = s.rows("SELECT table_name, key, estimate, prompts FROM geneval2_scores ORDER BY table_name, key")
    assert len(stored) == len(cells)
    by_key = {(c["table"], c["key"]): c for c in cells}
    for row in stored:
        assert row["estimate"] == pytest.approx(by_key[(row["table_name"], row["key"])]["estimate"], abs=1e-12)
    # every prompt has two images: SQL's pooled average over the stored answers equals the stored skill table
    rates = {r["skill"]: r["soft_tifa_am"] for r in s.rows("SELECT skill, soft_tifa_am FROM geneval2_skill_rates")}
    for row in stored:
        if row["table_name"] == "skill":
            assert rates[row["key"]] == pytest.approx(row["estimate"], abs=1e-9)
    # another answer rule is another protocol: stored beside, with another protocol_key
    assert evaluate(workspace, workspace["images"], *args, "--answer-rule", "unique") == 0
    keys = s.rows("SELECT DISTINCT answer_rule, protocol_key FROM geneval2_scores ORDER BY answer_rule")
    assert [k["answer_rule"] for k in keys] == ["reference", "unique"]
    assert keys[0]["protocol_key"] != keys[1]["protocol_key"]
    capsys.readouterr()
    # --model without --store is refused
    assert evaluate(workspace, workspace["images"], "--model", "x", "--out", str(out)) == 2
    assert "--model names the model in a results store" in capsys.readouterr().err


def test_the_report_shows_stored_evaluations_flags_two_protocols_and_drills_down_to_every_question(workspace):
    from t2ibench.report.leaderboard import render_reports

    store = workspace["root"] / "report.duckdb"
    for rule in ("reference", "unique"):
        code = evaluate(workspace, workspace["map"], "--out", str(workspace["root"] / f"{rule}.jsonl"),
                        "--store", str(store), "--model", "map-model", "--answer-rule", rule)  # fmt: skip
        assert code == 0
    out = workspace["root"] / "report"
    result = render_reports(store, out)
    html = Path(result["html"]).read_text()
    assert 'id="geneval2"' in html
    assert 'id="geneval2-protocol-flag"' in html  # two answer rules: two protocols, not ranked across
    assert "measured under 2 protocols" in html
    pages = result["benchmark_pages"]["geneval2"]
    assert len(pages) == 2
    page = Path(next(iter(pages.values()))).read_text()
    questions = sum(len(json.loads(x)["vqa_list"]) + 1 for x in workspace["suite"].read_text().splitlines())
    assert page.count('data-skill="') == questions  # every question of every image (one per prompt) and VQAScore
    assert "Per atom count (Soft-TIFA GM)" in page
    markdown = Path(result["markdown"]).read_text()
    assert "## GenEval 2" in markdown
    assert render_reports(store, out)["rendered"] is False  # nothing changed: the report is kept


def test_generation_to_tables_offline_tiny_diffusers_then_the_tiny_judge(workspace, tiny_env, capsys):
    """`t2ibench generate geneval2` (tiny random diffusers, 2 images per prompt) into GenEval's layout with each
    suite line as its metadata, then `evaluate geneval2` on that folder: the whole path from prompts to tables."""
    images = workspace["root"] / "generated"
    made = main(
        ["generate", "geneval2", "--suite", str(workspace["suite"]), "--subset", "--model", "tiny-random",
         "--steps", "2", "--images-per-prompt", "2", "--limit", "3", "--out", str(images), "--device", "cpu",
         "--quiet"]
    )  # fmt: skip
    assert made == 0
    lines = workspace["suite"].read_text().splitlines()
    assert json.loads((images / "00000" / "metadata.jsonl").read_text()) == json.loads(lines[0])
    assert evaluate(workspace, images, "--allow-missing", "--images-per-prompt", "2") == 0
    printed = capsys.readouterr()
    assert "3 of 8 prompts" in printed.out
    assert len(read_results(images / "results.jsonl")) == 6
    # GenEval's suite options are refused for GenEval 2's prompts, never ignored
    assert main(["generate", "geneval2", "--suite", str(workspace["suite"]), "--subset", "--per-task", "3",
                 "--out", str(workspace["root"] / "x")]) == 2  # fmt: skip
    assert "--per-task: suite options of geneval, not of geneval2" in capsys.readouterr().err
    # and GenEval 2's for GenEval's (each benchmark's suite options are its entry's, grouped in `generate --help`)
    assert main(["generate", "geneval", "--suite", str(workspace["suite"]), "--subset",
                 "--out", str(workspace["root"] / "x")]) == 2  # fmt: skip
    assert "--suite, --subset: suite options of geneval2, not of geneval" in capsys.readouterr().err
    assert not (workspace["root"] / "x").exists()
