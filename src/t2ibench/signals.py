"""Stopping on signals: SIGINT, SIGTERM and SIGHUP stop every t2ibench command the same way, within seconds.

A signal becomes an ``Interrupted`` exception in the main thread, so the command's own ``finally``/``with`` blocks
run: the run lock is released, the run is recorded as ``interrupted``, partial files stay where the next run resumes
from them (every write is atomic or an appended line). Work that cannot be interrupted from Python (a model's
forward pass in a task thread, an engine reporting to an API server that the same signal has already stopped) is
bounded by ``exit_after``: after a grace period the process ends its child processes and exits with 128 + the signal
number. A command that runs another program (``t2ibench run`` starts the refresh) starts it in its own process
group, forwards each signal to it once, and outlives it (``run_child``); the child also dies with its parent.

A stop signal the process was started ignoring stays ignored, as POSIX programs do: ``nohup t2ibench run …`` keeps
running when its terminal hangs up (SIGHUP), and so does the refresh it starts (the child inherits the ignored
signal); a shell's background job keeps ignoring SIGINT. The signals it was not started ignoring still stop it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_ENV = "T2IBENCH_STOP_GRACE_S"
DEFAULT_GRACE_S = 10.0


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived (``signum``): stop the work, release what is held, record it, exit 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_number(exc: BaseException) -> int | None:
    """The signal an exception stands for (Interrupted, KeyboardInterrupt, Prefect's TerminationSignal), else None."""
    if isinstance(exc, Interrupted):
        return exc.signum
    if isinstance(exc, KeyboardInterrupt):
        return int(signal.SIGINT)
    if type(exc).__name__ == "TerminationSignal" and isinstance(getattr(exc, "signal", None), int):
        return int(exc.signal)  # type: ignore[attr-defined]  # prefect.exceptions.TerminationSignal
    return None


def signal_name(signum: int) -> str:
    """'SIGTERM' for 15."""
    return signal.Signals(signum).name


def exit_code(signum: int) -> int:
    """The shell's exit status of a command stopped by ``signum`` (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + int(signum)


def grace_seconds() -> float:
    """How long an interrupted command may take to stop cleanly (``$T2IBENCH_STOP_GRACE_S``, default 10 s)."""
    text = os.environ.get(GRACE_ENV, "")
    try:
        value = float(text) if text else DEFAULT_GRACE_S
    except ValueError:
        value = DEFAULT_GRACE_S
    return value if 0 < value < 3600 else DEFAULT_GRACE_S


@functools.cache
def ignored_at_start() -> frozenset[int]:
    """The stop signals this process was started ignoring (SIG_IGN inherited from the program that started it:
    ``nohup`` ignores SIGHUP, a shell ignores SIGINT in a background job): read at the first call, before any handler
    here is installed, and kept ignored from then on."""
    return frozenset(s for s in STOP_SIGNALS if signal.getsignal(s) == signal.SIG_IGN)


def _handler(program: str) -> signal.Handlers | object:
    """A handler that bounds the stop (``exit_after``) and raises ``Interrupted`` in the main thread."""

    def stop(signum: int, frame: FrameType | None) -> None:
        grace = grace_seconds()
        exit_after(
            grace,
            exit_code(signum),
            f"{program}: interrupted ({signal_name(signum)}); stopped after the {grace:g} s grace period "
            "(finished work is kept; the next run resumes from it)",
        )
        raise Interrupted(signum)

    return stop


def take_over_signals(program: str) -> None:
    """Make SIGINT/SIGTERM/SIGHUP stop this process the t2ibench way from now on (main thread only; Prefect's
    flow engine installs its own SIGTERM handler, so a flow calls this again first thing); a signal the process was
    started ignoring is ignored again (``ignored_at_start``)."""
    if threading.current_thread() is threading.main_thread():
        ignored = ignored_at_start()
        for s in STOP_SIGNALS:
            signal.signal(s, signal.SIG_IGN if s in ignored else _handler(program))  # type: ignore[arg-type]


@contextlib.contextmanager
def stop_on_signals(program: str) -> Iterator[None]:
    """While inside: SIGINT/SIGTERM/SIGHUP raise ``Interrupted`` in the main thread, and the process is bounded to
    end within the grace period after one (no-op outside the main thread; one the process was started ignoring
    stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    take_over_signals(program)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _end_children(timeout_s: float = 2.0) -> None:
    """Terminate this process's descendants (an API server, Dask workers), then kill those still alive."""
    try:
        import psutil  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - psutil comes with the orchestration extra
        return
    children = psutil.Process().children(recursive=True)
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=timeout_s)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()


_exiting = threading.Event()


def exit_after(grace_s: float, code: int, message: str) -> None:
    """Make sure the process ends: if it is still alive ``grace_s`` seconds from now, end its child processes,
    print ``message`` to stderr and exit with ``code`` at once (atomic writes keep what was finished)."""
    if _exiting.is_set():
        return
    _exiting.set()

    def watchdog() -> None:
        time.sleep(grace_s)
        _end_children()
        from t2ibench.logs import console

        err = console().err  # the terminal, also when the process's own output goes to a log file
        for stream in {id(err): err, id(sys.__stderr__): sys.__stderr__}.values():
            with contextlib.suppress(Exception):
                print(message, file=stream, flush=True)
        os._exit(code)

    threading.Thread(target=watchdog, name="t2ibench-stop-watchdog", daemon=True).start()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child gets SIGTERM when its parent dies (so a killed ``t2ibench run`` takes its refresh along)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG


KILL_MARGIN_S = 10.0  # beyond the child's own grace period before its group is killed (a loaded two-core machine)


def run_child(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    program: str = "",
    after_stop: Callable[[int], None] | None = None,
    after_killed: Callable[[int], None] | None = None,
    child_name: str = "its program",
    log: Path | None = None,
) -> int:
    """Run a program in its own process group; forward SIGINT/SIGTERM/SIGHUP to it once each (a signal this process
    was started ignoring stays ignored, here and in the child, which inherits it), give it the grace
    period (plus KILL_MARGIN_S) to stop, then kill its group; after a forwarded signal, however the child ended, call
    ``after_stop(signum)`` (to record what a child that was killed, or ended by its watchdog, could not). A child
    killed by a signal t2ibench did not send (SIGKILL from the kernel's OOM killer, a crash) is reported in one line
    naming ``child_name``, the signal, its likely cause and ``log``; what it started is ended and
    ``after_killed(signum)`` records it. Returns its exit status (128 + signum if it was signalled, or if it had to be
    killed after a forwarded signal)."""
    child = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        process_group=0,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in STOP_SIGNALS if s not in ignored_at_start()}
    try:
        deadline: float | None = None
        while True:
            if received and deadline is None:
                deadline = time.monotonic() + grace_seconds() + KILL_MARGIN_S
            try:
                code = child.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() > deadline:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
                    _after_stop(after_stop, received[0], program or argv[0])
                    print(
                        f"{program or Path(argv[0]).name}: interrupted ({signal_name(received[0])}); it did not stop "
                        f"within {grace_seconds() + KILL_MARGIN_S:g} s, so its processes were killed (finished work "
                        "is kept)",
                        file=sys.stderr,
                        flush=True,
                    )
                    return exit_code(received[0])  # the stop the user asked for, not the kill that enforced it
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if received:  # it stopped by itself, perhaps through its watchdog's hard exit before it could record the stop
        _after_stop(after_stop, received[0], program or argv[0])
    elif code < 0:  # killed by a signal nobody here forwarded: it could say nothing itself
        _end_group(child.pid)
        print(killed_message(program or Path(argv[0]).name, child_name, -code, log), file=sys.stderr, flush=True)
        _after_stop(after_killed, -code, program or argv[0])
    if code < 0:
        return exit_code(-code)
    return code


