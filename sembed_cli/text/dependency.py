"""Dependency parses as plain data: the `tokens` and `triples` fields of `sembed parse`."""

from __future__ import annotations

from ..errors import BadRecord
from ..io import json_type

TOKEN_FIELDS = {"i": int, "text": str, "dep": str, "head": int}  # what S_cf and the word records read


def doc_tokens(doc) -> list[dict]:
    """Each token as {i, text, lemma, pos, tag, dep, head}; indices are positions in the text."""
    return [
        {"i": t.i, "text": t.text, "lemma": t.lemma_, "pos": t.pos_, "tag": t.tag_, "dep": t.dep_, "head": t.head.i}
        for t in doc
    ]


def check_tokens(name: str, tokens: object, dep_hint: str = "") -> None:
    """A `name` field in the shape `sembed parse` writes, with at least TOKEN_FIELDS in every token; `dep_hint`
    follows the message about a token without a dependency label. Every head must be some token's `i` (the
    root is its own head): a head past the sentence is a broken parse, not one to guess around."""
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


def doc_triples(doc) -> list[list]:
    """CF-BERT Table 3 triples [[head, head_tag], dep, [child, child_tag]], one per non-root token."""
    return [[[t.head.text, t.head.tag_], t.dep_, [t.text, t.tag_]] for t in doc if t.head.i != t.i]
