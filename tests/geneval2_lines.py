"""GenEval 2-shaped suite lines for tests (written here, not taken from the CC BY-NC file): three prompts covering
every skill, count answers one..three, and "a X" count questions that are not atoms."""

from __future__ import annotations

from typing import Any

LINES: list[dict[str, Any]] = [
    {
        "prompt": "two dogs and a cat",
        "atom_count": 3,
        "vqa_list": [
            ["How many dogs are in the image?", "two"],
            ["Are there any dogs in the image?", "Yes"],
            ["How many cats are in the image?", "one"],
            ["Are there any cats in the image?", "Yes"],
        ],
        "skills": ["count", "object", "count", "object"],
    },
    {
        "prompt": "a red car to the left of a tree",
        "atom_count": 4,
        "vqa_list": [
            ["How many cars are in the image?", "one"],
            ["Is the car red?", "Yes"],
            ["Are there any cars in the image?", "Yes"],
            ["Is the car to the left of the tree?", "Yes"],
            ["How many trees are in the image?", "one"],
            ["Are there any trees in the image?", "Yes"],
        ],
        "skills": ["count", "attribute", "object", "position", "count", "object"],
    },
    {
        "prompt": "three birds chasing a dog",
        "atom_count": 4,
        "vqa_list": [
            ["How many birds are in the image?", "three"],
            ["Are there any birds in the image?", "Yes"],
            ["Are the birds chasing the dog?", "Yes"],
            ["How many dogs are in the image?", "one"],
            ["Are there any dogs in the image?", "Yes"],
        ],
        "skills": ["count", "object", "verb", "count", "object"],
    },
]
LINE = LINES[0]  # "two dogs and a cat": 3 atoms, 4 questions
