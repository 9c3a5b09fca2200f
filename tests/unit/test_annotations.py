"""Loading GenEval's annotation CSVs: clean, deliberately broken, and the released files."""

import csv
import io
import json
from collections import Counter

import pytest

from t2ibench.benchmarks.geneval.suite import generate_suite
from t2ibench.benchmarks.geneval.suite_annotations import load_annotations
from t2ibench.cli import main
from t2ibench.errors import InputError
from tests.conftest import GENEVAL_DATA

HEADER = [
    "HITId",
    "Input.index",
    "Input.prompt_id",
    "Input.image_id",
    "Input.image_url",
    "Input.caption",
    "Input.object_0_name",
    "Input.object_1_name",
    "Input.object_0_name_plural",
    "Input.object_1_name_plural",
    "Input.exclude",
    "Answer.ee",
    "Answer.task-color-0",
    "Answer.task-color-1",
    "Answer.task-count-0",
    "Answer.task-count-1",
    "Answer.task-objects",
    "Answer.task-position-x",
    "Answer.task-position-y",
    "Answer.task-quality",
    "Answer.task-real-0",
    "Answer.task-real-1",
]
SUITE = generate_suite()


def record(prompt_id, image_id=0, *, count0="1", color0="red", objects="cat", caption=None, x="", count1=""):
    meta = SUITE[prompt_id]
    values = {
        "HITId": f"H{prompt_id}",
        "Input.index": f"{prompt_id}_{image_id}",
        "Input.prompt_id": str(prompt_id),
        "Input.image_id": str(image_id),
        "Input.image_url": f"https://x/images/toy/{prompt_id:05d}/samples/{image_id:05d}.png",
        "Input.caption": meta["prompt"] if caption is None else caption,
        "Input.object_0_name": meta["include"][0]["class"],
        "Answer.task-count-0": count0,
        "Answer.task-count-1": count1,
        "Answer.task-color-0": color0,
        "Answer.task-objects": objects,
        "Answer.task-position-x": x,
        "Answer.task-quality": "3",
        "Answer.task-real-0": "3",
    }
    return [values.get(h, "") for h in HEADER]


def write(tmp_path, rows, *, raw_lines=()):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(HEADER)
    for r in rows:
        writer.writerow(r)
    text = buf.getvalue() + "".join(raw_lines)
    path = tmp_path / "annotations_toy.csv"
    path.write_text(text)
    return path


def test_clean_file_loads_with_slots_and_source(tmp_path):
    path = write(tmp_path, [record(0), record(0), record(1, 2, color0="black|white")])
    anns, report = load_annotations(path, SUITE)
    assert report.kept == 3
    assert not report.repaired
    assert not report.dropped
    assert "noted 1 row(s): same answers as an earlier record of the image; kept" in report.summary()
    assert [a.slot for a in anns] == [0, 1, 0]
    assert anns[0].source == "toy"
    assert anns[2].colors[0] == frozenset({"black", "white"})
    assert anns[0].counts == (1, None)


def test_quoted_multiline_free_text_is_one_record(tmp_path):
    path = write(tmp_path, [record(0, objects="a cat,\nanother cat"), record(1)])
    anns, report = load_annotations(path, SUITE)
    assert report.kept == 2
    assert not report.repaired
    assert anns[0].objects == "a cat,\nanother cat"


def unquoted(fields):
    return ",".join(fields) + "\n"


def test_split_record_is_rejoined_and_reported(tmp_path):
    fields = record(3, objects="cat on a mat")
    i = HEADER.index("Answer.task-objects")
    first = [*fields[:i], "cat on"]
    second = ["a mat", *fields[i + 1 :]]
    path = write(tmp_path, [record(0)], raw_lines=[",".join(first) + "\n", ",".join(second) + "\n"])
    anns, report = load_annotations(path, SUITE)
    assert report.kept == 2
    assert report.repaired == Counter({"split record rejoined": 1})
    assert anns[1].objects == "cat on\na mat"
    assert anns[1].prompt_id == 3
    assert "repaired 1 row(s): split record rejoined (e.g. line 3)" in report.summary()


