"""Query texts embedded as an index's vectors were made: the Embedder of the identity the index records
(`Embedder.for_identity`: its model, checked by content, CF-BERT's W_cf, or the word vectors and salience table of
`embed --method`), on the backend and quantization that embedded its texts. `sembed search` embeds its queries
with it, and `taste --neighbours` the names it votes on.

Texts that torch embedded in fp32 are queried on ONNX Runtime in fp32 where it can run the model on the CPU
(`QueryEmbedder.open`, backend PREFER_ONNX): the same network, its vectors equal to float rounding (7e-8 for the
POI paper's character BERT), without importing torch. Measured (docs/search.md, "Text queries"): `search --query`
with all-MiniLM-L6-v2 answers in 0.74 s instead of 5.4 at 0.28 GB instead of 0.67, and `search --spelling` over
2.2M POI names 778 queries/s instead of 750. Where it cannot (no onnxruntime, a GPU, a module
only torch runs, no writable place for the export) the queries go to torch, as --backend torch asks.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SembedError
from ..models import model_identity
from ..models.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np

    from .directory import VectorIndex

QUERY_BATCH = 256  # query texts per forward pass
PREFER_ONNX = "onnx-else-torch"  # the queries' backend where torch made the vectors in fp32 (module doc)

log = logging.getLogger(__name__)


def index_backend(loaded: VectorIndex, backend: str | None = None, quantize: str | None = None) -> tuple[str, str]:
    """The backend and quantization for queries to the index `loaded`: those given, else those that embedded its
    texts (int8 only on the backend that made it), with PREFER_ONNX for torch's fp32 (module doc)."""
    built = loaded.metadata.get("settings", {})
    if backend is None and quantize is None and built.get("backend", "torch") == "torch":
        return (PREFER_ONNX, "none") if not built.get("quantization") else ("torch", "none")
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
            embedder = self._on_onnx() if self.backend == PREFER_ONNX else None
            self._embedder = (embedder or self._on(self.backend)).with_batch_size(QUERY_BATCH)
        return self._embedder

    def _on(self, backend: str) -> Embedder:
        """The Embedder on `backend` (torch for PREFER_ONNX)."""
        backend = "torch" if backend == PREFER_ONNX else backend
        identity = self.index.identity
        if identity is None:
            return self._fingerprinted(backend)
        return Embedder.for_identity(
            identity,
            model=self.model,
            backend=backend,
            quantize=self.quantize,
            long_text=self.long_text,
            device=self.device,
            where=self.index.path,
        )

    def _on_onnx(self) -> Embedder | None:
        """PREFER_ONNX: the Embedder on ONNX Runtime in fp32 where it runs the index's model on the CPU, else None
        (torch's then). Not for an index written before identities (checked by a fingerprint torch made)."""
        if self.index.identity is None or self.device not in ("auto", "cpu"):
            return None
        if self.device == "auto" and any(Path("/dev").glob("nvidia[0-9]*")):  # torch would take the GPU
            return None
        try:
            return self._on("onnx")
        except SembedError as e:  # said with -v: where torch fails too (another model), its error is the same
            log.debug(f"the queries go to torch, not ONNX Runtime: {e.message}")
            return None

    def _fingerprinted(self, backend: str) -> Embedder:
        metadata = self.index.metadata
        name = self.model or metadata.get("model_path") or metadata["model"]
        embedder = Embedder.open(
            name, backend=backend, quantize=self.quantize, long_text=self.long_text, device=self.device
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
