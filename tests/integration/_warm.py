"""Warm starts for the refresh processes the integration tests launch: a fork server with the model libraries
already imported.

Every refresh a test starts is a process of its own (``python -m flows.leaderboard_refresh REQUEST``), and most of a
smoke refresh's time is the import of torch, transformers, diffusers, open_clip and OpenCV (~8-10 s of CPU each
time, more when both test workers are busy), paid again by each of the ~35 refreshes the suite starts this way. Here
one long-lived server per test worker imports them once; a launch forks it, and the child becomes the refresh:

- in a session of its own (``setsid``: its pid is its process group, as with ``start_new_session=True``), with the
  launcher's stdin, stdout and stderr (passed over a Unix socket), environment, working folder and arguments;
- running the module as ``python -m`` does (``runpy._run_module_as_main``, in a clean ``__main__``), ending as the
  interpreter ends a program (non-daemon threads joined, ``atexit`` handlers, streams flushed, the exit status of
  ``SystemExit`` or of an uncaught exception, its traceback from the program's frames on), its status sent back by
  the server.

The server also imports Prefect and the t2ibench library (``SETTLED``), not the workspace's programs (``flows`` and
``tasks``, which set the environment as they import: each child imports them afresh). Prefect reads its settings as
it imports (the environment, the profiles of its home folder, a prefect.toml in the working folder, the command line)
and configures logging from them, so the server then takes it out of ``sys.modules``: a child's first ``import
prefect`` puts it back and does that reading and configuring with the child's own, at the same point of the program
(``_Stashed``, ``_settle``; a test checks the outcome equal to a fresh process's).

A launch falls back to a plain subprocess whenever the child would differ from a fresh interpreter: another
interpreter or program, an environment differing in anything the preloaded libraries may read as they import (only
``PREFECT_*``, read again as Prefect settles, and ``T2IBENCH_*``, ``DASK_*`` and ``PYTEST_*``, which none reads then,
may differ, and those the imports set themselves; both sides counted with what the refresh sets before it imports
them, ``tasks.SETTINGS`` and the log routing's variables), or Prefect's telemetry on (its import would then write to
the server's home folder). The refresh program's own start (``python -m`` from a shell, signal handling on a
terminal) stays covered by the tests that start it as a plain process (test_signals, the ``t2ibench run`` and DVC
tests).

``T2IBENCH_TEST_WARM=0`` turns warm starts off (every launch a plain subprocess); ``T2IBENCH_TEST_WARM_LOG=FILE``
appends a line per launch to FILE saying whether it was warm, and if not which variables kept it cold.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import importlib.abc
import importlib.machinery
import io
import json
import locale
import logging
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PRELOAD = (
    # the model and numeric libraries, with the submodules a smoke refresh's steps load lazily (transformers and
    # diffusers import a model's classes on first use: ~1 s of each refresh)
    "numpy", "scipy.linalg", "scipy.stats", "scipy.optimize", "scipy.spatial", "scipy.integrate", "PIL.Image",
    "torch", "torchvision.transforms.v2", "transformers", "transformers.modeling_utils",
    "transformers.image_processing_utils", "transformers.models.dinov2.modeling_dinov2",
    "transformers.models.bit.image_processing_bit", "transformers.models.clip.modeling_clip",
    "transformers.models.clip.tokenization_clip", "diffusers",
    "diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion", "open_clip", "cv2", "duckdb",
    "matplotlib.pyplot",
    # what Prefect imports beneath it (not Prefect itself, which reads its PREFECT_* settings as it imports): ~0.4 s
    "pydantic", "pydantic_settings", "fastapi", "uvicorn", "sqlalchemy", "httpx", "rich.console", "griffe",
    "pendulum", "websockets.asyncio.client", "opentelemetry.trace", "anyio", "fsspec", "graphviz", "pathspec",
    "jsonschema", "prometheus_client", "coolname", "humanize", "click", "psutil", "slugify", "dotenv", "toml",
    "asgi_lifespan",
)  # fmt: skip
"""What the server imports once: the third-party libraries a refresh spends its start-up importing (measured: the
modules a smoke refresh imports beyond these are Prefect's, the workspace's and a few dozen small ones). None of them
reads a MAY_DIFFER variable as it imports; Dask, which reads DASK_* then, stays out."""
SETTLED = (
    "prefect.main", "prefect.context", "prefect.futures", "prefect.task_runners", "prefect.cache_policies",
    "prefect.flow_engine", "prefect.task_engine", "t2ibench.pipeline", "t2ibench.requests", "t2ibench.benchmarks",
    "t2ibench.report.leaderboard", "t2ibench.signals", "t2ibench.progress", "t2ibench.logs",
)  # fmt: skip
"""What the server imports after PRELOAD: Prefect, whose import-time reads of its settings each child does again
(``_settle``), and the t2ibench modules a refresh imports (which read no environment as they import): otherwise
imported again at each warm refresh's start."""
MAY_DIFFER = ("PREFECT_", "T2IBENCH_", "DASK_", "PYTEST_")
"""Environment variables a launch may set differently from the server's: none of PRELOAD reads them, and Prefect's
(in SETTLED) are read again as the child settles (PYTEST_: the test running, which pytest sets as each test
starts)."""
BUFSIZE = 1 << 20
PYTHONPATH = os.pathsep.join([str(REPO / "src"), str(REPO)])
"""This checkout's library first: what the tests' refreshes (and so the server) run with."""