def test_unquoted_commas_are_reabsorbed_into_the_free_text(tmp_path):
    fields = record(4, objects="X")
    i = HEADER.index("Answer.task-objects")
    spilled = [*fields[:i], "donut", " donut", " donut", *fields[i + 1 :]]
    path = write(tmp_path, [], raw_lines=[unquoted(spilled)])
    anns, report = load_annotations(path, SUITE)
    assert report.repaired == Counter({"unquoted commas in free text re-absorbed": 1})
    assert anns[0].objects == "donut, donut, donut"
    assert anns[0].counts == (1, None)  # columns after the free text did not shift


def test_unrepairable_and_invalid_rows_are_dropped_with_reasons(tmp_path):
    rows = [
        record(0),
        record(1, count0="7"),
        record(2, color0="teal"),
        record(3, caption="a photo of something else"),
        record(4, x="sideways"),
        record(5, count0="two"),
    ]
    truncated = ",".join(record(6)[:5]) + "\n"  # a record cut short at the end of the file
    path = write(tmp_path, rows, raw_lines=[truncated])
    anns, report = load_annotations(path, SUITE)
    assert [a.prompt_id for a in anns] == [0]
    assert report.rows_read == 7
    dropped = dict(report.dropped)
    assert dropped["count of object 0 out of range"] == 1
    assert dropped["unknown colour"] == 1
    assert dropped["caption differs from the suite's prompt for that prompt_id"] == 1
    assert dropped["position-x not a form answer"] == 1
    assert dropped["count of object 0 not a number"] == 1
    assert sum(v for k, v in dropped.items() if k.startswith("cannot repair")) == 1


def test_files_that_are_not_annotations(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="missing column"):
        load_annotations(tmp_path / "x.csv")
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(InputError, match="empty file"):
        load_annotations(tmp_path / "e.csv")


CSVS = [GENEVAL_DATA / f"annotations_{s}.csv" for s in ("clip", "sdv2")]
needs_shared = pytest.mark.skipif(
    not all(p.exists() for p in CSVS), reason=f"GenEval's released annotations not found in {GENEVAL_DATA}"
)


@needs_shared
@pytest.mark.parametrize("path", CSVS, ids=["clip", "sdv2"])
def test_released_annotations_are_internally_consistent(path):
    suite = [json.loads(line) for line in (GENEVAL_DATA / "evaluation_metadata.jsonl").read_text().splitlines()]
    anns, report = load_annotations(path, suite)
    assert report.rows_read == len(anns)  # nothing repaired or dropped in the released files
    assert not report.dropped
    images = Counter(a.image_key for a in anns)
    assert len({a.source for a in anns}) == 1
    assert set(images.values()) == {5}  # five annotators per image
    assert len(images) * 5 == len(anns)
    per_prompt = Counter(k[1] for k in images)
    tasks = Counter(suite[k[1]]["tag"] for k in images)
    assert set(tasks) == {"single_object", "two_object", "counting", "colors", "position", "color_attr"}
    assert all(0 <= k[2] < 4 for k in images)  # GenEval's four samples per prompt
    assert max(per_prompt.values()) <= 4
    for a in anns:  # object slots follow the include clauses
        include = suite[a.prompt_id]["include"]
        if len(include) == 1:
            assert a.counts[1] is None


