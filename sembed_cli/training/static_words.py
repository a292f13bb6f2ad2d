"""`--words N`: whole words as tokens of a static model, beyond its teacher's word-pieces.

A static model gives a word the teacher splits into pieces ("unbelievable" ->
un ##bel ##ie ##va ##ble) the mean of its pieces' rows, which knows little of
the word. potion's models (MinishLab's tokenlearn) add the frequent words of
their corpus to the vocabulary so that each gets a row of its own, fitted to
the teacher like any piece. Here:

- the words are the input's words, as the teacher's own normaliser and
  pre-tokenizer cut them (the words its word-piece model sees), that it
  splits into two pieces or more, seen at least MIN_COUNT times: the N most
  frequent;
- each is added to the word-piece vocabulary (after the teacher's ids, so
  every piece keeps its id), where the greedy longest-match of WordPiece finds
  it before its pieces: the saved tokenizer.json splits text as the static
  model was fitted, for sembed and for sentence-transformers alike;
- a word's first vector is the mean of its pieces' vectors (what the static
  model gave it before), which `--fit teacher --fit-vectors` then fits;
- the piece counts (SIF's p) are counted again by the extended vocabulary,
  from the words' counts (WordPiece splits each word on its own, so a word's
  count times its pieces is exact).
"""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_COUNT = 5  # a word seen fewer times in the input gets no row of its own


class WordCounter:
    """The input's words as the tokenizer's normaliser and pre-tokenizer cut them, counted a batch of texts at a
    time."""

    def __init__(self, tokenizer):
        self.normalizer, self.pre_tokenizer = tokenizer.normalizer, tokenizer.pre_tokenizer
        self.counts: Counter[str] = Counter()

    def add(self, texts: Iterable[str]) -> None:
        normalize = self.normalizer.normalize_str if self.normalizer is not None else str
        for text in texts:
            self.counts.update(word for word, _ in self.pre_tokenizer.pre_tokenize_str(normalize(text)))


@dataclass(frozen=True)
class AddedWords:
    """The words given rows of their own: the extended tokenizer, each word's pieces under the teacher's
    vocabulary (its rows appended in this order after the teacher's), and the piece counts by the extended one."""

    tokenizer: Any  # tokenizers.Tokenizer
    words: list[str]
    pieces: list[list[int]]
    counts: np.ndarray

    def vectors(self, pieces_vectors: np.ndarray) -> np.ndarray:
        """The teacher's piece vectors with a row appended for each word: the mean of its pieces' rows."""
        if not self.words:
            return pieces_vectors
        added = np.stack([pieces_vectors[ids].mean(axis=0) for ids in self.pieces])
        return np.concatenate([pieces_vectors, added]).astype(np.float32)

    def described(self) -> dict:
        return {
            "added": len(self.words),
            "min_count": MIN_COUNT,
            "first": self.words[:10],
            "vocabulary": self.tokenizer.get_vocab_size(),
        }


def add_words(tokenizer, counted: WordCounter, limit: int) -> AddedWords:
    """The `limit` most frequent counted words that `tokenizer` (a WordPiece one) splits into two pieces or more,
    added to a copy of it (see the module docstring)."""
    from tokenizers.models import WordPiece

    model = tokenizer.model
    if not isinstance(model, WordPiece):
        from ..errors import SembedError

        raise SembedError(
            f"--words adds whole words to a word-piece vocabulary, and this model's tokenizer is {type(model).__name__}"
        )
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.no_padding()
    tokenizer.no_truncation()
    distinct = [word for word, count in counted.counts.most_common() if count >= MIN_COUNT]
    split = [encoding.ids for encoding in tokenizer.encode_batch(distinct, add_special_tokens=False)]
    chosen = [(word, ids) for word, ids in zip(distinct, split, strict=True) if len(ids) > 1][:limit]
    vocabulary = tokenizer.get_vocab(with_added_tokens=False)
    size = tokenizer.get_vocab_size()
    for n, (word, _) in enumerate(chosen):
        vocabulary[word] = size + n
    extended = copy.deepcopy(tokenizer)
    extended.model = WordPiece(
        vocabulary,
        unk_token=model.unk_token,
        max_input_chars_per_word=model.max_input_chars_per_word,
        continuing_subword_prefix=model.continuing_subword_prefix,
    )
    words = list(counted.counts)
    pieces = [encoding.ids for encoding in extended.encode_batch(words, add_special_tokens=False)]
    times = np.repeat([counted.counts[word] for word in words], [len(ids) for ids in pieces])
    flat = np.fromiter(itertools.chain.from_iterable(pieces), dtype=np.int64, count=len(times))
    counts = np.bincount(flat, weights=times, minlength=extended.get_vocab_size()).astype(np.int64)
    return AddedWords(extended, [word for word, _ in chosen], [ids for _, ids in chosen], counts)
