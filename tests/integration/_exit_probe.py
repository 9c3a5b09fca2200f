"""A stand-in program for the warm launcher's test (test_crash_resume): says where and how it runs, then ends as its
first argument says (exit N, an uncaught exception, a message, KeyboardInterrupt, a sleep to be killed in, an atexit
handler, a non-daemon thread still running)."""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time

how = sys.argv[1]
print(json.dumps({
    "argv": sys.argv[1:], "cwd": os.getcwd(), "marker": os.environ.get("T2IBENCH_PROBE"), "name": __name__,
    "leader": os.getpgid(0) == os.getpid() == os.getsid(0), "main": sys.modules["__main__"].__file__,
}), flush=True)  # fmt: skip
print("to stderr", file=sys.stderr, flush=True)
if how == "exit":
    sys.exit(int(sys.argv[2]))
if how == "raise":
    raise RuntimeError("the probe failed")
if how == "message":
    sys.exit("a message")
if how == "interrupt":
    raise KeyboardInterrupt
if how == "sleep":
    time.sleep(60)
if how == "atexit":
    atexit.register(lambda: print("atexit ran", flush=True))
if how == "thread":
    threading.Thread(target=lambda: (time.sleep(0.3), print("the thread ended", flush=True))).start()
print("the end of the module", end="")  # unflushed: the exit flushes it
