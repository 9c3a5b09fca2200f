"""configs/smoke_benchmarks.yaml refreshed once, offline, with tiny random-weight models: GenEval, GenEval 2 and
T2I-CompBench++ generated, judged, stored with the model version and shown in the report; each of the other two
benchmarks' stored rows identical to what `t2ibench evaluate <benchmark> --store` stores for the same images (one
code path, whichever way in)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from t2ibench.benchmarks.geneval2.evaluate import read_results
from t2ibench.benchmarks.geneval2.suite import first_per_atom_count, read_geneval2
from t2ibench.cli import main
from tests.conftest import GENEVAL2_DATA, GENEVAL_REWRITTEN_DATA

RELEASED = GENEVAL2_DATA / "geneval2_data.jsonl"
REWRITES = GENEVAL_REWRITTEN_DATA / "evaluation_metadata_long.jsonl"  # the refresh's second model reads them
pytestmark = pytest.mark.skipif(
    not (RELEASED.is_file() and REWRITES.is_file()), reason="GenEval 2's file or GenEval's rewrites are not available"
)


def images_of(root: Path, marker: str) -> Path:
    """The refresh's one images folder whose prompt records hold ``marker`` (each benchmark's have their own keys)."""
    found = [p.parent for p in (root / "data" / "images" / "tiny-a").glob("*/manifest.json")
             if marker in next(p.parent.glob("*/metadata.jsonl")).read_text()]  # fmt: skip
    assert len(found) == 1, found
    return found[0]


def same_rows(refresh: Any, cli: Any, query: dict[str, str], names: str, folder: Path) -> None:
    """Every ``query`` gives the same non-empty rows in the refresh's store and the CLI's; the image names (``names``
    rows, in one order) differ only by their base: the workspace against the images ``folder``."""
    for table, sql in query.items():
        ours, theirs = refresh.rows(sql), cli.rows(sql)
        assert ours, table
        assert ours == theirs, table
    pairs = zip(refresh.rows(names), cli.rows(names), strict=True)
    assert all(a["image"] == f"{folder}/{b['image']}" for a, b in pairs)


# -- the refresh ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> tuple[Path, Path, str]:
    """configs/smoke_benchmarks.yaml refreshed once in a scratch workspace, with a second model given GenEval's
    rewritten prompts; GenEval 2's suite and the rewrites fetched by the run from the local copies
    $T2IBENCH_GENEVAL2_DATA and $T2IBENCH_GENEVAL_REWRITTEN_DATA name (as on an offline machine);
    (root, config, console)."""
    from tests.integration._workspace import make_workspace, run

    root = tmp_path_factory.mktemp("refresh-benchmarks")

    def reworded(config: dict[str, Any]) -> None:  # a second model, on GenEval's rewritten prompts only
        config["models"].append({**config["models"][0], "name": "tiny-r", "label": "tiny-random, rewritten prompts",
                                 "wording": "rewritten", "benchmarks": ["geneval"]})  # fmt: skip

    config, env = make_workspace(root, model_cache, models=None, source="smoke_benchmarks", edit=reworded)
    env["T2IBENCH_GENEVAL2_DATA"] = str(GENEVAL2_DATA)
    env["T2IBENCH_GENEVAL_REWRITTEN_DATA"] = str(GENEVAL_REWRITTEN_DATA)
    code, console = run(config, env)
    assert code == 0, console[-4000:]
    return root, config, console


def test_the_refresh_generates_judges_stores_and_shows_geneval2(refreshed):
    """One refresh of both benchmarks: GenEval 2's prompts fetched (pinned bytes), generated into their own folder,
    every question of every image answered and stored with the model version, its tables on the leaderboard and in
    the report; the stored GM is the geometric mean of the stored probabilities, recomputed here."""
    from t2ibench.benchmarks.geneval2.suite import RELEASE_SHA256
    from t2ibench.store import Store
    from tests.integration._workspace import noise, summary_table

    root, _, console = refreshed
    assert noise(console) == [], console
    table = summary_table(console)
    assert table["tiny-a"]["geneval2"] == "computed", console
    assert "2 models × 6 prompts + 8 GenEval 2 prompts" in console
    assert table["tiny-a"]["generate"] == "computed (18 new)", console  # 6 GenEval + 8 GenEval 2 + 4 T2I-CompBench++
    fetched = root / "data" / "external" / "geneval2" / "geneval2_data.jsonl"
    from t2ibench.hashing import file_sha256

    assert file_sha256(fetched) == RELEASE_SHA256
    store = Store(root / "data" / "t2ibench.duckdb")
    (board,) = store.rows("SELECT * FROM leaderboard WHERE model = 'tiny-a'")
    assert board["geneval2_prompts"] == 8
    assert board["geneval2_judge"] == "tiny-random:0"
    answers = store.rows(
        "SELECT a.prompt_index, a.sample, a.probability, a.image FROM vqa_answers a "
        "JOIN geneval2_current g ON g.model = a.model AND g.model_hash = a.model_hash "
        "AND g.geneval2_hash = a.evaluator_hash WHERE a.kind = 'atom'"
    )
    suite = read_geneval2(fetched)
    chosen = [suite.prompts[i] for i in first_per_atom_count(suite, 1)]
    assert len(answers) == sum(len(p.questions) for p in chosen)  # every question of every prompt, one image each
    # the reference's GM: per image the geometric mean of every question's probability (0 if any is 0), then the
    # mean over prompts, ×100 — recomputed here from the stored rows
    by_image: dict[tuple[int, str], list[float]] = {}
    for a in answers:
        by_image.setdefault((a["prompt_index"], a["sample"]), []).append(a["probability"])
    assert {i for i, _ in by_image} == {p.index for p in chosen}
    gm = [0.0 if min(v) == 0 else float(np.exp(np.mean(np.log(v)))) for v in by_image.values()]
    assert board["geneval2_gm"] == pytest.approx(100 * float(np.mean(gm)), rel=1e-12)
    assert board["geneval2_am"] == pytest.approx(100 * float(np.mean([np.mean(v) for v in by_image.values()])))
    images = {a["image"] for a in answers}
    assert all((root / name).is_file() for name in images)  # names relative to the workspace, files there
    report = (root / "reports" / "leaderboard.md").read_text()
    assert "GenEval 2 GM" in report
    assert "## GenEval 2" in report


def test_the_refresh_and_evaluate_give_one_answer_per_question(refreshed, capsys):
    """The same images judged by `t2ibench evaluate geneval2` (the folder the refresh generated, the same tiny
    judge by name): every probability equal to the stored one — one judging path, whichever way in."""
    from t2ibench.store import Store

    root, _, _ = refreshed
    store = Store(root / "data" / "t2ibench.duckdb")
    stored = {
        (r["prompt_index"], r["question_index"]): r["probability"]
        for r in store.rows("SELECT prompt_index, question_index, probability FROM vqa_answers")
    }
    images = images_of(root, '"vqa_list"')
    fetched = root / "data" / "external" / "geneval2" / "geneval2_data.jsonl"
    out = root / "evaluated.jsonl"
    code = main(["evaluate", "geneval2", str(images), "--suite", str(fetched), "--judge-model", "tiny-random:0",
                 "--dtype", "float32", "--device", "cpu", "--allow-missing", "--out", str(out), "--quiet"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    again = {(r.prompt_index, q.index): q.probability for r in read_results(out) for q in r.questions}
    assert again == {k: v for k, v in stored.items() if k[1] >= 0}


def test_a_refresh_stored_and_a_cli_stored_evaluation_of_the_same_images_store_identical_rows(refreshed, capsys):
    """One code path: `t2ibench evaluate geneval2 --store` on the images the refresh generated, with the refresh's
    judge and answer rule, stores the same answers, table cells (with intervals) and protocol as the refresh did —
    only the version columns differ (the refresh's model version and its own evaluation hash, against the images'
    identity and the protocol's hash) and the image names' base (the workspace, against the images folder)."""
    from t2ibench.store import Store

    root, _, _ = refreshed
    images = images_of(root, '"vqa_list"')
    fetched = root / "data" / "external" / "geneval2" / "geneval2_data.jsonl"
    other = root / "cli-store.duckdb"
    code = main(["evaluate", "geneval2", str(images), "--suite", str(fetched), "--judge-model", "tiny-random:0",
                 "--dtype", "float32", "--device", "cpu", "--allow-missing", "--out", str(root / "cli.jsonl"),
                 "--store", str(other), "--model", "tiny-a", "--quiet"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    query = {
        "vqa_answers": "SELECT * EXCLUDE (model_hash, evaluator_hash, image) FROM vqa_answers ORDER BY ALL",
        "benchmark_scores": "SELECT * EXCLUDE (model_hash, evaluator_hash) FROM benchmark_scores "
        "WHERE benchmark = 'geneval2' ORDER BY ALL",
        "benchmark_protocols": "SELECT settings FROM benchmark_protocols "
        "WHERE model = 'tiny-a' AND benchmark = 'geneval2'",
    }
    names = "SELECT prompt_index, sample, question_index, image FROM vqa_answers ORDER BY 1, 2, 3"
    same_rows(Store(root / "data" / "t2ibench.duckdb"), Store(other), query, names, images.relative_to(root))


# -- T2I-CompBench++ in the same refresh -----------------------------------------------------------------------------


def test_the_refresh_generates_judges_stores_and_shows_t2i_compbench(refreshed):
    """T2I-CompBench++'s four smoke prompts (numeracy and non-spatial, two each) generated into their own folder,
    every image judged and stored with what the models said; its table on the leaderboard and in the report, with a
    drill-down page listing every image; each stored category score is the mean of its stored image scores (×100)
    and the headline the mean of the two — recomputed here from the stored rows."""
    from t2ibench.store import Store
    from tests.integration._workspace import summary_table

    root, _, console = refreshed
    assert summary_table(console)["tiny-a"]["t2i_compbench"] == "computed", console
    assert "+ 4 T2I-CompBench++ prompts" in console
    store = Store(root / "data" / "t2ibench.duckdb")
    (board,) = store.rows("SELECT * FROM leaderboard WHERE model = 'tiny-a'")
    images = store.rows(
        "SELECT i.* FROM benchmark_images i JOIN t2i_compbench_current c ON c.model = i.model "
        "AND c.model_hash = i.model_hash AND c.t2i_compbench_hash = i.evaluator_hash ORDER BY prompt_index"
    )
    assert [(r["prompt_index"], r["category"]) for r in images] == [(1500, "non_spatial"), (1501, "non_spatial"),
                                                                    (1800, "numeracy"), (1801, "numeracy")]  # fmt: skip
    assert all((root / r["image"]).is_file() for r in images)
    assert all(json.loads(r["details"]) for r in images)  # what the models said, for the drill-down
    by_category: dict[str, list[float]] = {}
    for r in images:
        by_category.setdefault(r["category"], []).append(r["score"])
    means = {c: 100 * float(np.mean(v)) for c, v in by_category.items()}
    assert board["t2i_compbench_numeracy"] == pytest.approx(means["numeracy"], rel=1e-12)
    assert board["t2i_compbench_non_spatial"] == pytest.approx(means["non_spatial"], rel=1e-12)
    assert board["t2i_compbench_mean"] == pytest.approx(np.mean(list(means.values())), rel=1e-12)
    assert board["t2i_compbench_mean_ci_low"] <= board["t2i_compbench_mean"] <= board["t2i_compbench_mean_ci_high"]
    assert (board["t2i_compbench_prompts"], board["t2i_compbench_categories"]) == (4, "non_spatial,numeracy")
    assert board["t2i_compbench_color"] is None  # not judged: no number, never a 0
    report = (root / "reports" / "leaderboard.md").read_text()
    assert "T2I-CompBench++ mean" in report
    assert "## T2I-CompBench++" in report
    assert "4 of 2400 prompts" in report
    (page,) = (root / "reports" / "t2i_compbench").glob("*.html")
    text = page.read_text()
    assert all(r["prompt"].replace("'", "&#x27;") in text for r in images), "every image's prompt on its page"
    assert text.count('<img src="thumbs/') == 4


def test_a_refresh_stored_and_a_cli_stored_t2i_compbench_evaluation_store_identical_rows(refreshed, capsys):
    """One code path: `t2ibench evaluate t2i_compbench --store` on the images the refresh generated, with the
    refresh's models and selection, stores the same judged images (scores and details), table cells (with intervals)
    and protocol as the refresh did — only the version columns and the image names' base differ."""
    from t2ibench.store import Store

    root, _, _ = refreshed
    images = images_of(root, '"category"')  # its prompt records name their category
    other = root / "cli-compbench.duckdb"
    code = main(["evaluate", "t2i_compbench", str(images), "--categories", "numeracy,non_spatial", "--per-category",
                 "2", "--vqa-model", "tiny-random", "--detector-model", "tiny-random", "--detector-threshold", "0",
                 "--depth-model", "tiny-random", "--clip-model", "tiny-random", "--device", "cpu", "--quiet",
                 "--out", str(root / "cli-compbench.jsonl"), "--store", str(other), "--model", "tiny-a"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    query = {
        "benchmark_images": "SELECT * EXCLUDE (model_hash, evaluator_hash, image) FROM benchmark_images ORDER BY ALL",
        "benchmark_scores": "SELECT * EXCLUDE (model_hash, evaluator_hash) FROM benchmark_scores "
        "WHERE benchmark = 't2i_compbench' ORDER BY ALL",
        "benchmark_protocols": "SELECT settings FROM benchmark_protocols WHERE benchmark = 't2i_compbench'",
    }
    names = "SELECT prompt_index, image FROM benchmark_images ORDER BY 1"
    same_rows(Store(root / "data" / "t2ibench.duckdb"), Store(other), query, names, images.relative_to(root))


# -- GenEval on rewritten prompts beside the originals ---------------------------------------------------------------


def test_a_model_on_rewritten_prompts_is_its_own_protocol_marked_and_never_ranked_with_the_originals(refreshed):
    """tiny-r (tiny-a's generator, GenEval's rewritten prompts): its images were made from the rewrites (the pinned
    file, fetched and verified), judged on the same objects, stored under the suite 'geneval-rewritten' with the long
    texts; on the leaderboard it is in a protocol group of its own ('suite' named as the difference), marked †, with
    the banner saying why — in the Markdown, the HTML, SQL and a real browser (screenshot kept)."""
    from t2ibench.benchmarks.geneval.suite import REWRITTEN, REWRITTEN_DATA, REWRITTEN_FILE, read_rewritten
    from t2ibench.hashing import file_sha256
    from t2ibench.report.leaderboard import protocols
    from t2ibench.store import Store
    from tests.integration.browser import browser, screenshot, visit

    root, _, _ = refreshed
    fetched = root / REWRITTEN_DATA
    assert file_sha256(fetched) == REWRITTEN.file(REWRITTEN_FILE).sha256
    texts = read_rewritten(fetched)
    store = Store(root / "data" / "t2ibench.duckdb")
    versions = {
        r["model"]: r["suite"]
        for r in store.rows(
            "SELECT DISTINCT model, suite FROM verdicts JOIN current_models USING (model, model_hash, evaluator_hash)"
        )
    }
    assert versions == {"tiny-a": "geneval", "tiny-r": "geneval-rewritten"}
    stored = store.rows("SELECT prompt_index, prompt FROM prompts WHERE suite = 'geneval-rewritten' ORDER BY 1")
    assert len(stored) == 6
    assert all(r["prompt"] == texts[r["prompt_index"]] for r in stored)
    verdicts = store.rows(
        "SELECT v.model, v.prompt_index, v.task FROM verdicts v JOIN current_models USING (model, model_hash, "
        "evaluator_hash) ORDER BY 1, 2"
    )
    by_model = {m: [(r["prompt_index"], r["task"]) for r in verdicts if r["model"] == m] for m in ("tiny-a", "tiny-r")}
    assert by_model["tiny-a"] == by_model["tiny-r"]  # the same prompts judged
    assert len(by_model["tiny-r"]) == 6
    (folder,) = [p.parent for p in (root / "data" / "images" / "tiny-r").glob("*/manifest.json")]
    first = by_model["tiny-r"][0][0]
    made = json.loads((folder / f"{first:05d}" / "metadata.jsonl").read_text())
    assert made["prompt"] == texts[first]  # the generator was given the rewrite
    from t2ibench.report.leaderboard import collect

    groups, differing = protocols(collect(store))
    assert groups["tiny-a"] != groups["tiny-r"]
    assert "suite" in differing
    diversity = {r["model"]: r for r in store.rows("SELECT model, diversity_rank, diversity_note FROM leaderboard")}
    for model in ("tiny-a", "tiny-r"):  # one kernel, but other images: their diversity is not ranked together
        assert diversity[model]["diversity_rank"] is None, diversity
        assert "prompt suite no other current model shares" in diversity[model]["diversity_note"], diversity
    assert "geneval-rewritten" in diversity["tiny-r"]["diversity_note"]
    report = (root / "reports" / "leaderboard.md").read_text()
    assert "| tiny-r (smoke) † |" in report
    assert "| tiny-a (smoke) |" in report
    assert "† GenEval on its prompts rewritten long by an LLM" in report
    html = (root / "reports" / "leaderboard.html").read_text()
    assert 'id="protocol-flag"' in html
    card = (root / "reports" / "models" / "tiny-r.html").read_text()
    assert "geneval-rewritten" in card
    assert "rewritten long by an LLM" in card
    measured = {r["model"]: r for r in store.rows("SELECT * FROM geneval_measured_protocols")}
    assert (measured["tiny-a"]["prompts"], measured["tiny-r"]["prompts"]) == (
        "original, 6 of 553 prompts", "rewritten:bagel-long@056b5fd, 6 of 553 prompts")  # fmt: skip
    assert store.rows("SELECT count(*) AS n FROM geneval_reproduction") == [{"n": 0}]  # tiny-random: no published row
    with browser() as (page, problems):
        visit(page, (root / "reports" / "leaderboard.html").as_uri(), problems)
        rows = page.eval_on_selector_all(
            "#leaderboard tbody tr", "rs => rs.map(r => [r.cells[0].innerText, r.cells[1].innerText])"
        )
        shown = {name.split()[0]: (rank, name) for rank, name in rows}
        assert "†" in shown["tiny-r"][1]
        assert "†" not in shown["tiny-a"][1]
        assert not any(rank[:1].isdigit() for rank, _ in rows)  # smoke rows: never ranked, whatever their group
        assert page.locator("#protocol-flag").count() == 1
        # the published rows filter by protocol: rewritten prompts leaves the † rows (BAGEL's) and only them
        published = "#published tbody tr:not(.hidden)"
        every = page.locator(published).count()
        page.select_option("select[name=prompts][data-filter-for=published]", "rewritten")
        shown = page.eval_on_selector_all(published, "rs => rs.map(r => [r.cells[0].innerText, r.cells[10].innerText])")
        assert 0 < len(shown) < every
        assert all("†" in name and prompts == "rewritten" for name, prompts in shown), shown
        page.select_option("select[name=prompts][data-filter-for=published]", "")
        assert page.locator(published).count() == every
        screenshot(page, "leaderboard-rewritten")
    assert not problems, problems


def test_each_benchmarks_paired_read_reproduces_its_stored_headline(refreshed):
    """What paired comparisons read (t2ibench.comparisons, over the refresh's real rows): for each benchmark its
    per-prompt results of the current version give back the leaderboard's headline, and the first refresh records
    every model as new on every benchmark it ran."""
    from t2ibench import comparisons
    from t2ibench.store import Store

    root, _, _ = refreshed
    store = Store(root / "data" / "t2ibench.duckdb")
    (board,) = store.rows("SELECT * FROM leaderboard WHERE model = 'tiny-a'")
    for name, headline in (
        ("geneval", "overall"),
        ("geneval2", "geneval2_gm"),
        ("t2i_compbench", "t2i_compbench_mean"),
    ):
        bench = comparisons.measured(store, name)
        own = board["evaluator_hash"]
        if name != "geneval":  # a stored benchmark's own evaluation hash
            (own,) = (r["h"] for r in store.rows(f"SELECT {name}_hash AS h FROM {name}_current WHERE model = 'tiny-a'"))
        results = bench.results[("tiny-a", board["model_hash"], own)]
        strata: dict[str, list[float]] = {}
        for stratum, successes, trials in results.values():
            strata.setdefault(stratum, [0.0, 0.0])
            strata[stratum][0] += successes
            strata[stratum][1] += trials
        score = bench.scale * float(np.mean([s / n for s, n in strata.values()]))
        assert score == pytest.approx(board[headline], abs=1e-9), name
    since = store.rows("SELECT benchmark, model, status FROM paired_comparisons WHERE kind = 'since'")
    assert {(r["benchmark"], r["model"]) for r in since if r["status"] == "new"} == {
        ("geneval", "tiny-a"), ("geneval", "tiny-r"), ("geneval2", "tiny-a"), ("t2i_compbench", "tiny-a")}  # fmt: skip
