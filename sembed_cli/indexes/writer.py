"""Building, updating and merging index directories from a stream of records, without the corpus in RAM.

A build streams the records into the store (SQLite) and their unit vectors into a file on disk, then chooses the
FAISS index by the count (`kinds.choose`), trains it once on a seeded sample read from that file, and adds the
rows a chunk at a time. An update finds each record's id in the store: a new id is added (`add_with_ids`), a
changed record replaces its row (`remove_ids`, then the new row), an unchanged one is skipped (not embedded); with
`sync`, rows the input no longer holds are removed. The trained quantiser stays (`--retrain` rebuilds), so an
update answers as a full build with that quantiser would. It runs in one SQLite transaction under the index's lock:
a failure rolls back and cuts the vector file back, leaving the old index whole. A merge joins indexes of disjoint
parts built with one trained quantiser (FAISS `merge_from`).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import SembedError
from ..io import Rejects
from . import kinds
from .directory import INDEX_FILE, METADATA_FILE, VectorIndex, payload_record
from .entries import Entry, unit_rows
from .store import FILE as STORE_FILE
from .store import RecordStore
from .vector_file import DTYPES, VectorFile

log = logging.getLogger(__name__)

RERANK_CHOICES = ("float16", "float32", "none")
BUILD_VECTORS = "vectors.build.f32"  # a build's vectors before the index type is known
UPDATE_VECTORS = "vectors.new.f32"  # an update's new vectors, for an index that keeps none


@dataclass(frozen=True)
class IndexSettings:
    """How an index is built: the type asked for (a kinds.NAMES entry or a FAISS factory string), the kept
    vectors of lossy types, inverted lists probed, the seed of the training sample, and the record's keys."""

    requested_type: str = "auto"
    rerank: str = "float16"
    nprobe: int | None = None
    seed: int = 42
    text_key: str = "text"
    embedding_key: str = "embedding"
    id_key: str = "id"
    batch_size: int = 2_000  # records looked up, inserted and embedded together

    def describe(self) -> dict:
        return {
            "requested_type": self.requested_type,
            "rerank": self.rerank,
            "text_key": self.text_key,
            "embedding_key": self.embedding_key,
            "id_key": self.id_key,
            "seed": self.seed,
        }


@dataclass
class Changes:
    """What a build or an update did to the rows."""

    added: int = 0
    replaced: int = 0
    unchanged: int = 0
    repeated: int = 0  # the same id and content again in this input: indexed once
    synced: int = 0  # removed by sync: the input no longer holds them
    removed: list[int] = field(default_factory=list)  # rows taken out (replaced or synced)

    def describe(self) -> dict:
        return {
            "added": self.added,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "repeated": self.repeated,
            "removed_missing": self.synced,
        }


Embed = Callable[[list[str]], np.ndarray]


