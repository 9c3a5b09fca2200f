"""t2ibench: a benchmark system for text-to-image models.

The importable library: metrics (numpy/scipy only), suites (benchmarks as data), models (torch, lazily
imported), the results store, reports and the ``t2ibench`` command.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("t2ibench")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

__all__ = ["__version__"]
