"""`sembed embed --words`: one record per word, with its parse and its contextualised vector.

The vector is the syntax-distillation paper's word representation
(`contextual_words.WordEncoder`, section 3.2), or f(x) of a trained syntax
map (`syntax_map.SyntaxMap`, section 3.3) when one is given. The parse comes
from the record's `tokens` (`sembed parse`), or from the packaged spaCy
pipeline when the record has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..errors import BadRecord
from ..io import batched, check_text, derived_key, json_type
from ..text.dependency import check_tokens, parse_missing

WORD_FIELDS = ("word_index", "word", "lemma", "pos", "tag", "dep", "head_index", "head_dep", "depth", "sentence_index")
ROOT = "ROOT"
OPTIONAL_TOKEN_FIELDS = ("lemma", "pos", "tag")  # written as null when the parse lacks them


def check_word_tokens(name: str, tokens: object) -> None:
    """A parse in the shape `sembed parse` writes (heads among its tokens), with the dependency labels this needs."""
    checked = check_tokens(name, tokens, " (run sembed parse: --words needs dependency labels)")
    for n, token in enumerate(checked):
        for field in OPTIONAL_TOKEN_FIELDS:
            if token.get(field) is not None and not isinstance(token[field], str):
                raise BadRecord(f"'{name}'[{n}] '{field}' must be a string, got {json_type(token[field])}")


def check_record(text_key: str):
    """The per-record check: a usable `tokens` field (tokens_K for --text-key K), or a text to parse."""
    tokens_key = derived_key(text_key, "tokens")

    def check(record: dict) -> None:
        if tokens_key in record:
            check_word_tokens(tokens_key, record[tokens_key])
        elif text_key in record:
            check_text(record, text_key)
        else:
            raise BadRecord(f"missing key '{tokens_key}' (or '{text_key}' to parse)")

    return check


def depths(tokens: list[dict]) -> list[int]:
    """Edges from each token to the root of its tree (a root is its own head: depth 0).

    A cycle in a hand-written parse has no root: its tokens get the length of the path until it repeats."""
    position = {t["i"]: n for n, t in enumerate(tokens)}
    heads = [position[t["head"]] for t in tokens]
    known: dict[int, int] = {}
    for start in range(len(tokens)):
        path, node, seen = [], start, set()
        while node not in known and heads[node] != node and node not in seen:
            seen.add(node)
            path.append(node)
            node = heads[node]
        base = known.get(node, 0)
        for step, n in enumerate(reversed(path), 1):
            known[n] = base + step
        known.setdefault(start, base)
    return [known[n] for n in range(len(tokens))]


def word_fields(tokens: list[dict]) -> list[dict]:
    """The parse fields of each word: word_index ... depth (not sentence_index)."""
    by_position = {t["i"]: t for t in tokens}
    out = []
    for token, depth in zip(tokens, depths(tokens)):
        head = by_position[token["head"]]
        out.append(
            {
                "word_index": token["i"],
                "word": token["text"],
                "lemma": token.get("lemma"),
                "pos": token.get("pos"),
                "tag": token.get("tag"),
                "dep": token["dep"],
                "head_index": token["head"],
                "head_dep": ROOT if head is token else head["dep"],
                "depth": depth,
            }
        )
    return out


def is_parse_field(name: str) -> bool:
    """tokens, triples and their suffixed forms: a sentence's parse, which the word records replace."""
    return name in ("tokens", "triples") or name.startswith(("tokens_", "triples_"))


def word_records(records: Iterable[dict], encoder, **options) -> Iterator[dict]:
    """One record per word of each input record, in input order (`word_batches`, flattened)."""
    for words in word_batches(records, encoder, **options):
        yield from words


def word_batches(
    records: Iterable[dict],
    encoder,
    text_key: str = "text",
    batch_size: int = 1000,
    encode_batch_size: int = 32,
    syntax_map=None,
    matrix_file=None,
    shard=None,
    nlp=None,
) -> Iterator[list[dict]]:
    """The word records of each batch of `batch_size` input records, one list a batch, in input order.

    Each carries the input record's fields but its parse (tokens, triples...),
    the word's parse fields (`word_fields`), sentence_index (the input record's
    position, from 0: with a shard I/N, record k of the shard is k * N + I - 1
    of the input) and embedding (or embedding_row with a `matrix_file`).
    """
    import torch

    tokens_key = derived_key(text_key, "tokens")
    position = 0
    for batch in batched(records, batch_size):
        parses = parse_missing(
            [record.get(tokens_key) for record in batch], [record[text_key] for record in batch], nlp
        )
        vectors = encoder.encode([[t["text"] for t in tokens] for tokens in parses], batch_size=encode_batch_size)
        if syntax_map is not None:
            lengths = [len(v) for v in vectors]
            vectors = list(torch.split(syntax_map.apply(torch.cat(vectors)), lengths)) if sum(lengths) else vectors
        words: list[dict] = []
        for record, tokens, matrix in zip(batch, parses, vectors):
            index = position if shard is None else position * shard.count + shard.index - 1
            position += 1
            base = {k: v for k, v in record.items() if not is_parse_field(k)}
            first = matrix_file.append(matrix.numpy()) if matrix_file is not None and len(matrix) else None
            for n, fields in enumerate(word_fields(tokens)):
                word = {**base, **fields, "sentence_index": index}
                if first is not None:  # kept in the matrix file (a sentence with words has rows there)
                    word["embedding_row"] = first + n
                else:
                    word["embedding"] = matrix[n].numpy()
                words.append(word)
        yield words
