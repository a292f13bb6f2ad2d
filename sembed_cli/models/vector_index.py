"""A FAISS index of sentence vectors stored as a directory, and the model check that keeps queries honest.

The directory (built atomically, see `artifacts.building`):

    index.faiss    the FAISS index (inner product over unit-length vectors: cosine)
    records.jsonl  row i's id and payload (the indexed record without its vectors)
    sembed.json    what made it: embedding_model (the identity of the model that made the vectors: NAME@DIGEST,
                   see model_identity), model, dimension, type, count, settings, versions

Vectors are normalised to unit length before they are added or searched, so
the inner product is the cosine. Types: `flat` (exact), `hnsw` (graph, no
training), `ivf` (inverted lists over k-means cells); `auto` is flat up to
AUTO_FLAT_LIMIT vectors and HNSW above.

The index takes its model's identity from the records' embedding_model (or
from the model that embedded the texts); queries embedded by another model
(another identity, or vectors of another dimension) are refused, because
their neighbours would be meaningless. Indexes written before identities
recorded a fingerprint instead: a hash of the model's vector for a fixed
probe text, still checked for them.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import SembedError
from ..io import loads

INDEX_FILE = "index.faiss"
RECORDS_FILE = "records.jsonl"
METADATA_FILE = "sembed.json"
TYPES = ("auto", "flat", "hnsw", "ivf")
AUTO_FLAT_LIMIT = 100_000
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 64
IVF_NPROBE = 16
PROBE_TEXT = "sembed index probe: Springfield, Illinois"


def model_fingerprint(encoder) -> str:
    """A short hash of the model's (rounded) vector for PROBE_TEXT: the same model gives the same fingerprint."""
    vector = np.asarray(encoder.encode([PROBE_TEXT], show_progress_bar=False)[0], dtype=np.float32)
    return hashlib.sha256(np.round(vector, 3).tobytes() + str(vector.shape).encode()).hexdigest()[:16]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def choose_type(kind: str, count: int) -> str:
    if kind == "auto":
        return "flat" if count <= AUTO_FLAT_LIMIT else "hnsw"
    if kind not in TYPES:
        raise SembedError(f"unknown index type '{kind}'", f"use one of {', '.join(TYPES)}")
    return kind


