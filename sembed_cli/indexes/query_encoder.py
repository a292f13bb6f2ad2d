"""Query texts embedded as an index's vectors were made: the Embedder of the identity the index records
(`Embedder.for_identity`: its model, checked by content, CF-BERT's W_cf, or the word vectors and salience table of
`embed --method`), on the backend and quantization that embedded its texts. `sembed search` embeds its queries
with it, and `taste --neighbours` the names it votes on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models import model_identity
from ..models.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np

    from .directory import VectorIndex

QUERY_BATCH = 256  # query texts per forward pass


def index_backend(loaded: VectorIndex, backend: str | None = None, quantize: str | None = None) -> tuple[str, str]:
    """The backend and quantization for queries to the index `loaded`: those given, else those that embedded its
    texts (int8 only on the backend that made it)."""
    built = loaded.metadata.get("settings", {})
    backend = backend or built.get("backend", "torch")
    quantize = quantize or ("int8" if built.get("quantization") and backend == built.get("backend") else "none")
    return backend, quantize


class QueryEmbedder:
    """The index's Embedder for text queries, opened at the first text query (a search over query vectors opens
    no model); `open` opens it at once (a wrong --model is refused before any query is read)."""

    def __init__(
        self,
        index: VectorIndex,
        model: str | None = None,
        device: str = "auto",
        long_text: str = "truncate",
        backend: str = "torch",
        quantize: str = "none",
    ):
        self.index, self.model, self.device = index, model, device
        self.long_text, self.backend, self.quantize = long_text, backend, quantize
        self._embedder: Embedder | None = None

    def open(self) -> Embedder:
        """The Embedder of the index's identity (or, for an index written before identities, of its model,
        checked by the fingerprint it recorded)."""
        if self._embedder is None:
            identity = self.index.identity
            if identity is None:
                self._embedder = self._fingerprinted()
            else:
                self._embedder = Embedder.for_identity(
                    identity,
                    model=self.model,
                    backend=self.backend,
                    quantize=self.quantize,
                    long_text=self.long_text,
                    device=self.device,
                    where=self.index.path,
                )
            self._embedder = self._embedder.with_batch_size(QUERY_BATCH)
        return self._embedder

    def _fingerprinted(self) -> Embedder:
        metadata = self.index.metadata
        name = self.model or metadata.get("model_path") or metadata["model"]
        embedder = Embedder.open(
            name, backend=self.backend, quantize=self.quantize, long_text=self.long_text, device=self.device
        )
        self.index.check_fingerprint(name, model_identity.model_fingerprint(embedder.encoder))
        return embedder

    def encode(self, texts: list[str]) -> np.ndarray:
        """The query vectors of `texts` (float32, one row each)."""
        return self.open().encode(texts)

    def check_long(self, record: dict, key: str) -> None:
        """--long-text error: a query text past the model's window is bad input."""
        if self.long_text == "error":
            self.open().check_long(record, key)

    def report(self) -> None:
        if self._embedder is not None:
            self._embedder.report()
