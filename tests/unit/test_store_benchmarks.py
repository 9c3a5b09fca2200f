"""A VQA-judged benchmark's rows in the store: written with their model version in one transaction, replaced whole,
gone when the version no longer has them; their protocol in benchmark_protocols (schema 12, migrated from schema
11); the leaderboard's GenEval 2 columns read the current version's own rows only."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from t2ibench.benchmarks import SpineRows
from t2ibench.store import BenchmarkRows, Store, VersionRows

PROTOCOL = {
    "judge": {"model": "j", "commit": "c", "loaded_dtype": "float32"},
    "answer_rule": "reference",
    "suite_sha256": "s" * 64,
    "prompt_set": "p1",
}
PRE_15 = "cbaede4adbb09dc7"  # a version's content hash before schema 15 (see the content-hash test)
SOURCE = {
    "writer": "t2ibench evaluate",
    "images": "/x/imgs",
    "images_identity": "images",
    "prompts_judged": 3,
    "suite": "/x/g2.jsonl",
    "suite_prompts": 800,
    "suite_released": True,
}


def stored_evaluation(store: Store, version: dict[str, str], scores: list[dict[str, Any]]) -> None:
    """An evaluation `t2ibench evaluate --store` put into a refresh's store before schema 14 refused that."""
    from t2ibench.store import BenchmarkRows

    with store.write() as con:
        rows = BenchmarkRows("geneval2", version["evaluator_hash"], PROTOCOL, [], scores)
        store._write_benchmark(con, version, rows, source=SOURCE)


def answer(prompt: int, q: int, p: float) -> dict[str, Any]:
    return {
        "benchmark": "geneval2",
        "prompt_index": prompt,
        "sample": "00000",
        "question_index": q,
        "kind": "atom",
        "prompt": f"prompt {prompt}",
        "atom_count": 3,
        "skill": "object",
        "question": f"q{q}",
        "answer": "Yes",
        "probability": p,
        "top_answer": "Yes",
        "correct": p > 0.5,
        "image": f"img{prompt}.png",
    }


def score(key: str, estimate: float, table: str = "overall") -> dict[str, Any]:
    return {
        "benchmark": "geneval2",
        "table_name": table,
        "key": key,
        "estimate": estimate,
        "ci_low": estimate - 1,
        "ci_high": estimate + 1,
        "ci_level": 0.95,
        "ci_method": "percentile bootstrap over prompts, B=10",
        "prompts": 2,
        "questions": 4,
    }


def geneval2(gm: float, protocol: dict[str, Any] = PROTOCOL, judged: str = "g") -> BenchmarkRows:
    """GenEval 2's rows of one evaluation, under its own evaluation hash ``judged``."""
    answers = [answer(i, q, 0.9) for i in range(2) for q in range(2)]
    scores = [score("soft_tifa_gm", gm), score("soft_tifa_am", gm + 5)]
    return BenchmarkRows("geneval2", judged, protocol, answers, scores)


def version(model: str, model_hash: str, evaluator_hash: str, content: str, *benchmarks: BenchmarkRows) -> VersionRows:
    return VersionRows(
        model=model,
        model_hash=model_hash,
        evaluator_hash=evaluator_hash,
        suite="geneval",
        content_hash=content,
        model_row={"label": model, "backend": "diffusers", "smoke": False},
        prompts=[],
        images=[],
        spine={"verdicts": [], "detections": [], "geneval_scores": []},
        metrics=[],
        modes=[],
        evaluator_settings={"settings": {"geneval2": {"answer_rule": "reference"}}, "lite": []},
        benchmarks=benchmarks,
    )


def complete(store: Store, run_id: str, when: datetime) -> None:
    with store.write() as con:
        store.upsert(con, "runs", [{"run_id": run_id, "status": "completed", "finished_at": when, "smoke": False}])


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "t.duckdb", timeout=2)
    s.initialise()
    return s


def count(store: Store, table: str) -> int:
    return int(store.query(f"SELECT count(*) FROM {table}")[1][0][0])


