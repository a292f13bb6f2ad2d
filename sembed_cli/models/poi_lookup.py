"""Looking places up: the stage-2 embedding beside a character n-gram vector, one vector for `index` and `search`.

Issue 15: the POI paper's stage-2 model (Zhang et al., section 4: a character
BERT, then triplets) is the heart of the lookup, trained with generated
variants of each name as positives (`train --method poi --variants`). What
makes a lookup robust to a typo in a short name is the spelling itself, so a
stage-2 model directory written with `--ngram-weight W` (W > 0) also holds
NGRAM_FILE, and every sembed command that embeds with it (`embed`, `index`,
`search`) writes the concatenation

    v = [sqrt(1 - W) * e_bert, sqrt(W) * e_ngram]

of the unit-length stage-2 embedding e_bert (mean pooling) and e_ngram, a
unit-length TF-IDF vector of the name's character 1- to 3-grams within words
(padded by a blank on each side, as scikit-learn's `char_wb`), hashed into
NGRAM_DIMENSION signed buckets (the hashing trick), with IDF from the
training names. The inner product of two such vectors, which the FAISS index
ranks by, is (1 - W) cos(e_bert) + W cos(e_ngram). `SentenceTransformer(DIR)`
still loads the directory and gives e_bert alone. Either backend (torch, or
ONNX Runtime fp32 or int8) gives e_bert; under `--long-text window` a long
name's e_bert is the mean of its windows' and its e_ngram that of the whole
text (n-grams have no window).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

NGRAM_FILE = "ngram_lookup.json"
NGRAM_DIMENSION = 512
NGRAM_RANGE = (1, 3)


class CharNgrams:
    """Hashed TF-IDF vectors of character n-grams within words (sublinear term frequency, unit length): the counts
    scikit-learn's HashingVectorizer (char_wb, signed) makes, in numpy (text/hashed_ngrams.py)."""

    def __init__(self, idf: ArrayLike, ngram_range: tuple[int, int] = NGRAM_RANGE):
        self.idf = np.asarray(idf, dtype=np.float32)
        self.ngram_range = (int(ngram_range[0]), int(ngram_range[1]))

    @property
    def dimension(self) -> int:
        return len(self.idf)

    @classmethod
    def fit(
        cls, names: Sequence[str], dimension: int = NGRAM_DIMENSION, ngram_range: tuple[int, int] = NGRAM_RANGE
    ) -> CharNgrams:
        """IDF of each bucket over `names`: log((1 + n) / (1 + df)) + 1, as scikit-learn's smooth IDF."""
        from ..text.hashed_ngrams import document_frequency

        held = document_frequency(names, dimension, ngram_range)
        return cls(np.log((1 + len(names)) / (1 + held)) + 1, ngram_range)

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        from ..text.hashed_ngrams import counts

        vectors = counts(texts, self.dimension, self.ngram_range)
        held = vectors != 0  # n-grams of opposite signs that cancelled out in a bucket count for nothing
        count = vectors[held]
        vectors[held] = np.sign(count) * (1 + np.log(np.abs(count)))  # sublinear tf, sign kept
        vectors *= self.idf
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def save(self, directory: Path, weight: float) -> None:
        from ..io import write_json_atomic

        write_json_atomic(
            directory / NGRAM_FILE,
            {
                "weight": weight,
                "ngram_range": list(self.ngram_range),
                "analyzer": "char_wb, hashed, signed",
                "idf": self.idf.tolist(),
            },
        )


