"""The paper artifacts hold every number at one stated precision (``t2ibench.artifacts``), so floats that differ in
their last bits between machines (BLAS kernels, thread counts) write the same bytes, and DVC's lock holds anywhere.
The digits figure computed under two BLAS settings: tests/integration/test_paper_artifacts.py."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, NamedTuple

import numpy as np
import pytest

from t2ibench import artifacts
from t2ibench.artifacts import SIGNIFICANT_DIGITS, stated


def nudged(value: Any, by: float = 1e-12) -> Any:
    """``value`` with every float moved by the relative amount ``by``: another machine's last bits."""
    if isinstance(value, bool) or (not isinstance(value, (float, dict, list, tuple)) and not _is_dataclass(value)):
        return value
    if isinstance(value, float):
        return value * (1 + by)
    if isinstance(value, dict):
        return {k: nudged(v, by) for k, v in value.items()}
    if isinstance(value, list):
        return [nudged(v, by) for v in value]
    if isinstance(value, tuple):
        return type(value)(nudged(v, by) for v in value)
    fields = {f.name: nudged(getattr(value, f.name), by) for f in dataclasses.fields(value) if f.init}
    return dataclasses.replace(value, **fields)


def _is_dataclass(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def floats_in(payload: Any) -> list[float]:
    if isinstance(payload, float):
        return [payload]
    if isinstance(payload, dict):
        return [x for v in payload.values() for x in floats_in(v)]
    if isinstance(payload, list):
        return [x for v in payload for x in floats_in(v)]
    return []


def significant_digits(x: float) -> int:
    """Digits of the shortest decimal that reads back as x, without leading or trailing zeros."""
    mantissa = repr(abs(x)).split("e")[0].replace(".", "").strip("0")
    return len(mantissa)


class Pair(NamedTuple):
    a: float
    b: int


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    value: float
    parts: dict[str, Any]


def test_every_float_is_rounded_to_the_stated_significant_digits_and_nothing_else_changes():
    assert SIGNIFICANT_DIGITS == 5
    assert stated(20.168208920542632) == 20.168
    assert stated(0.000123456789) == 0.00012346
    assert stated(123456.7) == 123460.0
    assert stated(np.float32(1.23456789)) == 1.2346
    assert stated(np.float64(-2.0000049)) == -2.0
    for kept in (0.0, math.inf, -math.inf, 3, True, None, "1.234567", np.int64(7)):
        assert stated(kept) == kept
        assert type(stated(kept)) is type(kept)
    assert math.isnan(stated(math.nan))
    nested = Row("r", 1.23456789, {"xs": [1.000001, (2.5555555, 4)], (1.0, "k"): Pair(3.14159265, 2)})
    assert stated(nested) == Row("r", 1.2346, {"xs": [1.0, (2.5556, 4)], (1.0, "k"): Pair(3.1416, 2)})
    assert isinstance(stated(nested).parts[(1.0, "k")], Pair)
    assert stated(stated(nested)) == stated(nested)  # idempotent: writing a stated value again changes nothing


def test_json_artifacts_hold_only_stated_numbers(tmp_path):
    path = artifacts.write_json(tmp_path / "m.json", {"b": 2.718281828459045, "a": [1 / 3, 7, None]})
    assert path.read_text() == '{\n  "a": [\n    0.33333,\n    7,\n    null\n  ],\n  "b": 2.7183\n}\n'


def sweep(scale: float = 1.0) -> Any:
    from t2ibench.examples.digits import DigitsSweep, DigitsSweepConfig, DigitsSweepRow, MeanSd

    def ms(k: int, base: float) -> MeanSd:
        return MeanSd(base * k * scale * 1.0123456789, 0.123456789 * scale)

    rows = tuple(
        DigitsSweepRow(k, 170, ms(k, 10.0), ms(k, 9.7), ms(k, 5.1), ms(k, 4.9), 0.987654321) for k in range(1, 11)
    )
    return DigitsSweep(DigitsSweepConfig(), median_distance=49.09182616, sigma=19.63673046, rows=rows)


def test_the_digits_figure_writes_the_same_bytes_for_floats_that_differ_in_their_last_bits(tmp_path):
    from PIL import Image

    from t2ibench.examples.digits import write_digits_figure

    write_digits_figure(sweep(), tmp_path / "a")
    write_digits_figure(nudged(sweep()), tmp_path / "b")
    names = ("digits.json", "digits.md", "digits.png", "metrics.json")
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    for name in ("digits.json", "metrics.json"):
        numbers = floats_in(json.loads((tmp_path / "a" / name).read_text()))
        assert numbers, name
        assert max(map(significant_digits, numbers)) <= SIGNIFICANT_DIGITS, name
    with Image.open(tmp_path / "a" / "digits.png") as png:
        assert "Software" not in png.info  # no matplotlib version in the bytes


def test_the_paper_tables_write_the_same_bytes_for_stored_values_that_differ_in_their_last_bits(tmp_path, monkeypatch):
    from t2ibench.benchmarks.geneval.metrics import TASKS
    from t2ibench.report import paper
    from t2ibench.store import queries

    board = [{"model": "m", "smoke": False, "overall": 0.5208333333333334} | dict.fromkeys(TASKS, 0.61728395)]
    metrics = [
        {"model": "m", "metric": "fkea", "alpha": 1.0, "value": 93.97618880627060, "n": 2212, "error_bound": 0.4142},
        {"model": "m", "metric": "rke", "alpha": 2.0, "value": 50.98266432661991, "n": 2212, "error_bound": None},
        {"model": "m", "metric": "scendi", "alpha": None, "value": 7.123456789, "n": 2212, "error_bound": None},
    ]
    for name, by in (("a", 0.0), ("b", 3e-9)):  # FKEA's float32 products move VENDI by up to 8e-9 between machines
        shown, headline = nudged(board, by), nudged(metrics, by)
        monkeypatch.setattr(queries, "leaderboard_by_model", lambda store, rows=shown: rows)
        monkeypatch.setattr(queries, "headline_metrics", lambda store, rows=headline: rows)
        paper.write_tables(tmp_path / "store.duckdb", tmp_path / name)
    for name in ("table2.md", "diversity.md", "metrics.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    headline = json.loads((tmp_path / "a" / "metrics.json").read_text())["models"]["m"]
    assert headline == {"geneval_overall": 0.52083, "fkea_vendi_1": 93.976, "scendi": 7.1235}


def test_the_agreement_tables_write_the_same_bytes_for_floats_that_differ_in_their_last_bits(tmp_path):
    from t2ibench.benchmarks.geneval.agreement import run_agreement
    from t2ibench.benchmarks.geneval.report_agreement import write_agreement
    from tests.unit.test_annotations import SUITE, record, write

    rows = [record(p, i, count0=str(c)) for p in (0, 1, 2, 3) for i in (0, 1) for c in (1, 1, 0)]
    run = run_agreement([write(tmp_path, rows)], SUITE, resamples=50, ci_seed=2)
    write_agreement(run, tmp_path / "a")
    write_agreement(dataclasses.replace(run, report=nudged(run.report)), tmp_path / "b")
    for name in ("agreement.json", "agreement.md", "metrics.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
        if name.endswith(".json"):
            numbers = floats_in(json.loads((tmp_path / "a" / name).read_text()))
            assert numbers, name
            assert max(map(significant_digits, numbers)) <= SIGNIFICANT_DIGITS, name


@pytest.mark.parametrize("value", [0.1 + 0.2, 1 / 3, 2 / 3 * 1e-7, 12345.678901])
def test_a_stated_float_reads_back_as_itself(value):
    once = stated(value)
    assert float(repr(once)) == once
    assert significant_digits(once) <= SIGNIFICANT_DIGITS
    assert once == pytest.approx(value, rel=10 ** (1 - SIGNIFICANT_DIGITS))
