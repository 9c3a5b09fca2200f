"""Loading GenEval's annotation CSVs: clean, deliberately broken, and the released files."""

import csv
import io
import json
from collections import Counter

import pytest

from t2ibench.cli import main
from t2ibench.errors import InputError
from t2ibench.suites.annotations import load_annotations
from t2ibench.suites.geneval import generate_suite
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
    from t2ibench.geneval_eval import ResultRow, write_results

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


@needs_shared
def test_numbers_quoted_in_the_docs_are_computed():
    import re

    from t2ibench.human_agreement import agreement_report, human_verdicts
    from tests.conftest import REPO

    suite = [json.loads(line) for line in (GENEVAL_DATA / "evaluation_metadata.jsonl").read_text().splitlines()]
    anns = [a for path in CSVS for a in load_annotations(path, suite)[0]]
    report = agreement_report(human_verdicts(anns, suite))
    text = (REPO / "docs" / "agreement.md").read_text()
    pattern = (
        r"agreement ([\d.]+) % over all 800\nimages \(the paper reports 88 %\), Fleiss' κ ([\d.]+); "
        r"human score ([\d.]+) for clip and ([\d.]+) for sdv2"
    )
    pairwise, fleiss, clip, sdv2 = map(float, re.search(pattern, text).groups())
    pooled = report.human[("all", "all")]
    assert 100 * pooled.pairwise_agreement == pytest.approx(pairwise, abs=0.05)
    assert pooled.fleiss_kappa == pytest.approx(fleiss, abs=5e-4)
    for source, quoted, paper in (("clip", clip, 0.42), ("sdv2", sdv2, 0.57)):
        pooled_source = report.human[(source, "all")].human_accuracy
        assert 100 * pooled_source == pytest.approx(quoted, abs=0.05)
        assert round(pooled_source, 2) == paper  # GenEval Table 2's Human column, at two decimals
