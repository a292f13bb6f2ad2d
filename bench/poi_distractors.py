"""Distractor place names for bench/poi_scale.py: made of the gazetteer's own names, seeded, never one of them.

The POI paper (Zhang et al., "BERT has a Mouth, and it can Taste", section 1)
looks names up among 17 million POIs, where the gazetteer holds 202,179: a
lookup that keeps up must find the name meant among many more names that look
like it. Random strings would not (a character n-gram tells them apart at
once), so every distractor is a name a map could hold, made from the parts of
real ones:

    blend       the head of one one-word name and the tail of another, cut after a vowel ("Lauder" + "field")
    recombined  the first words of a name of several words and the last of another ("San Martín" + "de Elines")
    poi kind    a name and the kind of place it names, as the paper's "prefix, pure name, suffix" POIs
                ("Putnam Fire Station", "Mijas Railway Station", "Cuntalapa Primary School")
    qualified   a name with a direction, an age or an administrative word ("North Mijas", "Alassio Township")
    descriptive a dictionary word and a word of landscape ("Copper Creek", "Ash Ridge")

Names are drawn uniformly with a seeded generator, each form with FORM_WEIGHTS; a distractor whose name_key is
a real name's, or an earlier distractor's, is drawn again.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sembed_cli.readers.gazetteer import name_key

POI_KINDS = (  # the kinds of POI a map search holds (the paper's suffixes: store, fire brigade, county office, ...)
    "Railway Station", "Bus Station", "Bus Stop", "Metro Station", "Airport", "Harbour", "Ferry Terminal",
    "Hospital", "Clinic", "Pharmacy", "Fire Station", "Police Station", "Post Office", "Town Hall", "City Hall",
    "Library", "Museum", "Stadium", "Park", "Market", "Supermarket", "Shopping Centre", "Mall", "Hotel", "Inn",
    "Restaurant", "Cafe", "Bakery", "Bank", "Primary School", "High School", "College", "University", "Church",
    "Cathedral", "Mosque", "Temple", "Cemetery", "Castle", "Bridge", "Dam", "Lake", "Beach", "Golf Club",
    "Sports Centre", "Industrial Park", "Business Park", "Campground", "Service Area", "Petrol Station", "Garage",
    "Court", "Prison", "Barracks", "Lighthouse", "Zoo", "Garden", "Square", "Tower", "Gate",
)  # fmt: skip
BEFORE = ("North", "South", "East", "West", "New", "Old", "Upper", "Lower", "Great", "Little", "Port", "Lake",
          "Mount", "Saint", "San", "Santa", "Nova", "Bad", "Villa", "Le", "La", "El")  # fmt: skip
AFTER = ("Township", "Village", "Heights", "Springs", "Junction", "Hills", "Valley", "Beach", "Center", "Falls",
         "Crossing", "Mills", "Landing", "Estates", "Gardens", "Park", "Station", "Harbor", "Point", "Bay",
         "County", "District", "City", "Municipality", "Province", "Region")  # fmt: skip
LANDSCAPE = ("Creek", "Ridge", "Hill", "Hollow", "Brook", "Meadow", "Valley", "Grove", "Point", "Springs", "Field",
             "Ford", "Wood", "Lake", "Glen", "Marsh", "Bluff", "Haven", "Rock", "Dale")  # fmt: skip
FORM_WEIGHTS = {"blend": 0.40, "recombined": 0.15, "poi kind": 0.20, "qualified": 0.15, "descriptive": 0.10}
VOWELS = set("aeiouyàáâãäåèéêëìíîïòóôõöùúûüý")


def cuts(word: str) -> list[int]:
    """Where a one-word name may be cut: after a vowel followed by a consonant, leaving 2 letters or more each side."""
    return [
        i
        for i in range(2, len(word) - 1)
        if word[i - 1].lower() in VOWELS and word[i].isalpha() and word[i].lower() not in VOWELS
    ]


class Distractors:
    """Seeded generator of distractors from `names` (the real POI names) and `words` (dictionary words)."""

    def __init__(self, names: Sequence[str], words: Sequence[str], seed: int):
        self.rng = random.Random(seed)
        self.taken = {name_key(n) for n in names}
        self.single = [n for n in names if " " not in n and "-" not in n and cuts(n)]
        self.several = [n.split() for n in names if len(n.split()) > 1]
        self.names = list(names)
        self.words = [w.capitalize() for w in words if w.isalpha() and len(w) > 2]

    def blend(self) -> str:
        rng = self.rng
        head, tail = rng.choice(self.single), rng.choice(self.single)
        return head[: rng.choice(cuts(head))] + tail[rng.choice(cuts(tail)) :].lower()

    def recombined(self) -> str:
        first, second = self.rng.choice(self.several), self.rng.choice(self.several)
        return " ".join(first[: self.rng.randrange(1, len(first))] + second[self.rng.randrange(1, len(second)) :])

    def poi_kind(self) -> str:
        return f"{self.rng.choice(self.names)} {self.rng.choice(POI_KINDS)}"

    def qualified(self) -> str:
        name = self.rng.choice(self.names)
        return f"{self.rng.choice(BEFORE)} {name}" if self.rng.random() < 0.5 else f"{name} {self.rng.choice(AFTER)}"

    def descriptive(self) -> str:
        word, landscape = self.rng.choice(self.words), self.rng.choice(LANDSCAPE)
        return f"{word} {landscape}" if self.rng.random() < 0.7 else f"{word}{landscape.lower()}"

    def __iter__(self) -> Iterator[tuple[str, str]]:
        """(form, name) without end, each name new."""
        makers = {
            "blend": self.blend,
            "recombined": self.recombined,
            "poi kind": self.poi_kind,
            "qualified": self.qualified,
            "descriptive": self.descriptive,
        }
        forms, weights = list(FORM_WEIGHTS), list(FORM_WEIGHTS.values())
        while True:
            form = self.rng.choices(forms, weights)[0]
            name = makers[form]()
            key = name_key(name)
            if key and key not in self.taken:
                self.taken.add(key)
                yield form, name