def build_faiss(vectors: np.ndarray, kind: str, seed: int = 42):
    """A FAISS inner-product index of type `kind` (flat, hnsw, ivf) holding `vectors` (unit rows)."""
    import faiss

    count, dim = vectors.shape
    if kind == "flat":
        index = faiss.IndexFlatIP(dim)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = HNSW_EF_SEARCH
    elif kind == "ivf":
        cells = max(1, min(count // 39, int(4 * math.sqrt(count))))  # FAISS wants >= 39 training points a cell
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, cells, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = seed
        index.train(vectors)
        index.nprobe = min(IVF_NPROBE, cells)
    else:
        raise SembedError(f"unknown index type '{kind}'")
    index.add(vectors)
    return index


def metadata_problem(metadata: object, dimension: int) -> str | None:
    """What is wrong with an index's sembed.json (read back for FAISS's `dimension`), or None."""
    from .model_identity import FIELD, Identity

    if not isinstance(metadata, dict):
        return "is not a JSON object"
    if isinstance(metadata.get("dimension"), bool) or metadata.get("dimension") != dimension:
        return f"gives dimension {metadata.get('dimension')!r}, but the index holds {dimension}-d vectors"
    for key in ("model", "type"):
        if not isinstance(metadata.get(key), str):
            return f"has no '{key}' string"
    if not isinstance(metadata.get("settings", {}), dict):
        return "has 'settings' that are not an object"
    if metadata.get(FIELD) is not None:
        try:
            Identity.parse(metadata[FIELD])
        except (ValueError, AttributeError):
            return f"has an '{FIELD}' that is not NAME@DIGEST: {metadata[FIELD]!r}"
    return None


@dataclass
class VectorIndex:
    """A loaded index directory: the FAISS index, the rows' ids and payloads, and the metadata."""

    path: Path
    index: object
    ids: list
    payloads: list[dict]
    metadata: dict

    @property
    def dimension(self) -> int:
        return int(self.metadata["dimension"])

    @property
    def identity(self):
        """The model_identity.Identity of the vectors; None for an index written before identities."""
        from .model_identity import FIELD, Identity

        value = self.metadata.get(FIELD)
        return Identity.parse(value) if value is not None else None

    def vectors(self) -> np.ndarray:
        """The indexed unit vectors, row by row (for `index --update`, which rebuilds from them)."""
        if self.index.ntotal == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if hasattr(self.index, "make_direct_map"):  # IVF lists need a map from row to list entry first
            self.index.make_direct_map()
        return self.index.reconstruct_n(0, self.index.ntotal)

    @classmethod
    def load(cls, path: str | Path) -> VectorIndex:
        import faiss

        path = Path(path)
        if not (path / INDEX_FILE).exists() or not (path / METADATA_FILE).exists():
            raise SembedError(f"no sembed index at '{path}'", "build one with sembed index -o DIR")
        hint = "rebuild it with sembed index -o DIR --force"
        try:
            metadata = json.loads((path / METADATA_FILE).read_text(encoding="utf-8"))
            index = faiss.read_index(str(path / INDEX_FILE))
            rows = [loads(line) for line in (path / RECORDS_FILE).read_bytes().splitlines() if line]
        except (OSError, ValueError, RuntimeError) as e:
            raise SembedError(f"unreadable index at '{path}': {e}", hint) from None
        problem = metadata_problem(metadata, index.d)
        if problem is not None:
            raise SembedError(f"damaged index at '{path}': {METADATA_FILE} {problem}", hint)
        if not all(isinstance(row, dict) and "id" in row and isinstance(row.get("record"), dict) for row in rows):
            raise SembedError(f"damaged index at '{path}': {RECORDS_FILE} has a line that is not "
                              '{"id": ..., "record": {...}}', hint)
        if len(rows) != index.ntotal:
            raise SembedError(f"damaged index at '{path}': {index.ntotal} vectors but {len(rows)} records", hint)
        if metadata.get("type") == "hnsw":
            index.hnsw.efSearch = metadata.get("settings", {}).get("ef_search", HNSW_EF_SEARCH)
        elif metadata.get("type") == "ivf":
            index.nprobe = metadata.get("settings", {}).get("nprobe", IVF_NPROBE)
        return cls(path, index, [row["id"] for row in rows], [row["record"] for row in rows], metadata)

    def check_model(self, name: str, fingerprint: str) -> None:
        """Refuse queries embedded by the model `name` (of `fingerprint`) when it is not the index's: by the
        index's embedding_model, or the fingerprint of an index written before identities."""
        if self.identity is not None:
            from .model_identity import of_sentence_model

            theirs = of_sentence_model(name)
            if theirs.digest != self.identity.digest:
                raise SembedError(f"the index at '{self.path}' holds vectors of the model '{self.identity}', but the "
                                  f"queries are embedded with '{theirs}', another model",
                                  "search with the index's model (leave out --model), or rebuild the index")
            return
        if fingerprint != self.metadata.get("model_fingerprint"):
            raise SembedError(f"the index at '{self.path}' holds vectors of the model '{self.metadata.get('model')}', "
                              f"but the queries are embedded with '{name}', another model",
                              "search with the index's model (leave out --model), or rebuild the index")

    def search(self, queries: np.ndarray, k: int, ef_search: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of the k nearest rows of each query (unit-normalised first); row -1 where fewer exist.
        ef_search: a wider HNSW search than the index's own for this call (ignored by other types or if narrower)."""
        if ef_search is not None and self.metadata.get("type") == "hnsw" and ef_search > self.index.hnsw.efSearch:
            import faiss

            return self.index.search(unit_rows(queries), k, params=faiss.SearchParametersHNSW(efSearch=ef_search))
        return self.index.search(unit_rows(queries), k)
