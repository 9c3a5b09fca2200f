"""T2I-CompBench++'s phrase table: written and read back whole, refused when missing, damaged or made from another
suite; re-derived from spaCy's official en_core_web_sm wherever it is installed (skipped elsewhere), and the
numeracy tokenizer checked against spaCy's English tokenizer wherever spaCy is."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from t2ibench.benchmarks.t2i_compbench import suite_phrases as sp
from t2ibench.benchmarks.t2i_compbench.metrics import numeracy_tokens
from t2ibench.benchmarks.t2i_compbench.suite import load_suite
from t2ibench.errors import InputError
from t2ibench.models.spacy_parse import parse_texts

PARSER = {"library": "spacy", "version": "3.8.18", "model": "en_core_web_sm", "model_version": "3.8.0"}


class FakeNLP:
    """A stand-in for a spaCy pipeline: whitespace tokens, 'NOUN' for words after 'a', 'ADJ' for 'red', chunks 'a X'."""

    def __call__(self, text: str) -> Any:
        words = text.split(" ")
        toks = [
            type("T", (), {"text": w, "pos_": "NOUN" if i and words[i - 1] == "a" else "ADJ" if w == "red" else "DET",
                           "whitespace_": " " if i < len(words) - 1 else ""})()
            for i, w in enumerate(words)
        ]  # fmt: skip
        chunks = [type("C", (), {"text": f"a {w}"})() for i, w in enumerate(words) if i and words[i - 1] == "a"]
        return type("D", (), {"__iter__": lambda self: iter(toks), "noun_chunks": chunks})()


def test_a_derived_table_reads_back_whole(tmp_path: Path):
    parses = parse_texts(["a cat near a red dog", "a lamp"], FakeNLP())
    path = tmp_path / "phrases.json"
    path.write_text(sp.table_json(PARSER, "abc", parses))
    table = sp.read_table(path, suite_sha256="abc")
    assert table.parses == parses
    assert table.describe() == {**PARSER, "table_sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert table.parse("a lamp").chunks == ("a lamp",)
    assert [t.pos for t in table.parse("a cat near a red dog").tokens] == ["DET", "NOUN", "DET", "DET", "NOUN", "DET"]
    with pytest.raises(InputError, match="no parse of prompt 'a desk'"):
        table.parse("a desk")


def test_a_missing_damaged_or_foreign_table_is_refused_in_one_line(tmp_path: Path):
    with pytest.raises(InputError, match=r"no phrase table — .*python -m t2ibench.models.spacy_parse"):
        sp.read_table(tmp_path / "absent.json")
    path = tmp_path / "phrases.json"
    path.write_text(sp.table_json(PARSER, "abc", parse_texts(["a lamp"], FakeNLP())))
    with pytest.raises(InputError, match=r"made from another suite \(abc…\); re-derive it"):
        sp.read_table(path, suite_sha256="def")
    raw = json.loads(path.read_text())
    raw["parses"]["a lamp"]["tokens"][1][0] = "lamb"
    path.write_text(json.dumps(raw))
    with pytest.raises(InputError, match="the tokens of prompt 'a lamp' do not spell it"):
        sp.read_table(path)
    del raw["parser"]["model"]
    path.write_text(json.dumps(raw))
    with pytest.raises(InputError, match="does not record the parser"):
        sp.read_table(path)
    path.write_text("{")
    with pytest.raises(InputError, match="not a readable phrase table"):
        sp.read_table(path)


def _official_model() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("spacy", "en_core_web_sm"))


@pytest.mark.skipif(not _official_model(), reason="spaCy's official en_core_web_sm is not installed here")
def test_the_shipped_table_is_what_the_official_model_parses():
    from t2ibench.models.spacy_parse import load_pipeline

    suite = load_suite()
    table = sp.read_table(suite_sha256=suite.sha256)
    nlp, parser = load_pipeline()
    assert table.parser == parser
    texts = sorted({p.text for p in suite.prompts})
    assert parse_texts(texts, nlp) == {t: table.parse(t) for t in texts}


@pytest.mark.skipif(importlib.util.find_spec("spacy") is None, reason="spaCy is not installed here")
def test_the_numeracy_tokenizer_splits_every_numeracy_prompt_as_spacys_english_tokenizer():
    import spacy

    nlp = spacy.blank("en")
    for prompt in load_suite().category("numeracy"):
        assert numeracy_tokens(prompt.text) == [t.text for t in nlp(prompt.text)], prompt
