"""``t2ibench data``: external data, acquired and verified against pinned SHA-256s."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from t2ibench.commands.common import EXIT_OK
from t2ibench.fields import Option
from t2ibench.options import add_fields, from_args


@dataclass(frozen=True)
class DataRequest:
    """``t2ibench data fetch DATASET``: which release, where to, and from where."""

    action: Annotated[Literal["fetch"], Option(positional=True)]
    """What to do: fetch, the one action."""
    dataset: Annotated[str, Option(positional=True)]
    """The release to fetch (one of ``t2ibench.datasets.RELEASES``)."""
    out: str
    """Folder to write the files to."""
    source: Annotated[str | None, Option(flag="--from", metavar="DIR")] = None
    """Copy from this local folder instead of downloading."""
    revision: str | None = None
    """Git revision of the dataset's repository to download; the files' hashes are checked whatever the
    revision."""


def _cmd_data(args: argparse.Namespace) -> int:
    from t2ibench.datasets import fetch_release, local_source, release
    from t2ibench.paths import place, refuse_output

    req = from_args(DataRequest, args, args.request_options)
    names = {f.name for f in release(req.dataset).files}
    inputs = [place("--from", local_source(req.dataset, req.source), tree=True)]
    refuse_output(req.out, flag="--out", inputs=inputs, tree=True, covers=lambda rel: rel.parts[0] in names)
    files = fetch_release(req.dataset, req.out, source=req.source, revision=req.revision)
    print(f"{req.out}: {', '.join(f.name for f in files)} (verified)", file=sys.stderr)
    return EXIT_OK


def add_data(verbs: Any) -> None:
    """``t2ibench data``: its options, ``DataRequest``'s fields (the datasets, their variables and revisions from
    ``t2ibench.datasets.RELEASES``)."""
    from t2ibench.datasets import RELEASES

    data = verbs.add_parser(
        "data",
        help="acquire external data, verified against pinned SHA-256s: "
        + ", ".join(f"`data fetch {name}` ({r.title}, {r.licence})" for name, r in RELEASES.items()),
    )
    notes = {  # each release's own variable and pinned revision
        "source": "(default, if set: " + ", ".join(f"${r.env} for {name}" for name, r in RELEASES.items()) + ")",
        "revision": "(default: " + ", ".join(f"{name} {r.revision[:7]}" for name, r in RELEASES.items()) + ")",
    }
    options = add_fields(data, DataRequest, choices={"dataset": list(RELEASES)}, notes=notes)
    data.set_defaults(func=_cmd_data, request_options=options)
