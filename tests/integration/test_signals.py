"""Signals stop every t2ibench command within seconds: the refresh `t2ibench run` starts (Ctrl-C at a terminal,
SIGTERM through a pipe, SIGTERM to every process group of the tree), and a plain command. Each stopped refresh is
recorded as `interrupted`, leaves no process behind and releases the run lock; the next run resumes and completes."""

from __future__ import annotations

import fcntl
import os
import pty
import shutil
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import duckdb
import psutil

from t2ibench.signals import KILL_MARGIN_S
from tests.conftest import GENEVAL_DATA
from tests.integration._workspace import REPO, make_workspace, refresh_log

GRACE_S = 4.0
STOP_WITHIN_S = GRACE_S + KILL_MARGIN_S + 2.0  # at most: the child's grace, then `t2ibench run` kills its group


def t2ibench(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("t2ibench")), *args]


def slow_generation(config: dict) -> None:
    """Generation long enough (tiny model, many denoising steps) that a signal lands while the refresh works; one
    image per prompt (the run that completes after the stops makes them all)."""
    config["models"][0]["generator"]["steps"] = 60
    config["models"][0]["generator"]["images_per_prompt"] = 1


def wait_for(log: Path, offset: int, anchor: str, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists():
            with open(log, "rb") as fh:
                fh.seek(offset)
                if anchor.encode() in fh.read():
                    return
        assert proc.poll() is None, "the refresh ended before it started working"
        time.sleep(0.05)
    raise AssertionError(f"{anchor!r} never appeared in {log}")


def stopped(proc: subprocess.Popen, tree: list[psutil.Process], signalled_at: float) -> float:
    """Seconds from the signal until the command and every process it started are gone."""
    proc.wait(timeout=STOP_WITHIN_S + 30)
    _, alive = psutil.wait_procs(tree, timeout=STOP_WITHIN_S)
    assert not alive, f"processes left running: {[p.cmdline()[:3] for p in alive]}"
    return time.monotonic() - signalled_at


def tree_of(proc: subprocess.Popen) -> list[psutil.Process]:
    root = psutil.Process(proc.pid)
    return [root, *root.children(recursive=True)]


def lock_is_free(store: Path) -> bool:
    with open(str(store) + ".lock", "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fh, fcntl.LOCK_UN)
        return True


def runs(store: Path) -> list[tuple[str, str]]:
    con = duckdb.connect(str(store), read_only=True)
    try:
        return con.execute(
            "SELECT status, json_extract_string(details, '$.signal') FROM runs ORDER BY started_at"
        ).fetchall()
    finally:
        con.close()


def test_a_refresh_stops_on_a_tty_a_pipe_and_a_process_group_and_the_next_run_resumes(tmp_path, model_cache):
    config, env = make_workspace(tmp_path / "ws", model_cache, models=1, per_task=1, edit=slow_generation)
    env["T2IBENCH_STOP_GRACE_S"] = str(GRACE_S)
    for program in ("flows", "tasks"):  # `t2ibench run` runs the flow of the config's workspace
        (config.parents[1] / program).symlink_to(REPO / program)
    store = config.parents[1] / "data" / "t2ibench.duckdb"
    log = refresh_log(config)
    command = t2ibench("run", "--config", str(config), "--flow")
    seconds = {}

    # 1. a terminal: Ctrl-C typed at `t2ibench run` (the terminal signals its foreground process group)
    offset = log.stat().st_size if log.exists() else 0
    master, slave = pty.openpty()

    def controlling_terminal() -> None:  # and SIGINT at its default, as a shell starts a foreground job (this test
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # worker may ignore it, and a signal ignored at start stays ignored)
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    try:
        wait_for(log, offset, "models ×", proc)
        tree, at = tree_of(proc), time.monotonic()
        os.write(master, b"\x03")
        seconds["tty"] = stopped(proc, tree, at)
        screen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
    finally:
        os.close(master)
    assert proc.returncode == 130, screen.decode(errors="replace")[-2000:]
    assert b"interrupted (SIGINT)" in screen

    # 2. a pipe: SIGTERM to `t2ibench run` alone (a scheduler stopping its job)
    offset = log.stat().st_size
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(log, offset, "models ×", proc)
    tree, at = tree_of(proc), time.monotonic()
    proc.send_signal(signal.SIGTERM)
    seconds["pipe"] = stopped(proc, tree, at)
    out = proc.stdout.read()
    assert proc.returncode == 143, out
    # the refresh stops itself, or (on a loaded machine, its grace spent) `t2ibench run` kills it and says so; either
    # way the signal is named, the run is recorded interrupted (below) and no process is left
    last = out.strip().splitlines()[-1]
    assert last.startswith(("leaderboard_refresh: interrupted (SIGTERM)", "t2ibench run: interrupted (SIGTERM)")), out

    # 3. every process group of the tree at once (a service manager stopping a whole unit)
    offset = log.stat().st_size
    proc = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    wait_for(log, offset, "models ×", proc)
    tree, at = tree_of(proc), time.monotonic()
    for group in {os.getpgid(p.pid) for p in tree}:
        os.killpg(group, signal.SIGTERM)
    seconds["group"] = stopped(proc, tree, at)
    out = proc.stdout.read()
    assert proc.returncode == 143, out
    assert "interrupted (SIGTERM)" in out

    assert all(s < STOP_WITHIN_S for s in seconds.values()), seconds
    assert lock_is_free(store)
    assert runs(store) == [("interrupted", "SIGINT"), ("interrupted", "SIGTERM"), ("interrupted", "SIGTERM")]

    # the next run resumes from what the stopped ones finished, and completes
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [status for status, _ in runs(store)] == ["interrupted"] * 3 + ["completed"]
    print("stopped within (s):", {k: round(v, 1) for k, v in seconds.items()})


PLAIN = [("diversity", signal.SIGTERM), ("diversity", signal.SIGHUP), ("sql", signal.SIGTERM), ("sql", signal.SIGHUP)]


def working(proc: subprocess.Popen, verb: str, store: Path, err: list[str]) -> bool:
    """Whether the command has begun its work: the sweep's progress bar is on stderr, or the query holds the store
    (then a moment more, for DuckDB to start executing)."""
    if verb == "diversity":
        return "digits sweep:" in "".join(err)
    try:
        return any(Path(f.path) == store for f in psutil.Process(proc.pid).open_files())
    except psutil.Error:
        return False


def test_a_plain_command_stops_on_sigterm_and_sighup(tmp_path):
    """A long in-process command ends at once with the signal's exit status: the digits diversity sweep, and a
    sealed query (DuckDB interrupted, the store released and unchanged). The four run side by side; each is signalled
    once it shows it is working (not after a fixed sleep: on a loaded machine the imports alone can take longer)."""
    from t2ibench.store import Store

    store = tmp_path / "results.duckdb"
    Store(store).initialise()
    before = store.read_bytes()
    procs, errs, readers = [], [], []
    for verb, _ in PLAIN:
        if verb == "sql":
            argv = ("sql", "--store", str(store), "--timeout", "300", "SELECT count(*) FROM range(100000000000) a")
        else:
            argv = ("diversity", "--example", "digits", "--repeats", "1000")  # its progress bar: a sign of work
        proc = subprocess.Popen(t2ibench(*argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err: list[str] = []
        reader = threading.Thread(target=lambda p=proc, e=err: e.extend(iter(lambda: p.stderr.read(1), "")))
        reader.start()
        procs.append(proc)
        errs.append(err)
        readers.append(reader)
    deadline = time.monotonic() + 120
    pending = set(range(len(PLAIN)))
    while pending and time.monotonic() < deadline:
        pending = {i for i in pending if not working(procs[i], PLAIN[i][0], store, errs[i])}
        assert all(proc.poll() is None for proc in procs), ["".join(e) for e in errs]
        time.sleep(0.1)
    assert not pending, f"never began working: {[PLAIN[i] for i in pending]}"
    time.sleep(1.0)  # the queries from holding the store to executing
    at = time.monotonic()
    for proc, (_, signum) in zip(procs, PLAIN, strict=True):
        proc.send_signal(signum)
    for proc, reader, err, (verb, signum) in zip(procs, readers, errs, PLAIN, strict=True):
        proc.wait(timeout=STOP_WITHIN_S + 10)
        reader.join(timeout=10)
        text = "".join(err)
        assert proc.returncode == 128 + signum, (verb, text)
        name = signal.Signals(signum).name
        last = text.strip().splitlines()[-1]  # after the progress bar's last line: the bar is closed first
        if verb == "sql":
            assert last == f"t2ibench sql: error: the query was interrupted ({name}) and the store released", text
        else:
            assert last == f"t2ibench diversity: interrupted ({name})", text
    assert time.monotonic() - at < STOP_WITHIN_S
    assert store.read_bytes() == before


# a refresh program that works until it is told to finish: it makes "ready" in its folder, then waits for "go"
WAITING_FLOW = """import os, sys, time
from t2ibench.signals import exit_code, signal_name, signal_number, stop_on_signals

try:
    with stop_on_signals("leaderboard_refresh"):  # as the refresh's own program takes the signals over
        open("ready", "w").close()
        while not os.path.exists("go"):
            time.sleep(0.05)
except KeyboardInterrupt as exc:  # and ends as it does: one line, 128 + the signal
    print(f"leaderboard_refresh: interrupted ({signal_name(signal_number(exc))})", flush=True)
    sys.exit(exit_code(signal_number(exc)))
print("the refresh finished", flush=True)
"""


def test_a_signal_ignored_at_start_stays_ignored_by_the_command_and_the_refresh_it_starts(tmp_path):
    """nohup's contract: `t2ibench run` started with SIGHUP ignored keeps running when every process group of its
    tree gets SIGHUP (its terminal hung up), and so does the refresh it started, which then finishes; started without
    the ignore, the same SIGHUP stops both (the control). A plain command started so keeps working through SIGHUP
    too, and SIGTERM, not ignored, still stops it. The refresh program is a stub (no model work: seconds)."""
    ws = tmp_path / "ws"
    (ws / "flows").mkdir(parents=True)
    (ws / "flows" / "__init__.py").write_text("")  # a package: this stub, not the checkout's flows, runs
    (ws / "flows" / "leaderboard_refresh.py").write_text(WAITING_FLOW)
    (ws / "configs").mkdir()
    (ws / "configs" / "c.yaml").write_text(SMOKE)

    # each start gives the command SIGINT at its default, as a shell's foreground job has it, whatever this worker has
    def nohup() -> None:  # what `nohup` does before it runs the command
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    def foreground() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    outcomes = {}
    for name, start in (("nohup", nohup), ("plain", foreground)):
        for marker in ("ready", "go"):
            (ws / marker).unlink(missing_ok=True)
        proc = subprocess.Popen(
            t2ibench("run", "--config", "configs/c.yaml"),
            cwd=ws,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=start,
        )
        deadline = time.monotonic() + 120
        while not (ws / "ready").exists():
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the refresh never began"
            time.sleep(0.05)
        tree = tree_of(proc)
        assert len(tree) >= 2, "the refresh runs as a child of `t2ibench run`"
        for group in {os.getpgid(p.pid) for p in tree}:
            os.killpg(group, signal.SIGHUP)
        time.sleep(1.0)  # long enough for a handler to stop either process
        alive = proc.poll() is None and all(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in tree)
        (ws / "go").touch()
        out = proc.communicate(timeout=STOP_WITHIN_S + 30)[0]
        outcomes[name] = (alive, proc.returncode, out)
    alive, code, out = outcomes["nohup"]
    assert alive, out
    assert code == 0, out
    assert "the refresh finished" in out, out
    alive, code, out = outcomes["plain"]
    assert not alive, out
    assert code == 128 + signal.SIGHUP, out
    assert "interrupted (SIGHUP)" in out, out

    err: list[str] = []
    proc = subprocess.Popen(
        t2ibench("diversity", "--example", "digits", "--repeats", "1000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=nohup,
    )
    reader = threading.Thread(target=lambda: err.extend(iter(lambda: proc.stderr.read(1), "")))
    reader.start()
    deadline = time.monotonic() + 120
    while not working(proc, "diversity", tmp_path, err):
        assert proc.poll() is None, "".join(err)
        assert time.monotonic() < deadline, "the sweep never began"
        time.sleep(0.1)
    proc.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert proc.poll() is None, "".join(err)  # SIGHUP, ignored at start, did not stop it
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=STOP_WITHIN_S + 10)
    reader.join(timeout=10)
    assert proc.returncode == 128 + signal.SIGTERM, "".join(err)
    assert "".join(err).strip().splitlines()[-1] == "t2ibench diversity: interrupted (SIGTERM)"


# a flow program killed as the kernel's OOM killer kills one: SIGKILL, unannounced (the refresh first records its run)
KILLED_FLOW = """import json, os, signal, sys
request = json.loads(sys.argv[1])
if sys.argv[0].endswith("leaderboard_refresh.py"):
    from t2ibench.config import load_config
    from t2ibench.store import Store
    from t2ibench.workspace import Workspace

    ws = Workspace.for_config(load_config(request["config"]), request["config"])
    store = Store(ws.store)
    store.initialise()
    store.start_run({"run_id": "oom", "config_name": "killed"})
os.kill(os.getpid(), signal.SIGKILL)
"""
SMOKE = (
    "name: killed\nmodels: [{name: a, generator: {model: tiny-random}}]\n"
    "evaluators: {geneval: {detector: {model: tiny-random}, colour: {arch: tiny-random, pretrained: null}},"
    " image_embedder: {model: tiny-random}, clip: {backend: open_clip, model: tiny-random}}\n"
    "outputs: {data: data, reports: reports, store: data/t2ibench.duckdb}\n"
)


def test_a_flow_killed_by_sigkill_is_reported_and_the_refresh_recorded(tmp_path):
    """Every verb that starts a flow program says, in one line, that it was killed by SIGKILL (likely out of memory)
    and where the log is; `t2ibench run` also records the run as interrupted, its lock free for the next run. The
    flow programs are stubs that kill themselves (no model work: seconds)."""
    ws = tmp_path / "ws"
    (ws / "flows").mkdir(parents=True)
    (ws / "flows" / "__init__.py").write_text("")  # a package: these stubs, not the checkout's flows, run
    for module in ("leaderboard_refresh", "paper_tables", "human_agreement", "schedule"):
        (ws / "flows" / f"{module}.py").write_text(KILLED_FLOW)
    (ws / "configs").mkdir()
    (ws / "configs" / "c.yaml").write_text(SMOKE)
    # agreement --flow reads its inputs before it starts the flow: GenEval's released files (a second to read)
    shutil.copyfile(GENEVAL_DATA / "annotations_clip.csv", ws / "a.csv")
    shutil.copyfile(GENEVAL_DATA / "evaluation_metadata.jsonl", ws / "m.jsonl")
    verbs = {
        "run": (("run", "--config", "configs/c.yaml"), "the refresh (flows.leaderboard_refresh)"),
        "tables": (("paper", "tables", "--config", "configs/c.yaml", "--out", "t"), "the paper-tables flow"),
        "digits": (("paper", "digits", "--out", "d"), "the digits experiment (flows.paper_tables)"),
        "agreement": (
            ("agreement", "--flow", "--annotations", "a.csv", "--metadata", "m.jsonl", "--out", "o"),
            "the agreement flow (flows.human_agreement)",
        ),
        "schedule": (("schedule", "--list"), "the schedule flow (flows.schedule)"),
    }
    for verb, (argv, named) in verbs.items():
        done = subprocess.run(t2ibench(*argv), cwd=ws, capture_output=True, text=True, timeout=120)
        assert done.returncode == 128 + signal.SIGKILL, (verb, done.stderr)
        last = done.stderr.strip().splitlines()[-1]
        assert named in last, (verb, done.stderr)
        assert "was killed by SIGKILL (likely out of memory: the kernel's OOM killer sends SIGKILL" in last, last
        logs = {
            "run": ws / "data" / "logs" / "refresh.log",
            "tables": ws / "logs" / "paper_tables.log",
            "digits": ws / "logs" / "paper_tables.log",
            "agreement": ws / "logs" / "human_agreement.log",
        }
        if verb in logs:
            assert last.endswith(f"its log: {logs[verb]}"), last
        else:
            assert last.endswith("its output is above"), last
    store = ws / "data" / "t2ibench.duckdb"
    assert runs(store) == [("interrupted", "SIGKILL")]
    assert lock_is_free(store)
    con = duckdb.connect(str(store), read_only=True)
    try:
        (error,) = con.execute("SELECT json_extract_string(details, '$.error') FROM runs").fetchone()
    finally:
        con.close()
    assert error.startswith("the refresh was killed by SIGKILL (likely out of memory"), error
