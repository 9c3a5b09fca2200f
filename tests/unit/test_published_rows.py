"""Published GenEval rows as reviewed data, placed by protocol, and the reproduction check: the built-in tables load
with every row's source, protocol and reading, and their numbers are read back from each row's printed text (a
slipped digit is refused); a measured model is compared with a published row only under the same protocol (prompts,
evaluator, images per prompt), in the store's ``geneval_reproduction`` view — checked here against planted numbers
that hit and miss, computed independently — and the report places the rest apart, naming what differs."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
import yaml

from t2ibench.benchmarks import benchmark
from t2ibench.benchmarks.geneval.columns_protocol import OFFICIAL_PROMPTS
from t2ibench.benchmarks.geneval.metrics_tasks import TASKS
from t2ibench.benchmarks.geneval.suite_published import COMPARED, load_published
from t2ibench.errors import InputError
from t2ibench.store import Store

CURRENT = Path(__file__).parents[2] / "src/t2ibench/benchmarks/geneval/data/published_geneval_current.yaml"
# the current models the published file must cover (issue 39), each as a pattern of the names its sources print
REQUIRED = {
    "SD3 Medium": r"SD3[- ]?[Mm]edium",
    "SD3.5 Large": r"SD3\.5 Large",
    "FLUX.1-dev": r"(?i)flux(\.1)?[- ]?(1-)?(\[)?dev",
    "FLUX.1-schnell": r"(?i)flux(\.1)?-schnell",
    "SANA": r"(?i)sana",
    "Janus-Pro-7B": r"Janus-Pro-7B",
    "HiDream-I1": r"HiDream-I1",
    "Qwen-Image": r"Qwen-Image",
    "BAGEL": r"BAGEL",
    "PixArt-Σ": r"PixArt-Σ",
}


def test_the_current_models_published_rows_cover_the_field_with_sources_and_protocols():
    tables = load_published("geneval-current")
    rows = [(t, r) for t in tables for r in t.rows]
    for name, pattern in REQUIRED.items():
        assert any(re.search(pattern, r.model) for _, r in rows), name
    assert len(tables) >= 7
    assert len({t.source for t in tables}) == len(tables)
    for t, r in rows:
        assert t.citation
        assert r.verified
        assert r.printed  # every number read back from the row as printed
        assert all(getattr(r.protocol, f) for f in (*COMPARED, "resolution"))
    # rewritten-prompt rows are the BAGEL paper's † rows (and the README's rewriter row): FLUX.1-dev 0.82 among them
    marked = {(t.source, r.model, r.overall) for t, r in rows if r.mark}
    assert ("BAGEL paper, Table 5", "FLUX.1-dev", 0.82) in marked
    assert all(source.startswith("BAGEL") for source, _, _ in marked)
    # "SD3-Medium 0.74" is the SD3 paper's largest model (depth 38, 1024², DPO) cell for cell: every such row says so
    largest = next(r for t, r in rows if t.source.startswith("SD3") and r.protocol.resolution == "1024x1024")
    for t, r in rows:
        if re.search(REQUIRED["SD3 Medium"], r.model) and r.overall == 0.74:
            assert "depth 38" in (r.note or ""), t.source
            assert all(r.tasks[k] in (None, largest.tasks[k]) for k in TASKS)


def test_a_slipped_digit_anywhere_in_the_published_file_is_refused(tmp_path):
    """Each row's numbers are read back from its printed text: change any one (here every 7th score) and the file
    is refused, naming the table and row."""
    text = CURRENT.read_text()
    names = "|".join(("overall", *TASKS))
    scores = list(re.finditer(rf"[{{ ,](?:{names}): (?P<v>0\.\d+|1\.0)\b", text))
    assert len(scores) > 300
    for match in scores[::7]:
        wrong = f"{(float(match['v']) + 0.01) % 1:.2f}"
        path = tmp_path / "slip.yaml"
        path.write_text(text[: match.start("v")] + wrong + text[match.end("v") :])
        with pytest.raises(InputError, match=r"slip\.yaml: table \d+: row \d+: ") as err:
            load_published(path)
        assert "printed" in str(err.value) or "not the mean" in str(err.value)


# -- the reproduction check on a planted store ---------------------------------------------------------------------

TABLE2 = {r.model: r for r in load_published("geneval-table2")[0].rows}


def paper_version(evaluators: dict | None = None, **generator):
    """SD v1.5 as configs/geneval_paper.yaml plans it (one prompt per task): its generator spec, suite and the
    evaluator settings the refresh stores (``ModelPlan.protocol``)."""
    from t2ibench.config import parse_config
    from t2ibench.pipeline import plan_refresh, select_prompts
    from t2ibench.workspace import Workspace

    raw = yaml.safe_load((Path(__file__).parents[2] / "configs/geneval_paper.yaml").read_text())
    raw["benchmarks"] = {"geneval": {"limit_per_task": 1}}
    raw["models"] = [{**raw["models"][0], "generator": {**raw["models"][0]["generator"], **generator}}]
    raw["evaluators"] = {k: v for k, v in raw["evaluators"].items() if k not in ("geneval2", "t2i_compbench")}
    raw["evaluators"].update(evaluators or {})
    cfg = parse_config(raw)
    root = Path(tempfile.mkdtemp())
    plan = plan_refresh(cfg, Workspace(root, cfg.outputs), select_prompts(cfg.spine_prompts), "r")
    (m,) = plan.models
    suite = next(c for c in m.calls if c.step == "store").params["suite"]
    return m, suite


def plant(
    store: Store,
    name: str,
    version,
    suite: str,
    scores: dict[str, tuple[float, float, float]],
    run: int,
    prompts: int = OFFICIAL_PROMPTS,
):
    """A stored, current model version with planted Table-2 rows (accuracy, ci_low, ci_high per task), judged on the
    first ``prompts`` prompts of ``suite`` (one verdict each: the protocol view counts the prompts judged)."""
    from t2ibench.hashing import to_plain

    m = version
    key = {"model": name, "model_hash": m.model_hash + name, "evaluator_hash": m.evaluator_hash}
    with store.write() as con:
        store.upsert(con, "models", [{"model": name, "model_hash": key["model_hash"], "label": name,
                                      "backend": m.model.generator.backend, "model_id": m.model.generator.model,
                                      "sampling": to_plain(m.model.generator), "smoke": False}])  # fmt: skip
        store.upsert(con, "evaluators", [{"evaluator_hash": m.evaluator_hash, "settings": m.protocol, "lite": []}])
        store.upsert(con, "verdicts", [{**key, "suite": suite, "prompt_index": i, "sample": 0, "task": "single_object",
                                        "correct": True, "reason": "ok"} for i in range(prompts)])  # fmt: skip
        store.upsert(con, "geneval_scores", [
            {**key, "task": t, "accuracy": a, "ci_low": lo, "ci_high": hi, "ci_level": 0.95, "images": 400,
             "prompts": 100, "correct": round(400 * a), "tasks": 6} for t, (a, lo, hi) in scores.items()])  # fmt: skip
        store.upsert(con, "runs", [{"run_id": f"r{run}", "status": "completed",
                                    "started_at": f"2026-01-01 00:{run:02d}:00",
                                    "finished_at": f"2026-01-01 00:{run:02d}:30"}])  # fmt: skip
        store.upsert(con, "run_models", [{"run_id": f"r{run}", **key}])


def around(values: dict[str, float], shift: float, half: float) -> dict[str, tuple[float, float, float]]:
    return {t: (v + shift, v + shift - half, v + shift + half) for t, v in values.items()}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Four current models: two reproduce Table 2's SD v1.5 protocol (one hitting, one missing), one is judged by
    the lite evaluator, one generates 1 image per prompt; published rows recorded as a report records them."""
    sd15 = TABLE2["SD v1.5"]
    published = {"overall": sd15.overall, **sd15.tasks}
    store = Store(tmp_path_factory.mktemp("published") / "t.duckdb")
    full, suite = paper_version()
    plant(store, "hit", full, suite, around(published, 0.01, 0.04), 0)
    miss = around(published, 0.0, 0.03)
    miss["counting"] = (0.55, 0.50, 0.60)  # 0.35 published: far outside
    miss["position"] = (0.12, 0.095, 0.14)  # 0.04 published: outside even with its rounding
    miss["colors"] = (0.80, 0.764, 0.83)  # 0.76 published: inside only through its ±0.005 rounding
    plant(store, "miss", full, suite, miss, 1)
    lite, _ = paper_version({"geneval": {"detector": {"backend": "opencv-ssd"}, "colour": {"backend": "lite"},
                                         "threshold": 0.55, "counting_threshold": 0.6}})  # fmt: skip
    plant(store, "lite", lite, suite, around(published, 0.0, 0.05), 2)
    one, _ = paper_version(images_per_prompt=1)
    plant(store, "one-image", one, suite, around(published, 0.0, 0.05), 3)
    plant(store, "subset", full, suite, around(published, 0.0, 0.05), 4, prompts=6)  # 6 of the 553 prompts
    benchmark("geneval").record_published(store.path, None)
    return store, published, miss


