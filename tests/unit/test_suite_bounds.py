"""Suite files are bounded before a prompt reaches a tokenizer: the file's size (unread beyond its reader's bound or
the memory limit), its lines, each prompt's and question's length, questions per prompt. Measured before the
bounds: a 100 MB prompt took `t2ibench generate geneval2` to 16.8 GB and 8.5 minutes (the judge's tokenizer
aborted on it), a 10⁶-line suite (415 MB) to 4.0 GB before a single image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from t2ibench.benchmarks.geneval import suite as geneval
from t2ibench.benchmarks.geneval.suite import read_suite
from t2ibench.benchmarks.geneval2 import suite as geneval2
from t2ibench.benchmarks.geneval2.suite import read_geneval2
from t2ibench.errors import InputError
from t2ibench.suites import MAX_PROMPT_CHARS
from tests.geneval2_lines import LINES

GENEVAL_RECORD = {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"}


def write_lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_prompt_longer_than_the_bound_is_refused_naming_file_and_line(tmp_path):
    long = dict(LINES[1], prompt="a red car " * (MAX_PROMPT_CHARS // 10 + 1))
    path = write_lines(tmp_path / "s.jsonl", [LINES[0], long])
    with pytest.raises(InputError, match=r"s\.jsonl:2: the prompt has 10,010 characters; at most 10,000") as e:
        read_geneval2(path, full=False)
    assert len(str(e.value)) < 300
    at_bound = dict(LINES[1], prompt="x" * MAX_PROMPT_CHARS)
    assert read_geneval2(write_lines(tmp_path / "ok.jsonl", [at_bound]), full=False).prompts[0].prompt == "x" * 10_000


def test_a_question_longer_than_the_bound_or_too_many_questions_are_refused(tmp_path):
    pairs = [["Is the car red? " + "very " * 2000, "Yes"]]
    long_question = dict(LINES[1], vqa_list=pairs, skills=["attribute"], atom_count=1)
    with pytest.raises(InputError, match=r"s\.jsonl:1: question 1: the question has 10,016 characters"):
        read_geneval2(write_lines(tmp_path / "s.jsonl", [long_question]), full=False)
    many = dict(LINES[1], vqa_list=[["Is it red?", "Yes"]] * 101, skills=["attribute"] * 101, atom_count=1)
    with pytest.raises(InputError, match=r"s\.jsonl:1: vqa_list has 101 questions; at most 100"):
        read_geneval2(write_lines(tmp_path / "s.jsonl", [many]), full=False)


def test_a_suite_file_past_its_bound_is_refused_unread(tmp_path):
    bound = geneval2.MAX_GENEVAL2_LINES * geneval2.MAX_GENEVAL2_LINE_BYTES
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as fh:
        fh.truncate(bound + 1)  # sparse: nothing is written, and nothing may be read
    with pytest.raises(InputError, match=rf"huge\.jsonl: {bound + 1:,} bytes; a GenEval 2 suite holds at most "):
        read_geneval2(path, full=False)
    with path.open("r+b") as fh:
        fh.truncate(geneval.MAX_SUITE_RECORDS * geneval.MAX_LINE_BYTES + 1)
    with pytest.raises(InputError, match=r"huge\.jsonl: [\d,]+ bytes; a prompt suite holds at most "):
        read_suite(path)


def test_a_suite_whose_parse_would_outgrow_the_memory_limit_is_refused_unread(tmp_path, monkeypatch):
    path = write_lines(tmp_path / "s.jsonl", [dict(LINES[1], prompt=f"a red car {i}") for i in range(200)])
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "1M")
    with pytest.raises(InputError, match=r"s\.jsonl: reading this [\d,]+-byte GenEval 2 suite needs ~[\d.]+ MiB"):
        read_geneval2(path, full=False)
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "64M")
    assert len(read_geneval2(path, full=False).prompts) == 200


def test_a_suite_with_more_lines_than_its_bound_is_refused_at_the_first_extra_line(tmp_path, monkeypatch):
    monkeypatch.setattr(geneval2, "MAX_GENEVAL2_LINES", 2)
    monkeypatch.setattr(geneval2, "MAX_GENEVAL2_LINE_BYTES", 10_000)
    with pytest.raises(InputError, match=r"s\.jsonl:3: a GenEval 2 suite holds at most 2 lines"):
        read_geneval2(write_lines(tmp_path / "s.jsonl", LINES[:3]), full=False)


def test_geneval_prompt_records_are_bounded_alike(tmp_path, monkeypatch):
    long = dict(GENEVAL_RECORD, prompt="a photo of a cat " * 700)
    with pytest.raises(InputError, match=r"m\.jsonl:2: the prompt has 11,900 characters; at most 10,000"):
        read_suite(write_lines(tmp_path / "m.jsonl", [dict(GENEVAL_RECORD, prompt="a cat"), long]))
    monkeypatch.setattr(geneval, "MAX_SUITE_RECORDS", 1)
    with pytest.raises(InputError, match=r"m\.jsonl:2: a prompt suite holds at most 1 lines"):
        read_suite(write_lines(tmp_path / "m.jsonl", [GENEVAL_RECORD, dict(GENEVAL_RECORD, prompt="a cat")]))


def test_the_released_suites_are_far_inside_the_bounds():
    """The bounds sit far above the releases (their numbers are quoted in the code): GenEval 2's 800 lines, longest
    802 bytes, prompt 93 characters, 11 questions; GenEval's 553 lines, longest 223 bytes."""
    assert geneval2.MAX_GENEVAL2_LINES >= 100 * 800
    assert geneval2.MAX_GENEVAL2_LINE_BYTES >= 802
    assert geneval.MAX_LINE_BYTES >= 223
    assert MAX_PROMPT_CHARS >= 100 * 93
    assert geneval2.MAX_QUESTIONS >= 11
