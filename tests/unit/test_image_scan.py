"""The scan every benchmark judging an image source shares (GenEval 2's, T2I-CompBench++'s): its report cannot be
forged by a file name, its result names are relative to its folder, and a refresh's images of none of the prompts
are refused."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from t2ibench.benchmarks.geneval2.evaluate import Geneval2Scan
from t2ibench.benchmarks.t2i_compbench.evaluate import CompScan
from t2ibench.errors import InputError


@pytest.mark.parametrize("scan_type", [Geneval2Scan, CompScan])
def test_a_file_name_with_a_newline_cannot_forge_a_report_line(scan_type, tmp_path):
    item = SimpleNamespace(path=tmp_path / "sub" / "a.png")
    scan = scan_type(source=tmp_path, items=(item,), expected_prompts=2, found_prompts=1, missing_prompts=(3,),
                     problems=("x.png\n  problems (0): none",), names_from=tmp_path)  # fmt: skip
    report = scan.report()
    assert report.splitlines() == [
        f"{tmp_path}: prompts expected 2, found 1; 1 readable images",
        "  missing prompts (1): 3",
        "  problems (1): x.png\\n  problems (0): none",
    ]
    assert not scan.ok
    assert scan.name(item) == "sub/a.png"


def test_a_refreshs_images_of_none_of_the_prompts_are_refused(tmp_path):
    info = SimpleNamespace(prompt_index=7, sample=0, path=str(tmp_path / "a.png"))
    generated = SimpleNamespace(model="m", folder=str(tmp_path), images=(info,))
    scan = CompScan.of_generated(generated, {7: "p7", 8: "p8"}, lambda p, i: SimpleNamespace(path=Path(i.path), p=p),
                                 names_from=tmp_path, label="B")  # fmt: skip
    assert (scan.expected_prompts, scan.found_prompts, scan.items[0].p) == (2, 1, "p7")
    with pytest.raises(InputError, match=r"^m: no images of B's prompts to judge$"):
        CompScan.of_generated(generated, {8: "p8"}, lambda p, i: i, names_from=tmp_path, label="B")
