"""`sembed index merge PIECE... -o DIR`: one index from indexes of disjoint parts of a corpus.

The pieces hold vectors of one model, built with one trained quantiser (`index --trained DIR`; flat and graph
indexes need none) and share no id; `merge_into` numbers their rows piece after piece and joins the FAISS indexes
(FAISS `merge_from`; a graph is rebuilt from its vectors, in row order).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np

from ..artifacts import building, describe, write_metadata
from ..errors import SembedError
from ..io.atomic_files import disk_full_named
from . import compaction, keyword, kinds, recall
from .build import trained_digest
from .directory import INDEX_FILE, METADATA_FILE, VectorIndex, seal
from .entries import BLAS_NORM, vector_hash_of
from .staging import add_rows_read, write_faiss
from .store import FILE as STORE_FILE
from .store import RecordStore, row_check
from .vector_file import DTYPES, VectorFile

log = logging.getLogger(__name__)


def merge_indexes(pieces: list[Path], output: Path, force: bool = False) -> dict:
    """One index at `output` holding every piece's rows, piece after piece (merge_into)."""
    if len({piece.resolve() for piece in pieces}) < len(pieces):
        raise SembedError("the same piece twice", "merge each index once")
    loaded = [VectorIndex.load(piece, whole=True) for piece in pieces]  # read-only: a piece may be on a shared mount
    try:
        with building(output, force=force) as work, disk_full_named(work, output, STORE_FILE):
            keywords = any(keyword.wanted(piece.settings) for piece in loaded)  # unless every piece declined it
            count, kind = merge_into(work, loaded, keywords)
            meta = dict(loaded[0].metadata)
            fresh = describe("sembed index merge", {}, {})
            meta.update(
                count=count,
                command=fresh["command"],
                command_line=fresh["command_line"],
                created=fresh["created"],
                versions=fresh["versions"],
            )
            meta["data"] = {
                "pieces": [
                    {
                        "path": str(piece.path),
                        "count": piece.count,
                        "sha256": piece.metadata.get("data", {}).get("sha256"),
                    }
                    for piece in loaded
                ]
            }
            meta["settings"] = {**meta["settings"], keyword.SETTING: keywords}
            write_metadata(work, meta, METADATA_FILE)  # what the measurement's load reads; sealed once, after
            meta["settings"] = {**meta["settings"], **measured_again(work, meta)}
            seal(work, meta)
    finally:
        for piece in loaded:
            piece.close()
    log.info(f"wrote {output}: {count} vectors from {len(pieces)} pieces, {kind.name} index")
    return meta


def measured_again(work: Path, meta: dict) -> dict:
    """The merged index's recall measured afresh (indexes/recall.py): its pieces' breadths were tuned to their own
    sizes, and the whole is larger. An index whose pieces were not measured stays without."""
    with VectorIndex.load(work) as merged:
        settings = meta["settings"]
        return recall.measure_update(merged, settings, settings.get("seed", 0), merged.count, afresh=True)


def merge_into(work: Path, pieces: list[VectorIndex], keywords: bool = True) -> tuple[int, kinds.Kind]:
    """Join `pieces` (same model, dimension and trained quantiser; disjoint ids) into a new index in `work`:
    rows numbered piece after piece, FAISS `merge_from` (a graph is rebuilt from its vectors, in row order);
    with the keyword index of their texts where `keywords`."""
    import faiss

    first = pieces[0]
    stores = check_mergeable(pieces)
    meta = first.settings
    kind = kinds.Kind(meta.get("type", "factory"), meta["factory"], meta.get("nprobe"))
    text_key = meta.get("text_key", "text")
    # no transaction (ATTACH refuses one; `work` is atomic); the keyword index is filled once the rows are in, as
    # a build's is, not kept in step row by row
    store = RecordStore(work / STORE_FILE, create=True, text_key=text_key, fts=False)
    try:
        offset = 0
        merged = None
        keep = meta.get("rerank") in DTYPES and first.vectors is not None
        kept = VectorFile.named(work, first.dimension, meta["rerank"]) if keep else None
        starts: list[tuple[Path, int]] = []  # each piece copied so far, and its first row
        for piece in pieces:
            copy_rows(store, piece, offset, starts)
            starts.append((piece.path, offset))
            if kinds.hnsw_of(piece.index) is not None:
                if merged is None:
                    merged = kinds.create(kind, first.dimension)
                    if not all(kinds.positional(p.index) for p in pieces):  # a compacted piece lacks purged rows
                        merged = faiss.IndexIDMap2(merged)
                held = compaction.held_rows(piece.index, piece.fresh_start)
                add_rows_read(merged, held, piece.index.reconstruct_batch, offset)
            elif merged is None:
                merged = faiss.clone_index(piece.index)
                if offset:
                    raise RuntimeError("the first piece starts at row 0")
            else:
                merged.merge_from(piece.index, offset)
            add_fresh(merged, piece, offset, store)
            if kept is not None and piece.vectors is not None:  # check_mergeable: every piece keeps them
                for start, block in piece.vectors.chunks(piece.row_count):
                    kept.append(block, at_row=offset + start)
            offset += piece.row_count
        if keywords:
            keyword.install(store.db, text_key, announce=False)
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