def test_a_versions_benchmark_rows_are_written_with_it_and_replaced_whole(store):
    now = datetime.now(UTC)
    assert not store.write_version("r1", version("m", "h", "e", "c1", geneval2(40.0)))
    complete(store, "r1", now)
    counts = [count(store, t) for t in ("vqa_answers", "benchmark_scores", "benchmark_protocols", "run_benchmarks")]
    assert counts == [4, 2, 1, 1]
    # under the model version and GenEval 2's own evaluation hash, not the GenEval/diversity one
    assert {r["evaluator_hash"] for r in store.rows("SELECT evaluator_hash FROM vqa_answers")} == {"g"}
    (row,) = store.rows("SELECT * FROM leaderboard")
    assert (row["geneval2_gm"], row["geneval2_am"], row["geneval2_judge"]) == (40.0, 45.0, "j")
    assert (row["geneval2_gm_ci_low"], row["geneval2_gm_ci_high"], row["geneval2_prompts"]) == (39.0, 41.0, 2)
    # the evaluators row stays the GenEval/diversity protocol: GenEval 2's record is beside it, not over it
    settings = json.loads(store.rows("SELECT settings FROM evaluators")[0]["settings"])
    assert settings == {"geneval2": {"answer_rule": "reference"}}
    # an identical write changes nothing; a changed evaluation under the same hash replaces its rows whole
    assert store.write_version("r2", version("m", "h", "e", "c1", geneval2(40.0)))
    fewer = BenchmarkRows("geneval2", "g", PROTOCOL, [answer(0, 0, 0.1)], [score("soft_tifa_gm", 10.0)])
    assert not store.write_version("r2", version("m", "h", "e", "c2", fewer))
    assert (count(store, "vqa_answers"), count(store, "benchmark_scores")) == (1, 1)
    complete(store, "r2", now + timedelta(minutes=1))
    # the model's next run without GenEval 2 (dropped from the config): the leaderboard shows none for it — the
    # older evaluation stays stored under its own hashes, not current
    store.write_version("r3", version("m", "h", "e", "c3"))
    complete(store, "r3", now + timedelta(minutes=2))
    (row,) = store.rows("SELECT * FROM leaderboard")
    assert row["geneval2_gm"] is None
    assert store.rows("SELECT count(*) AS n FROM geneval2_scores WHERE current") == [{"n": 0}]
    assert count(store, "vqa_answers") == 1


def test_the_leaderboard_shows_the_current_versions_geneval2_and_flags_other_protocols(store):
    now = datetime.now(UTC)
    other = {**PROTOCOL, "answer_rule": "unique"}
    store.write_version("old", version("a", "h0", "e0", "c0", geneval2(99.0, judged="g0")))
    complete(store, "old", now - timedelta(hours=2))
    store.write_version("r", version("a", "h1", "e1", "c1", geneval2(30.0)))
    store.write_version("r", version("b", "h2", "e2", "c2", geneval2(50.0, other, judged="g2")))
    stored = {"model": "cli", "model_hash": "images", "evaluator_hash": "p"}
    stored_evaluation(store, stored, [score("soft_tifa_gm", 70.0)])
    store.write_version("r", version("c", "h3", "e3", "c3"))
    complete(store, "r", now)
    rows = {r["model"]: r for r in store.rows("SELECT * FROM leaderboard")}
    assert rows["a"]["geneval2_gm"] == 30.0  # the current version's, never the older version's 99
    assert rows["c"]["geneval2_gm"] is None
    assert rows["a"]["geneval2_protocol"] != rows["b"]["geneval2_protocol"]
    from t2ibench.report.leaderboard import protocol_letters

    assert protocol_letters(list(rows.values()), "geneval2") == {"a": "A", "b": "B"}
    same = [{**rows["a"]}, {**rows["b"], "geneval2_protocol": rows["a"]["geneval2_protocol"]}]
    assert protocol_letters(same, "geneval2") == {}  # one protocol: no letters
    # the report's GenEval 2 section: each refreshed model's current evaluation once, and every CLI-stored one
    from t2ibench.store import queries

    shown = {
        (r["model"], r["estimate"]) for r in queries.benchmark_scores(store, "geneval2") if r["key"] == "soft_tifa_gm"
    }
    assert shown == {("a", 30.0), ("b", 50.0), ("cli", 70.0)}