def test_the_reproduction_view_compares_only_under_the_same_protocol_and_agrees_with_a_brute_force_check(planted):
    store, published, miss = planted
    rows = store.rows("SELECT * FROM geneval_reproduction")
    assert {r["model"] for r in rows} == {"hit", "miss"}  # not the lite evaluator, 1 image per prompt, 6 prompts
    assert {(r["source"], r["published_model"]) for r in rows} == {("GenEval paper, Table 2", "SD v1.5")}
    for model, planted_scores in (("hit", around(published, 0.01, 0.04)), ("miss", miss)):
        mine = {r["task"]: r for r in rows if r["model"] == model}
        assert list(mine) == ["overall", *TASKS]  # the view's order
        for task, (acc, lo, hi) in planted_scores.items():
            p = published[task]
            assert mine[task]["published"] == p
            assert mine[task]["measured"] == pytest.approx(acc)
            assert mine[task]["difference"] == pytest.approx(acc - p)
            assert mine[task]["inside"] == (lo - 0.005 <= p <= hi + 0.005)  # brute force, rounding included
    outside = {r["task"] for r in rows if r["model"] == "miss" and not r["inside"]}
    assert outside == {"counting", "position"}
    assert all(r["inside"] for r in rows if r["model"] == "hit")
    measured = {r["model"]: r for r in store.rows("SELECT * FROM geneval_measured_protocols")}
    assert (measured["hit"]["prompts"], measured["hit"]["detector"], measured["hit"]["images_per_prompt"]) == (
        "original", "mask2former", 4)  # fmt: skip
    assert measured["subset"]["prompts"] == "original, 6 of 553 prompts"
    assert measured["lite"]["detector"] == "ssd-mobilenet-v2-lite"
    assert measured["one-image"]["images_per_prompt"] == 1


