"""The plugin's registry entry: only what the hubs read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from t2ibench.benchmarks import Benchmark


class DPG(Benchmark[Any, Any, Any, Any, Any]):
    """A planted benchmark."""

    name = "dpg"
    title = "DPG-Bench (planted)"
    label = "DPG"
    release = "dpg"
    judges = ("VQA judge backend",)
    docs = "docs/benchmarks.md"
    command_help = "DPG (planted)"

    def scan(self, source: Path, suite: Any, *, images_per_prompt: int | None) -> Any:
        """Not needed here."""
        raise NotImplementedError

    def judge(self, scan: Any, evaluator: Any, **_: Any) -> list[Any]:
        """Not needed here."""
        raise NotImplementedError

    def summarise(self, records: Any) -> Any:
        """Not needed here."""
        raise NotImplementedError

    def render(self, tables: Any, *, label: str) -> str:
        """Not needed here."""
        raise NotImplementedError

    def tables_json(self, tables: Any) -> dict[str, Any]:
        """Not needed here."""
        raise NotImplementedError

    def add_suite_options(self, parser: Any) -> None:
        """Its prompts file."""
        parser.add_argument("--dpg-csv", default="dpg_bench.csv", help="DPG-Bench's CSV")

    def add_options(self, parser: Any) -> None:
        """Its suite's options only."""
        self.add_suite_options(parser)
