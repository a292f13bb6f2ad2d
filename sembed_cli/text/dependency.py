"""Dependency parses as plain data: the `tokens` and `triples` fields of `sembed parse`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import cast

from ..errors import BadRecord
from ..io import TextFields, check_text, derived_key, json_type, map_texts
from . import spacy_pipeline

TOKEN_FIELDS = {"i": int, "text": str, "dep": str, "head": int}  # what S_cf and the word records read


def doc_tokens(doc) -> list[dict]:
    """Each token as {i, text, lemma, pos, tag, dep, head}; indices are positions in the text."""
    return [
        {"i": t.i, "text": t.text, "lemma": t.lemma_, "pos": t.pos_, "tag": t.tag_, "dep": t.dep_, "head": t.head.i}
        for t in doc
    ]


def check_tokens(name: str, tokens: object, dep_hint: str = "") -> list[dict]:
    """`tokens`, a `name` field in the shape `sembed parse` writes, with at least TOKEN_FIELDS in every token;
    `dep_hint` follows the message about a token without a dependency label. Every head must be some token's `i`
    (the root is its own head): a head past the sentence is a broken parse, not one to guess around."""
    if not isinstance(tokens, list):
        raise BadRecord(f"'{name}' must be a list of tokens, got {json_type(tokens)}")
    for n, token in enumerate(tokens):
        if not isinstance(token, dict):
            raise BadRecord(f"'{name}'[{n}] must be a token object, got {json_type(token)}")
        for field, kind in TOKEN_FIELDS.items():
            value = token.get(field)
            if not isinstance(value, kind) or isinstance(value, bool):
                expected = "a number" if kind is int else "a string"
                hint = dep_hint if field == "dep" else ""
                raise BadRecord(f"'{name}'[{n}] needs '{field}' as {expected}, got {json_type(value)}{hint}")
    positions = {token["i"] for token in tokens}
    for n, token in enumerate(tokens):
        if token["head"] not in positions:
            raise BadRecord(f"'{name}'[{n}] has head {token['head']}, which is no token's 'i'")
    return tokens


def doc_triples(doc) -> list[list]:
    """CF-BERT Table 3 triples [[head, head_tag], dep, [child, child_tag]], one per non-root token."""
    return [[[t.head.text, t.head.tag_], t.dep_, [t.text, t.tag_]] for t in doc if t.head.i != t.i]


def parse_records(
    records: Iterable[dict], nlp, fields: TextFields = TextFields(), batch_size: int = 1000, n_process: int = 1
) -> Iterator[dict]:
    """`sembed parse`: add `tokens` and `triples` (suffixed like the text field) to every record."""

    def store(record: dict, key: str, doc) -> None:
        record[derived_key(key, "tokens")] = doc_tokens(doc)
        record[derived_key(key, "triples")] = doc_triples(doc)

    return map_texts(
        records,
        fields,
        batch_size,
        lambda texts: nlp.pipe(texts, batch_size=spacy_pipeline.BATCH, n_process=n_process),
        store,
    )


def check_parse_source(record: dict, key: str) -> None:
    """What `parse_missing` will read for the text `key`: its tokens field when the record has one, else a text
    spaCy can parse."""
    name = derived_key(key, "tokens")
    if name in record:
        check_tokens(name, record[name])
    else:
        check_text(record, key, spacy_pipeline.LIMIT)


def parse_missing(
    parses: list[list[dict] | None], texts: Sequence[str], nlp=None, model: str = spacy_pipeline.DEFAULT_MODEL
) -> list[list[dict]]:
    """`parses` (in place) with each None replaced by the tokens of the text at its position, parsed with `nlp`
    or, when that is None, with the spaCy pipeline `model`, loaded only when a parse is missing."""
    missing = [n for n, tokens in enumerate(parses) if tokens is None]
    if missing:
        if nlp is None:
            nlp = spacy_pipeline.load(model, spacy_pipeline.PARSE)
        for n, doc in zip(missing, nlp.pipe((texts[n] for n in missing), batch_size=spacy_pipeline.BATCH)):
            parses[n] = doc_tokens(doc)
    return cast("list[list[dict]]", parses)  # every None was filled above