def test_a_changed_threshold_or_colour_model_is_another_evaluator():
    from t2ibench.benchmarks.geneval.columns import _measured_detector

    store = Store(Path(tempfile.mkdtemp()) / "t.duckdb")
    store.initialise()
    full, _ = paper_version()

    def named(settings: dict) -> str:
        sql = f"SELECT {_measured_detector()} AS d FROM (SELECT CAST(? AS JSON) AS settings) e"
        return str(store.rows(sql, [json.dumps(settings)])[0]["d"])

    base = full.protocol
    assert named(base) == "mask2former"
    changed = json.loads(json.dumps(base))
    changed["geneval"]["geneval"]["threshold"] = 0.5
    assert named(changed).endswith("thresholds changed")
    changed = json.loads(json.dumps(base))
    changed["geneval"]["geneval"]["colour"]["arch"] = "ViT-B-32"
    assert "colour clip:ViT-B-32" in named(changed)
    changed = json.loads(json.dumps(base))
    changed["geneval"]["geneval"]["detector"]["model"] = "someone/mask2former-swin-large"
    assert named(changed).startswith("hf:someone/mask2former-swin-large")
    changed = json.loads(json.dumps(base))
    changed["geneval"]["geneval"]["detector"]["resize"] = [256, 400]  # another input scale: another detector
    assert named(changed) != "mask2former"


def test_the_official_size_and_the_pinned_rewrite_are_what_the_suite_says():
    from t2ibench.benchmarks.geneval.columns_protocol import REWRITTEN_REVISION, wording_words
    from t2ibench.benchmarks.geneval.suite import REWRITTEN, generate_suite

    assert len(generate_suite()) == OFFICIAL_PROMPTS
    assert REWRITTEN.revision == REWRITTEN_REVISION
    assert wording_words("rewritten") == f"rewritten:bagel-long@{REWRITTEN_REVISION[:7]}"


