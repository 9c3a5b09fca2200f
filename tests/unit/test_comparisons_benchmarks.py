"""Paired comparisons of the stored benchmarks (GenEval 2, T2I-CompBench++), on a store with two planted runs written
through the store's one version write: each benchmark's per-prompt results reproduce its stored headline, a changed
model's old → new difference equals a brute-force computation from its stored answers / image scores, a version
judged differently is listed but not compared, every benchmark's comparisons form one Holm family, pairs are made
only within a protocol, and each benchmark's section marks the pairs a paired test does not separate."""

from __future__ import annotations

import numpy as np
import pytest

from t2ibench import comparisons
from t2ibench.benchmarks import benchmark_score_rows
from t2ibench.benchmarks.geneval2.metrics import QuestionScore, geneval2_tables
from t2ibench.benchmarks.t2i_compbench.evaluate import CompResult
from t2ibench.benchmarks.t2i_compbench.rows import evaluation_rows, score_rows
from t2ibench.metrics.paired import holm
from t2ibench.store import BenchmarkRows, Store, VersionRows

PROMPTS = 40  # GenEval 2 prompts, two images each (one for every fifth prompt), three atoms each
JUDGE = {"model": "j", "commit": "c", "loaded_dtype": "float32"}
G2 = {"judge": JUDGE, "answer_rule": "reference", "suite_sha256": "s" * 64, "prompt_set": "p1"}
T2I = {"rule": "reference", "models": {"vqa": {"model": "blip"}}, "np_num": 8, "frame": "f", "phrases": "ph",
       "suite_sha256": "t" * 64, "categories": ["color", "non_spatial"], "prompt_set": "q1"}  # fmt: skip
CATEGORY = ["color" if i % 2 == 0 else "non_spatial" for i in range(30)]  # T2I-CompBench++ prompts, three images
# images left out, so that prompts have different numbers of images: a per-prompt mean and a pooled one then differ
MISSING_G = {(i, 1) for i in range(0, PROMPTS, 5)}
MISSING_T = {(i, 2) for i in range(0, len(CATEGORY), 4)}


def g2_rows(probabilities: np.ndarray, judged: str, protocol: dict = G2) -> BenchmarkRows:
    """GenEval 2's rows of (prompt, image, atom) probabilities, its tables made by its own metrics module."""
    answers, records = [], []
    for (i, k, q), p in np.ndenumerate(probabilities):
        if (i, k) in MISSING_G:
            continue
        answers.append({"benchmark": "geneval2", "prompt_index": i, "sample": f"{k:05d}", "question_index": q,
                        "kind": "atom", "prompt": f"prompt {i}", "atom_count": 3, "skill": "object",
                        "question": f"q{q}", "answer": "Yes", "probability": float(p), "top_answer": "Yes",
                        "correct": bool(p > 0.5), "image": f"{i}-{k}.png"})  # fmt: skip
        records.append(QuestionScore(i, k, q, 3, "object", float(p), bool(p > 0.5)))
    cells = benchmark_score_rows(geneval2_tables(records, resamples=50), "geneval2")
    return BenchmarkRows("geneval2", judged, protocol, answers, [dict(c) for c in cells])


def t2i_rows(scores: np.ndarray, judged: str, protocol: dict = T2I, categories: tuple[str, ...] = ()) -> BenchmarkRows:
    """T2I-CompBench++'s rows of (prompt, image) scores (non-spatial ones may be negative: CLIP cosines), of the
    prompts of ``categories`` only when given."""
    results = [
        CompResult(CATEGORY[i], i, f"prompt {i}", k, f"{i}-{k}.png", float(s), {}, protocol)
        for (i, k), s in np.ndenumerate(scores)
        if (i, k) not in MISSING_T and (not categories or CATEGORY[i] in categories)
    ]
    return evaluation_rows(results, score_rows(results, level=0.95), protocol, judged)


def version(model: str, model_hash: str, *benchmarks: BenchmarkRows, smoke: bool = False) -> VersionRows:
    return VersionRows(
        model=model, model_hash=model_hash, evaluator_hash="e", suite="geneval",
        content_hash="-".join([model_hash, *(b.evaluator_hash for b in benchmarks)]),
        model_row={"label": model, "backend": "diffusers", "smoke": smoke}, prompts=[], images=[],
        spine={"verdicts": [], "detections": [], "geneval_scores": []}, metrics=[], modes=[],
        evaluator_settings={"settings": {}, "lite": []}, benchmarks=benchmarks,
    )  # fmt: skip


def complete(store: Store, run_id: str, minute: int) -> None:
    with store.write() as con:
        store.upsert(con, "runs", [{"run_id": run_id, "status": "completed", "smoke": False,
                                    "finished_at": f"2026-01-01 00:{minute:02d}:00"}])  # fmt: skip