# -- the server (python -m tests.integration._warm SOCKET PARENT_PID) ------------------------------------------------


def _threads() -> int:
    """The threads of this process, native ones included (a fork copies only the calling one)."""
    return len(os.listdir("/proc/self/task"))


def _child(conn: socket.socket, request: dict[str, Any], fds: list[int], others: list[socket.socket]) -> None:
    """In the forked child: become the launched program, then exit as it does (never returns)."""
    os.setsid()
    for other in others:
        other.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in set(fds):
        os.close(fd)
    conn.sendall(json.dumps({"pid": os.getpid()}).encode())
    conn.close()
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.stdout.reconfigure(line_buffering=os.isatty(1))
    sys.argv = ["-m", *request["args"]]
    sys.modules["__main__"] = types.ModuleType("__main__")  # a clean one, as `python -m` runs the module in
    try:
        runpy._run_module_as_main(request["module"])  # type: ignore[attr-defined]  # what `python -m` calls
        code = 0
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except BaseException as exc:  # what the interpreter prints, from the program's frames on
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        code = -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
    _exit(code)


LoggerState = tuple[int, list[logging.Handler], bool, bool]


def _loggers() -> dict[str, LoggerState]:
    """Every logger's configuration (the root's as ""): level, handlers, propagation, disabled."""
    named = [(n, lg) for n, lg in logging.Logger.manager.loggerDict.items() if isinstance(lg, logging.Logger)]
    return {
        n: (lg.level, list(lg.handlers), lg.propagate, lg.disabled) for n, lg in [("", logging.getLogger()), *named]
    }


