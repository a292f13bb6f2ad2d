"""`search --rerank-model MODEL`: a second stage that re-ranks the first stage's candidates with another model.

The index's own model (or its keyword index, or both fused) finds `--rerank-depth` candidates per query; MODEL,
opened through the one Embedder as `sembed embed -m MODEL` opens it, embeds the query text and the candidates'
stored texts, and the candidates are ordered by that cosine. This is the retrieve-then-re-rank pipeline of
sentence-transformers' retrieve & re-rank recipe with a bi-encoder as the second stage: a cheap model (a static
one) over the whole corpus, a better one over a hundred candidates a query. A candidate text seen twice in a batch
of queries is embedded once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import BadRecord

if TYPE_CHECKING:
    from ..models.embedder import Embedder
    from .directory import VectorIndex

DEFAULT_DEPTH = 100  # candidates per query the first stage finds


@dataclass
class Reranker:
    """The second model, opened at the first batch, and the field of the indexed texts it re-embeds."""

    model: str
    text_key: str = "text"
    backend: str = "torch"
    quantize: str = "none"
    device: str = "auto"
    depth: int = DEFAULT_DEPTH
    _embedder: Embedder | None = None

    def open(self) -> Embedder:
        from ..models.embedder import Embedder

        if self._embedder is None:
            self._embedder = Embedder.open(
                self.model, backend=self.backend, quantize=self.quantize, device=self.device
            ).with_batch_size(None)
        return self._embedder

    @staticmethod
    def check(record: dict, text_key: str) -> None:
        if not isinstance(record.get(text_key), str):
            raise BadRecord(f"--rerank-model re-embeds the query's text: the record has no '{text_key}' text")

    def rerank(
        self, index: VectorIndex, queries: Sequence[str], candidates: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """(cosines under the second model, rows) of the k best of each query's candidate rows (-1: none)."""
        embedder = self.open()
        found = index.records(candidates.ravel())
        texts: dict[int, str] = {}
        for row, (_, payload) in found.items():
            text = payload.get(self.text_key)
            if isinstance(text, str) and text:
                texts[row] = text
        rows = sorted(texts)
        position = {row: i for i, row in enumerate(rows)}
        from .entries import unit_rows

        query_vectors = unit_rows(embedder.encode(list(queries)))
        vectors = (
            unit_rows(embedder.encode([texts[row] for row in rows]))
            if rows
            else np.zeros((0, query_vectors.shape[1]), np.float32)
        )
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        best = np.full((len(queries), k), -1, dtype=np.int64)
        for q, row_list in enumerate(candidates.tolist()):
            kept = [row for row in dict.fromkeys(row_list) if row in position]
            if not kept:
                continue
            cosines = vectors[[position[row] for row in kept]] @ query_vectors[q]
            order = np.argsort(-cosines, kind="stable")[:k]
            scores[q, : len(order)] = cosines[order]
            best[q, : len(order)] = np.asarray(kept)[order]
        return scores, best

    def report(self) -> None:
        if self._embedder is not None:
            self._embedder.report()
