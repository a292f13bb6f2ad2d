"""`sembed index -o DIR`: a new index from a stream of records, without the corpus in RAM.

`build_index` decides the model (`model_choice`), reads the records into entries and writes the metadata;
`build_into` streams the entries into the store (SQLite) and their unit vectors into a file on disk, then chooses
the FAISS index by the count (`kinds.choose`), trains it once on a seeded sample read from that file, and adds the
rows a chunk at a time. `build_from_index` builds afresh from an index's own rows and vectors (`index --update
--retrain`, and the conversion of an index of sembed 0.1).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..artifacts import building, describe
from ..errors import SembedError
from ..io import Rejects
from ..io.atomic_files import disk_full_named
from ..models.embedder import model_path
from . import auto, keyword, kinds, recall
from .directory import INDEX_FILE, VectorIndex, payload_record, seal
from .entries import Entry, EntryReader, content_digest
from .model_choice import ModelCheck, ModelChoice, TextEmbedder, query_backend
from .staging import Changes, Embed, IndexSettings, IndexSource, add_rows, read_entries, stage, write_faiss
from .store import FILE as STORE_FILE
from .store import RecordStore
from .vector_file import VectorFile

log = logging.getLogger(__name__)

BUILD_VECTORS = "vectors.build.f32"  # a build's vectors before the index type is known


def build_index(
    source: IndexSource,
    output: Path,
    settings: IndexSettings,
    choice: ModelChoice,
    npy: Path | None = None,
    force: bool = False,
    trained_from: Path | None = None,
) -> dict:
    """A new index at `output` from the records of `source`; returns its metadata."""
    trained = VectorIndex.load(trained_from, whole=True) if trained_from is not None else None
    reader = EntryReader(settings.text_key, settings.embedding_key, settings.id_key, npy, doc_key=settings.doc_key)
    check = ModelCheck(reader, choice, None)
    embedder = TextEmbedder(choice, check)
    entries = read_entries(source, reader, check)
    try:
        with building(output, force=force) as work, disk_full_named(work, output, STORE_FILE):
            built = build_into(work, entries, settings, embedder, source.rejects, trained)
            embedder.report()
            if source.summary():
                log.warning(source.summary())
            metadata = index_metadata(
                built,
                check.identity,
                settings,
                reader,
                query_backend(embedder, reader, choice),
                source.rejects,
                choice.name,
            )
            seal(work, metadata)
    finally:
        if trained is not None:
            trained.close()
    log.info(
        f"wrote {output}: {built.count} vectors of {built.dimension} dimensions, {built.kind.name} index "
        f"({built.kind.factory})"
        + (f"; {built.changes.repeated} repeated record(s) indexed once" if built.changes.repeated else "")
    )
    return metadata


def index_metadata(
    built: Built, identity, settings: IndexSettings, reader: EntryReader, backend: dict, rejects: Rejects, model: str
) -> dict:
    from ..models import model_identity

    kind = built.kind
    rerank = settings.rerank if kind.lossy else "none"
    described = {
        **kind.describe(),
        **settings.describe(),
        "rerank": rerank,
        "metric": "inner product of unit vectors (cosine)",
        "source": reader.source,
        "ids": reader.ids,
        **({"vector_hash": reader.vector_hash} if reader.uses_vectors else {}),
        **backend,
        "trained_sha256": built.trained_sha256,
        "bytes_per_vector": kinds.bytes_per_vector(
            kind, built.dimension, 2 * built.dimension if rerank == "float16" else 4 * built.dimension
        ),
    }
    if kind.name == "hnsw" or "HNSW" in kind.factory.split(",")[-1]:
        described.update(
            {"m": kinds.HNSW_M, "ef_construction": kinds.HNSW_EF_CONSTRUCTION, "ef_search": kinds.HNSW_EF_SEARCH}
        )
    described.update(built.recall)
    data = {
        "input": rejects.name,
        "records": built.count + built.changes.repeated,
        "skipped": len(rejects.skipped),
        "repeated": built.changes.repeated,
        "sha256": built.data_sha256,
    }
    name = identity.name if identity is not None else model
    return describe(
        "sembed index",
        data,
        described,
        **{model_identity.FIELD: str(identity)},
        model=name,
        model_path=model_path(name),
        dimension=built.dimension,
        type=kind.name,
        count=built.count,
        seed=settings.seed,
    )


# --- the rows, the vectors and FAISS -----------------------------------------------------------------------


@dataclass
class Built:
    """What `build_into` made: the rows' changes, the FAISS recipe and the counts, for the metadata."""

    changes: Changes
    kind: kinds.Kind
    count: int
    dimension: int
    trained_sha256: str
    data_sha256: str
    recall: dict = field(default_factory=dict)  # the measured recall and the breadth it set (indexes/recall.py)


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
    store = RecordStore(work / STORE_FILE, create=True, text_key=settings.text_key, fts=False)
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
        if settings.keywords is not False:  # filled from the rows in one pass, not kept in step row by row
            keyword.install(store.db, settings.text_key, announce=False)
        count = staging.next_row
        if count == 0 or staging.vectors is None:
            skipped = f" ({len(rejects.skipped)} skipped as bad records)" if rejects.skipped else ""
            raise SembedError(f"no records to index in {rejects.name}{skipped}")
        raw = staging.vectors
        dim = raw.dim
        kind, index = fresh_index(trained, settings, count, dim, raw)
        if kinds.needs_training(index):
            train_from_file(index, raw, count, settings.seed)
        trained_sha256 = trained_digest(index)
        keep = kind.lossy and settings.rerank != "none"
        kept = VectorFile.named(work, dim, settings.rerank) if keep else None
        add_rows(index, raw, 0, count, kept)  # the kept vectors written in the same pass over the rows
        if kept is not None:
            kept.sync()
        measured = recall.measure_build(index, raw, kept, count, settings) if settings.recall else {}
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
    return Built(staging.changes, kind, count, dim, trained_sha256, staging.digest.hexdigest(), measured)


