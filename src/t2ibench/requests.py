"""What the ``t2ibench`` command asks each workspace flow to do: one typed, frozen request per flow.

The command line (``t2ibench.cli``) is the only argument parser. A verb that runs a flow of the workspace builds
the flow's request from its options (whose defaults are the request's field defaults, so each default is written
once) and starts the flow's program with the request as JSON, its one argument::

    python -m flows.leaderboard_refresh '{"request": "RefreshRequest", "config": "/…/configs/smoke.yaml"}'

(or the path of a file holding that JSON). The program decodes it with ``request_main``, which checks every field's
type (a bad field is a one-line error naming it) and calls the flow's importable function (``flows.*.run``); the
library itself never imports ``flows/``.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self, TypeVar

from t2ibench.errors import FieldError, InputError
from t2ibench.fields import Option, Range, check_ranges, decode, type_hints

TAG = "request"
"""The JSON key naming the request's class (optional when decoding; checked when given)."""
MAX_REQUEST_BYTES = 1 << 20


def _hints(cls: type) -> dict[str, Any]:
    """The resolved field types of a request class."""
    return type_hints(cls, extras=False)


@dataclasses.dataclass(frozen=True)
class Request:
    """Base of the flows' requests: each field's type is checked when one is made, and it travels as JSON."""

    program: ClassVar[str] = ""
    """The workspace program (``flows.<module>``) that runs this request."""
    work: ClassVar[str] = "the flow"
    """What the program does, as a command names it ('the refresh was killed by SIGKILL ...')."""

    def __post_init__(self) -> None:
        """Check each field's type (lists become tuples, integers for numbers floats), then the request's rules."""
        name = type(self).__name__
        hints = _hints(type(self))
        for f in dataclasses.fields(self):  # the config's decoder: one set of type rules and wordings
            object.__setattr__(self, f.name, decode(hints[f.name], getattr(self, f.name), f"{name}.{f.name}"))
        try:
            check_ranges(self)  # the ranges its options parse with (``t2ibench.options``)
        except FieldError as exc:
            raise InputError(f"{name}.{exc.field}: {exc.message}") from None
        self.check()

    def check(self) -> None:
        """Rules across fields (none unless a request defines them); raise InputError naming the field."""

    def log_file(self) -> Path | None:
        """Where the program sends Prefect's log and the libraries' output: ``logs/<module>.log`` beside the folder
        ``out`` a request writes (never inside it: it holds the artifacts only); None: the program knows its own
        place, as a refresh its config's."""
        out = getattr(self, "out", None)
        if not isinstance(out, str):
            return None
        return Path(out).absolute().parent / "logs" / f"{self.program.rsplit('.', 1)[-1]}.log"

    def to_json(self) -> str:
        """The request as one line of JSON, its class under ``"request"``."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return json.dumps({TAG: type(self).__name__, **fields}, sort_keys=True, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """The request a JSON object describes; a bad, unknown or missing field is a one-line InputError."""
        name = cls.__name__
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except (json.JSONDecodeError, ValueError) as exc:
            msg = getattr(exc, "msg", str(exc))
            raise InputError(f"{name}: not JSON ({msg})") from None
        if not isinstance(data, dict):
            raise InputError(f"{name}: expected a JSON object of fields, got {type(data).__name__}")
        tag = data.pop(TAG, name)
        if tag != name:
            raise InputError(f"{name}: got a request for {tag!r}; this program runs {name}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for key in data:
            if key not in fields:
                close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.5)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise InputError(f"{name}.{key}: not a field; {hint}(fields: {', '.join(fields)})")
        for key, f in fields.items():
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if required and key not in data:
                raise InputError(f"{name}.{key}: missing (a required field)")
        return cls(**data)


def _refuse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a number a request takes")


R = TypeVar("R", bound=Request)


def read_request(kinds: type[R] | tuple[type[R], ...], argv: Sequence[str]) -> R:
    """The request of a program's arguments: exactly one, the JSON object itself or the path of a file holding it;
    of the class ``kinds`` names (of several, the one its ``"request"`` key names)."""
    options = kinds if isinstance(kinds, tuple) else (kinds,)
    names = " or ".join(k.__name__ for k in options)
    if len(argv) != 1:
        raise InputError(
            f"expected one argument, a {names} as JSON (or a file holding it), got {len(argv)}; "
            "run it through the t2ibench command"
        )
    text = argv[0]
    if not text.lstrip().startswith("{"):
        from t2ibench.io import read_text_file

        text = read_text_file(Path(text), what=f"{names} file", max_bytes=MAX_REQUEST_BYTES)
    if len(options) == 1:
        return options[0].from_json(text)
    tag = _tag(text)
    chosen = next((k for k in options if k.__name__ == tag), None)
    if chosen is None:
        raise InputError(f"the request must name its kind ({TAG!r}: {names}); got {tag!r}")
    return chosen.from_json(text)


def _tag(text: str) -> Any:
    """The ``"request"`` key of a JSON object (None when it is not one, or has none)."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return None
    return data.get(TAG) if isinstance(data, dict) else None