def gm_score(probabilities: np.ndarray) -> float:
    """Soft-TIFA GM ×100 by brute force: per image exp(mean log p) (0 when a p is 0), per prompt the mean over its
    images, then the mean over prompts."""
    prompts = []
    for i, images in enumerate(probabilities):
        gms = [0.0 if (p == 0).any() else float(np.exp(np.log(p).mean())) for k, p in enumerate(images)
               if (i, k) not in MISSING_G]  # fmt: skip
        prompts.append(sum(gms) / len(gms))
    return 100 * sum(prompts) / len(prompts)


def category_mean(scores: np.ndarray, categories: tuple[str, ...] = ("color", "non_spatial")) -> float:
    """T2I-CompBench++'s mean ×100 by brute force: each category's plain mean over all its images, then their plain
    mean."""
    means = []
    for c in categories:
        images = [s for (i, k), s in np.ndenumerate(scores) if CATEGORY[i] == c and (i, k) not in MISSING_T]
        means.append(sum(images) / len(images))
    return 100 * sum(means) / len(means)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """r1: a (b's results with small noise), b, j, k, r. r2: a changed (GenEval 2: right on every atom of a quarter
    of the prompts; T2I-CompBench++: +0.3 on every image of a third of the prompts), b unchanged, c new (b's results
    with small noise), j re-judged by GenEval 2 under another judge (its T2I-CompBench++ unchanged), k and r changed
    on T2I-CompBench++ only (k: a category more; r: another rule), s new and a smoke model."""
    rng = np.random.default_rng(7)
    store = Store(tmp_path_factory.mktemp("paired-benchmarks") / "t.duckdb")
    g = {m: rng.uniform(0.05, 0.95, (PROMPTS, 2, 3)) for m in "bj"}
    g["a"] = np.clip(g["b"] + rng.normal(0, 0.01, g["b"].shape), 0.01, 1.0)  # b's twin, before its gain
    g["a2"] = g["a"].copy()
    g["a2"][::4] = 1.0
    g["a"][1, 0, 2] = 0.0  # an atom the judge gave 0: that image's GM is 0
    g["c"] = np.clip(g["b"] + rng.normal(0, 0.01, g["b"].shape), 0.01, 1.0)
    t = {m: rng.uniform(-0.1, 0.9, (len(CATEGORY), 3)) for m in "bj"}
    t["a"] = t["b"] + rng.normal(0, 0.01, t["b"].shape)
    t["a2"] = t["a"].copy()
    t["a2"][::3] += 0.3
    t["c"] = t["b"] + rng.normal(0, 0.01, t["b"].shape)
    other_judge = {**G2, "judge": {**JUDGE, "model": "another"}}
    t["k"], t["r"] = (rng.uniform(-0.1, 0.9, (len(CATEGORY), 3)) for _ in range(2))
    t["k2"], t["r2"] = t["k"] + 0.2, t["r"] + 0.2
    # k: judged on colour only, then on colour and non-spatial (another category, so the protocol records one model
    # more): the same judge, compared on the colour prompts; r: the same prompts under another rule
    color_only = {**T2I, "models": {"vqa": {"model": "blip"}}, "categories": ["color"], "prompt_set": "q0"}
    both = {**T2I, "models": {"vqa": {"model": "blip"}, "clip": {"model": "ViT-B-32"}}}
    corrected = {**T2I, "rule": "corrected"}
    store.write_version("r1", version("a", "a1", g2_rows(g["a"], "ga"), t2i_rows(t["a"], "ta")))
    store.write_version("r1", version("b", "b1", g2_rows(g["b"], "gb"), t2i_rows(t["b"], "tb")))
    store.write_version("r1", version("j", "j1", g2_rows(g["j"], "gj"), t2i_rows(t["j"], "tj")))
    store.write_version("r1", version("k", "k1", t2i_rows(t["k"], "tk", color_only, ("color",))))
    store.write_version("r1", version("r", "r1", t2i_rows(t["r"], "tr")))
    complete(store, "r1", 1)
    store.write_version("r2", version("a", "a2", g2_rows(g["a2"], "ga2"), t2i_rows(t["a2"], "ta2")))
    store.write_version("r2", version("b", "b1", g2_rows(g["b"], "gb"), t2i_rows(t["b"], "tb")))
    store.write_version("r2", version("c", "c1", g2_rows(g["c"], "gc"), t2i_rows(t["c"], "tc")))
    store.write_version("r2", version("j", "j1", g2_rows(g["j"], "gj2", other_judge), t2i_rows(t["j"], "tj")))
    store.write_version("r2", version("k", "k2", t2i_rows(t["k2"], "tk2", both)))
    store.write_version("r2", version("r", "r2", t2i_rows(t["r2"], "tr2", corrected)))
    # a random-weights model (models.smoke) in a run that is not a smoke run: b's results, never ranked
    store.write_version("r2", version("s", "s1", g2_rows(g["b"], "gs"), t2i_rows(t["b"], "ts"), smoke=True))
    complete(store, "r2", 2)
    assert comparisons.record(store, level=0.95) == "r2"
    return store, g, t