def test_a_schema_11_store_keeps_its_geneval2_protocols(store):
    """`evaluate geneval2 --store` put a schema-11 evaluation's protocol in evaluators (its own hash): the
    migration copies it into benchmark_protocols, once, and geneval2_scores still shows the judge; an evaluators row
    without a judge record (a refresh's) is never taken for a benchmark protocol."""
    scores = [score("soft_tifa_gm", 20.0)]
    for model, evaluator in (("m", "e"), ("n", "x")):  # as schema 11's `evaluate --store` wrote them
        version = {"model": model, "model_hash": "h", "evaluator_hash": evaluator}
        stored_evaluation(store, version, scores)
    con = duckdb.connect(str(store.path))
    for view in ("leaderboard", "geneval2_current", "geneval2_scores"):
        con.execute(f"DROP VIEW {view}")
    con.execute("DROP TABLE benchmark_protocols")
    con.execute("DROP TABLE run_benchmarks")
    con.execute("INSERT INTO evaluators (evaluator_hash, settings) VALUES ('e', ?)", ['{"judge": {"model": "old-j"}}'])
    con.execute("INSERT INTO evaluators (evaluator_hash, settings) VALUES ('x', ?)", ['{"geneval": {}}'])
    con.execute("UPDATE store_meta SET value = '11' WHERE key = 'schema_version'")
    con.close()
    store.initialise()
    store.initialise()
    rows = store.rows("SELECT model, judge_model, estimate, protocol_key FROM geneval2_scores ORDER BY model")
    assert [(r["model"], r["judge_model"], r["estimate"]) for r in rows] == [("m", "old-j", 20.0), ("n", None, 20.0)]
    assert rows[1]["protocol_key"].startswith("unrecorded:")  # never one shared key for unknown protocols
    assert store.rows("SELECT model FROM benchmark_protocols") == [{"model": "m"}]


# -- who may write a store, and what a stored evaluation says about itself -------------------------------------


def test_an_evaluation_store_is_t2ibench_evaluates_and_a_configs_store_refuses_it(tmp_path):
    """`evaluate --store` claims a new store for itself (no config's refresh writes there), and is refused on a
    config's store before any judging and again inside the write's transaction; nothing changes."""
    from t2ibench.errors import InputError

    own = Store(tmp_path / "cli.duckdb")
    own.check_evaluation_target()  # not there yet: fine
    own.write_evaluation(
        {"model": "m", "model_hash": "h", "evaluator_hash": "e"},
        BenchmarkRows("geneval2", "e", PROTOCOL, [], [score("soft_tifa_gm", 10.0)]),
        SOURCE,
    )
    assert own.owner() == {"writer": "t2ibench evaluate"}
    own.check_evaluation_target()  # its own: fine again
    with pytest.raises(InputError, match=r"holds evaluations stored by `t2ibench evaluate --store`.*config 'x'"):
        own.claim("x", "configs/x.yaml")
    config_store = Store(tmp_path / "refresh.duckdb")
    config_store.claim("smoke", "configs/smoke.yaml")
    before = config_store.path.read_bytes()
    refused = r"belongs to config 'smoke' \(configs/smoke.yaml\); only that config's refresh writes there"
    with pytest.raises(InputError, match=refused):
        config_store.check_evaluation_target()
    with pytest.raises(InputError, match=refused):
        config_store.write_evaluation(
            {"model": "tiny-a", "model_hash": "h", "evaluator_hash": "e"},
            BenchmarkRows("geneval2", "e", PROTOCOL, [], [score("soft_tifa_gm", 10.0)]),
            SOURCE,
        )
    assert config_store.path.read_bytes() == before


