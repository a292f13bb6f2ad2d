"""Structurally equivalent sentence sets, the syntax-distillation paper's section 3.1.

"Unsupervised Distillation of Syntactic Information from Contextualized Word
Representations": each set starts with an original sentence, and k = 6
variants are made by going over the words left to right, masking word i,
taking one of the masked-LM's top-30 predictions at random and writing it into
the sentence in place, so that word i + 1 is guessed from the modified
sentence (the paper's footnote: close to Gibbs sampling). A replacement must
keep the original word's part of speech (the fine-grained spaCy tag, in
context); a closed list of function words is never replaced. Word i of every
sentence of a set has the same structural function: the sets are what
`train --method syntax` learns from. The masked-LM is asked through
`MaskFiller`; `models/masked_lm.MaskedLM` is the torch one `gensets` runs.

Choices where the paper is silent:

- Words are the spaCy tokens of the text (or the `tokens` of `sembed parse`),
  so punctuation is a word of its own and never replaced; so are numbers and
  every word that is not alphabetic ("61", "N.V.", "n't"). The sentences are
  written back from their words, a run of blanks as one space.
- Candidates are the top predictions among whole words: word pieces that
  continue a word ("##ing"), special tokens, and anything that is not a Latin
  word of two letters or more are passed over before the top `top` are taken;
  so are function words and the word being replaced itself.
- A word of several word pieces is masked as one [MASK]: every candidate is
  one vocabulary entry, so the masked slot holds exactly one piece, and the
  sentence is tokenised afresh at each step.
- The tag test writes the candidate into the current variant and tags it;
  candidates are tried in a random order (the set's seed) until one keeps the
  tag, which picks uniformly among those that keep it while tagging only a
  few. With a CNN tagger (spaCy's small and medium pipelines) only the tokens
  that can change the tag are tagged: its window times its depth on each side.
  No candidate keeps the tag: the word stays.
- Casing: an uncased masked-LM's candidate takes the original word's
  capitalisation (Title, UPPER, lower); a cased one's keeps its own, but is
  capitalised in place of a capitalised first word.
- Randomness: each set has its own random stream from the seed, its id and
  its text, so in fp32 a set does not depend on the batch or shard it was
  made in (in bf16 the rounding moves with a batch's padding, and a near-tie
  between candidates can fall the other way).
"""

from __future__ import annotations

import logging
import os
import random
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import BadRecord
from ..io import Shard, batched, check_text, derived_key, json_type
from . import spacy_pipeline

K = 6  # the paper's variants per set
TOP = 30  # the paper's top-30 predictions
MLM_NAME = "minilm-mlm"
MLM_HINT = (
    "run examples/build_mlm.sh to build it, or pass --mlm with any Hugging Face masked-LM directory "
    "such as bert-base-uncased"
)

# Never replaced (paper: "a closed set of a few dozens of words (mostly function words)"): articles and
# determiners, pronouns, wh-words, auxiliaries and modals, prepositions, conjunctions, negation, "there", "to".
FUNCTION_WORDS = frozenset(
    """
    a an the this that these those some any no every each all both either neither another such
    i me my mine myself you your yours yourself yourselves he him his himself she her hers herself
    it its itself we us our ours ourselves they them their theirs themselves
    who whom whose which what where when why how
    be am is are was were been being have has had having do does did
    will would shall should can could may might must
    of in on at by for with from to into onto about as than over under through between after before
    during without within against among upon off above across along around behind below beneath beside beyond
    despite toward towards via throughout per
    and or but nor so yet if because while although though whether since until unless
    not never there then
""".split()
)

log = logging.getLogger(__name__)