def add_fresh(merged, piece: VectorIndex, offset: int, store: RecordStore) -> None:
    """The piece's fresh rows (FAISS lacks them: fresh.py) into `merged`, numbered from `offset`: all of them into
    a graph whose rows are its positions (the removed ones stay removed), the live ones by id otherwise (their
    removed rows forgotten: `merged` never holds them)."""
    first, stop = piece.fresh_start, piece.row_count
    if first >= stop:
        return
    rows = np.arange(first, stop, dtype=np.int64)
    if not kinds.positional(merged):
        rows = np.setdiff1d(rows, piece.removed)
        store.clear_removed(first + offset)  # this piece's are the last rows copied
    add_rows_read(merged, rows, piece.vectors_of, offset)


def check_mergeable(pieces: list[VectorIndex]) -> list[RecordStore]:
    """The pieces' record stores, once they are known to fit together; a SembedError saying why they do not."""
    first = pieces[0]
    trained = quantisers(pieces)
    for piece, quantiser in zip(pieces[1:], trained[1:]):
        for what, mine, theirs in (
            ("holds vectors of", first.metadata.get("embedding_model"), piece.metadata.get("embedding_model")),
            ("has dimension", first.dimension, piece.dimension),
            ("was trained as", trained[0], quantiser),
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
    for piece in pieces[1:]:
        mine, theirs = vector_hash_of(first.settings), vector_hash_of(piece.settings)
        if mine != theirs:  # an update of the whole would see one side's rows as changed
            raise SembedError(
                f"cannot merge: '{first.path}' hashes its vectors after a {mine}, but '{piece.path}' after a {theirs}",
                "build every piece with one sembed version (a piece built before 2026-11-29 hashes after a "
                f"{BLAS_NORM}): build the older ones again from their records",
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


def quantisers(pieces: list[VectorIndex]) -> list[str | None]:
    """The pieces' trained digests as their builds recorded them; where those differ, made again from their FAISS
    indexes, once a piece (build.trained_digest): a piece built with --trained DIR before 2026-11-29 recorded the
    search breadth of DIR as loaded, and so differed from DIR's own digest and from pieces built since."""
    recorded = [piece.settings.get("trained_sha256") for piece in pieces]
    if len(set(recorded)) > 1 and None not in recorded:
        return [trained_digest(piece.index) for piece in pieces]
    return recorded


def copy_rows(store: RecordStore, piece: VectorIndex, offset: int, starts: list[tuple[Path, int]]) -> None:
    """The piece's rows (and removed rows) into `store`, numbered from `offset`; a shared id is an error naming
    both pieces."""
    db = store.db
    source = piece.store
    assert isinstance(source, RecordStore)  # check_mergeable refused sembed 0.1 pieces
    db.execute("ATTACH DATABASE ? AS piece", (source.uri,))  # read-only, as the piece was opened
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
        # the pieces' own checks, whatever their layout: damage in a piece stays found (a row without: made now)
        db.create_function("row_check", 3, row_check, deterministic=True)
        check = f"COALESCE({source.check_of('piece.')}, row_check(id, hash, payload))"
        columns = f"row + ?, id, hash, payload, {check}"
        db.execute(f"INSERT INTO rows (row, id, hash, payload, crc) SELECT {columns} FROM piece.rows", (offset,))
        db.execute("INSERT INTO removed (row) SELECT row + ? FROM piece.removed", (offset,))
    finally:
        db.execute("DETACH DATABASE piece")
