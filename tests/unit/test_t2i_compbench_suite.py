"""T2I-CompBench++'s shipped suite: the same bytes as the benchmark's repository at the pinned commit (compared with the
local copy in $T2IBENCH_T2I_COMPBENCH_DATA), read as the reference reads it, and refused when changed."""

from __future__ import annotations

import hashlib
import shutil
from importlib import resources
from pathlib import Path

import pytest

from t2ibench.benchmarks.t2i_compbench import suite as s
from t2ibench.benchmarks.t2i_compbench.metrics import CATEGORIES, NumeracyRequest
from t2ibench.errors import InputError
from tests.conftest import T2I_COMPBENCH_DATA

SHIPPED = resources.files("t2ibench.benchmarks.t2i_compbench") / "data"


def test_the_shipped_files_are_the_pinned_ones_and_the_local_copy_byte_for_byte():
    assert sorted(p.name for p in SHIPPED.iterdir()) == sorted(s.SHA256)
    for name, digest in s.SHA256.items():
        assert hashlib.sha256((SHIPPED / name).read_bytes()).hexdigest() == digest, name
    if not T2I_COMPBENCH_DATA.is_dir():
        pytest.skip(f"no local copy of T2I-CompBench's files in {T2I_COMPBENCH_DATA}")
    shared = {p.name for p in T2I_COMPBENCH_DATA.iterdir() if p.name != "README.md"}
    assert shared == set(s.SHA256) - {"new_objects.txt"}  # the object list is not in the shared copy
    for name in shared:
        assert (T2I_COMPBENCH_DATA / name).read_bytes() == (SHIPPED / name).read_bytes(), name


def test_the_suite_reads_300_prompts_per_category_as_the_reference_does():
    suite = s.load_suite()
    assert [len(suite.category(c)) for c in CATEGORIES] == [300] * 8
    assert suite.category("spatial")[0] == s.Prompt("spatial", 0, "a giraffe next to a lamp", 900)
    assert [p.index for p in suite.prompts] == list(range(2400))
    assert all("\r" not in p.text and p.text == p.text.strip() for p in suite.prompts)  # CRLF files, read as text
    assert suite.category("color")[-1].text  # the last line has no final newline and still counts
    complex_ = [p.text for p in suite.category("complex")]
    spatial = sum(p in suite.complex_spatial for p in complex_)
    action = sum(p in suite.complex_action for p in complex_)
    assert (spatial, action, 300 - spatial - action) == (58, 212, 30)  # complex_val_spatialaction.txt: 30 lines
    assert len(suite.objects) == 101
    assert suite.numeracy_request(suite.category("numeracy")[0]) == NumeracyRequest(("boy",), (2,))
    numeracy = suite.category("numeracy")
    assert numeracy[78].text == "six people gathered for a picnic"  # plural → singular through the object list
    assert suite.numeracy_request(numeracy[78]) == NumeracyRequest(("person",), (6,))
    assert suite.numeracy_request(numeracy[291]) == NumeracyRequest(("sheep", "dog", "candle", "bee"), (2, 4, 3, 3))
    assert sum(len(suite.numeracy_request(p).objects) == 5 for p in numeracy) == 35


def test_a_changed_or_missing_file_is_refused_naming_it(tmp_path: Path):
    for name in s.SHA256:
        shutil.copyfile(SHIPPED / name, tmp_path / name)  # type: ignore[arg-type]
    assert s.load_suite(tmp_path).sha256 == s.load_suite().sha256
    (tmp_path / "spatial_val.txt").write_bytes((SHIPPED / "spatial_val.txt").read_bytes().replace(b"lamp", b"lamb"))
    with pytest.raises(InputError, match=r"spatial_val\.txt: SHA-256 [0-9a-f]{16}… is not the pinned 8707a1d7e42ce300"):
        s.load_suite(tmp_path)
    (tmp_path / "spatial_val.txt").unlink()
    with pytest.raises(InputError, match=r"spatial_val\.txt: cannot read it"):
        s.load_suite(tmp_path)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (b"a cat\r\n\r\na dog", r"x\.txt:2: an empty prompt"),
        (b"a cat\na dog\na cat\n", r"x\.txt:3: 'a cat' repeats line 1"),
        (b"a cat_2\n", r"x\.txt:1: 'a cat_2' holds '_' or '/'"),
    ],
)
def test_a_prompt_the_reference_could_not_name_an_image_after_is_refused(text: bytes, error: str):
    with pytest.raises(InputError, match=error):
        s.read_lines(text, "x.txt")
    assert s.read_lines(b"a cat\tignored\r\na dog", "x.txt") == ["a cat", "a dog"]


def test_selection_keeps_the_benchmarks_order_and_refuses_unknown_categories():
    suite = s.load_suite()
    chosen = s.select(suite, ["numeracy", "color"], 2)
    assert [(p.category, p.line) for p in chosen] == [("numeracy", 0), ("numeracy", 1), ("color", 0), ("color", 1)]
    assert len(s.select(suite)) == 2400
    with pytest.raises(InputError, match="unknown T2I-CompBench\\+\\+ category 'colour'; did you mean 'color'"):
        s.select(suite, ["colour"])
    with pytest.raises(InputError, match="named twice"):
        s.select(suite, ["color", "color"])
    with pytest.raises(InputError, match="per_category 0"):
        s.select(suite, None, 0)