def default_mlm() -> Path:
    """Where `examples/build_mlm.sh` puts the default masked-LM: $XDG_DATA_HOME/sembed/minilm-mlm."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "sembed" / MLM_NAME


def replaceable(word: str) -> bool:
    """A word the sets vary: alphabetic and not on the closed list."""
    return word.isalpha() and word.lower() not in FUNCTION_WORDS


def candidate_word(text: str) -> bool:
    """A vocabulary entry that may replace a word: a Latin word of two letters or more, not a function word."""
    return (
        len(text) >= 2
        and text.isalpha()
        and text.lower() not in FUNCTION_WORDS
        and all(c.isascii() or unicodedata.name(c, "").startswith("LATIN") for c in text)
    )


def match_case(candidate: str, original: str, first: bool, uncased: bool) -> str:
    """The candidate spelled as the original is: an uncased model's guess takes the original's capitalisation."""
    if not uncased:
        return candidate[0].upper() + candidate[1:] if first and original[:1].isupper() else candidate
    if len(original) > 1 and original.isupper():
        return candidate.upper()
    if original[:1].isupper():
        return candidate[:1].upper() + candidate[1:].lower()
    return candidate.lower()


def joined(words: Sequence[str], spaces: Sequence[bool]) -> str:
    return "".join(w + (" " if s else "") for w, s in zip(words, spaces)).rstrip()


@dataclass
class Sentence:
    """A sentence as words, whether a space follows each, and the words' tags (None until tagged)."""

    words: list[str]
    spaces: list[bool]
    tags: list[str] | None = None

    @property
    def text(self) -> str:
        return joined(self.words, self.spaces)


def sentence_from_doc(doc) -> Sentence:
    """The words of a spaCy tokenisation, whitespace tokens dropped (a run of blanks becomes one space)."""
    words: list[str] = []
    spaces: list[bool] = []
    for token in doc:
        if token.is_space:
            if spaces:
                spaces[-1] = True
            continue
        words.append(token.text)
        spaces.append(bool(token.whitespace_))
    return Sentence(words, spaces)


def sentence_from_tokens(name: str, tokens: object, text: str | None) -> Sentence:
    """The words (and tags, when every token has one) of a `tokens` field as `sembed parse` writes it."""
    if not isinstance(tokens, list):
        raise BadRecord(f"'{name}' must be a list of tokens, got {json_type(tokens)}")
    if not tokens:
        raise BadRecord(f"'{name}' is empty")
    words = []
    for n, token in enumerate(tokens):
        if not isinstance(token, dict):
            raise BadRecord(f"'{name}'[{n}] must be a token object, got {json_type(token)}")
        word = token.get("text")
        if not isinstance(word, str) or not word:
            raise BadRecord(f"'{name}'[{n}] needs 'text' as a non-empty string, got {json_type(word)}")
        words.append(word)
    tags = [token.get("tag") for token in tokens]
    known = all(isinstance(tag, str) and tag for tag in tags)
    return Sentence(words, spaces_in(words, text), tags if known else None)


def spaces_in(words: list[str], text: str | None) -> list[bool]:
    """Whether a blank follows each word in `text`; a space after every word but the last without a text to say."""
    plain = [True] * (len(words) - 1) + [False]
    if text is None:
        return plain
    spaces, at = [], 0
    for word in words:
        found = text.find(word, at)
        if found < 0:
            return plain
        at = found + len(word)
        spaces.append(at < len(text) and text[at].isspace())
    return spaces


# --- what the sets ask of a masked-LM -----------------------------------------------------------------


class MaskFiller(Protocol):
    """A masked-LM as the sets use it (`models.masked_lm.MaskedLM` is the one `gensets` runs): how many word pieces
    it takes, whether it is uncased, a sentence's length in its pieces, and whole-word candidates for a masked word."""

    uncased: bool
    max_length: int

    def length(self, sentence: Sentence) -> int: ...

    def candidates(self, rows: Sequence[tuple[Sequence[str], Sequence[bool], int]], top: int) -> list[list[str]]:
        """For each (words, spaces, i): the `top` best whole-word predictions for word i (masked), best first,
        without the word itself."""
        ...


# --- the tagger ----------------------------------------------------------------------------------------