@needs_shared
def test_agreement_cli_on_the_released_files(tmp_path, capsys):
    from t2ibench.benchmarks.geneval.evaluate import ResultRow, write_results

    suite = [json.loads(line) for line in (GENEVAL_DATA / "evaluation_metadata.jsonl").read_text().splitlines()]
    anns, _ = load_annotations(CSVS[1], suite)
    images = sorted({(a.prompt_id, a.image_id) for a in anns})
    rows = [  # a stand-in automatic judge that calls everything correct
        ResultRow(f"out/{p:05d}/samples/{i:05d}.png", suite[p]["tag"], suite[p]["prompt"], True, "", suite[p])
        for p, i in images
    ]
    write_results(tmp_path / "auto.jsonl", rows)
    scores = tmp_path / "scores.jsonl"
    scores.write_text(
        "".join(
            json.dumps({"source": "sdv2", "prompt_id": p, "image_id": i, "score": (p * 7 + i) % 11}) + "\n"
            for p, i in images
        )
    )
    argv = [
        "agreement",
        "--annotations",
        *map(str, CSVS),
        "--metadata",
        str(GENEVAL_DATA / "evaluation_metadata.jsonl"),
    ]
    argv += ["--auto", f"sdv2={tmp_path / 'auto.jsonl'}", "--scores", str(scores), "--out", str(tmp_path / "agr")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| clip | all | 400 | 2000 |" in out
    assert "Automatic verdicts 'geneval' vs humans (400 of 800 annotated images have automatic verdicts)" in out
    payload = json.loads((tmp_path / "agr" / "agreement.json").read_text())
    always_true = payload["auto"]["geneval"]["sdv2/all"]
    assert always_true["auto_accuracy"] == 1.0
    human = payload["human"]["sdv2/all"]
    # calling everything correct agrees with an annotator exactly when that annotator said correct
    assert always_true["vs_annotators"] == pytest.approx(human["human_accuracy"])
    assert set(payload["tuned_thresholds"]) == {
        "single_object",
        "two_object",
        "counting",
        "colors",
        "position",
        "color_attr",
    }
    assert (tmp_path / "agr" / "agreement.md").read_text().startswith(str(CSVS[0]))


def _released():
    from t2ibench.benchmarks.geneval.agreement import human_verdicts

    suite = [json.loads(line) for line in (GENEVAL_DATA / "evaluation_metadata.jsonl").read_text().splitlines()]
    anns = [a for path in CSVS for a in load_annotations(path, suite)[0]]
    return suite, anns, human_verdicts(anns, suite)


def _brute_force(verdicts, tasks, keys):
    """The inter-annotator definitions of docs/agreement.md's table, straight from the votes (percent)."""
    from itertools import combinations

    def pairwise(ks):
        return sum(sum(a == b for a, b in combinations(verdicts[k], 2)) / 10 for k in ks) / len(ks)

    hits = half = 0.0
    voters = 0
    for k in keys:
        g = verdicts[k]
        for v in g:
            others = sum(g) - v
            if others == 2:
                half += 0.5
            else:
                hits += v == (others > 2)
                voters += 1
    task_names = sorted({tasks[k] for k in keys})
    return {
        "pairwise": 100 * pairwise(keys),
        "task mean": 100 * sum(pairwise([k for k in keys if tasks[k] == t]) for t in task_names) / len(task_names),
        "others": 100 * hits / voters,
        "half": 100 * (hits + half) / (5 * len(keys)),
        "all five": 100 * sum(max(sum(verdicts[k]), 5 - sum(verdicts[k])) / 5 for k in keys) / len(keys),
        "4 of 5": 100 * sum(max(sum(verdicts[k]), 5 - sum(verdicts[k])) >= 4 for k in keys) / len(keys),
        "unanimous": 100 * sum(len(set(verdicts[k])) == 1 for k in keys) / len(keys),
    }


TABLE_ROWS = {  # docs/agreement.md's rows of the 88 % table, by their first words
    "pairwise": "pairwise agreement, averaged",
    "task mean": "pairwise agreement, unweighted",
    "others": "annotator vs majority of the other four",
    "half": "the same, a 2–2 tie",
    "all five": "annotator vs majority of all five",
    "4 of 5": "images on which at least 4",
    "unanimous": "unanimous images",
}


def _docs_table():
    from tests.conftest import REPO

    text = (REPO / "docs" / "agreement.md").read_text()
    rows = {}
    for name, start in TABLE_ROWS.items():
        line = next(line for line in text.splitlines() if line.startswith(f"| {start}"))
        rows[name] = [float(cell) for cell in line.strip("|").split("|")[1:]]
    return text, rows  # columns: clip, sdv2, IF-XL, clip + sdv2, all three


@needs_shared
def test_numbers_quoted_in_the_docs_are_computed():
    import re

    from t2ibench.benchmarks.geneval.agreement import ALL, agreement_report

    _, _, hv = _released()
    report = agreement_report(hv)
    text, table = _docs_table()
    number = r"([\d.]+)"
    interval = rf"\[{number}, {number}\]"
    pattern = (
        rf"agreement {number} % {interval} over all 800\s+images \(the paper reports 88 %\), Fleiss' κ {number}; "
        rf"human score {number}\s+{interval} for clip and {number} {interval} for sdv2 \(Table 2: 0\.42 and 0\.57\); "
        rf"task means {number} {interval} and\s+{number} {interval}\."
    )
    found = re.search(pattern, text)
    assert found, "the 'On the released files' paragraph changed shape"
    q = list(map(float, found.groups()))
    pairwise, p_low, p_high, fleiss = q[:4]
    pooled = report.human[(ALL, ALL)]
    assert 100 * pooled.pairwise_agreement == pytest.approx(pairwise, abs=0.05)
    ci = report.estimate("human", ALL, ALL, "pairwise_agreement")
    assert (100 * ci.low, 100 * ci.high) == (pytest.approx(p_low, abs=0.05), pytest.approx(p_high, abs=0.05))
    assert pooled.fleiss_kappa == pytest.approx(fleiss, abs=5e-4)
    for source, (score, low, high), (mean, m_low, m_high), paper in (
        ("clip", q[4:7], q[10:13], 0.42),
        ("sdv2", q[7:10], q[13:16], 0.57),
    ):
        pooled_source = report.human[(source, ALL)].human_accuracy
        assert 100 * pooled_source == pytest.approx(score, abs=0.05)
        assert round(pooled_source, 2) == paper  # GenEval Table 2's Human column, at two decimals
        est = report.estimate("human", source, ALL, "human_accuracy")
        assert (100 * est.low, 100 * est.high) == (pytest.approx(low, abs=0.05), pytest.approx(high, abs=0.05))
        task_mean = report.estimate("human", source, ALL, "human_accuracy_task_mean")
        expected = (pytest.approx(mean, abs=0.05), pytest.approx(m_low, abs=0.05), pytest.approx(m_high, abs=0.05))
        assert (100 * task_mean.value, 100 * task_mean.low, 100 * task_mean.high) == expected
    # the 88 % table: every shared-files column recomputed from the votes, and the library's named statistics
    for column, source in ((0, "clip"), (1, "sdv2"), (3, None)):
        keys = [k for k in hv.verdicts if source is None or k[0] == source]
        brute = _brute_force(hv.verdicts, hv.tasks, keys)
        for name, values in table.items():
            assert brute[name] == pytest.approx(values[column], abs=0.0501), (source, name)
        label = source or ALL
        assert 100 * report.human[(label, ALL)].pairwise_agreement == pytest.approx(brute["pairwise"])
        assert 100 * report.human[(label, ALL)].vs_majority_of_others == pytest.approx(brute["others"])
        mean = report.estimate("human", label, ALL, "pairwise_agreement_task_mean")
        assert 100 * mean.value == pytest.approx(brute["task mean"])
    assert all(round(values[3]) != 88 for values in table.values())  # no definition gives the paper's 88 %


IF_XL = GENEVAL_DATA / "annotations_if-xl.csv"


@pytest.mark.skipif(
    not (IF_XL.exists() and all(p.exists() for p in CSVS)),
    reason=f"GenEval's IF-XL annotations (annotations_if-xl.csv, in GenEval's repository) not in {GENEVAL_DATA}",
)
def test_the_three_source_columns_of_the_88_percent_table():
    """With the IF-XL file beside the shared ones, the table's IF-XL and all-three columns and Table 2's 0.72."""
    from t2ibench.benchmarks.geneval.agreement import human_verdicts

    suite = [json.loads(line) for line in (GENEVAL_DATA / "evaluation_metadata.jsonl").read_text().splitlines()]
    anns = [a for path in [*CSVS, IF_XL] for a in load_annotations(path, suite)[0]]
    hv = human_verdicts(anns, suite)
    _, table = _docs_table()
    ifxl = [k for k in hv.verdicts if k[0] == "if-xl"]
    assert len(ifxl) == 400
    assert round(sum(v for k in ifxl for v in hv.verdicts[k]) / 2000, 2) == 0.72  # Table 2's IF-XL Human
    for column, keys in ((2, ifxl), (4, list(hv.verdicts))):
        brute = _brute_force(hv.verdicts, hv.tasks, keys)
        for name, values in table.items():
            assert brute[name] == pytest.approx(values[column], abs=0.0501), (column, name)


@needs_shared
def test_intervals_on_the_released_files_are_seeded_nested_and_complete():
    from t2ibench.benchmarks.geneval.agreement import ALL, agreement_report, agreement_rows

    _, _, hv = _released()
    report = agreement_report(hv, resamples=300, ci_seed=4)
    rows = agreement_rows(report)
    assert report.ci["level"] == 0.95
    shares = {"human_accuracy", "pairwise_agreement", "vs_majority_of_others", "fleiss_kappa", "cohen_kappa"}
    for r in rows:
        assert set(r) == {"scope", "source", "task", "statistic", "value", "ci_low", "ci_high", "ci_level", "n"}
        if r["statistic"] in shares | {"human_accuracy_task_mean", "pairwise_agreement_task_mean"}:
            assert r["n"] is not None
            if r["ci_low"] is not None:
                assert r["ci_low"] - 1e-12 <= r["value"] <= r["ci_high"] + 1e-12, r
                assert r["ci_level"] == 0.95
        elif r["statistic"] in {"images", "annotations", "ties_excluded", "unanimous_images"}:
            assert (r["ci_low"], r["ci_high"], r["ci_level"], r["n"]) == (None, None, None, None)
    covered = {(r["source"], r["task"]) for r in rows if r["statistic"] == "human_accuracy" and r["ci_low"] is not None}
    assert covered == {(s, t) for s in ("clip", "sdv2", ALL) for t in (*TASKS_ORDER, ALL)}
    by = {(r["source"], r["task"], r["statistic"]): r for r in rows}
    assert by[("clip", ALL, "human_accuracy")]["n"] == 2000
    assert by[("clip", ALL, "pairwise_agreement")]["n"] == 400
    assert by[("clip", ALL, "human_accuracy_task_mean")]["n"] == 6
    again = agreement_rows(agreement_report(hv, resamples=300, ci_seed=4))
    assert again == rows
    narrow = agreement_report(hv, resamples=300, ci_seed=4, ci_level=0.5).estimate(
        "human", "clip", ALL, "human_accuracy"
    )
    wide = report.estimate("human", "clip", ALL, "human_accuracy")
    assert wide.low < narrow.low < narrow.high < wide.high
    assert narrow.level == 0.5


TASKS_ORDER = ("single_object", "two_object", "counting", "colors", "position", "color_attr")


def test_store_agreement_writes_interval_columns(tmp_path):
    from t2ibench.benchmarks.geneval.agreement import run_agreement, store_agreement
    from t2ibench.store import Store

    rows = [record(p, i, count0=str(c)) for p in (0, 1, 2) for i in (0, 1) for c in (1, 1, 0)]
    path = write(tmp_path, rows)
    run = run_agreement([path], SUITE, resamples=50, ci_seed=2)
    assert store_agreement(run, tmp_path / "s.duckdb") == len(rows)
    stored = Store(tmp_path / "s.duckdb").rows("SELECT * FROM agreement ORDER BY scope, source, task, statistic")
    by = {(r["source"], r["task"], r["statistic"]): r for r in stored}
    accuracy = by[("toy", "all", "human_accuracy")]
    assert accuracy["value"] == pytest.approx(12 / 18)
    assert accuracy["n"] == 18
    assert accuracy["ci_level"] == pytest.approx(0.95)
    assert accuracy["ci_low"] <= accuracy["value"] <= accuracy["ci_high"]
    assert by[("toy", "all", "images")]["ci_low"] is None
    assert by[("toy", "all", "images")]["n"] is None
    assert ("toy", "all", "pairwise_agreement_task_mean") not in by  # one task only: no task mean
    from t2ibench.benchmarks.geneval.report_agreement import html_page

    page = html_page(stored, nav="<nav>n</nav>")  # the stored rows, as DuckDB returns them, render
    assert 'id="agreement-human"' in page
    assert "66.7" in page


def with_image_id(fields, image_id):
    return [image_id if h == "Input.image_id" else v for h, v in zip(HEADER, fields, strict=True)]


@pytest.mark.parametrize(
    ("image_id", "reason"),
    [
        ("+1", "image_id not a whole number"),
        (" 1", "image_id not a whole number"),
        ("1_0", "image_id not a whole number"),
        ("\u0663", "image_id not a whole number"),
        ("-1", "image_id not a whole number"),
        ("", "image_id not a whole number"),
        ("2147483648", "image_id out of range"),
        ("9" * 5000, "image_id out of range"),  # more digits than int() may parse: still one clear reason
    ],
)
def test_malformed_image_ids_are_dropped_and_counted(tmp_path, image_id, reason):
    rows = [record(0, 1), with_image_id(record(0, 2), image_id)]
    anns, report = load_annotations(write(tmp_path, rows), SUITE)
    assert [a.image_id for a in anns] == [1]
    assert report.dropped == Counter({reason: 1})
    assert report.rows_read == report.kept + report.dropped_rows


def test_ids_written_as_decimals_are_the_same_image(tmp_path):
    rows = [record(0, 1), with_image_id(record(0, 1, count0="0"), "1.0")]
    anns, report = load_annotations(write(tmp_path, rows), SUITE)
    assert [(a.image_id, a.slot) for a in anns] == [(1, 0), (1, 1)]
    assert report.agreement_rows == 2


def test_single_annotations_are_counted_in_the_load_report(tmp_path):
    _, report = load_annotations(write(tmp_path, [record(0, 0), record(0, 0, count0="0"), record(1, 0)]), SUITE)
    assert report.kept == 3
    assert report.score_only == Counter({"the only annotation of its image (no agreement statistic)": 1})
    assert report.agreement_rows == 2
    assert "in the human score only 1 row(s): the only annotation of its image" in report.summary()
    assert report.to_dict()["agreement_rows"] == 2


def test_a_long_split_record_is_rejoined_in_linear_time(tmp_path):
    import time

    start = ",".join(record(0)[:5]) + "\n"
    path = write(tmp_path, [record(1)], raw_lines=[start, *["word\n"] * 200_000])
    began = time.perf_counter()
    anns, report = load_annotations(path, SUITE)
    assert time.perf_counter() - began < 10  # the former string-by-string rejoin was quadratic (minutes)
    assert [a.prompt_id for a in anns] == [1]
    assert report.dropped == Counter({"a record split over more than 100 lines, not repaired": 1})


@needs_shared
def test_released_rows_add_up_from_the_files_to_the_statistics(tmp_path):
    """Rows read = rows kept + rows dropped (by reason); rows kept = annotations in the human score = annotations in
    the agreement statistics + single annotations; what the JSON, the Markdown and metrics.json say rests on them."""
    suite = [json.loads(line) for line in (GENEVAL_DATA / "evaluation_metadata.jsonl").read_text().splitlines()]
    argv = [
        "agreement",
        "--annotations",
        *map(str, CSVS),
        "--metadata",
        str(GENEVAL_DATA / "evaluation_metadata.jsonl"),
    ]
    assert main([*argv, "--resamples", "20", "--out", str(tmp_path)]) == 0
    payload = json.loads((tmp_path / "agreement.json").read_text())
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    for path, loading in zip(CSVS, payload["loading"], strict=True):
        anns, report = load_annotations(path, suite)
        assert loading["read"] == loading["kept"] + sum(loading["dropped"].values()) == report.rows_read
        assert loading["kept"] == loading["agreement_rows"] + sum(loading["score_only"].values()) == len(anns)
        source = anns[0].source
        human = payload["human"][f"{source}/all"]
        assert human["score_annotations"] == loading["kept"] == metrics[f"human_score_annotations_{source}"]
        assert human["annotations"] == loading["agreement_rows"]
        assert human["score_images"] == len({a.image_key for a in anns}) == metrics[f"human_score_images_{source}"]
    pooled = payload["human"]["all/all"]
    assert pooled["score_annotations"] == sum(r["kept"] for r in payload["loading"]) == 4000
    assert (metrics["annotations"], metrics["images"], metrics["single_annotation_images"]) == (4000, 800, 0)
    assert "| clip | 41.6 [" in (tmp_path / "agreement.md").read_text().replace("| clip | all |", "")
