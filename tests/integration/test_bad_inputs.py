"""Every case of the bad-input corpus (tests/corpus.py): a clear error or an explicit report, and a populated
results store left exactly as it was."""

from __future__ import annotations

import filecmp
import re
import shutil
from pathlib import Path

import pytest

from t2ibench.errors import InputError
from t2ibench.store import TABLES, Store
from tests.corpus import CASES, reliability_table

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def populated_template(tmp_path_factory) -> Path:
    """One populated store, built once; each case gets a byte copy (building one costs ~0.4 s)."""
    return populate(tmp_path_factory.mktemp("template") / "populated.duckdb").path


@pytest.fixture(scope="session")
def template_snapshot(populated_template) -> dict[str, list[str]]:
    """Every table of the template, read once: each case's store starts as a byte copy of it, so this is each case's
    'before' (reading it again per case cost ~10 s over the corpus)."""
    return snapshot(Store(populated_template))


def populate(path: Path) -> Store:
    store = Store(path)
    with store.write() as con:
        store.upsert(
            con,
            "prompts",
            [
                {"suite": "g", "prompt_index": i, "task": "colors", "prompt": f"p{i}", "metadata": {"i": i}}
                for i in range(3)
            ],
        )
        store.upsert(
            con,
            "verdicts",
            [
                {
                    "model": "m",
                    "model_hash": "h",
                    "evaluator_hash": "e",
                    "suite": "g",
                    "prompt_index": 0,
                    "sample": 0,
                    "task": "colors",
                    "correct": True,
                    "reason": "",
                }
            ],
        )
    return store


def as_copied(path: Path, template: Path) -> bool:
    """Whether the store file is still byte for byte the template, with no write-ahead log beside it: then every
    table is the template's, without opening it (as most cases leave it: no snapshot for them)."""
    return not Path(f"{path}.wal").exists() and filecmp.cmp(path, template, shallow=False)


def snapshot(store: Store) -> dict[str, list[str]]:
    with store.read() as con:  # one connection for every table
        return {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) for t in TABLES}


def test_corpus_is_large_and_ids_are_unique():
    assert len(CASES) >= 90
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, populated_template, template_snapshot):
    shutil.copy(populated_template, tmp_path / "populated.duckdb")
    store = Store(tmp_path / "populated.duckdb")
    before = template_snapshot  # the copy's tables: the template's bytes
    try:
        outcome = case.run(tmp_path)
    except InputError as exc:
        assert re.search(case.expect, str(exc)), f"error does not say what it should:\n{exc}"
    else:
        assert isinstance(outcome, str), f"{case.id}: neither raised an InputError nor returned a report"
        assert re.search(case.expect, outcome), f"report does not list it:\n{outcome}"
    assert as_copied(store.path, populated_template) or snapshot(store) == before, "the results store changed"


def test_reliability_doc_is_the_rendered_registry():
    doc = (REPO / "docs" / "reliability.md").read_text()
    assert reliability_table() in doc, "docs/reliability.md is out of date: paste tests.corpus.reliability_table()"