class Tagger:
    """spaCy's fine-grained tags (`tag_`) of words in context, many sentences per `nlp.pipe` call."""

    def __init__(self, nlp, batch_size: int = spacy_pipeline.BATCH):
        self.nlp = nlp
        self.batch_size = batch_size
        self.context = tagger_context(nlp)
        log.debug("tagging %s", f"{self.context} tokens either side" if self.context is not None else "whole sentences")

    def tag(self, sentences: Sequence[tuple[Sequence[str], Sequence[bool]]]) -> list[list[str]]:
        from spacy.tokens import Doc

        docs = (Doc(self.nlp.vocab, words=list(words), spaces=list(spaces)) for words, spaces in sentences)
        return [[token.tag_ for token in doc] for doc in self.nlp.pipe(docs, batch_size=self.batch_size)]

    def tags_at(self, items: Sequence[tuple[Sequence[str], Sequence[bool], int]]) -> list[str]:
        """The tag of word i of each (words, spaces, i); only the words that can change it are tagged."""
        windows, where = [], []
        for words, spaces, i in items:
            first = 0 if self.context is None else max(0, i - self.context)
            last = len(words) if self.context is None else min(len(words), i + self.context + 1)
            windows.append((words[first:last], spaces[first:last]))
            where.append(i - first)
        return [tags[i] for tags, i in zip(self.tag(windows), where)]


def tagger_context(nlp) -> int | None:
    """Tokens on each side that can change a tag, where the architecture bounds them, else None (tag whole
    sentences). A per-token softmax tagger over a CNN tok2vec (spaCy's sm/md pipelines: MaxoutWindowEncoder,
    window 1, depth 4) sees window x depth tokens either side, and hash embeddings of each token alone."""
    try:
        components = nlp.config["components"]
        tagger = components["tagger"]["model"]
        if not str(tagger["@architectures"]).startswith("spacy.Tagger."):
            return None
        tok2vec = tagger["tok2vec"]
        if str(tok2vec["@architectures"]).startswith("spacy.Tok2VecListener."):
            upstream = tok2vec.get("upstream", "*")
            tok2vec = components["tok2vec" if upstream == "*" else upstream]["model"]
        architecture = str(tok2vec["@architectures"])
        if architecture.startswith("spacy.HashEmbedCNN."):
            encode = tok2vec
        elif (
            architecture.startswith("spacy.Tok2Vec.")
            and str(tok2vec["embed"]["@architectures"]).startswith("spacy.MultiHashEmbed.")
            and not tok2vec["embed"].get("include_static_vectors")
        ):
            encode = tok2vec["encode"]
            if not re.match(r"spacy\.(Maxout|Mish)WindowEncoder\.", str(encode["@architectures"])):
                return None
        else:
            return None
        return int(encode["window_size"]) * int(encode["depth"])
    except (KeyError, TypeError, ValueError):
        return None


# --- the sets ------------------------------------------------------------------------------------------