class _Stashed(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Prefect, imported in the server and then taken out of ``sys.modules`` (with the import finder its import
    added, and its logging configuration undone): the child's first ``import prefect`` puts it back and does with the
    child's environment, working folder and arguments what that import does in a fresh process (``_settle``), at the
    same point of the program (after the workspace's ``tasks`` has set its variables, say)."""

    def __init__(self, modules: dict[str, types.ModuleType], finders: list[Any]) -> None:
        self.modules = modules
        self.finders = finders
        self.spec = modules["prefect"].__spec__

    @classmethod
    def take(cls, before: dict[str, LoggerState]) -> _Stashed:
        """Take the imported Prefect out of this process, every logger set back as ``before`` (``_loggers()`` before
        the import: the loggers made since as new ones are)."""
        modules = {n: m for n, m in sys.modules.items() if n == "prefect" or n.startswith("prefect.")}
        for name in modules:
            del sys.modules[name]
        finders = [f for f in sys.meta_path if type(f).__module__.startswith("prefect.")]
        for finder in finders:
            sys.meta_path.remove(finder)
        for name in _loggers():
            level, handlers, propagate, disabled = before.get(name, (logging.NOTSET, [], True, False))
            logger = logging.getLogger(name or None)
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate, logger.disabled = propagate, disabled
        return cls(modules, finders)

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        """A spec of this loader for ``prefect`` (the stashed package), else None."""
        return importlib.machinery.ModuleSpec(name, self, is_package=True) if name == "prefect" else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        """Put Prefect back and settle it; its package module (its own ``__spec__`` restored by ``exec_module``)."""
        sys.meta_path.remove(self)
        sys.modules.update(self.modules)
        sys.meta_path[:0] = self.finders
        _settle()
        return self.modules["prefect"]

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run (the package ran in the server): its own spec back in place of this loader's."""
        module.__spec__ = self.spec


def _settle() -> None:
    """What importing Prefect does with the process's environment, working folder and arguments, done again in the
    child: the root settings context read (the home folder made), plugins run where its settings enable them, logging
    configured from scratch and its first line (what ``prefect.main`` does as it imports)."""
    import prefect
    import prefect.context
    from prefect.context import get_settings_context, refresh_global_settings_context
    from prefect.logging import configuration, get_logger
    from prefect.settings import get_current_settings

    # as on the first import, no root context while the new one is made: its profiles path and home are read from
    # the environment, not from the server's settings
    del prefect.context.GLOBAL_SETTINGS_CONTEXT
    refresh_global_settings_context()
    if get_current_settings().plugins.enabled:
        prefect._initialize_plugins()  # its hooks may set variables: it reads the settings context again after
    configuration.PROCESS_LOGGING_CONFIG.clear()  # an empty one: a first set-up, not an incremental one
    configuration.setup_logging()
    get_logger("profiles").debug(f"Using profile {get_settings_context().profile.name!r}")


def _exit_code(code: object) -> int:
    """The status ``raise SystemExit(code)`` ends a Python process with (a message: printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _exit(code: int) -> None:
    """End the child as the interpreter ends a program (non-daemon threads joined, atexit handlers run, streams
    flushed), without tearing down the preloaded libraries' modules one by one (seconds with torch loaded, and
    nothing a fresh refresh process, which never imported them, would do either). ``code`` < 0: die of that signal,
    as Python does after an uncaught KeyboardInterrupt."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def _defaults() -> dict[str, str]:
    """What a refresh's process sets in its environment (each variable unless set) before it imports PRELOAD's
    libraries: the workspace's settings (``tasks.SETTINGS``, applied as ``flows`` imports ``tasks``) and the log
    routing's (``t2ibench.logs.QUIET_ENVIRONMENT``). ``tasks`` is then dropped from ``sys.modules``: each child
    imports it afresh (it sets those variables as it imports), from where its working folder says."""
    import tasks

    from t2ibench.logs import QUIET_ENVIRONMENT

    defaults = {**tasks.SETTINGS, **QUIET_ENVIRONMENT}
    for name in [n for n in sys.modules if n == "tasks" or n.startswith("tasks.")]:
        del sys.modules[name]
    return defaults


def _refusal(
    env: Mapping[str, str], base: Mapping[str, str], defaults: Mapping[str, str], added: Mapping[str, str]
) -> str | None:
    """Why a child with environment ``env`` would not be a fresh process (None: it would): a variable that differs
    from the server's ``base`` (before its imports) once both have ``defaults``, beyond MAY_DIFFER's and those the
    imports set themselves (``added``), or threads in the server (a fork copies only the calling one)."""
    settled = {**defaults, **env}
    differ = sorted(
        k
        for k in set(settled) | set(base)
        if settled.get(k) != base.get(k) and not k.startswith(MAY_DIFFER) and k not in added
    )
    if differ:
        return f"the environment differs from the server's in {', '.join(differ)}"
    if _threads() != 1:
        return f"{_threads()} threads in the server"
    if settled.get("DO_NOT_TRACK", "").lower() not in ("1", "true", "yes"):
        return "Prefect's telemetry is on (DO_NOT_TRACK unset): its first import writes to the server's home folder"
    return None


def _imported(env: Mapping[str, str], base: Mapping[str, str], added: Mapping[str, str]) -> dict[str, str]:
    """``env`` as the preloaded imports leave it: each variable they set (``added``: OpenCV prepends its folder to
    LD_LIBRARY_PATH, open_clip turns TOKENIZERS_PARALLELISM off, ...) as they set it in the server, where ``env``
    started it as the server did; where it did not, ``env``'s own value stands (only a later subprocess's library
    search path reads it)."""
    out = dict(env)
    for key, value in added.items():
        if env.get(key) == base.get(key):
            out[key] = value
    return out


def serve(path: str, parent: int) -> None:
    """Import PRELOAD, then fork a child for each launch request on the Unix socket ``path`` until ``parent`` ends."""
    defaults = _defaults()
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    base = dict(os.environ)
    for name in PRELOAD:
        importlib.import_module(name)
    loggers = _loggers()
    for name in SETTLED:
        importlib.import_module(name)
    sys.meta_path.insert(0, _Stashed.take(loggers))
    added = {k: v for k, v in os.environ.items() if base.get(k) != v}  # what the libraries set as they import
    gc.collect()
    gc.freeze()  # the preloaded objects out of every child's collections (and their pages shared, not copied)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(32)
    running: dict[int, socket.socket] = {}
    print(json.dumps({"ready": os.getpid()}), flush=True)
    while os.getppid() == parent:
        readable, _, _ = select.select([listener], [], [], 0.02)
        if readable:
            conn, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(conn, BUFSIZE, 3)
            request = json.loads(message)
            refused = _refusal(request["env"], base, defaults, added)
            if refused:
                conn.sendall(json.dumps({"refused": refused}).encode())
                conn.close()
            else:
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    _child(
                        conn, {**request, "env": _imported(request["env"], base, added)}, fds, list(running.values())
                    )
                running[pid] = conn
            for fd in fds:
                os.close(fd)
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = running.pop(pid)
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
            conn.close()


# -- the launcher (in the test process) -------------------------------------------------------------------------


class WarmProcess:
    """A launched refresh, as much of ``subprocess.Popen`` as the tests use: ``pid`` (also its process group),
    ``stdout`` and ``stderr`` (text; ``stderr`` None where it is merged into ``stdout``), ``returncode``, ``poll``,
    ``wait``, ``communicate``, ``send_signal``."""

    def __init__(
        self, conn: socket.socket, pid: int, stdout: io.TextIOWrapper, stderr: io.TextIOWrapper | None = None
    ) -> None:
        self._conn = conn
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None

    def _collect(self, timeout: float | None) -> None:
        if self.returncode is not None:
            return
        readable, _, _ = select.select([self._conn], [], [], timeout)
        if not readable:
            if timeout == 0:
                return
            raise subprocess.TimeoutExpired("warm refresh", timeout or 0)
        message = self._conn.recv(BUFSIZE)
        if not message:
            raise RuntimeError("the warm fork server ended before reporting the refresh's exit")
        self.returncode = json.loads(message)["exit"]
        self._conn.close()

    def poll(self) -> int | None:
        """The exit status if the refresh has ended, else None."""
        self._collect(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the refresh to end; its exit status (negative: the signal that killed it)."""
        self._collect(timeout)
        assert self.returncode is not None
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str | None]:
        """Read stdout (and a separate stderr) to their ends, then wait for the exit: (output, errors or None)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        streams = [s for s in (self.stdout, self.stderr) if s is not None]
        read: dict[int, str] = {}
        readers = [
            threading.Thread(target=lambda i=i, s=s: read.__setitem__(i, s.read()), daemon=True)
            for i, s in enumerate(streams)
        ]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired("warm refresh", timeout or 0)
        for stream in streams:
            stream.close()
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return read[0], read.get(1)

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the refresh (its process, not its group)."""
        if self.returncode is None:
            os.kill(self.pid, signum)


class _Server:
    """This test process's fork server: started on the first launch, stopped when the process exits."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="t2ibench-warm-"))
        self.path = str(self.folder / "socket")
        self.log = open(self.folder / "server.log", "w+")  # noqa: SIM115 (open as long as the server)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration._warm", self.path, str(os.getpid())],
            cwd=REPO,
            env=server_environment(os.environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        if not self.proc.stdout.readline():  # its line saying it is ready
            self.log.seek(0)
            raise RuntimeError(f"the warm fork server did not start:\n{self.log.read()[-3000:]}")
        atexit.register(self.stop)

    def stop(self) -> None:
        """End the server (its children, the launched refreshes, are waited for by their tests)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)


_SERVER: _Server | None = None
LAST_REFUSAL: str | None = None
"""Why the server last refused a launch (it then ran as a plain subprocess)."""
_LOCK = threading.Lock()


def server_environment(base: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: ``base`` with this checkout on PYTHONPATH, as the tests' workspaces have it."""
    return {**base, "PYTHONPATH": PYTHONPATH}


def enabled() -> bool:
    """Whether launches may be warm (T2IBENCH_TEST_WARM unset or 1)."""
    return os.environ.get("T2IBENCH_TEST_WARM", "1") == "1"


def launch(cmd: Sequence[str], env: Mapping[str, str], cwd: Path, *, merged: bool = True) -> WarmProcess | None:
    """``cmd`` (``[sys.executable, "-m", module, *args]``) forked from the warm server, with ``env`` and ``cwd``,
    stdout and stderr into one pipe (``merged``) or a pipe each; None when it cannot be warm (then start it as a
    plain subprocess)."""
    global _SERVER, LAST_REFUSAL
    if not enabled() or len(cmd) < 3 or cmd[0] != sys.executable or cmd[1] != "-m":
        return None
    with _LOCK:
        if _SERVER is None or _SERVER.proc.poll() is not None:
            _SERVER = _Server()
        server = _SERVER
    read, write = os.pipe()
    err_read, err_write = (read, write) if merged else os.pipe()
    devnull = os.open(os.devnull, os.O_RDONLY)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(server.path)
        request = {"module": cmd[2], "args": list(cmd[3:]), "env": env, "cwd": str(cwd)}
        socket.send_fds(conn, [json.dumps(request).encode()], [devnull, write, err_write])
    finally:
        for fd in {write, err_write, devnull}:
            os.close(fd)
    answer = json.loads(conn.recv(BUFSIZE) or b'{"refused": "the server closed the connection"}')
    if os.environ.get("T2IBENCH_TEST_WARM_LOG"):
        with open(os.environ["T2IBENCH_TEST_WARM_LOG"], "a") as fh:
            fh.write(f"{os.getpid()} {time.time():.1f} {cmd[2]}: {answer.get('refused', 'warm')}\n")
    if "pid" not in answer:
        LAST_REFUSAL = answer["refused"]
        for fd in {read, err_read}:
            os.close(fd)
        conn.close()
        return None
    encoding = locale.getpreferredencoding(False)
    stdout = io.TextIOWrapper(io.FileIO(read, "r"), encoding=encoding)
    stderr = None if merged else io.TextIOWrapper(io.FileIO(err_read, "r"), encoding=encoding)
    return WarmProcess(conn, answer["pid"], stdout, stderr)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
