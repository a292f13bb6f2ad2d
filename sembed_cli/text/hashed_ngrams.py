"""Character n-grams within words, hashed into signed buckets: scikit-learn's `HashingVectorizer(analyzer="char_wb",
lowercase=True, strip_accents="unicode", alternate_sign=True, norm=None)`, bucket for bucket, in numpy.

The POI lookup's vectors (models/poi_lookup.py) hold these counts; importing scikit-learn for them took about 2 s
of a one-query `search --spelling`'s 3.6 s. The same steps as scikit-learn 1.x (`_preprocess`, `_char_wb_ngrams`,
`FeatureHasher`): lower case, accents stripped by NFKD where the text is not ASCII, the words split at blanks,
then for each word padded by a blank on each side its n-grams for n in the range (a word shorter than n once); each
n-gram's UTF-8 bytes hashed by MurmurHash3 (x86, 32-bit, seed 0) read as a signed integer h: bucket |h| mod the
bucket count, sign + where h >= 0. tests/test_poi.py checks every bucket against scikit-learn's over 30,000
gazetteer names and odd strings.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np

LONGEST = 12  # bytes of an n-gram padded for the hash: 3 characters of at most 4 UTF-8 bytes
C1, C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
BLOCK = 10_000  # texts whose n-grams document_frequency holds at once


def strip_accents(text: str) -> str:
    """Characters without their combining marks (NFKD), where the text is not plain ASCII."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def char_wb_ngrams(text: str, ngram_range: tuple[int, int]) -> list[str]:
    """The n-grams of each word of `text` padded by a blank on each side, in scikit-learn's order."""
    low, high = ngram_range
    grams: list[str] = []
    for word in strip_accents(text.lower()).split():  # scikit-learn's run of blanks made one first: the same words
        word = f" {word} "
        for n in range(low, high + 1):
            grams.extend(word[i : i + n] for i in range(max(1, len(word) - n + 1)))
            if len(word) <= n:  # a word no longer than n is one n-gram, whatever n comes next
                break
    return grams


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix(k: np.ndarray) -> np.ndarray:
    return _rotl(k * C1, 15) * C2


def murmurhash3_32(keys: Sequence[bytes]) -> np.ndarray:
    """MurmurHash3_x86_32 of each key (at most LONGEST bytes), seed 0, as signed 32-bit integers."""
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    if len(keys) and lengths.max() > LONGEST:
        raise ValueError(f"murmurhash3_32 here takes keys of at most {LONGEST} bytes")
    padded = np.frombuffer(b"".join(key.ljust(LONGEST, b"\0") for key in keys), dtype="<u4")
    blocks = padded.reshape(len(keys), LONGEST // 4).astype(np.uint32)
    whole = lengths // 4
    h = np.zeros(len(keys), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for i in range(LONGEST // 4):
            rows = whole > i
            mixed = h[rows] ^ _mix(blocks[rows, i])
            h[rows] = _rotl(mixed, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        tail = (lengths % 4) > 0  # the last bytes, zero-padded: the block after the whole ones
        h[tail] ^= _mix(blocks[tail, np.minimum(whole[tail], LONGEST // 4 - 1)])
        h ^= lengths.astype(np.uint32)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def hashed(texts: Iterable[str], buckets: int, ngram_range: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """For every n-gram of every text: the text's position, its bucket and its sign (+1 or -1)."""
    rows: list[int] = []
    grams: list[bytes] = []
    for row, text in enumerate(texts):
        found = char_wb_ngrams(text, ngram_range)
        rows.extend([row] * len(found))
        grams.extend(gram.encode("utf-8") for gram in found)
    h = murmurhash3_32(grams).astype(np.int64)
    return np.asarray(rows, dtype=np.int64), np.abs(h) % buckets, np.where(h >= 0, 1.0, -1.0)


def counts(texts: Sequence[str], buckets: int, ngram_range: tuple[int, int]) -> np.ndarray:
    """The signed n-gram counts of each text in `buckets` buckets (float32, one row a text)."""
    rows, bucket, sign = hashed(texts, buckets, ngram_range)
    summed = np.bincount(rows * buckets + bucket, weights=sign, minlength=len(texts) * buckets)
    return summed.reshape(len(texts), buckets).astype(np.float32)


def document_frequency(texts: Sequence[str], buckets: int, ngram_range: tuple[int, int]) -> np.ndarray:
    """How many of the texts have an n-gram in each bucket (one whose signs cancelled to 0 too, as scikit-learn's
    stored entries count); BLOCK texts at a time, so that a corpus's n-grams are never all held at once."""
    held = np.zeros(buckets, dtype=np.int64)
    for start in range(0, len(texts), BLOCK):
        rows, bucket, _ = hashed(texts[start : start + BLOCK], buckets, ngram_range)
        held += np.bincount(np.unique(rows * buckets + bucket) % buckets, minlength=buckets)
    return held
