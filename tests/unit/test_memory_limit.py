"""The memory limit every estimate is checked against (metrics.checks.memory_limit) is the smallest of the memory
available (or $T2IBENCH_MEMORY_LIMIT), the process's rlimits less what it maps, and its cgroup's limit less its use;
the refusal says which. Before: a 6 MB .npz declaring a 3.8 GiB array under `ulimit -v 4000000` passed the check
(machine memory only) and ended in numpy's _ArrayMemoryError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from t2ibench.errors import InputError
from t2ibench.metrics import checks
from t2ibench.metrics.checks import MemoryLimit, check_memory, memory_limit, memory_limits

GIB, MIB = 2**30, 2**20


def fake_root(tmp_path: Path, *, cgroup: str, files: dict[str, str], available: int = 16 * GIB) -> Path:
    """A root holding proc/meminfo, proc/self/{cgroup,status} and sys/fs/cgroup files, as Linux lays them out."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "meminfo").write_text(f"MemTotal: 33554432 kB\nMemAvailable: {available // 1024} kB\n")
    (tmp_path / "proc" / "self" / "status").write_text("Name:\tpython\nVmSize:\t  1048576 kB\nVmData:\t 524288 kB\n")
    (tmp_path / "proc" / "self" / "cgroup").write_text(cgroup)
    for name, text in files.items():
        path = tmp_path / "sys" / "fs" / "cgroup" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return tmp_path


@pytest.fixture(autouse=True)
def no_env_limit(monkeypatch):
    monkeypatch.delenv("T2IBENCH_MEMORY_LIMIT", raising=False)
    monkeypatch.setattr(checks, "_rlimit", lambda name: None)  # the test process's own rlimits stay out of it


def test_cgroup_v2_limit_less_its_use_binds_with_its_parents(tmp_path):
    root = fake_root(
        tmp_path,
        cgroup="0::/user.slice/job\n",
        files={
            "user.slice/job/memory.max": str(GIB),
            "user.slice/job/memory.current": str(256 * MIB),
            "user.slice/memory.max": "max",
            "memory.max": "max",
        },
    )
    assert memory_limit(root) == MemoryLimit(
        768 * MIB, "cgroup v2 memory.max of /user.slice/job, less the 256 MiB it uses"
    )
    (root / "sys/fs/cgroup/user.slice/memory.max").write_text(str(512 * MIB))  # a parent's tighter limit binds
    assert memory_limit(root).nbytes == 512 * MIB
    assert memory_limit(root).source.startswith("cgroup v2 memory.max of /user.slice,")


def test_cgroup_v1_limit_and_its_unlimited_value(tmp_path):
    root = fake_root(
        tmp_path,
        cgroup="4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n",
        files={
            "memory/docker/abc/memory.limit_in_bytes": str(2 * GIB),
            "memory/docker/abc/memory.usage_in_bytes": str(GIB),
            "memory/memory.limit_in_bytes": "9223372036854771712",  # v1's "no limit"
        },
    )
    assert memory_limit(root) == MemoryLimit(
        GIB, "cgroup v1 memory.limit_in_bytes of /docker/abc, less the 1 GiB it uses"
    )
    (root / "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes").write_text("9223372036854771712")
    assert memory_limit(root) == MemoryLimit(16 * GIB, "memory available now; $T2IBENCH_MEMORY_LIMIT sets another")


def test_without_cgroup_files_the_memory_available_binds(tmp_path):
    root = fake_root(tmp_path, cgroup="0::/\n", files={}, available=3 * GIB)
    assert memory_limits(root) == [MemoryLimit(3 * GIB, "memory available now; $T2IBENCH_MEMORY_LIMIT sets another")]


def test_rlimits_count_less_what_the_process_already_maps(tmp_path, monkeypatch):
    root = fake_root(tmp_path, cgroup="0::/\n", files={})
    monkeypatch.setattr(checks, "_rlimit", {"RLIMIT_AS": 3 * GIB, "RLIMIT_DATA": None}.get)
    assert memory_limit(root) == MemoryLimit(
        2 * GIB, "the process's address-space limit, ulimit -v, less the 1 GiB it maps"
    )
    monkeypatch.setattr(checks, "_rlimit", {"RLIMIT_AS": None, "RLIMIT_DATA": GIB}.get)
    assert memory_limit(root) == MemoryLimit(512 * MIB, "the process's data limit, ulimit -d, less the 512 MiB it maps")


def test_the_env_limit_replaces_the_memory_available_but_never_a_hard_limit(tmp_path, monkeypatch):
    root = fake_root(tmp_path, cgroup="0::/job\n", files={"job/memory.max": str(GIB), "job/memory.current": "0"})
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "64M")
    assert memory_limit(root) == MemoryLimit(64 * MIB, "$T2IBENCH_MEMORY_LIMIT")
    monkeypatch.setenv("T2IBENCH_MEMORY_LIMIT", "64G")  # above the cgroup's: the cgroup still binds
    assert memory_limit(root).nbytes == GIB


def test_the_refusal_names_the_binding_limit(monkeypatch):
    monkeypatch.setattr(checks, "memory_limit", lambda: MemoryLimit(GIB, "cgroup v2 memory.max of /job"))
    with pytest.raises(
        InputError, match=r"x needs ~2 GiB of memory; the limit is 1 GiB \(cgroup v2 memory\.max of /job\)"
    ):
        check_memory(2 * GIB, what="x")


@pytest.mark.slow
def test_an_npz_past_the_address_space_limit_is_refused_in_one_line(tmp_path):
    """`t2ibench diversity` on a 1.4 MB .npz declaring a 1.14 GiB array, run under a 1 GiB RLIMIT_AS (ulimit -v)."""
    import tests.corpus  # noqa: F401  (the corpus modules in their order)
    from tests.corpus_resources import _deflated_zeros

    npz = _deflated_zeros(tmp_path / "e.npz", "embeddings", "<f4", (300_000, 1024))
    script = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30)); "
        "from t2ibench.cli import main; sys.exit(main(['diversity', sys.argv[1]]))"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    env.pop("T2IBENCH_MEMORY_LIMIT", None)
    done = subprocess.run(
        [sys.executable, "-c", script, str(npz)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "e.npz" in done.stderr
    assert "(the process's address-space limit, ulimit -v, less the" in done.stderr
