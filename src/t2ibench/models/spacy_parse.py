"""T2I-CompBench++'s phrase table made with spaCy (docs/t2i_compbench.md#noun-phrases): each prompt's tokens (text,
coarse part of speech, trailing whitespace) and noun chunks, as the reference's ``spacy.load("en_core_web_sm")``
parses them. A maintenance step, not run by the product: the table ships with the package, since the official model
is not on the package registry. ``python -m t2ibench.models.spacy_parse [OUT]`` writes it (default: the package's
``data/phrases.json``) where spaCy and the official ``en_core_web_sm`` are installed."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.t2i_compbench.metrics import Token
from t2ibench.benchmarks.t2i_compbench.suite import load_suite
from t2ibench.benchmarks.t2i_compbench.suite_phrases import TABLE, Parse, table_json
from t2ibench.errors import InputError

MODEL = "en_core_web_sm"


def parse_texts(texts: Sequence[str], nlp: Callable[[str], Any]) -> dict[str, Parse]:
    """Each text's ``Parse`` by the spaCy pipeline ``nlp`` (tokens with ``pos_`` and ``whitespace_``, noun chunks)."""
    out = {}
    for text in texts:
        doc = nlp(text)
        tokens = tuple(Token(t.text, t.pos_, t.whitespace_) for t in doc)
        out[text] = Parse(tokens, tuple(chunk.text for chunk in doc.noun_chunks))
    return out


def load_pipeline() -> tuple[Callable[[str], Any], dict[str, str]]:
    """The official ``en_core_web_sm`` pipeline and its identity (InputError, one line, when it is not installed)."""
    try:
        import spacy  # optional: a maintainer's tool
    except ImportError:
        raise InputError("spaCy is not installed: pip install spacy") from None
    try:
        nlp = spacy.load(MODEL)
    except OSError:
        raise InputError(f"spaCy's {MODEL} is not installed: python -m spacy download {MODEL}") from None
    parser = {"library": "spacy", "version": spacy.__version__, "model": MODEL, "model_version": nlp.meta["version"]}
    return nlp, parser


def main(argv: Sequence[str]) -> int:
    """Write the phrase table of the whole suite to argv[0] (default: the package's data folder)."""
    out = (
        Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "benchmarks" / "t2i_compbench" / "data" / TABLE
    )
    suite = load_suite()
    nlp, parser = load_pipeline()
    texts = sorted({p.text for p in suite.prompts})
    out.write_text(table_json(parser, suite.sha256, parse_texts(texts, nlp)), encoding="utf-8")
    print(f"wrote the parses of {len(texts)} prompts by {parser} to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