class Staging:
    """Entries applied to a store inside its open transaction, their vectors appended to a VectorFile."""

    def __init__(self, store: RecordStore, vectors: Callable[[int], VectorFile], embed: Embed | None, rejects: Rejects):
        self.store, self.make_vectors, self.embed, self.rejects = store, vectors, embed, rejects
        self.first_new = self.next_row = store.next_row
        self.seen = np.zeros(self.first_new, dtype=bool)  # indexed rows this input has named
        self.changes = Changes()
        self.vectors: VectorFile | None = None
        self.digest = hashlib.sha256(store.state.get("data_sha256", "").encode())

    def add(self, entries: list[Entry]) -> None:
        found = self.store.find([entry.key for entry in entries])
        fresh: dict[str, tuple[int, str]] = {}  # ids first met in this batch
        deletes, inserts, kept = [], [], []
        for entry in entries:
            hit = fresh.get(entry.key) or found.get(entry.key)
            if hit is not None:
                row, digest = hit[0], hit[1]
                if row >= self.first_new or self.seen[row]:  # this input named it already
                    if digest == entry.digest:
                        self.changes.repeated += 1
                    else:
                        self.rejects.reject(
                            entry.line,
                            f"id {entry.key} again, with other content than an earlier record of that id",
                            "give each record its own id, or none (the id is then a hash of the text)",
                        )
                    continue
                self.seen[row] = True
                if digest == entry.digest:
                    self.changes.unchanged += 1
                    if found[entry.key][2] != entry.payload:
                        self.store.set_payload(row, entry.payload)
                    continue
                deletes.append(row)
                self.changes.removed.append(row)
                self.changes.replaced += 1
            else:
                self.changes.added += 1
            fresh[entry.key] = (self.next_row, entry.digest)
            inserts.append((self.next_row, entry.key, entry.digest, entry.payload))
            kept.append(entry)
            self.digest.update(entry.key.encode() + b"\0" + entry.digest.encode() + b"\n")
            self.next_row += 1
        if not kept:
            self.store.delete(deletes)
            return
        texts = [entry.text for entry in kept if entry.vector is None and entry.text is not None]  # one or other
        embedded = iter(self.embed(texts)) if texts and self.embed is not None else iter(())
        matrix = unit_rows(np.stack([entry.vector if entry.vector is not None else next(embedded) for entry in kept]))
        if self.vectors is None:
            self.vectors = self.make_vectors(matrix.shape[1])
        self.store.delete(deletes)
        self.store.insert(inserts)
        self.vectors.append(matrix, at_row=self.next_row - len(kept))

    def sync(self) -> None:
        """Remove the indexed rows this input did not name (`index --update --sync`)."""
        gone = [row for row in self.store.row_numbers(below=self.first_new) if not self.seen[row]]
        self.store.delete(gone)
        self.changes.removed.extend(gone)
        self.changes.synced = len(gone)
        for row in gone:
            self.digest.update(f"-{row}\n".encode())


def stage(
    store: RecordStore,
    entries: Iterable[Entry],
    vectors: Callable[[int], VectorFile],
    embed: Embed | None,
    rejects: Rejects,
    batch_size: int,
    sync: bool = False,
) -> Staging:
    staging = Staging(store, vectors, embed, rejects)
    batch: list[Entry] = []
    for entry in entries:
        batch.append(entry)
        if len(batch) >= batch_size:
            staging.add(batch)
            batch = []
    if batch:
        staging.add(batch)
    if sync:
        staging.sync()
    return staging


# --- a new index ---------------------------------------------------------------------------------------------


@dataclass
class Built:
    """What `build_into` made: the rows' changes, the FAISS recipe and the counts, for the metadata."""

    changes: Changes
    kind: kinds.Kind
    count: int
    dimension: int
    trained_sha256: str
    data_sha256: str


def build_into(
    work: Path,
    entries: Iterable[Entry],
    settings: IndexSettings,
    embed: Embed | None,
    rejects: Rejects,
    trained: VectorIndex | None = None,
) -> Built:
    """Stream `entries` into a new index in the empty directory `work` (the store, the kept vectors and the FAISS
    file; the caller writes sembed.json)."""
    store = RecordStore(work / STORE_FILE, create=True)
    try:
        store.begin()
        staging = stage(
            store,
            entries,
            lambda dim: VectorFile(work / BUILD_VECTORS, dim, "float32"),
            embed,
            rejects,
            settings.batch_size,
        )
        count = staging.next_row
        if count == 0 or staging.vectors is None:
            skipped = f" ({len(rejects.skipped)} skipped as bad records)" if rejects.skipped else ""
            raise SembedError(f"no records to index in {rejects.name}{skipped}")
        raw = staging.vectors
        dim = raw.dim
        kind, index = fresh_index(trained, settings, count, dim)
        if kinds.needs_training(index):
            train_from_file(index, raw, count, settings.seed)
        trained_sha256 = trained_digest(index)
        add_rows(index, raw, 0, count)
        keep = kind.lossy and settings.rerank != "none"
        if keep:
            kept = VectorFile.named(work, dim, settings.rerank)
            for first, block in raw.chunks(count):
                kept.append(block, at_row=first)
            kept.sync()
        raw.remove()
        write_faiss(index, work / INDEX_FILE)
        store.set_state(
            faiss_file=INDEX_FILE,
            next_row=count,
            count=count,
            vector_rows=count if keep else 0,
            generation=0,
            data_sha256=staging.digest.hexdigest(),
        )
        store.commit()
    finally:
        store.close()
    return Built(staging.changes, kind, count, dim, trained_sha256, staging.digest.hexdigest())


