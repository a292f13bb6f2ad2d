"""Dependency parses as plain data: the `tokens` and `triples` fields of `sembed parse`."""

from __future__ import annotations


def doc_tokens(doc) -> list[dict]:
    """Each token as {i, text, lemma, pos, tag, dep, head}; indices are positions in the text."""
    return [
        {"i": t.i, "text": t.text, "lemma": t.lemma_, "pos": t.pos_, "tag": t.tag_, "dep": t.dep_, "head": t.head.i}
        for t in doc
    ]


def doc_triples(doc) -> list[list]:
    """CF-BERT Table 3 triples [[head, head_tag], dep, [child, child_tag]], one per non-root token."""
    return [[[t.head.text, t.head.tag_], t.dep_, [t.text, t.tag_]] for t in doc if t.head.i != t.i]