def rows(store: Store, kind: str, benchmark: str) -> dict[str, dict]:
    found = store.rows("SELECT * FROM paired_comparisons WHERE kind = ? AND benchmark = ?", [kind, benchmark])
    return {r["model"] if kind == "since" else (r["model"], r["other"]): r for r in found}


def test_each_benchmarks_per_prompt_results_reproduce_its_stored_headline(planted):
    store, _, _ = planted
    board = {r["model"]: r for r in store.rows("SELECT * FROM leaderboard")}
    for name, column in (("geneval2", "geneval2_gm"), ("t2i_compbench", "t2i_compbench_mean")):
        bench = comparisons.measured(store, name)
        current = {r["model"]: r for r in store.rows(f"SELECT model, model_hash, {name}_hash AS h, {column} AS s "
                                                     f"FROM {name}_current")}  # fmt: skip
        for model, r in current.items():
            results = bench.results[(model, r["model_hash"], r["h"])]
            strata: dict[str, list[float]] = {}
            for stratum, successes, trials in results.values():
                strata.setdefault(stratum, [0.0, 0.0])
                strata[stratum][0] += successes
                strata[stratum][1] += trials
            score = np.mean([s / n for s, n in strata.values()])
            assert bench.scale * score == pytest.approx(r["s"], abs=1e-9), (name, model)
            assert board[model][column] == r["s"]  # the leaderboard's column


def test_a_changed_models_difference_equals_brute_force_on_each_benchmark(planted):
    store, g, t = planted
    g2, t2i = rows(store, "since", "geneval2"), rows(store, "since", "t2i_compbench")
    assert {m: r["status"] for m, r in g2.items()} == {
        "a": "changed",
        "b": "unchanged",
        "c": "new",
        "j": "changed, judged differently: not compared",
        "s": "new",
    }
    assert {m: r["status"] for m, r in t2i.items()} == {
        "a": "changed", "b": "unchanged", "c": "new", "j": "unchanged", "k": "changed",
        "r": "changed, judged differently: not compared", "s": "new"}  # fmt: skip
    # k judged a category more (its protocol names one model more): compared on the colour prompts both judged
    k = t2i["k"]
    assert k["prompts"] == CATEGORY.count("color")
    assert k["difference"] == pytest.approx(
        category_mean(t["k2"], ("color",)) - category_mean(t["k"], ("color",)), abs=1e-9
    )
    assert (t2i["r"]["p_value"], t2i["r"]["flagged"]) == (None, None)
    a = g2["a"]
    assert (a["other_score"], a["score"]) == pytest.approx((gm_score(g["a"]), gm_score(g["a2"])), abs=1e-9)
    assert a["difference"] == pytest.approx(gm_score(g["a2"]) - gm_score(g["a"]), abs=1e-9)
    assert a["ci_low"] < a["difference"] < a["ci_high"]
    assert a["prompts"] == PROMPTS
    assert a["flagged"] == "improvement"
    assert g2["j"]["p_value"] is None
    assert g2["j"]["flagged"] is None
    b = t2i["a"]
    assert (b["other_score"], b["score"]) == pytest.approx((category_mean(t["a"]), category_mean(t["a2"])), abs=1e-9)
    assert b["flagged"] == "improvement"
    assert b["prompts"] == len(CATEGORY)


def test_every_benchmarks_since_rows_are_one_holm_family(planted):
    store, _, _ = planted
    tested = store.rows(
        "SELECT benchmark, model, p_value, p_adjusted FROM paired_comparisons WHERE kind = 'since' "
        "AND p_value IS NOT NULL ORDER BY benchmark, model"
    )
    assert {r["benchmark"] for r in tested} >= {"geneval2", "t2i_compbench"}
    adjusted = holm([r["p_value"] for r in tested])
    assert [r["p_adjusted"] for r in tested] == pytest.approx(adjusted)
    pairs = store.rows(
        "SELECT benchmark, p_value, p_adjusted FROM paired_comparisons WHERE kind = 'pair' AND p_value IS NOT NULL "
        "ORDER BY benchmark, model, other"
    )
    assert {r["benchmark"] for r in pairs} == {"geneval2", "t2i_compbench"}
    assert [r["p_adjusted"] for r in pairs] == pytest.approx(holm([r["p_value"] for r in pairs]))