def fresh_index(trained: VectorIndex | None, settings: IndexSettings, count: int, dim: int):
    """(kind, empty index): a copy of `trained`'s trained quantiser and codebooks, or a new index of the type."""
    import faiss

    if trained is None:
        kind = kinds.choose(settings.requested_type, count, dim, settings.nprobe)
        return kind, kinds.create(kind, dim)
    if trained.dimension != dim:
        raise SembedError(
            f"the vectors have {dim} dimensions, but the trained index at '{trained.path}' {trained.dimension}",
            "train one on vectors of this model",
        )
    meta = trained.settings
    kind = kinds.Kind(meta.get("type", "factory"), meta["factory"], settings.nprobe or meta.get("nprobe"))
    index = faiss.clone_index(trained.index)
    index.reset()
    return kind, index


def train_from_file(index, vectors: VectorFile, count: int, seed: int) -> None:
    """Train on a seeded sample of the rows (kinds.training_size of them), read from the file: never all rows."""
    size = kinds.training_size(index, count)
    rows = np.sort(np.random.default_rng(seed).choice(count, size=size, replace=False))
    sample = vectors.sample(rows)
    log.info(f"training the {kinds.unwrap(index).__class__.__name__} on {size} sampled vectors")
    kinds.train(index, sample, seed)


def trained_digest(index) -> str:
    """A hash of the trained, empty index: pieces with equal digests share one quantiser and codebooks."""
    import faiss

    empty = faiss.clone_index(index)
    empty.reset()
    return hashlib.sha256(faiss.serialize_index(empty).tobytes()).hexdigest()


def add_rows(index, vectors: VectorFile, start: int, stop: int) -> None:
    """Rows start .. stop - 1 of `vectors` into `index`: by id, or by position for a graph (rows are positions)."""
    for first, block in vectors.chunks(stop, start):
        if kinds.positional(index):
            if index.ntotal != first:
                raise RuntimeError(f"graph holds {index.ntotal} rows, adding row {first}")
            index.add(block)
        else:
            index.add_with_ids(block, np.arange(first, first + len(block), dtype=np.int64))


def write_faiss(index, path: Path) -> None:
    import faiss

    faiss.write_index(index, str(path))
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


# --- an update -----------------------------------------------------------------------------------------------


@dataclass
class Updated:
    changes: Changes
    count: int
    data_sha256: str
    faiss_file: str


