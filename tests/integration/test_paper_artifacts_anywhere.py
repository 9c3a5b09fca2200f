"""`make repro` holds on any machine: the digits figure computed under two BLAS settings — one thread and two, and
(where OpenBLAS picks its kernel at run time, x86-64) two different kernels — writes the same bytes. Without the
stated precision (``t2ibench.artifacts``) digits.json differs between them in the last digits of FKEA's numbers.
A reduced sweep (60 images per condition, 2 repeats, r = 64) through the same writer as the DVC stage."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

SWEEP = """
import sys
from t2ibench.examples.digits import DigitsSweepConfig, digits_class_sweep, write_digits_figure
config = DigitsSweepConfig(n_per_condition=60, repeats=2, rff_dim=64)
write_digits_figure(digits_class_sweep(config, show_progress=False), sys.argv[1])
"""
FILES = ("digits.json", "digits.md", "digits.png", "metrics.json")
THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def blas_settings() -> list[dict[str, str]]:
    """Two BLAS settings that sum in different orders: 1 vs 2 threads and, on x86-64 (OpenBLAS's dynamic
    architectures honour OPENBLAS_CORETYPE), the Nehalem vs the Haswell kernels."""
    one, two = dict.fromkeys(THREADS, "1"), dict.fromkeys(THREADS, "2")
    if platform.machine().lower() in ("x86_64", "amd64"):
        one["OPENBLAS_CORETYPE"], two["OPENBLAS_CORETYPE"] = "Nehalem", "Haswell"
    return [one, two]


def test_the_digits_figure_is_the_same_bytes_under_other_blas_threads_and_kernels(tmp_path):
    outputs = []
    for i, setting in enumerate(blas_settings()):
        out = tmp_path / f"run{i}"
        env = {**os.environ, **setting, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
        done = subprocess.run(
            [sys.executable, "-c", SWEEP, str(out)], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append({name: (out / name).read_bytes() for name in FILES})
    first, second = outputs
    for name in FILES:
        assert first[name] == second[name], f"{name} differs between {blas_settings()}"