class SetGenerator:
    """Turns records into records with a set of structurally equivalent sentences each (paper section 3.1).

    `check` (for `RecordSource.checked`) reads a record's sentence and refuses one the masked-LM cannot take;
    `generate` is the records-in, records-out iterator.
    """

    def __init__(
        self,
        mlm: MaskFiller,
        tagger: Tagger,
        tokenize,
        *,
        k: int = K,
        top: int = TOP,
        seed: int = 0,
        batch_size: int = 32,
        text_key: str = "text",
        shard: Shard | None = None,
        skipped: Callable[[], int] | None = None,
    ):
        if k < 1 or top < 1:
            raise ValueError("k and top must be at least 1")
        self.mlm, self.tagger, self.tokenize = mlm, tagger, tokenize
        self.k, self.top, self.seed, self.batch_size = k, top, seed, batch_size
        self.text_key = text_key
        self.tokens_key = derived_key(text_key, "tokens")
        self.shard = shard
        self.skipped = skipped  # how many records the source has left out so far: they keep their positions
        self._checked = 0
        self._read: dict[int, tuple[Sentence, int]] = {}  # what `check` read, by record identity, until generated

    def check(self, record: dict) -> None:
        """Read the record's sentence (BadRecord when unusable) and its position, for `generate`."""
        sentence = self.sentence(record)
        ordinal = self._checked + (self.skipped() if self.skipped else 0)
        self._read[id(record)] = (sentence, ordinal)
        self._checked += 1

    def sentence(self, record: dict) -> Sentence:
        """The record's sentence: its `tokens` when it has them, else its text tokenised; BadRecord when unusable."""
        text = None
        if self.text_key in record:
            text = check_text(record, self.text_key)
        elif self.tokens_key not in record:
            raise BadRecord(f"missing key '{self.text_key}'")
        if self.tokens_key in record:
            sentence = sentence_from_tokens(self.tokens_key, record[self.tokens_key], text)
        else:
            sentence = sentence_from_doc(self.tokenize(text))
            if not sentence.words:
                raise BadRecord(f"empty text in '{self.text_key}'")
        length = self.mlm.length(sentence)
        if length > self.mlm.max_length:
            raise BadRecord(
                f"the sentence is {length} word pieces long, more than the masked-LM takes "
                f"({self.mlm.max_length}); split it, or --skip-errors to leave it out"
            )
        return sentence

    def set_id(self, record: dict, ordinal: int) -> object:
        """The record's id field, else its position among the input's records (all shares' under --shard)."""
        if "id" in record:
            return record["id"]
        return ordinal if self.shard is None else self.shard.index - 1 + ordinal * self.shard.count

    def generate(self, records: Iterable[dict]) -> Iterator[dict]:
        ordinal = 0
        for batch in batched(records, self.batch_size):
            sentences, ids = [], []
            for record in batch:
                read = self._read.pop(id(record), None)  # read ahead (to find the batch's sentences), or not yet
                sentence, ordinal = read if read is not None else (self.sentence(record), ordinal)
                sentences.append(sentence)
                ids.append(self.set_id(record, ordinal))
                ordinal += 1
            for record, set_id, sentence, variants in zip(batch, ids, sentences, self.make_sets(sentences, ids)):
                record["set_id"] = set_id
                record["sentences"] = [sentence.text] + [joined(words, sentence.spaces) for words in variants]
                record["words"] = [list(sentence.words)] + variants
                record["pos"] = sentence.tags
            yield from batch

    def random_stream(self, set_id: object, sentence: Sentence) -> random.Random:
        return random.Random(f"{self.seed}\x1f{set_id!r}\x1f{sentence.text}")

    def make_sets(self, sentences: list[Sentence], ids: Sequence[object]) -> list[list[list[str]]]:
        """The k variants (word lists) of each sentence, made together: one masked-LM call per step."""
        untagged = [s for s in sentences if s.tags is None]
        for sentence, tags in zip(untagged, self.tagger.tag([(s.words, s.spaces) for s in untagged])):
            sentence.tags = tags
        streams = [self.random_stream(set_id, s) for set_id, s in zip(ids, sentences)]
        variants = [[list(s.words) for _ in range(self.k)] for s in sentences]
        slots = [[i for i, word in enumerate(s.words) if replaceable(word)] for s in sentences]
        for step in range(max((len(s) for s in slots), default=0)):
            rows = [
                (n, v, slots[n][step]) for n in range(len(sentences)) if step < len(slots[n]) for v in range(self.k)
            ]
            guesses = self.mlm.candidates([(variants[n][v], sentences[n].spaces, i) for n, v, i in rows], self.top)
            queues = []
            for (n, v, i), words in zip(rows, guesses):
                original = sentences[n].words[i]
                cased = list(dict.fromkeys(match_case(w, original, i == 0, self.mlm.uncased) for w in words))
                streams[n].shuffle(cased)
                queues.append([w for w in cased if w != variants[n][v][i]])
            for (n, v, i), word in zip(rows, self.first_keeping_tag(rows, queues, variants, sentences)):
                if word is not None:
                    variants[n][v][i] = word
        return variants

    def first_keeping_tag(self, rows, queues, variants, sentences) -> list[str | None]:
        """For each row, the first word of its queue that, written in, is tagged as the original word (None when
        none is). Rows are tried together, a growing number of candidates each round: most pass early."""
        chosen: list[str | None] = [None] * len(rows)
        tried = [0] * len(rows)
        pending = list(range(len(rows)))
        take = 1
        while pending:
            items, owners = [], []
            for r in pending:
                n, v, i = rows[r]
                for word in queues[r][tried[r] : tried[r] + take]:
                    words = variants[n][v][:i] + [word] + variants[n][v][i + 1 :]
                    items.append((words, sentences[n].spaces, i))
                    owners.append((r, word))
                tried[r] += take
            for (r, word), tag in zip(owners, self.tagger.tags_at(items)):
                n, _, i = rows[r]
                if chosen[r] is None and tag == sentences[n].tags[i]:
                    chosen[r] = word
            pending = [r for r in pending if chosen[r] is None and tried[r] < len(queues[r])]
            take *= 2
        return chosen