def update_in_place(
    loaded: VectorIndex,
    entries: Iterable[Entry],
    embed: Embed | None,
    rejects: Rejects,
    sync: bool,
    batch_size: int,
    write_metadata: Callable[[Updated], dict],
) -> Updated:
    """Apply `entries` to the index `loaded` (opened writable, its lock held): one transaction, committed with
    the new FAISS file; on any failure the index stays as it was. `write_metadata(updated)` gives sembed.json."""
    from ..io import write_json_atomic

    store, path = loaded.store, loaded.path
    assert isinstance(store, RecordStore)
    committed = store.number("vector_rows")
    kept = loaded.vectors
    new_files: list[Path] = []

    def vectors(dim: int) -> VectorFile:
        if kept is not None:
            kept.cut(committed)
            return kept
        scratch = VectorFile(path / UPDATE_VECTORS, dim, "float32", base=store.next_row)
        scratch.remove()
        new_files.append(scratch.path)
        return scratch

    store.begin()
    try:
        staging = stage(store, entries, vectors, embed, rejects, batch_size, sync)
        changes, index = staging.changes, loaded.index
        faiss_file = store.state.get("faiss_file", INDEX_FILE)
        if changes.removed or staging.next_row > staging.first_new:
            if changes.removed and kinds.positional(index):
                store.mark_removed(changes.removed)
            elif changes.removed:
                # faiss's Python wrapper takes an array of ids too; its stubs name only an IDSelector
                index.remove_ids(np.asarray(changes.removed, dtype=np.int64))  # type: ignore[arg-type]
            if staging.vectors is not None:
                add_rows(index, staging.vectors, staging.first_new, staging.next_row)
            generation = store.number("generation") + 1
            faiss_file = f"index.{generation}.faiss"
            new_files.append(path / faiss_file)
            write_faiss(index, path / faiss_file)
            count = store.count + changes.added + changes.replaced - len(changes.removed)
            store.set_state(
                faiss_file=faiss_file,
                generation=generation,
                next_row=staging.next_row,
                count=count,
                vector_rows=staging.next_row if kept is not None else 0,
                data_sha256=staging.digest.hexdigest(),
            )
        if kept is not None:
            kept.sync()
        updated = Updated(changes, store.count, store.state.get("data_sha256", ""), faiss_file)
        metadata = write_metadata(updated)
        store.commit()
    except BaseException:
        store.rollback()
        if kept is not None:
            kept.cut(committed)
        for file in new_files:
            file.unlink(missing_ok=True)
        raise
    write_json_atomic(path / METADATA_FILE, metadata)
    for file in path.glob("index*.faiss"):  # the files of earlier generations
        if file.name != faiss_file:
            file.unlink(missing_ok=True)
    (path / UPDATE_VECTORS).unlink(missing_ok=True)
    return updated


# --- rows of an existing index, as entries (converting, rebuilding) ------------------------------------------


def entries_of(index: VectorIndex, chunk: int = 10_000) -> Iterable[Entry]:
    """Every live row of `index` as an Entry carrying its vector (read back from the kept vectors or FAISS)."""
    rows = list(index.store.rows())
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        vectors = index.vectors_of(np.asarray([row for row, *_ in part], dtype=np.int64))
        for (_row, key, digest, payload), vector in zip(part, vectors):
            yield Entry(key, digest or legacy_digest(payload_record(payload), vector, index), payload, vector, None)


def legacy_digest(payload: dict, vector: np.ndarray, index: VectorIndex) -> str:
    """The content hash of a sembed 0.1 row (which kept none), as entries.EntryReader makes it for its record."""
    from .entries import content_digest

    text = payload.get(index.settings.get("text_key", "text"))
    from_vectors = index.settings.get("source") == "embeddings"
    return content_digest(text if isinstance(text, str) else None, vector if from_vectors else None)


# --- merging -------------------------------------------------------------------------------------------------


def merge_into(work: Path, pieces: list[VectorIndex]) -> tuple[int, kinds.Kind]:
    """Join `pieces` (same model, dimension and trained quantiser; disjoint ids) into a new index in `work`:
    rows numbered piece after piece, FAISS `merge_from` (a graph is rebuilt from its vectors, in row order)."""
    import faiss

    first = pieces[0]
    stores = check_mergeable(pieces)
    meta = first.settings
    kind = kinds.Kind(meta.get("type", "factory"), meta["factory"], meta.get("nprobe"))
    store = RecordStore(work / STORE_FILE, create=True)  # no transaction: ATTACH refuses one; `work` is atomic
    try:
        offset = 0
        merged = None
        keep = meta.get("rerank") in DTYPES and first.vectors is not None
        kept = VectorFile.named(work, first.dimension, meta["rerank"]) if keep else None
        starts: list[tuple[Path, int]] = []  # each piece copied so far, and its first row
        for piece in pieces:
            copy_rows(store, piece, offset, starts)
            starts.append((piece.path, offset))
            if kinds.positional(piece.index):
                if merged is None:
                    merged = kinds.create(kind, first.dimension)
                for start in range(0, piece.row_count, 50_000):
                    rows = np.arange(start, min(piece.row_count, start + 50_000))
                    merged.add(np.stack([piece.index.reconstruct(int(r)) for r in rows]))
            elif merged is None:
                merged = faiss.clone_index(piece.index)
                if offset:
                    raise RuntimeError("the first piece starts at row 0")
            else:
                merged.merge_from(piece.index, offset)
            if kept is not None and piece.vectors is not None:  # check_mergeable: every piece keeps them
                for start, block in piece.vectors.chunks(piece.row_count):
                    kept.append(block, at_row=offset + start)
            offset += piece.row_count
        write_faiss(merged, work / INDEX_FILE)
        if kept is not None:
            kept.sync()
        count = sum(piece.count for piece in pieces)
        digest = hashlib.sha256("".join(s.state.get("data_sha256", "") for s in stores).encode()).hexdigest()
        store.set_state(
            faiss_file=INDEX_FILE,
            next_row=offset,
            count=count,
            vector_rows=offset if keep else 0,
            generation=0,
            data_sha256=digest,
        )
    finally:
        store.close()
    return count, kind


