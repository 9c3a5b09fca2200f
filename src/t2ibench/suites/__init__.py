"""Benchmarks as data: prompt suites defined in YAML/JSONL and their generators.

What every suite reader bounds before a prompt reaches a tokenizer: a suite file's size (refused unread beyond its
reader's bound, and when parsing it would outgrow the memory limit), its number of lines and each prompt's length.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from t2ibench.errors import InputError
from t2ibench.io import read_jsonl
from t2ibench.metrics.checks import check_memory

# A prompt (or a judge's question) longer than this is refused naming its file and line. The released suites' longest
# prompt is 93 characters (GenEval 2; GenEval's 59; GenEval's rewritten prompts' 784), and every text encoder reads
# far less (CLIP 77 tokens, T5 512):
# a longer prompt is never read whole by a model, while tokenizing it is what exhausts memory (a 100 MB prompt took a
# tokenizer to 16.8 GB and 8.5 minutes, or aborted it).
MAX_PROMPT_CHARS = 10_000
# A parsed JSON-lines suite holds 8–11× its bytes in Python objects (measured on both released suites); a file is
# refused unread when this many times its size is more than the memory limit allows.
SUITE_MEMORY_FACTOR = 16


def read_suite_lines(path: str | Path, *, what: str, max_lines: int, max_line_bytes: int) -> Iterator[tuple[str, Any]]:
    """``read_jsonl`` for a suite file, bounded before it is read: at most ``max_lines`` × ``max_line_bytes`` bytes
    and ``SUITE_MEMORY_FACTOR`` × its size within the memory limit; then at most ``max_lines`` records. InputError
    names the file (and line)."""
    from t2ibench.paths import regular_file

    p = regular_file(path, what=what)
    bound = max_lines * max_line_bytes
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror or exc})") from None
    if size <= bound:
        check_memory(SUITE_MEMORY_FACTOR * size, what=f"{p}: reading this {size:,}-byte {what}")
    for count, item in enumerate(read_jsonl(p, what=what, max_bytes=bound), start=1):
        if count > max_lines:
            raise InputError(f"{item[0]}: a {what} holds at most {max_lines:,} lines")
        yield item


def check_prompt_text(text: str, *, where: str, what: str = "the prompt") -> str:
    """``text`` unless it is longer than MAX_PROMPT_CHARS (InputError naming ``where`` and both lengths)."""
    if len(text) > MAX_PROMPT_CHARS:
        raise InputError(
            f"{where}: {what} has {len(text):,} characters; at most {MAX_PROMPT_CHARS:,} (no text encoder reads more; "
            "the released suites' longest prompt has 784)"
        )
    return text
