import json
from collections import Counter

import pytest

from t2ibench.benchmarks.geneval.suite import (
    TASKS,
    article,
    generate_suite,
    plural,
    read_suite,
    suite_jsonl,
    validate_record,
    vocabulary,
    write_suite,
)
from t2ibench.errors import InputError
from tests.conftest import GENEVAL_DATA

OFFICIAL = GENEVAL_DATA / "evaluation_metadata.jsonl"
NAMES = GENEVAL_DATA / "object_names.txt"
needs_shared = pytest.mark.skipif(
    not OFFICIAL.exists(),
    reason=f"GenEval's released metadata not found at {OFFICIAL} ($T2IBENCH_GENEVAL_DATA, default ../shared/geneval)",
)


@needs_shared
def test_official_suite_is_reproduced_byte_for_byte():
    assert suite_jsonl(generate_suite(seed=43, per_task=100)) == OFFICIAL.read_text(encoding="utf-8")


@needs_shared
def test_class_list_matches_the_released_names():
    assert list(vocabulary().classes) == NAMES.read_text().split("\n")[:80]


def test_defaults_are_the_official_parameters():
    assert generate_suite() == generate_suite(seed=43, per_task=100)


def test_official_suite_shape():
    records = generate_suite()
    assert len(records) == 553
    counts = Counter(r["tag"] for r in records)
    assert list(counts) == list(TASKS)
    assert counts["single_object"] == 80
    assert all(c <= 100 for c in counts.values())


def test_other_seeds_and_sizes_make_new_valid_suites():
    a, b = generate_suite(seed=1, per_task=20), generate_suite(seed=2, per_task=20)
    assert a != b
    assert a == generate_suite(seed=1, per_task=20)
    for i, record in enumerate(a):
        validate_record(record, where=f"record {i}")
    keys = [json.dumps(r, sort_keys=True) for r in a]
    assert len(keys) == len(set(keys))  # duplicates dropped
    assert Counter(r["tag"] for r in generate_suite(seed=5, per_task=3))["single_object"] == 80


def test_generated_records_follow_the_rules():
    vocab = vocabulary()
    for r in generate_suite(seed=7, per_task=50):
        classes = [c["class"] for c in r["include"]]
        if r["tag"] in ("colors", "color_attr"):
            assert vocab.colourless_class not in classes
        if r["tag"] == "counting":
            assert r["exclude"][0]["count"] == r["include"][0]["count"] + 1
            assert 2 <= r["include"][0]["count"] <= 4
        if r["tag"] == "color_attr":
            assert r["include"][0]["color"] != r["include"][1]["color"]
            assert classes[0] != classes[1]
        if r["tag"] == "position":
            assert r["include"][1]["position"][1] == 0


def test_grammar_helpers():
    assert article("orange") == "an"
    assert article("umbrella") == "an"
    assert article("red") == "a"
    assert plural("bus") == "buses"
    assert plural("skis") == "skises"  # GenEval's rule, applied literally
    assert plural("cat") == "cats"


def test_write_and_read_round_trip(tmp_path):
    records = generate_suite(seed=3, per_task=5)
    path = write_suite(tmp_path / "suite.jsonl", records)
    assert read_suite(path) == records


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "x.jsonl:2: not valid JSON"),
        ('{"tag": "single_object", "include": []}', "x.jsonl:2: missing 'prompt'"),
        ('{"tag": "nope", "include": [], "prompt": "p"}', "unknown tag 'nope'"),
        ('{"tag": "colors", "include": [{"class": "unicorn", "count": 1}], "prompt": "p"}', "unknown class"),
        ('{"tag": "colors", "include": [{"class": "car", "count": 0}], "prompt": "p"}', "count must be"),
        ('{"tag": "colors", "include": [{"class": "car", "count": 1, "color": "teal"}], "prompt": "p"}', "teal"),
        (
            '{"tag": "position", "include": [{"class": "car", "count": 1, "position": ["left of", 0]}], "prompt": "p"}',
            "must index an earlier include clause",
        ),
    ],
)
def test_bad_records_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "x.jsonl"
    path.write_text(suite_jsonl(generate_suite(seed=0, per_task=1)[:1]) + line + "\n")
    with pytest.raises(InputError, match=message):
        read_suite(path)


def test_detector_aliases_map_to_geneval_names():
    vocab = vocabulary()
    assert vocab.canonical_class("mouse") == "computer mouse"
    assert vocab.canonical_class("cat") == "cat"
    with pytest.raises(InputError, match="'unicorn' is not one of the 80 GenEval classes"):
        vocab.canonical_class("unicorn")
