"""Records read into index entries: a stable id, a hash of the content, the payload, and a vector or a text.

Ids: the record's own (--id-key) when it has one; otherwise a hash of its document (--doc-key, doc_id: the field
`convert` writes) and its content (the text, or the vector of a record without one), so that a nightly re-index of
a folder finds a sentence again wherever it moved in its file, adds an edited sentence as a new entry, and keeps one
entry per document and sentence: "which documents say X" finds every one. A record without a document is keyed by
its content alone (a sentence given twice is indexed once), as every record of an index built before documents
counted is (`CONTENT_IDS`: an update keeps that index's ids).

`hash` tells a changed record from an unchanged one under the same id: the text, and for records that bring their
vector, the vector too (float16, so the last bits of a float do not count as a change). The vector hashed is the
record's made a unit vector, and its norm is summed in float64 (`EXACT_NORM`): the same bytes on every machine. Until
2026-11-29 the norm was BLAS's float32 dot product (`BLAS_NORM`), whose order of additions is the kernel's: on 100,000
static vectors an Intel AVX-512 kernel gave other float16 bytes than AMD's and AVX2's for 0.44% of rows, so an index
built on one machine and updated with the same records on the other saw those records as changed (and, without ids,
added them again beside their old rows). `sembed.json`'s `settings.vector_hash` says which an index was built with
(absent from an index built from vectors: `BLAS_NORM`), and an update hashes as its index did (`vector_hash_of`): no
stored hash changes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from ..errors import BadRecord
from ..io import check_text, dumps, float32_vector
from ..models.model_identity import FIELD

DERIVED_ID_HEX = 20  # 80 bits: no two of 10^9 sentences share one by chance (p < 1e-6)
GIVEN_IDS = "given"
CONTENT_IDS = "content hash"  # every derived id a hash of the content alone (indexes written before doc_id counted)
DOCUMENT_IDS = "document and content hash"  # a record with a document: a hash of both; without: of its content
EXACT_NORM = "float64 norm"  # settings.vector_hash: how a hashed vector was made a unit vector (module doc)
BLAS_NORM = "float32 dot"  # an index built from vectors before 2026-11-29 (no settings.vector_hash)


@dataclass(slots=True)
class Pending:
    """What an entry of a record with a vector needs to have it made a unit vector and hashed with the rest of its
    batch (`EntryReader.fill`): the --npy row it names, or the vector it brought."""

    row: int | None  # the --npy row, not read yet; None: `given`
    shown: str | None  # the record's text, hashed with the vector
    document: object = None
    derived: bool = False  # the id is a hash of the content (and document): made once the vector is unit
    given: np.ndarray | None = None  # the record's own vector (float32, checked), not yet unit


@dataclass(slots=True)
class Entry:
    key: str  # the id as compact JSON: the store's key
    digest: str
    payload: bytes
    vector: np.ndarray | None  # unit float32, or None: `text` is to be embedded (or `pending` made one)
    text: str | None
    line: int = 0
    pending: Pending | None = None


def vector_hash_of(settings: dict) -> str:
    """How the index whose sembed.json settings are `settings` hashes the vectors records bring: as recorded, else
    BLAS_NORM for one built from vectors before 2026-11-29 (EXACT_NORM for one built from texts: it hashed none)."""
    return settings.get("vector_hash", BLAS_NORM if settings.get("source") == "embeddings" else EXACT_NORM)


def units(matrix: np.ndarray, norm: str = EXACT_NORM) -> np.ndarray:
    """Each row of the float32 `matrix` divided by its norm, taken as `norm` says (module doc). EXACT_NORM: every
    square is exact in float64 and numpy's pairwise sum adds them in one fixed order whatever SIMD the machine has
    (the same sums with AVX-512, AVX2 and SSE alone), then one rounding to float32. BLAS_NORM: the float32 dot
    product of each row (an index built before 2026-11-29)."""
    if norm == EXACT_NORM:
        squares = np.square(matrix, dtype=np.float64).sum(axis=1)
        return matrix / np.sqrt(squares).astype(np.float32)[:, None]
    rows = list(matrix)  # ndarray.dot is np.dot; a list's rows are made once
    dots = np.fromiter((row.dot(row) for row in rows), np.float32, len(rows))
    return matrix / np.sqrt(dots)[:, None]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def content_digest(text: str | None, vector: np.ndarray | None) -> str:
    return halves_digest(text, None if vector is None else vector.astype(np.float16).tobytes())


def halves_digest(text: str | None, halves: bytes | None) -> str:
    """`content_digest` of a vector already made float16 bytes (a batch's rows are converted together)."""
    content = text.encode("utf-8") if text is not None else b""
    if halves is not None:
        content += b"\0" + halves
    return hashlib.sha256(content).hexdigest()[:DERIVED_ID_HEX]


def id_key(value: object) -> str:
    return dumps(value, line=False).decode("utf-8")


def document_id(document: object, digest: str) -> str:
    """The derived id of a record of `document` whose content hashes to `digest`: the same sentence in two
    documents is two entries, and keeps its id wherever it moves within its document."""
    return hashlib.sha256(id_key(document).encode("utf-8") + b"\0" + digest.encode()).hexdigest()[:DERIVED_ID_HEX]


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
        doc_key: str = "doc_id",
        content_ids: bool = False,
        vector_hash: str = EXACT_NORM,
    ):
        from ..models.model_identity import OneModel
        from ..vector_rows import RowVectors

        self.text_key, self.embedding_key, self.id_key = text_key, embedding_key, id_key_name
        self.rows = RowVectors(npy) if npy is not None else None
        self.models = OneModel()
        self.dimension = dimension
        self.uses_vectors: bool | None = None
        self.given_ids = given_ids  # records bring ids (else: content hashes); the first record decides
        self.doc_key = doc_key
        self.content_ids = content_ids  # derived ids hash the content alone, documents or not (CONTENT_IDS)
        self.vector_hash = vector_hash  # how a vector is made a unit vector before it is hashed (module doc)
        self.documents = 0  # records that name their document
        self._label: object = ()  # the embedding_model string last checked (records of a corpus repeat one)
        self._payload_keys: dict[tuple[str, ...], tuple[str, ...]] = {}  # a record's keys -> those its payload keeps

    @property
    def source(self) -> str:
        return "embeddings" if self.uses_vectors else "texts"

    @property
    def known_dimension(self) -> int | None:
        """The records' vector length as far as it is known before their batch is filled: the first vector read
        (or the index's), else the width of the --npy rows they name."""
        if self.dimension is None and self.rows is not None:
            return int(self.rows.matrix.shape[1])
        return self.dimension

    @property
    def ids(self) -> str:
        """How the entries' ids are made (sembed.json's settings.ids)."""
        return GIVEN_IDS if self.given_ids else CONTENT_IDS if self.content_ids else DOCUMENT_IDS

    def __call__(self, record: dict) -> Entry:
        """The record's entry; one with a vector (its own or an --npy row's) has its unit vector, hash (and derived
        id) made by `fill`, with the rest of its batch (checked here: a bad vector is this record's error)."""
        row = self.rows.row_of(record, self.embedding_key) if self.rows is not None else None
        if self.rows is not None and row is None:
            self.rows.attach(record)
        if self.uses_vectors is None:
            self.uses_vectors = row is not None or self.embedding_key in record
        given = text = shown = None
        digest = ""
        if self.uses_vectors:
            label = record.get(FIELD)
            if label != self._label or not isinstance(label, str):
                self.models(record)
                if self.rows is not None:
                    self.models.agree(self.rows.identity, f"{self.rows.path}.json names vectors")
                self._label = label
            shown = record.get(self.text_key)
            shown = shown if isinstance(shown, str) else None
            if row is None:
                given = float32_vector(record, self.embedding_key, self.dimension)
                if self.dimension is None:
                    self.dimension = len(given)
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
        document = record.get(self.doc_key) if not self.given_ids else None
        if document is not None:
            if isinstance(document, (dict, list)):
                raise BadRecord(f"'{self.doc_key}' must be a string or a number, got {type(document).__name__}")
            self.documents += 1
        record_id: object
        if self.id_key in record:
            record_id = record[self.id_key]
        else:  # derived from the content: a vector's by `fill`, once it is unit
            record_id = "" if self.uses_vectors else self.derived_id(document, digest)
        if isinstance(record_id, (dict, list)) or record_id is None:
            raise BadRecord(
                f"'{self.id_key}' must be a string or a number, got "
                f"{'null' if record_id is None else type(record_id).__name__}"
            )
        kept = self._payload_keys.get(names := tuple(record))
        if kept is None:  # the records of a corpus repeat one set of keys: their vector fields found once
            kept = self._payload_keys[names] = tuple(key for key in names if not key.startswith("embedding"))
        payload = {key: record[key] for key in kept}
        entry = Entry(id_key(record_id), digest, dumps(payload, line=False), None, text)
        if self.uses_vectors:
            entry.pending = Pending(row, shown, document, self.id_key not in record, given)
        return entry

    def derived_id(self, document: object, digest: str) -> str:
        """The id of a record without one: a hash of its document and content, or of its content alone."""
        return document_id(document, digest) if document is not None and not self.content_ids else digest

    def fill(self, entries: list[Entry]) -> list[tuple[Entry, BadRecord]]:
        """Make the unit vectors, hashes and derived ids of the `entries` still pending, the batch's arithmetic done
        over the batch (`units`: the same bytes as one at a time): the vectors records brought stacked, the --npy
        rows they name read in one go. Returns the entries whose --npy row is bad, with the error `__call__` raises
        for such a vector in a record."""
        waiting = [entry for entry in entries if entry.pending is not None]
        given = [entry for entry in waiting if cast(Pending, entry.pending).given is not None]
        named = [entry for entry in waiting if cast(Pending, entry.pending).given is None]
        if given:
            self.finish(given, np.array([cast(Pending, entry.pending).given for entry in given]))
        if not named or self.rows is None:
            return []
        rows = np.fromiter((cast(Pending, entry.pending).row for entry in named), np.int64, len(named))
        matrix = self.rows.read(rows)
        if self.dimension is None:
            self.dimension = matrix.shape[1]
        sound = np.isfinite(matrix).all(axis=1) & matrix.any(axis=1) & (matrix.shape[1] == self.dimension)
        bad: list[tuple[Entry, BadRecord]] = []
        keep = np.ones(len(named), dtype=bool)
        for n in np.flatnonzero(~sound).tolist():
            try:
                float32_vector({self.embedding_key: matrix[n]}, self.embedding_key, self.dimension)
            except BadRecord as e:
                bad.append((named[n], e))
                keep[n] = False
        if bad:
            named, matrix = [entry for entry, kept in zip(named, keep) if kept], matrix[keep]
        self.finish(named, matrix)
        return bad

    def finish(self, entries: list[Entry], matrix: np.ndarray) -> None:
        """Give the pending `entries` their unit vectors (of `matrix`, a row each), hashes and derived ids."""
        vectors = units(matrix, self.vector_hash)
        halves = vectors.astype(np.float16).tobytes()  # row n: bytes n * width .. (n + 1) * width
        width = 2 * vectors.shape[1]
        for n, (entry, vector) in enumerate(zip(entries, vectors)):
            pending = cast(Pending, entry.pending)
            entry.vector = vector
            entry.digest = halves_digest(pending.shown, halves[n * width : (n + 1) * width])
            if pending.derived:
                entry.key = id_key(self.derived_id(pending.document, entry.digest))
            entry.pending = None
