"""t2ibench.signals: a child that will not stop after a forwarded signal is killed, the stop is reported as the
signal (not as the kill); ``after_stop`` runs after every forwarded signal; a child that stops passes its own
status through."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from t2ibench import signals

STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
)
OBEDIENT = "import time; time.sleep(60)"


@pytest.fixture(autouse=True)
def default_stop_signals():
    """SIGINT/SIGTERM/SIGHUP at Python's defaults while each test runs, restored after: a child inherits a signal
    its parent ignores (something earlier in a test worker can leave SIGINT ignored), and an obedient child that
    ignores the forwarded signal is killed after the grace period with the very status it would have given."""
    previous = {s: signal.getsignal(s) for s in signals.STOP_SIGNALS}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signals.ignored_at_start.cache_clear()  # read again from these defaults (the process's "start", for a test)
    yield
    for s, handler in previous.items():
        signal.signal(s, handler)
    signals.ignored_at_start.cache_clear()


def _signal_soon(signum: int, after: float = 1.0) -> None:
    """Send ``signum`` to this process ``after`` seconds from now (run_child forwards it to its child)."""
    threading.Timer(after, os.kill, args=(os.getpid(), signum)).start()


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and PR_SET_PDEATHSIG are Linux's")
def test_a_child_that_ignores_the_signal_is_killed_and_the_stop_reported(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(signals.GRACE_ENV, "0.5")
    monkeypatch.setattr(signals, "KILL_MARGIN_S", 0.5)
    recorded: list[int] = []
    _signal_soon(signal.SIGTERM)
    at = time.monotonic()
    code = signals.run_child(
        [sys.executable, "-c", STUBBORN], cwd=tmp_path, env=dict(os.environ), program="prog", after_stop=recorded.append
    )
    took = time.monotonic() - at
    assert code == 128 + signal.SIGTERM  # the stop asked for, not the SIGKILL that enforced it
    assert recorded == [signal.SIGTERM]
    assert 1.0 <= took < 6.0, took
    err = capsys.readouterr().err
    assert "prog: interrupted (SIGTERM); it did not stop within 1 s, so its processes were killed" in err


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and PR_SET_PDEATHSIG are Linux's")
def test_a_child_that_stops_keeps_its_own_status(tmp_path, monkeypatch):
    recorded: list[int] = []
    _signal_soon(signal.SIGINT)
    at = time.monotonic()
    code = signals.run_child(
        [sys.executable, "-c", OBEDIENT], cwd=tmp_path, env=dict(os.environ), after_stop=recorded.append
    )
    assert code == 128 + signal.SIGINT  # Python's default: KeyboardInterrupt, then death by SIGINT
    assert recorded == [signal.SIGINT]  # after_stop runs however the child ended (it may not have recorded it)
    # it stopped by itself, not through the kill after the grace period (which reports the same status)
    assert time.monotonic() - at < signals.grace_seconds(), "the child did not stop on the forwarded SIGINT"


def test_a_signal_ignored_at_start_stays_ignored_and_the_others_are_taken_over():
    """nohup's contract, in process: with SIGHUP ignored when the process starts, ``stop_on_signals`` and
    ``take_over_signals`` leave it ignored (a hang-up does nothing) while SIGTERM and SIGINT get the stop handler;
    leaving restores what was there. The control: without the ignore, SIGHUP gets the stop handler like the others."""

    def stops(handler: object) -> bool:  # the handler take_over_signals installs (signals._handler's)
        return getattr(handler, "__qualname__", "") == "_handler.<locals>.stop"

    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signals.ignored_at_start.cache_clear()
    with signals.stop_on_signals("prog"):
        assert signals.ignored_at_start() == {signal.SIGHUP}
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGHUP)  # ignored: nothing happens
        time.sleep(0.05)
        signals.take_over_signals("prog")  # as a flow does again after Prefect's engine set its own handler
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        # SIGTERM and SIGINT are taken over (not delivered here: the handler's watchdog would end this test process)
        assert stops(signal.getsignal(signal.SIGTERM))
        assert stops(signal.getsignal(signal.SIGINT))
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL

    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signals.ignored_at_start.cache_clear()
    with signals.stop_on_signals("prog"):
        assert signals.ignored_at_start() == frozenset()
        assert stops(signal.getsignal(signal.SIGHUP))  # taken over like SIGTERM
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and PR_SET_PDEATHSIG are Linux's")
@pytest.mark.parametrize("at_start", [signal.SIG_IGN, signal.SIG_DFL])
def test_a_child_inherits_a_signal_ignored_at_start(tmp_path, capfd, at_start):
    """``run_child`` neither forwards nor takes over a signal ignored at start, so the child starts ignoring it too
    (``nohup t2ibench run``: the refresh survives the hang-up); one not ignored reaches the child at its default."""
    signal.signal(signal.SIGHUP, at_start)
    signals.ignored_at_start.cache_clear()
    probe = "import signal; print(signal.getsignal(signal.SIGHUP).name)"
    assert signals.run_child([sys.executable, "-c", probe], cwd=tmp_path, env=dict(os.environ)) == 0
    assert capfd.readouterr().out.strip() == at_start.name
    assert signal.getsignal(signal.SIGHUP) == at_start


def test_the_grace_period_is_read_and_bounded(monkeypatch):
    monkeypatch.setenv(signals.GRACE_ENV, "2.5")
    assert signals.grace_seconds() == 2.5
    for bad in ("0", "-1", "nan", "1e9", "ten"):
        monkeypatch.setenv(signals.GRACE_ENV, bad)
        assert signals.grace_seconds() == signals.DEFAULT_GRACE_S, bad


def test_the_stopped_store_run_is_recorded_as_interrupted(tmp_path):
    """``Store.interrupt_latest_running``: the latest 'running' row becomes 'interrupted' with the details; an older
    stale row is left for the next refresh to mark abandoned."""
    from t2ibench.store import Store

    store = Store(tmp_path / "s.duckdb")
    store.initialise()
    store.start_run({"run_id": "old", "config_name": "c"})
    with store.write() as con:  # as a refresh killed long ago left it
        con.execute("UPDATE runs SET started_at = started_at - INTERVAL 1 DAY WHERE run_id = 'old'")
        con.execute("INSERT INTO runs (run_id, config_name, status, started_at) VALUES ('new', 'c', 'running', now())")
    assert store.interrupt_latest_running({"signal": "SIGTERM", "error": "killed"})
    rows = {r["run_id"]: r for r in store.rows("SELECT run_id, status, details FROM runs")}
    assert rows["new"]["status"] == "interrupted"
    assert '"signal": "SIGTERM"' in rows["new"]["details"]
    assert rows["old"]["status"] == "running"
    assert not Store(tmp_path / "none.duckdb").interrupt_latest_running({"signal": "SIGTERM"})


SELF_KILLED = (
    "import os, signal, subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "  # a server it started, in its group
    "time.sleep(0.3); os.kill(os.getpid(), signal.SIGKILL)"
)


@pytest.mark.skipif(sys.platform != "linux", reason="process groups are Linux's here")
def test_a_child_killed_by_a_signal_nobody_sent_is_reported_recorded_and_its_group_ended(tmp_path, capsys):
    """As the kernel's OOM killer ends a refresh: SIGKILL, unannounced. The command says so in one line (the signal,
    its likely cause, the log), ends what the child started, records it (``after_killed``), exits 137."""
    import psutil

    stopped: list[int] = []
    killed: list[int] = []
    code = signals.run_child(
        [sys.executable, "-c", SELF_KILLED],
        cwd=tmp_path,
        env=dict(os.environ),
        program="t2ibench run",
        after_stop=stopped.append,
        after_killed=killed.append,
        child_name="the refresh (flows.leaderboard_refresh)",
        log=tmp_path / "refresh.log",
    )
    assert code == 128 + signal.SIGKILL
    assert stopped == []
    assert killed == [signal.SIGKILL]
    err = capsys.readouterr().err
    assert err == (
        "t2ibench run: the refresh (flows.leaderboard_refresh) was killed by SIGKILL (likely out of memory: the "
        f"kernel's OOM killer sends SIGKILL (see dmesg), t2ibench did not); its log: {tmp_path / 'refresh.log'}\n"
    )
    sleepers = [
        p for p in psutil.process_iter(["cmdline"]) if "import time; time.sleep(60)" in (p.info["cmdline"] or [])
    ]
    assert not [p for p in sleepers if p.is_running() and p.status() != psutil.STATUS_ZOMBIE], "its group was left"


def test_a_crash_is_named_as_one():
    assert signals.killed_message("t2ibench paper digits", "the digits experiment", signal.SIGSEGV, None) == (
        "t2ibench paper digits: the digits experiment was killed by SIGSEGV (it crashed: a fault in native code); "
        "its output is above"
    )
