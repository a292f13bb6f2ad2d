"""Records read into index entries: a stable id, a hash of the content, the payload, and a vector or a text.

Ids: the record's own (--id-key) when it has one; otherwise a hash of its content (the text, or the vector of a
record without one), so that a nightly re-index of a folder finds a sentence again wherever it moved in its file,
adds an edited sentence as a new entry, and indexes a sentence that two files share (or one file given under two
names) once. `hash` tells a changed record from an unchanged one under the same id: the text, and for records that
bring their vector, the vector too (float16, so the last bits of a float do not count as a change).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BadRecord
from ..io import check_text, dumps, float32_vector
from ..models.model_identity import FIELD

DERIVED_ID_HEX = 20  # 80 bits: no two of 10^9 sentences share one by chance (p < 1e-6)


@dataclass
class Entry:
    key: str  # the id as compact JSON: the store's key
    digest: str
    payload: bytes
    vector: np.ndarray | None  # unit float32, or None: `text` is to be embedded
    text: str | None
    line: int = 0


def unit(vector: np.ndarray) -> np.ndarray:
    vector = vector.astype(np.float32, copy=False)
    return vector / np.float32(np.sqrt(np.dot(vector, vector)))


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def content_digest(text: str | None, vector: np.ndarray | None) -> str:
    digest = hashlib.sha256()
    if text is not None:
        digest.update(text.encode("utf-8"))
    if vector is not None:
        digest.update(b"\0" + vector.astype(np.float16).tobytes())
    return digest.hexdigest()[:DERIVED_ID_HEX]


def id_key(value: object) -> str:
    return dumps(value).rstrip(b"\n").decode("utf-8")


class EntryReader:
    """Reads each record of an index's input into an Entry, with the model and dimension checks of `index`.

    The first record decides: vectors (its --embedding-key, or an --npy row) or texts. Vectors go through the one
    vector check (io.float32_vector); texts through check_text."""

    def __init__(
        self,
        text_key: str,
        embedding_key: str,
        id_key_name: str,
        npy: Path | None = None,
        dimension: int | None = None,
        given_ids: bool | None = None,
    ):
        from ..models.model_identity import OneModel
        from ..vector_rows import RowVectors

        self.text_key, self.embedding_key, self.id_key = text_key, embedding_key, id_key_name
        self.rows = RowVectors(npy) if npy is not None else None
        self.models = OneModel()
        self.dimension = dimension
        self.uses_vectors: bool | None = None
        self.given_ids = given_ids  # records bring ids (else: content hashes); the first record decides
        self._label: object = ()  # the embedding_model string last checked (records of a corpus repeat one)

    @property
    def source(self) -> str:
        return "embeddings" if self.uses_vectors else "texts"

    def __call__(self, record: dict) -> Entry:
        if self.rows is not None:
            self.rows.attach(record)
        if self.uses_vectors is None:
            self.uses_vectors = self.embedding_key in record
        vector = text = None
        if self.uses_vectors:
            label = record.get(FIELD)
            if label != self._label or not isinstance(label, str):
                self.models(record)
                if self.rows is not None:
                    self.models.agree(self.rows.identity, f"{self.rows.path}.json names vectors")
                self._label = label
            vector = unit(float32_vector(record, self.embedding_key, self.dimension))
            if self.dimension is None:
                self.dimension = len(vector)
            shown = record.get(self.text_key)
            digest = content_digest(shown if isinstance(shown, str) else None, vector)
        else:
            if self.text_key not in record:
                raise BadRecord(f"missing key '{self.text_key}' (or '{self.embedding_key}')")
            text = check_text(record, self.text_key)
            digest = content_digest(text, None)
        if self.given_ids is None:
            self.given_ids = self.id_key in record
        if self.given_ids and self.id_key not in record:
            raise BadRecord(f"missing key '{self.id_key}' (the index finds its records by the id they bring)")
        if not self.given_ids and self.id_key in record:
            raise BadRecord(
                f"'{self.id_key}' given, but the index's records have none (their id is a hash of their text)",
                "index all records with ids or none; --id-key names the id field",
            )
        record_id = record.get(self.id_key, digest)
        if isinstance(record_id, (dict, list)) or record_id is None:
            raise BadRecord(
                f"'{self.id_key}' must be a string or a number, got "
                f"{'null' if record_id is None else type(record_id).__name__}"
            )
        payload = {k: v for k, v in record.items() if not k.startswith("embedding")}
        return Entry(id_key(record_id), digest, dumps(payload).rstrip(b"\n"), vector, text)
