"""Word salience tables and the word-vector sentence embeddings AVG, ISF, SIF and NWS.

A salience table is an artifact directory:

  salience.tsv        word, score, sentences, tokens: one vocabulary word a line, by score from the
                      highest; `sentences` and `tokens` are its counts in the training corpus
  sif_component.npy   the first principal component of the corpus's SIF sentence vectors
  sembed.json         metadata: vectors, corpus (sentences, tokens, documents, SHA-256), settings,
                      the score of a word the table does not hold (`unseen_score`), package versions

It carries the training corpus's statistics, so the ISF and SIF baselines are
computed from the same corpus as the NWS scores.

Sentence embeddings (Samardzhiev et al., "Learning Neural Word Saliency
Scores", section 4.1; Arora et al. 2017 for SIF), over the tokens that have a
word vector:
  avg  the mean of the word vectors (all tokens).
  isf  eq. 1 with q(w) = ISF(w) (eq. 13), over the distinct words of the text.
  nws  eq. 1, s = sum q(w) w, with the learnt scores, over the distinct words.
  sif  (1/n) sum a / (a + p(w)) w over all tokens, a = 1e-3, p(w) the unigram probability in the training
       corpus, then the projection on the first principal component u removed: v - u u^T v.
A word with a vector that the table does not hold is scored as a word seen in
one sentence of the corpus (isf: log(1 + N), sif: p(w) = 1 / tokens, nws: the
initial score of such a word), and counted in the report.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..artifacts import write_metadata
from ..errors import SembedError
from .word_vectors import Coverage, WordVectors

log = logging.getLogger(__name__)

TABLE_FILE = "salience.tsv"
METADATA_FILE = "sembed.json"
SIF_COMPONENT_FILE = "sif_component.npy"
TABLE_HEADER = "word\tscore\tsentences\ttokens"
SIF_A = 1e-3  # Arora et al.'s recommended a
METHODS = ("avg", "isf", "sif", "nws")
SIF_COMPONENTS = ("corpus", "batch")


def isf(sentences_with_word: np.ndarray, sentences: int) -> np.ndarray:
    """NWS paper eq. 13: ISF(w) = log(1 + total sentences / sentences containing w)."""
    return np.log1p(sentences / np.maximum(sentences_with_word, 1)).astype(np.float32)


def sif_weights(tokens_of_word: np.ndarray, tokens: int, a: float = SIF_A) -> np.ndarray:
    """Arora et al. 2017: a / (a + p(w)), p(w) the unigram probability."""
    return (a / (a + np.maximum(tokens_of_word, 1) / max(tokens, 1))).astype(np.float32)


def first_component(gram: np.ndarray) -> np.ndarray:
    """The first principal component (no centring, as Arora et al.'s truncated SVD) from X^T X."""
    _values, vectors = np.linalg.eigh(gram.astype(np.float64))
    u = vectors[:, -1]
    return (u if u[np.argmax(np.abs(u))] >= 0 else -u).astype(np.float32)  # a fixed sign


def remove_component(x: np.ndarray, u: np.ndarray) -> np.ndarray:
    return x - np.outer(x @ u, u)


@dataclass
class SalienceTable:
    words: list[str]
    scores: np.ndarray  # float32
    sentence_counts: np.ndarray  # int64: sentences of the corpus containing the word
    token_counts: np.ndarray  # int64: its occurrences
    metadata: dict
    sif_component: np.ndarray | None = None

    @property
    def sentences(self) -> int:
        return int(self.metadata["corpus"]["sentences"])

    @property
    def tokens(self) -> int:
        return int(self.metadata["corpus"]["tokens"])

    @property
    def vectors(self) -> str:
        return self.metadata["vectors"]["vectors"]

    def weights(self, method: str) -> tuple[np.ndarray, float]:
        """(the weight of each table word under `method`, the weight of a word the table lacks)."""
        if method == "isf":
            return isf(self.sentence_counts, self.sentences), float(isf(np.array([1]), self.sentences)[0])
        if method == "sif":
            return sif_weights(self.token_counts, self.tokens), float(sif_weights(np.array([1]), self.tokens)[0])
        if method == "nws":
            return self.scores, float(self.metadata["unseen_score"])
        raise ValueError(method)

    def save(self, directory: Path) -> None:
        """Write into `directory` (an `artifacts.building` one), rows by score from the highest."""
        order = np.lexsort((np.array(self.words, dtype=object).astype(str), -self.scores))
        with open(directory / TABLE_FILE, "w", encoding="utf-8") as f:
            f.write(TABLE_HEADER + "\n")
            for i in order:
                f.write(
                    f"{self.words[i]}\t{float(self.scores[i]):.6g}\t{self.sentence_counts[i]}\t{self.token_counts[i]}\n"
                )
        if self.sif_component is not None:
            np.save(directory / SIF_COMPONENT_FILE, self.sif_component)
        write_metadata(directory, self.metadata, METADATA_FILE)

    @classmethod
    def load(cls, path: str | Path) -> SalienceTable:
        import orjson

        directory = Path(path)
        hint = "pass a directory that `sembed train --method nws` wrote"
        if not (directory / TABLE_FILE).is_file() or not (directory / METADATA_FILE).is_file():
            raise SembedError(f"no salience table at '{path}' (no {TABLE_FILE} and {METADATA_FILE})", hint)
        metadata = orjson.loads((directory / METADATA_FILE).read_bytes())
        words, scores, sentences, tokens = [], [], [], []
        with open(directory / TABLE_FILE, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                parts = line.rstrip("\n").split("\t")
                if number == 1:
                    if line.rstrip("\n") != TABLE_HEADER:
                        raise SembedError(f"{directory / TABLE_FILE}:1: expected the header '{TABLE_HEADER}'", hint)
                    continue
                try:
                    word, score, sentence_count, token_count = parts
                    scores.append(float(score))
                    sentences.append(int(sentence_count))
                    tokens.append(int(token_count))
                    words.append(word)
                except ValueError:
                    raise SembedError(
                        f"{directory / TABLE_FILE}:{number}: expected word, score, sentences, tokens", hint
                    ) from None
        component = directory / SIF_COMPONENT_FILE
        return cls(
            words,
            np.array(scores, dtype=np.float32),
            np.array(sentences, dtype=np.int64),
            np.array(tokens, dtype=np.int64),
            metadata,
            np.load(component) if component.is_file() else None,
        )

    def extremes(self, count: int = 10, min_sentences: int = 1) -> tuple[list, list]:
        """The `count` highest and lowest scored words among those in at least `min_sentences` sentences."""
        keep = np.flatnonzero(self.sentence_counts >= min_sentences)
        order = keep[np.argsort(-self.scores[keep], kind="stable")]
        top = [[self.words[i], round(float(self.scores[i]), 4)] for i in order[:count]]
        bottom = [[self.words[i], round(float(self.scores[i]), 4)] for i in order[::-1][:count]]
        return top, bottom


class SentenceEmbedder:
    """AVG, ISF, SIF or NWS sentence vectors from word vectors (and a salience table for all but avg): an
    `embedder.Encoder`, with no window (a text of any length is one weighted sum)."""

    max_seq_length = 1 << 30

    def __init__(
        self, method: str, vectors: WordVectors, table: SalienceTable | None = None, sif_component: str = "corpus"
    ):
        if method not in METHODS:
            raise ValueError(method)
        if method != "avg" and table is None:
            raise SembedError(
                f"--method {method} needs a salience table",
                "pass --salience DIR of a table that `sembed train --method nws` wrote",
            )
        if table is not None and table.metadata["vectors"]["dim"] != vectors.dim:
            raise SembedError(
                f"the salience table was learnt on {table.metadata['vectors']['dim']}-d vectors "
                f"({table.vectors}), --vectors has {vectors.dim}-d",
                "leave --vectors out to use the table's",
            )
        self.method, self.vectors = method, vectors
        self.coverage = Coverage()
        self.unseen: dict[str, int] = {}  # words with a vector that the table lacks
        self.sif_component = sif_component
        self.component: np.ndarray | None = None
        self.weight_of: np.ndarray | None = None
        if table is not None and method != "avg":
            weights, fallback = table.weights(method)
            self.weight_of = np.full(len(vectors.words), np.nan, dtype=np.float32)
            ids = np.array([vectors.index.get(word, -1) for word in table.words])
            self.weight_of[ids[ids >= 0]] = weights[ids >= 0]
            self.fallback = fallback
        if table is not None and method == "sif" and sif_component == "corpus":  # sif has a table (checked above)
            if table.sif_component is None:
                raise SembedError("the salience table has no SIF component", "use --sif-component batch")
            self.component = table.sif_component

    def get_embedding_dimension(self) -> int:
        return self.vectors.dim

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
    ) -> np.ndarray:
        """One vector a text (float32), all in one pass (--sif-component batch takes its component from them); a
        text with no known word gets the zero vector."""
        texts = list(sentences)
        word_ids: list[int] = []
        word_counts: list[int] = []
        for text in texts:
            known, unknown = self.vectors.words_of(text)
            self.coverage.add(len(known), unknown)
            if self.method in ("isf", "nws"):
                known = list(dict.fromkeys(known))  # eq. 1 sums over the set of words of the sentence
            word_ids += [self.vectors.index[word] for word in known]
            word_counts.append(len(known))
        ids = np.array(word_ids, dtype=np.int64)
        weights = np.ones(len(ids), dtype=np.float32)
        if self.weight_of is not None:
            weights = self.weight_of[ids]
            missing = np.isnan(weights)
            for i in np.flatnonzero(missing):
                word = self.vectors.words[ids[i]]
                self.unseen[word] = self.unseen.get(word, 0) + 1
            weights[missing] = self.fallback
        lengths = np.array(word_counts)
        weighted = self.vectors.vectors(ids) * weights[:, None]
        out = np.zeros((len(texts), self.vectors.dim), dtype=np.float32)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        filled = lengths > 0
        if filled.any():
            out[filled] = np.add.reduceat(weighted, starts[filled], axis=0)
        if self.method in ("avg", "sif"):
            out[filled] /= lengths[filled, None]
        if self.method == "sif":
            u = self.component
            if u is None:  # --sif-component batch: from this batch's own vectors, as Arora et al. on a test set
                u = first_component(out.T @ out)
            out = remove_component(out, u).astype(np.float32)
        return out

    def report(self) -> None:
        """What was left out or scored by default, on stderr."""
        summary = self.coverage.summary(self.vectors.spec)
        if summary:
            log.info(summary)
        if self.unseen:
            common = sorted(self.unseen.items(), key=lambda item: -item[1])[:8]
            log.info(
                f"{sum(self.unseen.values())} tokens ({len(self.unseen)} distinct words) have a vector but "
                f"are not in the salience table and got the score of a word seen once: "
                + ", ".join(f"{w} ({n})" for w, n in common)
            )
        if self.coverage.empty:
            log.warning(f"{self.coverage.empty} text(s) have no word with a vector: their embedding is the zero vector")


def unseen_score(init: str, sentences: int) -> float:
    """The initial score of a word the corpus has in one sentence: what a word outside the table gets."""
    return {"isf": math.log1p(sentences), "ones": 1.0, "random": 0.5}[init]