def test_a_damaged_store_is_refused_before_judging_and_never_opened_for_writing(tmp_path):
    from t2ibench.store import StoreDamagedError

    good = Store(tmp_path / "good.duckdb")
    good.write_evaluation(
        {"model": "m", "model_hash": "h", "evaluator_hash": "e"},
        BenchmarkRows(
            "geneval2", "e", PROTOCOL, [answer(i, 0, 0.5) for i in range(3000)], [score("soft_tifa_gm", 10.0)]
        ),
        SOURCE,
    )
    data = good.path.read_bytes()
    half = tmp_path / "half.duckdb"
    half.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreDamagedError, match=r"half.duckdb: not a DuckDB database, or damaged \(truncated"):
        Store(half).check_evaluation_target()
    assert half.read_bytes() == data[: len(data) // 2]


def test_the_geneval2_section_shows_the_overall_prompt_count_and_where_each_evaluation_came_from(store):
    """The prompts column is the overall table's count even when a per-atom-count cell (1 prompt each) comes first;
    a stored evaluation says it was stored by `t2ibench evaluate`, from which images, and how much of its suite."""
    from t2ibench.benchmarks.geneval2 import report as section
    from t2ibench.benchmarks.geneval2.suite import RELEASE_SHA256
    from t2ibench.store import queries

    cells = [{**score(str(k), 10.0, "atom_count"), "prompts": 1} for k in range(3, 11)]  # stored first
    cells += [{**score(m, 20.0), "prompts": 8} for m in ("soft_tifa_gm", "soft_tifa_am", "tifa", "vqascore")]
    protocol = {**PROTOCOL, "suite_sha256": RELEASE_SHA256}
    with store.write() as con:
        rows = BenchmarkRows("geneval2", "e", protocol, [], cells)
        store._write_benchmark(
            con,
            {"model": "cli", "model_hash": "h" * 16, "evaluator_hash": "e"},
            rows,
            source={**SOURCE, "prompts_judged": 8},
        )
    scores = queries.benchmark_scores(store, "geneval2")
    assert next(iter(section.versions(scores)[0]["cells"].values()))["prompts"] == 1  # the trap the old code fell in
    html = section.html_section(scores)
    assert ">8<" in html
    assert ">1<" not in html
    assert "stored by `t2ibench evaluate` from /x/imgs; images hhhhhhhhhhhh; 8 of 800 prompts of its suite" in html
    md = section.markdown_section(scores)
    origin = "stored by `t2ibench evaluate` from /x/imgs; images hhhhhhhhhhhh; 8 of 800 prompts of its suite"
    assert f"| 8 | {origin} |" in md
    assert section.coverage_labels(RELEASE_SHA256, 8) == ["8 of 800 prompts"]
    assert section.coverage_labels("0" * 64, 800) == ["not the released suite"]
    assert section.coverage_labels(RELEASE_SHA256, 800) == []


def test_the_geneval2_pages_show_every_image_as_a_linked_thumbnail(store, tmp_path):
    from PIL import Image

    from t2ibench.benchmarks.geneval2 import report as section
    from t2ibench.store import queries

    folder = tmp_path / "imgs"
    folder.mkdir()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(folder / "img0.png")  # img1.png is missing
    answers = [answer(i, 0, 0.7) for i in range(2)]
    with store.write() as con:
        rows = BenchmarkRows("geneval2", "e", PROTOCOL, answers, [score("soft_tifa_gm", 20.0)])
        store._write_benchmark(
            con,
            {"model": "cli", "model_hash": "h" * 16, "evaluator_hash": "e"},
            rows,
            source={**SOURCE, "names_from": str(folder)},
        )
    out = tmp_path / "report"
    (page,) = section.write_pages(
        {
            "scores": queries.benchmark_scores(store, "geneval2"),
            "answers": queries.benchmark_answers(store, "geneval2"),
        },
        out,
    ).values()
    text = Path(page).read_text()
    assert '<a href="views/' in text
    assert '<img src="thumbs/' in text
    assert "image file missing: " + str(folder / "img1.png") in text
    assert len(list((out / "geneval2" / "thumbs").rglob("*.jpg"))) == 1


def test_a_benchmarks_views_are_made_from_its_stored_columns_alone(store):
    """Any benchmark declaring StoredColumns gets <name>_scores and <name>_current views pivoted from its own
    benchmark_scores rows: here a benchmark the registry does not know, its views built in the store by hand."""
    from t2ibench.benchmarks import StoredColumns
    from t2ibench.store.schema import benchmark_views, leaderboard_columns

    cols = StoredColumns(
        protocol=("detector",),
        details=(("detector", "detector"),),
        table="overall",
        keys=(("score", "score"),),
        summary=(("protocol", "protocol_key"), ("detector", "detector")),
        headline="score",
        title="DPG",
        legend="DPG: planted.",
    )
    now = datetime.now(UTC)
    rows = BenchmarkRows("dpg", "d", {"detector": "owl"}, [], [{**score("score", 61.0), "benchmark": "dpg"}])
    store.write_version("r", version("m", "h", "e", "c1", rows))
    store.write_version("r", version("n", "h2", "e2", "c2", geneval2(40.0)))  # another benchmark's rows: not dpg's
    complete(store, "r", now)
    views = benchmark_views("dpg", cols)
    assert set(views) == {"dpg_scores", "dpg_current"}  # no skill_rates declared: no such view
    with store.write() as con:
        for name, sql in views.items():
            con.execute(f"CREATE VIEW {name} AS {sql}")
    (current,) = store.rows("SELECT * FROM dpg_current")
    assert list(current)[4:] == leaderboard_columns("dpg", cols)
    assert (current["model"], current["dpg_score"], current["dpg_score_ci_low"], current["dpg_detector"]) == (
        "m", 61.0, 60.0, "owl")  # fmt: skip
    assert len(current["dpg_protocol"]) == 32  # md5 of the protocol's settings


def test_changed_view_definitions_are_recreated_on_the_next_write(store):
    """A store migrated with other view definitions (a benchmark added or changed since, same schema version) gets
    the current ones back on its next write; a current store is left as it is."""
    store.write_version("r", version("m", "h", "e", "c1", geneval2(40.0)))
    complete(store, "r", datetime.now(UTC))
    with store.write() as con:  # as an older t2ibench would have left it: another leaderboard, its own digest
        con.execute("CREATE OR REPLACE VIEW leaderboard AS SELECT 1 AS stale")
        con.execute("UPDATE store_meta SET value = 'older' WHERE key = 'views_sha256'")
    store.write_version("r", version("m", "h", "e", "c1", geneval2(40.0)))
    (row,) = store.rows("SELECT * FROM leaderboard")
    assert row["geneval2_gm"] == 40.0
    from t2ibench.store.schema import VIEWS_SHA256

    assert store.rows("SELECT value FROM store_meta WHERE key = 'views_sha256'") == [{"value": VIEWS_SHA256}]


def judged_image(prompt: int, score: float) -> dict[str, Any]:
    """A ``benchmark_images`` row (a benchmark judged per image, not per question)."""
    details = {"boxes": [[1.0, 2.0, 3.0, 4.0]], "label": "dog"}
    return {"benchmark": "geneval2", "prompt_index": prompt, "sample": "00000", "image": f"img{prompt}.png",
            "prompt": f"prompt {prompt}", "category": "spatial", "score": score,
            "details": json.dumps(details)}  # fmt: skip


def test_judged_images_are_stored_with_their_evaluation_and_replaced_whole(store):
    from t2ibench.store import queries

    images = [judged_image(0, 0.25), judged_image(1, 1.0)]
    rows = BenchmarkRows("geneval2", "g", PROTOCOL, [], [score("soft_tifa_gm", 10.0)], images)
    store.write_version("r1", version("m", "h", "e", "c1", rows))
    stored = queries.benchmark_images(store, "geneval2")
    assert [(r["prompt_index"], r["score"], r["category"]) for r in stored] == [
        (0, 0.25, "spatial"),
        (1, 1.0, "spatial"),
    ]
    assert json.loads(stored[0]["details"]) == {"boxes": [[1.0, 2.0, 3.0, 4.0]], "label": "dog"}
    # a changed evaluation replaces its judged images whole: no stale image survives
    fewer = BenchmarkRows("geneval2", "g", PROTOCOL, [], [], images[:1])
    store.write_version("r2", version("m", "h", "e", "c2", fewer))
    assert [r["prompt_index"] for r in queries.benchmark_images(store, "geneval2")] == [0]


def test_a_versions_content_hash_includes_judged_images_only_when_there_are_some():
    """Versions stored before benchmark_images keep their content hash (not rewritten by the upgrade); judged images
    that change change it."""
    from t2ibench.pipeline.rows import version_rows

    def content(*images: dict[str, Any]) -> str:
        from t2ibench.config import ModelConfig
        from t2ibench.pipeline.results import Generated

        rows = BenchmarkRows("geneval2", "g", PROTOCOL, [answer(0, 0, 0.9)], [score("soft_tifa_gm", 1.0)], images)
        made = version_rows(
            model=ModelConfig(name="m"), model_hash="h", evaluator_hash="e", suite="geneval", smoke=False, prompts=[],
            generated=Generated(model="m", folder="/x", images=(), manifest={}),
            spine=SpineRows({"verdicts": [], "detections": [], "geneval_scores": []}, 0, "r", []),
            scores=(), protocol={}, lite=[], benchmarks=[rows],
        )  # fmt: skip
        return made.content_hash

    before = content()
    assert before == PRE_15  # what the same rows hashed to before schema 15 (computed by that code, pinned)
    assert content(judged_image(0, 0.5)) != before
    assert content(judged_image(0, 0.5)) != content(judged_image(0, 0.75))