def check_mergeable(pieces: list[VectorIndex]) -> list[RecordStore]:
    """The pieces' record stores, once they are known to fit together; a SembedError saying why they do not."""
    first = pieces[0]
    for piece in pieces[1:]:
        for what, mine, theirs in (
            ("holds vectors of", first.metadata.get("embedding_model"), piece.metadata.get("embedding_model")),
            ("has dimension", first.dimension, piece.dimension),
            ("was trained as", first.settings.get("trained_sha256"), piece.settings.get("trained_sha256")),
        ):
            if mine != theirs:
                shown = (
                    (mine, theirs)
                    if what != "was trained as"
                    else (f"quantiser {str(mine)[:12]}", f"quantiser {str(theirs)[:12]}")
                )
                raise SembedError(
                    f"cannot merge: '{first.path}' {what} {shown[0]}, but '{piece.path}' {shown[1]}",
                    "merge pieces built with one model and one trained quantiser (sembed index --trained DIR)",
                )
    stores = []
    for piece in pieces:
        if not isinstance(piece.store, RecordStore):
            raise SembedError(
                f"cannot merge '{piece.path}': written by sembed 0.1",
                "convert it first: sembed index --update DIR < /dev/null",
            )
        stores.append(piece.store)
    for piece in pieces[1:]:
        if first.vectors is not None and piece.vectors is None:  # the merged index keeps the first's vectors
            raise SembedError(
                f"cannot merge: '{first.path}' keeps vectors to re-rank with, but '{piece.path}' has none",
                "build every piece with the same --rerank",
            )
    return stores


def copy_rows(store: RecordStore, piece: VectorIndex, offset: int, starts: list[tuple[Path, int]]) -> None:
    """The piece's rows (and removed rows) into `store`, numbered from `offset`; a shared id is an error naming
    both pieces."""
    db = store.db
    source = piece.store
    assert isinstance(source, RecordStore)  # check_mergeable refused sembed 0.1 pieces
    db.execute("ATTACH DATABASE ? AS piece", (str(source.path),))
    try:
        shared = db.execute(
            "SELECT id, (SELECT row FROM main.rows WHERE main.rows.id = piece.rows.id) FROM piece.rows "
            "WHERE id IN (SELECT id FROM main.rows) ORDER BY row LIMIT 1"
        ).fetchone()
        if shared is not None:
            earlier = next(path for path, start in reversed(starts) if shared[1] >= start)
            raise SembedError(
                f"cannot merge: '{piece.path}' holds the id {shared[0]}, which '{earlier}' holds too",
                "merge indexes of disjoint parts of the corpus",
            )
        db.execute(
            "INSERT INTO rows (row, id, hash, payload) SELECT row + ?, id, hash, payload FROM piece.rows", (offset,)
        )
        db.execute("INSERT INTO removed (row) SELECT row + ? FROM piece.removed", (offset,))
    finally:
        db.execute("DETACH DATABASE piece")