class LookupEncoder:
    """A sentence encoder (the parts of SentenceTransformer's interface sembed uses) writing [e_bert, e_ngram]."""

    def __init__(self, encoder, ngrams: CharNgrams, weight: float):
        self.encoder, self.ngrams, self.weight = encoder, ngrams, weight

    @classmethod
    def open(cls, directory: Path, encoder) -> LookupEncoder:
        settings = json.loads((directory / NGRAM_FILE).read_text(encoding="utf-8"))
        return cls(encoder, CharNgrams(settings["idf"], settings["ngram_range"]), float(settings["weight"]))

    def get_embedding_dimension(self) -> int:
        dense = getattr(self.encoder, "get_embedding_dimension", None) or self.encoder.get_sentence_embedding_dimension
        return dense() + self.ngrams.dimension

    get_sentence_embedding_dimension = get_embedding_dimension

    def __getattr__(self, name: str):  # anything else (tokenizer, max_seq_length, ...) is the stage-2 encoder's
        if name == "encoder":
            raise AttributeError(name)
        return getattr(self.encoder, name)

    def __iter__(self):  # its modules are the stage-2 encoder's (no Token Attention: --explain says so)
        return iter(self.encoder)

    def to(self, *args, **kwargs) -> LookupEncoder:
        self.encoder.to(*args, **kwargs)
        return self

    def encode(self, texts, **kwargs) -> np.ndarray:
        kwargs["convert_to_numpy"] = True
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        vectors = self.combine(np.asarray(self.encoder.encode(texts, **kwargs), dtype=np.float32), texts)
        return vectors[0] if single else vectors

    def combine(self, dense: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """v of each of `texts`, given their stage-2 vectors `dense` (made unit length here, whichever backend
        gave them; a long text's may be the mean of its windows', sentence_embedding.LongTexts)."""
        dense = dense.reshape(len(texts), -1)
        dense = dense / np.maximum(np.linalg.norm(dense, axis=1, keepdims=True), 1e-12)
        return np.hstack([math.sqrt(1 - self.weight) * dense, math.sqrt(self.weight) * self.ngrams.transform(texts)])


def wrap(directory: Path, encoder):
    """`encoder` as a LookupEncoder when `directory` holds NGRAM_FILE, else as it is."""
    return LookupEncoder.open(directory, encoder) if (directory / NGRAM_FILE).exists() else encoder


SPELLING_CANDIDATES = 10  # re-ranked candidates per neighbour asked for
# The bonuses were chosen on variants that name_variants made of training names, never on the evaluation queries
# (DESIGNATOR_BONUS on a second draw of queries, below).
ONE_EDIT_BONUS = 0.3
WORDS_BONUS = 1.0
LEFT_OUT_WEIGHT = 0.02  # per unit of IDF of the words a name holds beyond the query's (a tie-break among such names)
SET_IDF_CACHE = 100_000  # sets of words whose IDF is kept between queries
COMMON_WORD_NAMES = 2000  # a word held by more names than this ("de", "san") brings in none of them on its own
# Words that name a place's administrative standing, not the place ("Ocean County", "Jefferson Parish"), as
# gazetteers' designators go: what a user leaves out before any other word.
DESIGNATORS = frozenset(
    "county parish province region district governorate prefecture city municipality oblast department state borough "
    "township shire canton commune krai okrug raion voivodeship territory emirate republic".split()
)
# A name that is the query's words and designators only (`NameWords.designated`) gains this. Chosen on a second
# draw of queries (poi_report.py perturb, seed 7, none of their names the evaluation's) among 10x distractors
# (bench/poi_scale.py): 0 / 0.05 / 0.1 / 0.2 found the name of 0.878 / 0.935 / 0.978 / 1.000 of its dropped-suffix
# queries, every other kind unchanged; the smallest that found them all.
DESIGNATOR_BONUS = 0.2


class NameWords:
    """The words of every indexed name (`place_words` of its key): which names hold each word, each word's IDF over
    the names, log((1 + n) / (1 + df)) + 1 (scikit-learn's smooth IDF; a word no name holds has the largest,
    log(1 + n) + 1), and each name's information, the sum of its words' IDF."""

    def __init__(self, keys: Sequence[str]):
        import itertools

        from ..text.place_words import place_words

        self.vocabulary: dict[str, int] = {}
        words = [
            [self.vocabulary.setdefault(w, len(self.vocabulary)) for w in dict.fromkeys(place_words(key))]
            for key in keys
        ]
        counts = np.fromiter(map(len, words), np.int64, len(words))
        flat = np.fromiter(itertools.chain.from_iterable(words), np.int64, int(counts.sum()))
        owners = np.repeat(np.arange(len(words)), counts)
        order = np.argsort(flat, kind="stable")  # each word's names in row order
        self.names = owners[order]
        self.starts = np.searchsorted(flat[order], np.arange(len(self.vocabulary) + 1))
        self.sizes = counts  # each name's words
        self._derive()
        self.information = np.bincount(owners, weights=self.idf[flat], minlength=len(words))
        designator = np.fromiter((word in DESIGNATORS for word in self.vocabulary), bool, len(self.vocabulary))
        self.designators = np.bincount(owners, weights=designator[flat], minlength=len(words)).astype(np.int64)

    def _derive(self) -> None:
        """What follows from the names each word has and the number of names."""
        self.idf = np.log((1 + len(self.sizes)) / (1 + np.diff(self.starts))) + 1
        self.unknown_idf = math.log(1 + len(self.sizes)) + 1
        self._set_idf: dict[tuple[int, ...], float] = {}  # sets of several words met so far (queries repeat them)

    SAVED = ("names", "starts", "sizes", "information", "designators")  # the arrays `saved` gives, by name

    def saved(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """The vocabulary, in id order, and the arrays (SAVED) that `restored` makes the same NameWords of."""
        return list(self.vocabulary), {name: getattr(self, name) for name in self.SAVED}

    @classmethod
    def restored(cls, vocabulary: Sequence[str], arrays: dict[str, np.ndarray]) -> NameWords:
        """The NameWords `saved` gave `vocabulary` and `arrays` of (the arrays may be memory maps)."""
        words = cls.__new__(cls)
        words.vocabulary = dict(zip(vocabulary, range(len(vocabulary))))
        for name in cls.SAVED:
            setattr(words, name, arrays[name])
        words._derive()
        return words

    def holders(self, word: int) -> np.ndarray:
        return self.names[self.starts[word] : self.starts[word + 1]]

    def set_idf(self, word_ids: Sequence[int]) -> float:
        """The IDF of a set of words, log((1 + n) / (1 + df)) + 1 with df the number of names holding all of them
        (one word's IDF for one word; a word no name holds makes the set's the largest): the words of a place that
        go together ("Turks and Caicos Islands", "City of") say together little more than the rarest of them."""
        if not word_ids:
            return 0.0
        if min(word_ids) < 0:
            return self.unknown_idf
        if len(word_ids) == 1:
            return float(self.idf[word_ids[0]])
        key = tuple(sorted(word_ids, key=lambda i: self.starts[i + 1] - self.starts[i]))  # the rarest first
        if key not in self._set_idf:
            rows = self.holders(key[0])
            for i in key[1:]:
                rows = np.intersect1d(rows, self.holders(i), assume_unique=True)
            if len(self._set_idf) >= SET_IDF_CACHE:
                self._set_idf.clear()
            self._set_idf[key] = math.log((1 + len(self.information)) / (1 + len(rows))) + 1
        return self._set_idf[key]

    def designated(self, rows: np.ndarray, words: Sequence[str]) -> np.ndarray:
        """Whether each of `rows`, names holding every one of a query's `words`, holds besides them designators only,
        one at least: "Ocean County" or "Ocean District" for "Ocean", not "Ocean Park"."""
        query = dict.fromkeys(words)
        beyond = self.sizes[rows] - len(query)
        return (beyond > 0) & (beyond == self.designators[rows] - sum(word in DESIGNATORS for word in query))

    def bonuses(self, words: Sequence[str], designator: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The names that hold any of a query's `words` (`matching`) and the bonus each gets for them
        (SpellingReranker): share x (WORDS_BONUS - LEFT_OUT_WEIGHT x left_out), and `designator` (None:
        DESIGNATOR_BONUS) more for a name that holds them all and besides them designators only."""
        holders, share, left_out = self.matching(words)
        bonus = share * np.maximum(WORDS_BONUS - LEFT_OUT_WEIGHT * left_out, 0)
        whole = share >= 1  # every word of the query held (none unknown to the names)
        extra = DESIGNATOR_BONUS if designator is None else designator
        bonus[whole] += extra * self.designated(holders[whole], words)
        return holders, bonus

    def matching(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The names that hold any of a query's `words`, in row order: their rows, the share of the query's
        information each holds, and the IDF of each one's words that are not among them (what the query left out).

        The share is I(held) / (I(held) + I(added)), with I the IDF of a set of words (`set_idf`) held by the name
        and of the query's words it lacks (added, from the name's side): words that come together in names, such as
        a country's ("Lazonby, Turks and Caicos Islands") or "City of" ("City of Voghera"), count about as one word,
        not as the sum of theirs, so neither outweighs the one rare word of the name meant. A word held by more than
        COMMON_WORD_NAMES names ("de", "san") only adds to the names the query's other words bring in; when all its
        words are that common, the names holding the rarest of them are brought in."""
        ids = [self.vocabulary.get(w, -1) for w in dict.fromkeys(words)]
        known = [i for i in ids if i >= 0]
        if not known:
            return np.empty(0, np.int64), np.empty(0), np.empty(0)
        rare = [i for i in known if len(self.holders(i)) <= COMMON_WORD_NAMES] or [
            min(known, key=lambda i: len(self.holders(i)))
        ]
        rows = self.holders(rare[0]) if len(rare) == 1 else np.unique(np.concatenate([self.holders(i) for i in rare]))
        held = np.zeros(len(rows))  # the IDF of the query's words each name holds, word by word
        holds = np.zeros((len(rows), len(ids)), bool)  # which of them
        for column, i in enumerate(ids):
            if i >= 0:
                holding = self.holders(i)  # in row order
                at = np.minimum(np.searchsorted(holding, rows), len(holding) - 1)
                holds[:, column] = holding[at] == rows
                held += self.idf[i] * holds[:, column]
        if len(ids) <= 16:  # the sets of the query's words that names hold, each as a number (few: counted)
            numbers = holds @ (1 << np.arange(len(ids)))
            sets = np.flatnonzero(np.bincount(numbers))
            which = np.searchsorted(sets, numbers)
            sets = (sets[:, None] >> np.arange(len(ids))) & 1 == 1
        else:
            sets, which = np.unique(holds, axis=0, return_inverse=True)
        shares = np.empty(len(sets))
        for n, held_set in enumerate(sets):
            held_idf = self.set_idf([i for i, h in zip(ids, held_set) if h])
            added_idf = self.set_idf([i for i, h in zip(ids, held_set) if not h])
            shares[n] = held_idf / (held_idf + added_idf)
        return rows, shares[which.reshape(-1)], self.information[rows] - held


EDIT_WIDTH = 24  # code points: longer one-word names (0.05% of issue 36's 2.2M) are left to FAISS's candidates
EDIT_SHORTEST = 4  # a shorter query has too many names one edit away to bring them all in
EDIT_MOST = 2000  # names one edit away brought in for a query, at most
_HASH_BASE = 0x9E3779B97F4A7C15  # odd: invertible modulo 2^64
_HASH_BASE_INVERSE = pow(_HASH_BASE, -1, 1 << 64)
_HASH_MIX = 0xD6E8FEB86659FD93
_HASH_POWERS = [pow(_HASH_BASE, j, 1 << 64) for j in range(EDIT_WIDTH)]
_HASH_MASK = (1 << 64) - 1


def deletion_hashes(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """A 32-bit hash of each of `words` (at most EDIT_WIDTH code points) and of each string one deletion from it,
    with the position of the word each came from. Two words within one edit of each other (an insertion, a
    deletion, a substitution or a swap of neighbours) share a hash: one equals a deletion of the other, or a
    deletion of each is the same string (Garbe's symmetric delete, SymSpell); words two edits apart may share one
    too, and a hash may collide, so a match is a candidate to measure, not an answer.

    The hash of code points c_0 .. c_(n-1) is the sum of c_j B^j modulo 2^64 (B odd), so that of the word without
    c_p is the prefix sum below p plus the sum above p divided by B (B's inverse modulo 2^64): every deletion of
    every word from two cumulative sums, in numpy."""
    width = EDIT_WIDTH
    positions = np.arange(width)
    powers = np.array(_HASH_POWERS, dtype=np.uint64)
    hashes, owners = [], []
    for first in range(0, len(words), 100_000):
        chunk = words[first : first + 100_000]
        lengths = np.fromiter(map(len, chunk), np.int64, len(chunk))
        text = "".join(word.ljust(width, "\0") for word in chunk).encode("utf-32-le")
        points = np.frombuffer(text, dtype=np.uint32).reshape(len(chunk), width).astype(np.uint64)
        prefix = np.zeros((len(chunk), width + 1), dtype=np.uint64)
        np.cumsum(points * powers, axis=1, out=prefix[:, 1:])
        whole = prefix[:, width]
        deleted = prefix[:, :width] + (whole[:, None] - prefix[:, 1:]) * np.uint64(_HASH_BASE_INVERSE)
        held = np.concatenate([np.ones((len(chunk), 1), bool), positions < lengths[:, None]], axis=1)
        every = np.concatenate([whole[:, None], deleted], axis=1)
        hashes.append(((every[held] * np.uint64(_HASH_MIX)) >> np.uint64(32)).astype(np.uint32))
        owners.append(np.repeat(np.arange(first, first + len(chunk)), held.sum(axis=1)))
    if not hashes:
        return np.empty(0, np.uint32), np.empty(0, np.int64)
    return np.concatenate(hashes), np.concatenate(owners)


def word_hashes(word: str) -> set[int]:
    """`deletion_hashes` of one word, in Python integers: a query's, where numpy's calls would cost more."""
    prefix = [0]
    for power, point in zip(_HASH_POWERS, map(ord, word)):
        prefix.append((prefix[-1] + point * power) & _HASH_MASK)
    whole = prefix[-1]
    inverse = _HASH_BASE_INVERSE
    every = [whole] + [(prefix[p] + (whole - prefix[p + 1]) * inverse) & _HASH_MASK for p in range(len(word))]
    return {((value * _HASH_MIX) & _HASH_MASK) >> 32 for value in every}


class EditNeighbours:
    """The names whose key is one word (no blank) of EDIT_SHORTEST .. EDIT_WIDTH code points, found by the hashes
    of their deletions (`deletion_hashes`): `near(word)` gives every such name within one edit of a query word,
    whatever FAISS's candidates hold. Among many names (issue 36's 10x distractors) more than ten may be one edit
    from a one-word query ("Svaio": "Svalo", "Svaro", "Sveio", "Savio"); they tie on ONE_EDIT_BONUS and their
    cosine orders them, so the name meant must not be lost for not being among the graph's 100 nearest."""

    SAVED = ("hashes", "rows")

    def __init__(self, keys: Sequence[str]):
        rows = [row for row, key in enumerate(keys) if EDIT_SHORTEST - 1 <= len(key) <= EDIT_WIDTH and " " not in key]
        hashes, owners = deletion_hashes([keys[row] for row in rows])
        order = np.argsort(hashes, kind="stable")
        small = np.int32 if len(keys) < 2**31 else np.int64  # 9.5M of them at 2.2M names
        self.hashes, self.rows = hashes[order], np.asarray(rows, dtype=small)[owners[order]]

    @classmethod
    def restored(cls, arrays: dict[str, np.ndarray]) -> EditNeighbours:
        made = cls.__new__(cls)
        made.hashes, made.rows = arrays["hashes"], arrays["rows"]
        return made

    def saved(self) -> dict[str, np.ndarray]:
        return {"hashes": self.hashes, "rows": self.rows}

    def near(self, word: str) -> np.ndarray:
        """The rows of names that may be one edit from `word` (a candidate to measure; a row may come twice);
        none for a word outside EDIT_SHORTEST .. EDIT_WIDTH code points."""
        if not EDIT_SHORTEST <= len(word) <= EDIT_WIDTH or " " in word:
            return np.empty(0, np.int64)
        wanted = np.fromiter(word_hashes(word), np.uint32)
        starts = np.searchsorted(self.hashes, wanted, side="left").tolist()
        ends = np.searchsorted(self.hashes, wanted, side="right").tolist()
        found = [self.rows[a:b] for a, b in zip(starts, ends) if b > a]
        return np.concatenate(found) if found else np.empty(0, np.int64)


Names = tuple[Sequence[str], NameWords, np.ndarray, EditNeighbours]  # each row's name key, their words, each key's
# length, and the one-word names by the hashes of their deletions


class KeptNames(Protocol):
    """Where SpellingReranker's names are kept between processes (indexes/spelling_words.py)."""

    def load(self) -> Names | None: ...

    def save(self, keys: Sequence[str], words: NameWords, lengths: np.ndarray, edits: EditNeighbours) -> None: ...


class SpellingReranker:
    """Re-ranks a query's candidates by spelling (`search --spelling`).

    Names are compared by their keys (accents stripped, lower case, single blanks: `name_key`) and their words
    (`place_words`: punctuation a break, abbreviations written out). A candidate's new score is its cosine, plus
    ONE_EDIT_BONUS when the name is one edit (insertion, deletion, substitution, swap of neighbours: optimal string
    alignment) from the query, plus, when the name holds some of the query's words,

        share x (WORDS_BONUS - LEFT_OUT_WEIGHT x the IDF of the name's other words)

    where share is the part of the query's information that the name holds, I(held) / (I(held) + I(added)) with I
    the IDF of a set of words over the names (`NameWords.set_idf`; 1 when it holds them all, in any order). A user
    leaves out the words that say least ("Jackson" for "Jackson County") and adds words that say little
    ("Springfield City", "City of Springfield"): a common word added costs a name little of its share, a rare one
    much; of the names that hold as much of the query, those whose other words are common come first. A name that
    holds every word of the query and besides them only designators (DESIGNATORS: "Ocean County" for "Ocean")
    gains DESIGNATOR_BONUS more: a user drops a designator before any other word, and among many names (issue 36's
    10x distractors) "Ocean Station" and "La Ocean" hold the query's word at as large a share.
    Such names come from a word index of all the indexed names as well as from FAISS's candidates: the 10 K of
    them with the largest bonus join the candidates, scored as if at the lowest cosine FAISS found for the query
    (theirs is at most that). For a one-word query, every one-word name one edit from it joins too, at its own
    cosine (`EditNeighbours`: among 2.2M names more than ten may be one edit away, and the graph's 100 nearest at
    efSearch 64 lacked the one meant for 3 of 250 typo queries). The index of words is built at the first query.
    """

    def __init__(self, text_of, size: int, kept: KeptNames | None = None):
        """`text_of`: row -> the indexed record's text, for rows 0 .. `size` - 1; `kept`: where the names' index
        of words is kept between processes (indexes/spelling_words.py), None: made in memory only."""
        try:
            import rapidfuzz  # noqa: F401
        except ImportError:
            from ..errors import SembedError

            raise SembedError("search --spelling needs the 'rapidfuzz' package", "pip install rapidfuzz") from None
        self.text_of, self.size, self.kept = text_of, size, kept
        self._names: Names | None = None  # read at the first query

    def names(self) -> Names:
        """Every indexed name's key, the words they hold and each key's length: as `kept` has them, else made
        from the texts (and given to `kept`)."""
        if self._names is None:
            self._names = self.kept.load() if self.kept is not None else None
        if self._names is None:
            from ..readers.gazetteer import name_key

            keys = [name_key(self.text_of(row) or "") for row in range(self.size)]
            lengths = np.fromiter(map(len, keys), np.int64, self.size)
            self._names = keys, NameWords(keys), lengths, EditNeighbours(keys)
            if self.kept is not None:
                self.kept.save(*self._names)
        return self._names

    def score(
        self, query: str, similarities: np.ndarray, rows: np.ndarray, cosines: Callable | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """New scores of the candidate `rows` (cosines `similarities`), of the names holding the query's words and,
        given `cosines` (rows -> their cosines to the query), of the one-word names one edit from a one-word query
        (`EditNeighbours`, at their cosines), best first (FAISS order on a tie)."""
        from rapidfuzz import process
        from rapidfuzz.distance import OSA

        from ..readers.gazetteer import name_key
        from ..text.place_words import place_words

        keys, words, lengths, edits = self.names()
        query_key = name_key(query)
        lowest, asked = similarities.min(), len(rows)  # FAISS's
        found = set(rows.tolist())
        if cosines is not None:  # every one-word name one edit away joins, at its own cosine
            edited = [row for row in dict.fromkeys(edits.near(query_key).tolist()) if row not in found]
            if edited:
                within = process.cdist(
                    [query_key], [keys[row] for row in edited], scorer=OSA.distance, score_cutoff=1, workers=1
                )[0]
                joining = np.asarray(edited, dtype=rows.dtype)[within <= 1][:EDIT_MOST]
                rows = np.concatenate([rows, joining])
                similarities = np.concatenate([similarities, np.asarray(cosines(joining), dtype=np.float32)])
                found.update(joining.tolist())
        holders, holder_bonus = words.bonuses(place_words(query_key))
        if len(holders):  # those with the largest bonus join the candidates, at the lowest cosine FAISS found
            best = holders[np.argsort(-holder_bonus, kind="stable")[:asked]]
            joining = np.array([row for row in best.tolist() if row not in found], dtype=rows.dtype)
            rows = np.concatenate([rows, joining])
            similarities = np.concatenate([similarities, np.full(len(joining), lowest)])
        bonus = np.zeros(len(rows))
        if len(holders):
            held = np.minimum(np.searchsorted(holders, rows), len(holders) - 1)  # holders are in row order
            holds = holders[held] == rows
            bonus[holds] = holder_bonus[held[holds]]
        near = np.flatnonzero(np.abs(lengths[rows] - len(query_key)) <= 1)  # the others are 2 edits away
        distances = process.cdist(
            [query_key],
            [keys[row] for row in rows[near].tolist()],
            scorer=OSA.distance,
            score_cutoff=1,
            dtype=np.int32,
            workers=1,
        )[0]
        bonus[near] += ONE_EDIT_BONUS * (distances <= 1)
        scores = (similarities + bonus).astype(np.float32)
        order = np.argsort(-scores, kind="stable")
        return scores[order], rows[order]

    def rerank(
        self,
        queries: Sequence[str | None],
        scores: np.ndarray,
        rows: np.ndarray,
        k: int,
        cosines: Callable[[int, np.ndarray], np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k best of each query's FAISS candidates (`scores`, `rows`; row -1: none) and names holding its
        words, and given `cosines` ((query, rows) -> their cosines to it), the one-word names one edit from it; a
        query without text (given as a vector) keeps the FAISS order."""
        out_scores = np.full((len(rows), k), -np.inf, dtype=np.float32)
        out_rows = np.full((len(rows), k), -1, dtype=np.int64)
        for i, query in enumerate(queries):
            found = rows[i] >= 0
            candidate_scores, candidate_rows = scores[i][found].astype(np.float32), rows[i][found]
            if isinstance(query, str) and len(candidate_rows):
                of_query = None if cosines is None else functools.partial(cosines, i)
                candidate_scores, candidate_rows = self.score(query, candidate_scores, candidate_rows, of_query)
            n = min(k, len(candidate_rows))
            out_scores[i, :n], out_rows[i, :n] = candidate_scores[:n], candidate_rows[:n]
        return out_scores, out_rows
