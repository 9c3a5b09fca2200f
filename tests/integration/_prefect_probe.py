"""A stand-in refresh for the warm launcher's test (test_crash_resume): imports the workspace's Prefect settings and
Prefect as a refresh does (and the Prefect modules the warm server preloads, which a refresh imports as it runs),
then prints what Prefect read as it imported: its settings, active profile, logging configuration and handlers (the
console lines Prefect's import logged come before)."""

from __future__ import annotations

import importlib
import json
import logging

import tasks  # noqa: F401  (the workspace's settings, then Prefect: the refresh's order)
from prefect import flow  # noqa: F401
from prefect.context import get_settings_context
from prefect.logging import configuration
from prefect.settings import get_current_settings

from tests.integration._warm import SETTLED

for name in SETTLED:
    if name.startswith("prefect."):
        importlib.import_module(name)


def handler(h: logging.Handler) -> dict[str, object]:
    """A handler as configured: class, level, format, the stream's file descriptor."""
    stream = getattr(h, "stream", None)
    fmt = h.formatter
    return {
        "class": type(h).__name__,
        "level": h.level,
        "format": getattr(fmt, "_fmt", None),
        "formatter": type(fmt).__name__,
        "fd": stream.fileno() if stream is not None and hasattr(stream, "fileno") else None,
    }


loggers = {"": logging.getLogger()} | {
    name: logger
    for name, logger in sorted(logging.Logger.manager.loggerDict.items())
    if name.startswith("prefect") and isinstance(logger, logging.Logger)
}
print(json.dumps({
    "settings": get_current_settings().model_dump(mode="json"),
    "profile": get_settings_context().profile.name,
    "home": str(get_current_settings().home),
    "logging": configuration.PROCESS_LOGGING_CONFIG,
    "loggers": {
        name: {"level": lg.level, "propagate": lg.propagate, "disabled": lg.disabled,
               "handlers": [handler(h) for h in lg.handlers]}
        for name, lg in loggers.items()
    },
}, indent=1, sort_keys=True, default=str), flush=True)  # fmt: skip
