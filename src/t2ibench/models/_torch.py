"""Device and dtype selection shared by the model adapters."""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from t2ibench.errors import InputError, unknown_choice

DTYPES = ("float32", "float16", "bfloat16")


F = TypeVar("F", bound=Callable[..., Any])
_LOAD_LOCK = threading.RLock()


def loads_models(fn: F) -> F:
    """Run ``fn`` (a model loader: lazy imports, from_pretrained, building tiny models) under one process-wide lock.

    Threads of a local task runner may load models at the same time; torch, transformers and diffusers import their
    modules lazily and are not safe to import from two threads at once ("cannot import name ... from
    'transformers'"). Inference runs outside the lock.
    """

    @functools.wraps(fn)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with _LOAD_LOCK:
            return fn(*args, **kwargs)

    return locked  # type: ignore[return-value]


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """transformers' and diffusers' own progress bars ('Loading weights', 'Loading pipeline components') off while a
    checkpoint loads: library noise on the user's console, not progress of t2ibench's work."""
    restore = []
    for name in ("transformers", "diffusers"):
        if name not in sys.modules:
            continue
        logging = getattr(sys.modules[name], "utils", None)
        logging = getattr(logging, "logging", None)
        if logging is not None and hasattr(logging, "disable_progress_bar"):
            if logging.is_progress_bar_enabled():
                restore.append(logging)
            logging.disable_progress_bar()
    try:
        yield
    finally:
        for logging in restore:
            logging.enable_progress_bar()


def resolve_device(spec: str = "auto") -> Any:
    """A torch.device from 'auto' (CUDA if available, else CPU), 'cpu', 'cuda', 'cuda:1', 'mps'."""
    import torch

    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError as exc:
        raise InputError(f"device {spec!r} is not a torch device ({exc})") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {spec!r} requested but CUDA is not available on this machine")
    return device


def resolve_dtype(spec: str, device: Any) -> Any:
    """A torch dtype from 'float32', 'float16', 'bfloat16' or 'auto' (float16 on CUDA, else float32)."""
    import torch

    if spec == "auto":
        return torch.float16 if getattr(device, "type", "cpu") == "cuda" else torch.float32
    if spec not in DTYPES:
        raise unknown_choice("dtype", spec, (*DTYPES, "auto"))
    return getattr(torch, spec)