def request_main(
    kinds: type[R] | tuple[type[R], ...], run: Callable[[R], int], program: str, argv: Sequence[str] | None = None
) -> int:
    """A flow program's entry: decode its one argument as a request of ``kinds`` and return ``run(request)``; a bad
    request is one line on stderr, exit status 2."""
    try:
        request = read_request(kinds, sys.argv[1:] if argv is None else argv)
    except InputError as exc:
        print(f"{program}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    return run(request)


# -- the requests ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RefreshRequest(Request):
    """Refresh one config's leaderboard (``flows.leaderboard_refresh``; ``t2ibench run``)."""

    program: ClassVar[str] = "flows.leaderboard_refresh"
    work: ClassVar[str] = "the refresh"
    config: str
    """The config to refresh, e.g. configs/smoke.yaml."""
    wait: Annotated[float, Range(0.0, 1e9)] = 0.0
    """Wait up to this many seconds if another refresh holds the store."""
    dask: Annotated[int | None, Range(1, 1024), Option(metavar="WORKERS")] = None
    """Fan the tasks out over a local Dask cluster of this many workers, whatever the config says."""
    summary: str | None = None
    """Also write the run's summary as JSON (computed/cached per model and step, task states) to this file."""
    flow: bool = False
    """Run the Prefect flow even when every step is cached (such a refresh otherwise does not start Prefect)."""
    fail_on_regression: bool = False
    """Exit with status 3 when a paired test flags a regression since the last refresh (each flagged change is named
    on the console either way): for cron and CI."""
    begun: Annotated[float | None, Option(cli=False)] = None
    """When the command that asked for the refresh started (Unix seconds): the run's times count from it, so its
    wall time includes starting Prefect (None: from when the flow starts)."""


@dataclasses.dataclass(frozen=True)
class PaperTablesRequest(Request):
    """GenEval Table 2 and the diversity table of a config's current models, from its store
    (``flows.paper_tables``; ``t2ibench paper tables``)."""

    program: ClassVar[str] = "flows.paper_tables"
    work: ClassVar[str] = "the paper-tables flow"
    config: str
    """The config whose store holds the models, e.g. configs/paper.yaml."""
    out: str
    """Folder for table2.md, diversity.md and metrics.json."""


@dataclasses.dataclass(frozen=True)
class DigitsRequest(Request):
    """The FKEA digits figure (``flows.paper_tables``; ``t2ibench paper digits``); these are the sweep's defaults
    (``examples.digits.DigitsSweepConfig`` reads them, and checks the values when the flow builds it)."""

    program: ClassVar[str] = "flows.paper_tables"
    work: ClassVar[str] = "the digits experiment"
    out: str
    """Folder for digits.md, digits.png, digits.json, metrics.json."""
    n_per_condition: Annotated[int, Range(10, 100_000)] = 170
    """Images per class count."""
    repeats: Annotated[int, Range(1, 1000)] = 10
    """Seeded repeats."""
    sigma_scale: Annotated[float, Range(0.0, open_low=True)] = 0.4
    """σ as a multiple of the median distance."""
    rff_dim: Annotated[int, Range(1, 1_000_000)] = 512
    """Random Fourier frequencies."""
    seed: Annotated[int, Range(0, 2**31 - 1)] = 0
    """Seed of draws and features."""


@dataclasses.dataclass(frozen=True)
class ScheduleRequest(Request):
    """Deploy the refresh of a config on a cron schedule, list what is deployed, or serve the schedule in-process
    (``flows.schedule``; ``t2ibench schedule``)."""

    program: ClassVar[str] = "flows.schedule"
    work: ClassVar[str] = "the schedule flow"
    config: str | None = None
    """The config to refresh (not needed with --list)."""
    pool: str = "t2ibench"
    """Prefect work pool (created if missing)."""
    cron: str | None = None
    """Cron expression, e.g. "0 3 * * *"."""
    name: str = "nightly"
    """Deployment name."""
    listing: Annotated[bool, Option(flag="--list")] = False
    """Say what is deployed (or that nothing is)."""
    serve: bool = False
    """Serve the schedule in this process instead (no pool, no worker; blocks)."""

    def check(self) -> None:
        """A config unless only listing; a cron to deploy one."""
        if (self.serve or not self.listing) and not self.config:
            raise InputError("--config is required (or use --list)")
        if not (self.listing or self.serve) and not self.cron:
            raise InputError("--cron is required (e.g. --cron '0 3 * * *'), or use --list")
