"""The parses T2I-CompBench++'s rules read off its prompts, as a table derived once with spaCy and shipped.

The reference parses each prompt with spaCy's ``en_core_web_sm`` at evaluation time: its noun chunks become BLIP's
questions (colour, shape, texture, complex), its first and last NOUN the 2-D and 3-D objects, its NOUN/PROPN tokens
around a preposition the complex category's spatial objects, and its adjectives what the complex category's CLIP text
leaves out. The official model is not on the package registry (only third-party re-uploads, whose weights nothing
vouches for), so t2ibench does not parse at run time: ``data/phrases.json`` holds every prompt's tokens (text, coarse
part of speech, trailing space) and noun chunks, with the spaCy and model versions that made them and the digest of
the suite they were made from. ``python -m t2ibench.models.spacy_parse`` derives it where spaCy and the official model
are installed (``pip install spacy``, then ``python -m spacy download en_core_web_sm`` from spaCy's own release), and
the test that re-derives it runs wherever they are.

Until the table is there, the categories that need it refuse in one line (numeracy needs only a tokenizer, whose
rule t2ibench follows: ``metrics.numeracy_tokens``; non-spatial needs no parse).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from t2ibench.benchmarks.t2i_compbench.metrics import Token
from t2ibench.errors import InputError

TABLE = "phrases.json"
NEEDS_PARSE = ("color", "shape", "texture", "spatial", "3d_spatial", "complex")
"""The categories whose rules read the prompt's parse."""
FORMAT = 1


@dataclass(frozen=True)
class Parse:
    """One prompt's parse: its tokens and its noun chunks (spaCy's ``Doc.noun_chunks`` texts), in order."""

    tokens: tuple[Token, ...]
    chunks: tuple[str, ...]


@dataclass(frozen=True)
class PhraseTable:
    """Every prompt's parse and what made them (``parser``: library, its version, model and model version)."""

    parser: Mapping[str, str]
    suite_sha256: str
    parses: Mapping[str, Parse]
    sha256: str = ""  # the table file's bytes

    def parse(self, text: str) -> Parse:
        """The parse of prompt ``text`` (InputError when the table lacks it)."""
        if text not in self.parses:
            raise InputError(f"{TABLE}: no parse of prompt {text!r} (re-derive it: docs/t2i_compbench.md#noun-phrases)")
        return self.parses[text]

    def describe(self) -> dict[str, str]:
        """The parser's identity and the table's digest, for the protocol."""
        return {**self.parser, "table_sha256": self.sha256}


def table_json(parser: Mapping[str, str], suite_sha256: str, parses: Mapping[str, Parse]) -> str:
    """The table as the JSON text ``read_table`` reads (keys sorted, one prompt a line)."""
    lines = []
    for text, p in sorted(parses.items()):
        entry = {"tokens": [[t.text, t.pos, t.space] for t in p.tokens], "chunks": list(p.chunks)}
        lines.append(json.dumps(text, ensure_ascii=False) + ": " + json.dumps(entry, ensure_ascii=False))
    head = {"format": FORMAT, "parser": dict(parser), "suite_sha256": suite_sha256}
    return json.dumps(head, sort_keys=True)[:-1] + ', "parses": {\n' + ",\n".join(lines) + "\n}}\n"


def _parse(text: str, value: Any, where: str) -> Parse:
    """One table entry, checked (a damaged entry is refused naming its prompt)."""
    try:
        tokens = tuple(Token(str(t), str(p), str(s)) for t, p, s in value["tokens"])
        chunks = tuple(str(c) for c in value["chunks"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{where}: the entry of prompt {text!r} is damaged") from None
    if "".join(t.text + t.space for t in tokens).rstrip() != text.rstrip():
        raise InputError(f"{where}: the tokens of prompt {text!r} do not spell it")
    return Parse(tokens, chunks)


def packaged_table() -> Path:
    """Where the packaged phrase table is (``python -m t2ibench.models.spacy_parse`` writes it there)."""
    return Path(str(resources.files(__package__) / "data" / TABLE))


def read_table(path: Path | None = None, *, suite_sha256: str | None = None) -> PhraseTable:
    """The phrase table (the shipped one, or ``path``), checked: its format, its parser record, every entry spelling
    its prompt and, with ``suite_sha256``, made from that suite. InputError (one line) when it is missing or wrong."""
    shipped = packaged_table()
    where = str(path) if path is not None else f"the packaged {TABLE}"
    try:
        data = path.read_bytes() if path is not None else shipped.read_bytes()
        raw = json.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"{where}: no phrase table — T2I-CompBench++'s {', '.join(NEEDS_PARSE)} categories read spaCy "
            "en_core_web_sm's parse of each prompt; derive it with `python -m t2ibench.models.spacy_parse` where spaCy "
            "and the official model are installed (docs/t2i_compbench.md#noun-phrases)"
        ) from None
    except (OSError, ValueError) as error:
        raise InputError(f"{where}: not a readable phrase table ({error})") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or not isinstance(raw.get("parses"), dict):
        raise InputError(f"{where}: not a phrase table of format {FORMAT}")
    parser = raw.get("parser")
    if not (isinstance(parser, dict) and all(isinstance(parser.get(k), str) for k in ("library", "version", "model"))):
        raise InputError(f"{where}: the table does not record the parser that made it (library, version, model)")
    if suite_sha256 is not None and raw.get("suite_sha256") != suite_sha256:
        raise InputError(f"{where}: made from another suite ({str(raw.get('suite_sha256'))[:16]}…); re-derive it")
    parses = {str(text): _parse(str(text), value, where) for text, value in raw["parses"].items()}
    digest = hashlib.sha256(data).hexdigest()
    return PhraseTable({str(k): str(v) for k, v in parser.items()}, str(raw.get("suite_sha256")), parses, digest)
