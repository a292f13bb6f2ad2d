"""The words of a place name as a lookup compares them (`search --spelling`).

People type a place's words in their own way: "st louis" or "Saint Louis" for
"St. Louis", "Winston Salem" for "Winston-Salem", "OBrien" for "O'Brien". The
words of a name's key (`name_key`: accents stripped, lower case) are what
stays between its letters once apostrophes are dropped and every other mark
is a break, each common abbreviation written out in full (ABBREVIATIONS), so
that all of those give the same words.
"""

from __future__ import annotations

import re

# The abbreviations of place names a user types or reads on a map, each with the word it stands for. "St." is
# "Saint" in English and French names and "Sankt" in German ones ("St. Gallen"): all three are one word here.
ABBREVIATIONS = {
    "st": "saint",
    "sankt": "saint",
    "ste": "sainte",
    "mt": "mount",
    "mtn": "mountain",
    "ft": "fort",
    "hts": "heights",
    "spgs": "springs",
    "jct": "junction",
    "twp": "township",
}
APOSTROPHES = re.compile(r"['\u2018\u2019\u02bb`]")
WORD = re.compile(r"\w+")


def place_words(key: str) -> list[str]:
    """The words of a name's `key` (name_key), abbreviations written out: "st. john's" -> ["saint", "johns"]."""
    return [ABBREVIATIONS.get(word, word) for word in WORD.findall(APOSTROPHES.sub("", key))]
