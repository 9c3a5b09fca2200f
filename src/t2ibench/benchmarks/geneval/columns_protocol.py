"""GenEval's protocol in words, as data the store's views, the suite and the published rows share (numpy-free, on the
columns' floor): the wordings its prompts can be given in, and the fields a published row states and two numbers
must share to be compared."""

from __future__ import annotations

WORDINGS = ("original", "rewritten")
"""The wordings of GenEval's prompts a model can be given: GenEval's own templated ones, or the same records
rewritten long by an LLM (``REWRITTEN``; tables mark such scores †). The records' include/exclude are the same, so the
verdict rules apply unchanged; only the text the generator reads differs."""


def worded_suite(suite: str, wording: str) -> str:
    """The store's name of suite ``suite`` given in ``wording``: itself in the first wording, else with the wording
    after it ('geneval-rewritten': the generator read other text)."""
    return suite if wording == WORDINGS[0] else f"{suite}-{wording}"


def wording_of_suite(suite: str) -> str:
    """The wording a stored suite name says its prompts were given in (``worded_suite`` read back)."""
    return next((w for w in WORDINGS[1:] if suite.endswith(f"-{w}")), WORDINGS[0])


REWRITTEN_REVISION = "056b5fd51a88c1eb4547318609e25d40080fcf87"
"""The BAGEL commit whose evaluation_metadata_long.jsonl is GenEval's pinned rewrite (``suite.REWRITTEN``)."""
OFFICIAL_PROMPTS = 553
"""The official suite's prompts (seed 43, 100 per task: ``generate_suite()``, checked by the tests): a measured row
is on GenEval's prompts only when it judged all of them."""


def wording_words(wording: str) -> str:
    """A measured wording in a published protocol's words: 'original', or the pinned rewrite it read
    ('rewritten:bagel-long@056b5fd'; a published 'rewritten' names no rewrite, so matches none)."""
    return wording if wording == WORDINGS[0] else f"{wording}:bagel-long@{REWRITTEN_REVISION[:7]}"


STATED = ("prompts", "detector", "images_per_prompt", "resolution")
"""The protocol fields every row states (a value, or 'unstated')."""
COMPARED = ("prompts", "detector", "images_per_prompt")
"""The protocol fields two GenEval numbers must share to be compared: the prompts the generator read, the evaluator
that judged the images and the images per prompt. Resolution is the model's own setting (recorded and shown, and
named where it differs in a reproduction check), not the benchmark's."""
UNSTATED = "unstated"
PROMPTS = (*WORDINGS, UNSTATED)
"""What a published row may say of its prompts (or a rewrite it names, as ``wording_words`` spells it)."""
DETECTOR_NAMES = {
    "mask2former": "Mask2Former Swin-S (GenEval's evaluator)",
    "ssd-mobilenet-v2-lite": "SSD-MobileNet-v2 lite",
    UNSTATED: UNSTATED,
}
"""The detectors a protocol names by key, with their words in the report: GenEval's evaluator (Mask2Former Swin-S
COCO with CLIP ViT-L/14 colours and GenEval's thresholds: its mmdet release, or the Hugging Face port t2ibench runs
by default) and t2ibench's offline lite one; a source's other words are kept as written and match only themselves."""