def fresh_index(trained: VectorIndex | None, settings: IndexSettings, count: int, dim: int, raw: VectorFile):
    """(kind, empty index): a copy of `trained`'s trained quantiser and codebooks, or a new index of the type."""
    import faiss

    if trained is None:
        if settings.requested_type == "auto":  # measured on a sample of the rows (auto.py)
            kind = auto.choose(raw, count, settings)
        else:
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
    kinds.training_breadth(index)  # rows added as the build that trained it added its own, not at its search breadth
    return kind, index


def train_from_file(index, vectors: VectorFile, count: int, seed: int) -> None:
    """Train on a seeded sample of the rows (kinds.training_size of them), read from the file: never all rows."""
    size = kinds.training_size(index, count)
    rows = np.sort(np.random.default_rng(seed).choice(count, size=size, replace=False))
    sample = vectors.rows(rows)
    log.info(f"training the {kinds.unwrap(index).__class__.__name__} on {size} sampled vectors")
    kinds.train(index, sample, seed)


def trained_digest(index) -> str:
    """A hash of the trained, empty index: pieces with equal digests share one quantiser and codebooks. The search
    breadth (nprobe, efSearch) is no part of the training, and a loaded index has its own (`--trained DIR` copies
    DIR's as loaded), so it is hashed at the breadth training leaves (`kinds.training_breadth`: a digest made as
    an index is trained is the same as before 2026-11-29, when a piece built with --trained DIR hashed DIR's
    breadth as loaded and could not be merged with DIR itself)."""
    import faiss

    empty = faiss.clone_index(index)
    empty.reset()
    kinds.training_breadth(empty)
    return hashlib.sha256(faiss.serialize_index(empty).tobytes()).hexdigest()


# --- a build from an index's own rows (a rebuild, a conversion) ----------------------------------------------


def build_from_index(work: Path, old: VectorIndex, settings: IndexSettings) -> Built:
    """A new index in the empty directory `work` from every live row of `old` and its vectors (no model, nothing
    embedded), with the n-gram regression taste saved beside `old` (the caller writes sembed.json)."""
    built = build_into(work, entries_of(old), settings, None, Rejects(str(old.path)))
    copy_regression(old.path, work)
    return built


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
    text = payload.get(index.settings.get("text_key", "text"))
    from_vectors = index.settings.get("source") == "embeddings"
    return content_digest(text if isinstance(text, str) else None, vector if from_vectors else None)


def copy_regression(source: Path, work: Path) -> None:
    from ..models import ngram_classifier

    saved = source / ngram_classifier.FILE
    if saved.exists():
        shutil.copy(saved, work / saved.name)