def test_pairs_are_made_within_a_protocol_and_by_brute_force(planted):
    store, g, t = planted
    g2, t2i = rows(store, "pair", "geneval2"), rows(store, "pair", "t2i_compbench")
    # j was judged by another judge: GenEval 2 pairs it with none; T2I-CompBench++ compares a, b, c and j (k and r:
    # other protocols, each alone); s, a smoke model, is paired with none
    assert {frozenset(k) for k in g2} == {frozenset(p) for p in (("a", "b"), ("a", "c"), ("b", "c"))}
    assert {frozenset(k) for k in t2i} == {frozenset((x, y)) for i, x in enumerate("abcj") for y in "abcj"[i + 1 :]}
    for (upper, lower), r in g2.items():
        now = {"a": g["a2"], "b": g["b"], "c": g["c"]}
        assert r["difference"] == pytest.approx(gm_score(now[upper]) - gm_score(now[lower]), abs=1e-9)
        assert r["difference"] >= 0  # the better first
    assert g2[("a", "b")]["flagged"] == "separated"  # a real gain on a quarter of the prompts
    assert not g2.get(("b", "c"), g2.get(("c", "b")))["flagged"]  # b's results with small noise: not separated
    assert t2i[("a", "b")]["flagged"] == "separated"
    assert not t2i.get(("b", "c"), t2i.get(("c", "b")))["flagged"]
    for (upper, lower), r in t2i.items():
        now = {"a": t["a2"], "b": t["b"], "c": t["c"], "j": t["j"]}
        assert r["difference"] == pytest.approx(category_mean(now[upper]) - category_mean(now[lower]), abs=1e-9)


def test_each_section_marks_the_models_a_paired_test_does_not_separate(planted):
    from t2ibench.benchmarks.geneval2 import report as g2_report
    from t2ibench.benchmarks.t2i_compbench import report as t2i_report
    from t2ibench.store import queries

    store, _, _ = planted
    found = queries.latest_comparisons(store)
    md = g2_report.markdown_section(queries.benchmark_scores(store, "geneval2"), found)
    lines = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ")}
    cells = {m: [c.strip() for c in lines[m].split("|")] for m in ("a", "b", "c", "j")}
    mark = 7  # the ≈ column: after the leading "", model, protocol and the four methods
    assert (cells["b"][mark], cells["c"][mark]) == ("≈", "≈")
    assert cells["a"][mark] == ""  # separated from b, the next of its protocol
    assert cells["j"][mark] == ""  # alone under its judge: compared with none
    md = t2i_report.markdown_section(queries.benchmark_scores(store, "t2i_compbench"), found)
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")] for line in md.splitlines()
            if line.startswith("| ") and not line.startswith("| model")}  # fmt: skip
    column = next(line for line in md.splitlines() if line.startswith("| model")).split("|").index(" ≈ ")
    assert (rows["b"][column], rows["c"][column]) == ("≈", "≈")  # b and c: not separated
    assert rows["s"][column] == ""  # the smoke model: compared with none
    assert "≈ marks a model" in t2i_report.html_section(queries.benchmark_scores(store, "t2i_compbench"), found)


def test_a_geneval2_change_shows_in_diff(planted, capsys):
    from t2ibench.cli import main

    store, _, _ = planted
    assert main(["diff", "--store", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert "| a | changed | geneval2 |" in out
    assert "| a | changed | t2i_compbench |" in out
    assert "| j | changed, judged differently: not compared | geneval2 |" in out


def test_a_judge_is_compared_on_what_both_versions_record():
    """Settings only one side records (a model only its categories use) do not count; an unrecorded judge is taken
    as the same (stores from before judges were kept); a setting both record must be equal, None included."""
    from t2ibench.comparisons import judge_of, same_judge

    paths = ["rule", "models", "phrases"]
    one = judge_of('{"rule": "reference", "models": {"vqa": "blip"}, "t2ibench": "1"}', paths)
    two = judge_of({"rule": "reference", "models": {"vqa": "blip", "clip": "b32"}, "phrases": None, "t2ibench": "2"},
                   paths)  # fmt: skip
    assert one == {"rule": "reference", "models": {"vqa": "blip"}}  # t2ibench's version is not part of the judge
    assert same_judge(one, two)
    assert not same_judge(two, {**two, "models": {"vqa": "blip-large"}})
    assert not same_judge(two, {**two, "phrases": {"parser": "spacy"}})  # no table vs a table: another judge
    assert same_judge(None, two)
    assert same_judge(judge_of(None, paths), one)


def test_a_read_of_an_unknown_benchmark_is_refused():
    from t2ibench.errors import InputError
    from t2ibench.store import queries

    with pytest.raises(InputError, match="unknown benchmark 'geneval3'"):
        queries.paired_results(Store("/nonexistent/t.duckdb"), "geneval3")