CRASH_SIGNALS = (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE)


def killed_cause(signum: int) -> str:
    """Why a program dies of ``signum`` that t2ibench did not send: SIGKILL is the kernel's OOM killer's (or a
    user's ``kill -9``), SIGSEGV/SIGABRT/... a crash."""
    if signum == signal.SIGKILL:
        return "likely out of memory: the kernel's OOM killer sends SIGKILL (see dmesg), t2ibench did not"
    if signum in CRASH_SIGNALS:
        return "it crashed: a fault in native code"
    return "a signal t2ibench did not send"


def killed_message(program: str, child_name: str, signum: int, log: Path | None) -> str:
    """The one line a command prints when ``child_name`` was killed by ``signum`` it did not send."""
    where = f"its log: {log}" if log is not None else "its output is above"
    return f"{program}: {child_name} was killed by {signal_name(signum)} ({killed_cause(signum)}); {where}"


def _end_group(pgid: int, timeout_s: float = 2.0) -> None:
    """SIGTERM what is left of a dead child's process group (servers, workers it started), then SIGKILL after
    ``timeout_s``."""
    for signum, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, signum)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)


def _after_stop(after_stop: Callable[[int], None] | None, signum: int, program: str) -> None:
    """Call ``after_stop(signum)``; a failure there is reported, never raised over the stop itself."""
    if after_stop is None:
        return
    try:
        after_stop(signum)
    except Exception as exc:
        print(f"{program}: after the stop: {' '.join(str(exc).split())}", file=sys.stderr)
