"""The GenEval 2 suite: the released file's shape and every malformed line refused with its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from t2ibench.benchmarks.geneval2.suite import (
    ATOM_COUNTS,
    SKILLS,
    first_per_atom_count,
    read_geneval2,
    skill_counts,
    subset,
)
from t2ibench.errors import InputError
from tests.conftest import GENEVAL2_DATA
from tests.geneval2_lines import LINE

RELEASED = GENEVAL2_DATA / "geneval2_data.jsonl"
needs_release = pytest.mark.skipif(not RELEASED.is_file(), reason="GenEval 2's file is not available")


def write(tmp_path: Path, *records: object) -> Path:
    path = tmp_path / "suite.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


@needs_release
def test_the_released_file_has_800_prompts_100_per_atom_count_and_is_recognised():
    suite = read_geneval2(RELEASED)
    assert len(suite.prompts) == 800
    assert suite.released
    assert suite.questions == 6012
    assert dict(skill_counts(suite.prompts)) == {
        "object": 2025, "attribute": 1214, "count": 2025, "position": 662, "verb": 86
    }  # fmt: skip
    for k in ATOM_COUNTS:
        assert sum(p.atom_count == k for p in suite.prompts) == 100
    # the record an image folder's metadata holds is the line itself, byte-equivalent as JSON
    first = json.loads(RELEASED.read_text().splitlines()[0])
    assert suite.prompts[0].record() == first
    balanced = first_per_atom_count(suite, 2)
    assert len(balanced) == 16
    small = subset(suite, balanced)
    assert sorted(p.atom_count for p in small.prompts) == sorted(list(ATOM_COUNTS) * 2)
    assert [p.index for p in small.prompts] == balanced


@needs_release
def test_a_subset_of_the_release_is_refused_unless_meant(tmp_path):
    lines = RELEASED.read_text().splitlines()[:10]
    path = tmp_path / "part.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"part\.jsonl: 10 prompts, not GenEval 2's 800 .*subset"):
        read_geneval2(path)
    part = read_geneval2(path, full=False)
    assert len(part.prompts) == 10
    assert not part.released


def test_a_well_formed_line_reads(tmp_path):
    suite = read_geneval2(write(tmp_path, LINE), full=False)
    (prompt,) = suite.prompts
    assert prompt.index == 0
    assert prompt.atom_count == 3
    assert [q.counting for q in prompt.questions] == [True, False, True, False]
    assert set(SKILLS) >= {q.skill for q in prompt.questions}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.pop("skills"), r"suite\.jsonl:2: missing 'skills'"),
        (lambda r: r.update(skills=r["skills"][:-1]), r":2: skills has 3 entries for 4 questions"),
        (lambda r: r.update(skill=r.pop("skills")), r":2: unknown key 'skill'; did you mean 'skills'"),
        (lambda r: r["skills"].__setitem__(1, "objects"), r":2: question 2: unknown skill 'objects'; did you mean"),
        (lambda r: r["skills"].__setitem__(0, "object"), r":2: question 1: skill 'object' but the question starts"),
        (
            lambda r: r["vqa_list"].__setitem__(0, ["How many dogs are in the image?", "2"]),
            r"question 1: a count answer",
        ),
        (lambda r: r["vqa_list"].__setitem__(1, ["Are there any dogs in the image?", "No"]), r"question 2: .*'Yes'"),
        (
            lambda r: r["vqa_list"].__setitem__(1, ["Are there any dogs?"]),
            r"question 2: must be a \[question, answer\]",
        ),
        (lambda r: r.update(atom_count=True), r":2: atom_count must be a positive integer"),
        (lambda r: r.update(atom_count=9), r":2: atom_count 9 exceeds its 4 questions"),
        (lambda r: r.update(prompt=""), r":2: prompt must be a non-empty string"),
        (lambda r: r.update(vqa_list=[], skills=[]), r":2: vqa_list must be a non-empty list"),
    ],
)
def test_a_malformed_line_is_refused_naming_the_file_and_line(tmp_path, edit, message):
    bad = json.loads(json.dumps(LINE))
    bad["prompt"] = "another prompt"
    edit(bad)
    with pytest.raises(InputError, match=message) as info:
        read_geneval2(write(tmp_path, LINE, bad), full=False)
    assert "\n" not in str(info.value)


def test_broken_json_a_repeated_prompt_and_an_empty_file_are_refused(tmp_path):
    with pytest.raises(InputError, match=r"suite\.jsonl:2: not valid JSON"):
        read_geneval2(write(tmp_path, LINE, '{"prompt": '), full=False)
    with pytest.raises(InputError, match=r"suite\.jsonl:2: repeats the prompt of line 1"):
        read_geneval2(write(tmp_path, LINE, LINE), full=False)
    with pytest.raises(InputError, match=r"suite\.jsonl:1: a GenEval 2 line must be a JSON object"):
        read_geneval2(write(tmp_path, "[1, 2]"), full=False)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match=r"empty\.jsonl: no prompts"):
        read_geneval2(empty, full=False)
    with pytest.raises(InputError, match=r"outside the suite's 0\.\.0"):
        subset(read_geneval2(write(tmp_path, LINE), full=False), [3])


def test_a_brace_in_a_prompt_and_a_huge_value_are_refused_in_one_short_line(tmp_path):
    braced = {**LINE, "prompt": "two dogs and a {cat}"}
    with pytest.raises(InputError, match=r"suite\.jsonl:1: the prompt holds a brace"):
        read_geneval2(write(tmp_path, braced), full=False)
    huge = json.loads(json.dumps(LINE))
    huge["skills"][1] = "x" * 5_000_000
    with pytest.raises(InputError) as info:
        read_geneval2(write(tmp_path, huge), full=False)
    assert len(str(info.value)) < 400
    assert "characters)" in str(info.value)
    assert read_geneval2(write(tmp_path, LINE, {**LINE, "prompt": "x"}), full=False).prompts[1].line == 2
