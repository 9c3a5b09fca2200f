"""The spine benchmark's rows of a model version (``Benchmark.spine_rows``, GenEval's ``rows.spine_rows``) and the
store write that takes them generically (``SpineSQL.version_tables``): what reaches the store, and what is refused
before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2ibench.benchmarks import SPINE, benchmark
from t2ibench.benchmarks.geneval.evaluate import ResultRow, write_results
from t2ibench.benchmarks.geneval.suite import generate_suite
from t2ibench.errors import InputError
from t2ibench.hashing import file_digest
from t2ibench.pipeline import Generated, ImageInfo, Judged, TaskScores
from t2ibench.store import Store, VersionRows
from t2ibench.store.schema import SPINE_SQL

SUITE = generate_suite()


def judged_pair(tmp: Path) -> tuple[Judged, Generated]:
    """Two judged images of prompt 0 (one with a kept detection) and the results file they came from."""
    record = SUITE[0]
    boxes = {record["include"][0]["class"]: [[1.0, 2.0, 30.0, 40.0, 0.9]]}
    rows = [
        ResultRow("x/00000/samples/00000.png", record["tag"], record["prompt"], True, "", record, boxes),
        ResultRow("x/00000/samples/00001.png", record["tag"], record["prompt"], False, "no box", record),
    ]
    write_results(tmp / "r.jsonl", rows)
    images = tuple(ImageInfo(0, k, f"x{k}.png", str(k), 1) for k in range(2))
    generated = Generated(model="m", folder=str(tmp), images=images, manifest={})
    return Judged(model="m", results=str(tmp / "r.jsonl"), sha256=file_digest(tmp / "r.jsonl"), summary={}), generated


def test_the_spine_rows_fill_every_version_table_and_count_what_was_judged(tmp_path: Path) -> None:
    judged, generated = judged_pair(tmp_path)
    table = ({"task": "overall", "accuracy": 0.5},)
    rows = benchmark(SPINE).spine_rows(judged, TaskScores("m", table, 0.95), generated, suite="s", model="m")
    assert set(rows.tables) == set(SPINE_SQL.version_tables)
    assert (rows.judged, rows.results_sha256) == (2, judged.sha256)
    assert list(rows.scores) == list(table)
    verdicts = rows.tables["verdicts"]
    assert [(v["suite"], v["prompt_index"], v["sample"], v["correct"]) for v in verdicts] == [
        ("s", 0, 0, True),
        ("s", 0, 1, False),
    ]
    assert [(d["sample"], d["rank"], d["x2"], d["score"]) for d in rows.tables["detections"]] == [(0, 0, 30.0, 0.9)]


def test_a_changed_results_file_or_an_unjudged_image_is_refused(tmp_path: Path) -> None:
    judged, generated = judged_pair(tmp_path)
    spine = benchmark(SPINE)
    scores = TaskScores("m", (), 0.95)
    extra = Generated(model="m", folder="f", images=(*generated.images, ImageInfo(3, 0, "y.png", "9", 1)), manifest={})
    with pytest.raises(InputError, match=r"^m: 1 images have no GenEval verdict \(e.g. \(3, 0\)\)$"):
        spine.spine_rows(judged, scores, extra, suite="s", model="m")
    Path(judged.results).write_text(Path(judged.results).read_text() + "\n")
    with pytest.raises(InputError, match=r"r\.jsonl: the results file is missing or changed since it was judged"):
        spine.spine_rows(judged, scores, generated, suite="s", model="m")


def test_the_store_refuses_a_version_without_every_spine_table(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    version = VersionRows(
        model="m",
        model_hash="h",
        evaluator_hash="e",
        suite="s",
        content_hash="c",
        model_row={"label": "m", "backend": "folder", "smoke": False},
        prompts=[],
        images=[],
        spine={"verdicts": []},
        metrics=[],
        modes=[],
    )
    with pytest.raises(ValueError, match=r"VersionRows.spine has \['verdicts'\], not "):
        store.write_version("r", version)
    assert not store.file.exists()  # refused before the store was opened
