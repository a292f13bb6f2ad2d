"""Variants of a place name as a user might type it: the positives of stage 2's lookup triplets.

The POI paper's stage-2 triplets (Zhang et al., section 4) only separate POI
names from other text, which teaches nothing about finding one place from a
misspelt or shortened query. `train --method poi --variants N` adds, for each
POI name of a batch, N variants made here as positives of that name (every
other name of the batch a negative). A variant is made by one of these edits,
from a random generator, never from any evaluation query:

    typo          one character swapped with the next, deleted, replaced or inserted (not the first one)
    drop word     one word of a name of several words left out (a dropped suffix such as "County" included)
    no accents    the accents stripped ("Sao Paulo" for "São Paulo")
    case          all lower or all upper case
"""

from __future__ import annotations

import random
import unicodedata

LETTERS = "abcdefghijklmnopqrstuvwxyz"
EDITS = ("typo", "drop word", "no accents", "case")


def typo(text: str, rng: random.Random) -> str:
    if len(text) < 3:
        return text
    i = rng.randrange(1, len(text) - 1)
    kind = rng.choice(("swap", "delete", "replace", "insert"))
    if kind == "swap":
        return text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    if kind == "delete":
        return text[:i] + text[i + 1 :]
    if kind == "replace":
        return text[:i] + rng.choice(LETTERS) + text[i + 1 :]
    return text[:i] + rng.choice(LETTERS) + text[i:]


def drop_word(text: str, rng: random.Random) -> str:
    words = text.split()
    if len(words) < 2:
        return typo(text, rng)
    drop = rng.randrange(len(words))
    return " ".join(w for i, w in enumerate(words) if i != drop)


def no_accents(text: str, rng: random.Random) -> str:
    stripped = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return stripped if stripped != text else typo(text, rng)


def case(text: str, rng: random.Random) -> str:
    return text.lower() if rng.random() < 0.5 else text.upper()


MAKERS = {"typo": typo, "drop word": drop_word, "no accents": no_accents, "case": case}
WEIGHTS = (0.6, 0.3, 0.05, 0.05)  # typos are what a lookup sees most


def variant(text: str, rng: random.Random) -> str:
    """One variant of `text` by an edit drawn with WEIGHTS (the text itself only when it is too short to edit)."""
    edit = rng.choices(EDITS, WEIGHTS)[0]
    return MAKERS[edit](text, rng)