def test_a_class_subset_of_the_official_seed_and_size_is_not_the_official_suite():
    from t2ibench.benchmarks.geneval.options import GenEvalSuite

    entry = benchmark("geneval")
    assert entry.suite_id(GenEvalSuite()) == "geneval"
    assert entry.suite_id(GenEvalSuite(limit_per_task=1)) == "geneval"  # a subset of its prompts: the view counts them
    subset = entry.suite_id(GenEvalSuite(classes=("dog", "cat", "person")))
    assert subset.startswith("geneval-s43-n100-c")
    assert subset != entry.suite_id(GenEvalSuite(classes=("dog", "cat", "horse")))
    assert entry.suite_id(GenEvalSuite(seed=1)) == "geneval-s1-n100"  # names unchanged elsewhere


def test_the_report_places_published_rows_by_protocol_and_shows_the_check(planted, tmp_path):
    from t2ibench.report.leaderboard import render_reports

    store, _, _ = planted
    out = render_reports(store.path, tmp_path / "report")
    html = Path(out["html"]).read_text()
    board = html.split('id="leaderboard"')[1].split("</table>")[0]
    # Table 2's rows share the measured Mask2Former protocol: in the table, marked published, never ranked
    assert board.count(">published</td>") == len(TABLE2)
    assert "SD v1.5 <span" in board
    apart = html.split('<table id="published"')[1].split("</table>")[0]
    assert "GenEval paper, Table 2" not in apart  # not listed twice
    assert "SD v1.5 <span" in apart  # the SD3 paper's copy of the row: its source states no protocol
    # the current models' rows state neither detector nor images per prompt: apart, saying so
    assert "Qwen-Image" in apart
    assert "detector: unstated vs Mask2Former Swin-S (GenEval&#x27;s evaluator)" in apart
    assert 'select name="prompts" data-filter-for="published"' in html
    assert '<option value="rewritten">rewritten</option>' in html
    section = html.split('id="reproduction"')[1].split("</section>")[0]
    assert "hit: 7 of 7 published values inside our interval; miss: 5 of 7" in section
    card = Path(out["models_html"]["miss"]).read_text()
    assert "SD v1.5 in GenEval paper, Table 2: 5 of 7 published values inside our intervals; outside: counting " in card
    md = Path(out["markdown"]).read_text()
    assert "## Reproduction check" in md
    assert "| miss | SD v1.5 | GenEval paper, Table 2 | counting | 0.55 | [0.50, 0.60] | 0.35 | 0.20 | no |" in md


def test_the_lite_leaderboard_keeps_every_published_row_apart_naming_the_evaluator(tmp_path):
    """On a store measured only with the lite evaluator (as the offline job's), no published row joins the table
    and each says how its protocol differs."""
    from t2ibench.benchmarks.geneval.report_published import placement
    from t2ibench.benchmarks.geneval.report_spine import load_tables

    data = {"measured_protocols": [{"model": "a", "prompts": "suite geneval-s43-n8",
                                    "detector": "ssd-mobilenet-v2-lite", "images_per_prompt": 2,
                                    "resolution": "model default"}]}  # fmt: skip
    placed = placement(data, load_tables(None))
    assert placed
    assert not any(p.models for p in placed)
    sd15 = next(p for p in placed if p.row.model == "SD v1.5")
    assert sd15.differences == (
        "prompts: original vs suite geneval-s43-n8",
        "detector: Mask2Former Swin-S (GenEval's evaluator) vs SSD-MobileNet-v2 lite",
        "images per prompt: 4 vs 2",
    )


def test_a_report_remade_from_the_same_rows_leaves_the_store_file_as_it_was(planted):
    """Recording the published rows and the paired comparisons again, unchanged, writes nothing: a DVC-tracked store
    stays byte for byte what it was."""
    from t2ibench import comparisons
    from t2ibench.hashing import file_sha256

    store, _, _ = planted
    comparisons.record(store)
    benchmark("geneval").record_published(store.path, None)
    before = file_sha256(store.path)
    comparisons.record(store)
    benchmark("geneval").record_published(store.path, None)
    assert file_sha256(store.path) == before
    assert store.replace_if_changed("geneval_published", {}, []) is True  # a change is written
    assert store.rows("SELECT count(*) AS n FROM geneval_published") == [{"n": 0}]
    benchmark("geneval").record_published(store.path, None)


def test_the_same_source_in_two_files_is_refused():
    from t2ibench.benchmarks.geneval.report_spine import load_tables

    with pytest.raises(InputError, match=r"table 'GenEval paper, Table 2' is also in published table geneval-table2"):
        load_tables(["geneval-table2", "geneval-table2"])
