"""What a published dataset version is: its files, each data file pinned by its SHA-256, where they are downloaded
from and the environment variable naming a local copy. A benchmark pins its release beside the reader of its suite
(``RELEASE``, or ``RELEASES`` for several, in its ``suite`` module); ``t2ibench.datasets`` fetches and verifies them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReleasedFile:
    """One file of a dataset release: its path in the source repository and, for data, its SHA-256."""

    name: str
    path: str
    sha256: str | None  # None: copied as published (the licence text)


@dataclass(frozen=True)
class Release:
    """A published version of a dataset: where it is downloaded from, its files, their hashes and its licence."""

    name: str
    title: str
    repository: str  # raw-file base URL: a file is <repository>/<revision>/<path>
    revision: str  # the version downloaded by default (a commit where the publisher has no release tag)
    env: str  # the environment variable naming a local copy of the files
    licence: str
    files: tuple[ReleasedFile, ...]

    def file(self, name: str) -> ReleasedFile:
        """The released file called ``name`` (KeyError otherwise)."""
        for item in self.files:
            if item.name == name:
                return item
        raise KeyError(name)
