"""``t2ibench data``: external data, acquired and verified against pinned SHA-256s."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from t2ibench.commands.common import EXIT_OK


def _cmd_data(args: argparse.Namespace) -> int:
    from t2ibench.datasets import fetch_release, local_source, release
    from t2ibench.paths import place, refuse_output

    names = {f.name for f in release(args.dataset).files}
    inputs = [place("--from", local_source(args.dataset, args.source), tree=True)]
    refuse_output(args.out, flag="--out", inputs=inputs, tree=True, covers=lambda rel: rel.parts[0] in names)
    files = fetch_release(args.dataset, args.out, source=args.source, revision=args.revision)
    print(f"{args.out}: {', '.join(f.name for f in files)} (verified)", file=sys.stderr)
    return EXIT_OK


def add_data(verbs: Any) -> None:
    """``t2ibench data``: its options (defaults from the typed classes)."""
    from t2ibench.datasets import RELEASES

    data = verbs.add_parser(
        "data",
        help="acquire external data, verified against pinned SHA-256s: "
        + ", ".join(f"`data fetch {name}` ({r.title}, {r.licence})" for name, r in RELEASES.items()),
    )
    data.add_argument("action", choices=["fetch"])
    data.add_argument("dataset", choices=list(RELEASES))
    data.add_argument("--out", required=True, help="folder to write the files to")
    data.add_argument(
        "--from",
        dest="source",
        metavar="DIR",
        help="copy from this local folder instead of downloading (default, if set: "
        + ", ".join(f"${r.env} for {name}" for name, r in RELEASES.items())
        + ")",
    )
    data.add_argument(
        "--revision",
        help="git revision of the dataset's repository to download (default: "
        + ", ".join(f"{name} {r.revision[:7]}" for name, r in RELEASES.items())
        + "); the files' hashes are checked whatever the revision",
    )
    data.set_defaults(func=_cmd_data)
