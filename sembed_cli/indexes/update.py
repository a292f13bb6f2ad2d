"""`sembed index --update DIR`: records applied to an index in place, without the corpus in RAM.

`update_index` decides the model (the index's own unless given), reads the records into entries and writes the
new metadata; `update_in_place` finds each record's id in the store: a new id gets a new row, a changed record
replaces its row (the old one removed, a new one added), an unchanged one is skipped (not embedded); with `sync`,
rows the input no longer holds are removed. Removed rows join the store's `removed`, skipped at search. New rows
stay fresh (fresh.py: searched exactly beside the FAISS file, which the update leaves as it is) while they are
few; the update that would keep too many, or whose removed rows reach compaction's share, reads FAISS whole,
folds the fresh rows in (`fold`), drops the removed rows (`remove_ids`; a graph, which cannot, is compacted:
compaction.py) and writes the next generation's file. The trained quantiser stays (`--retrain` rebuilds), so an
update answers as a full build with that quantiser would. It runs in one SQLite transaction under the index's lock: a
failure rolls back and cuts the vector file back, leaving the old index whole. An index of sembed 0.1 is converted
first (`legacy`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np

from ..artifacts import building, describe, exclusive
from ..io import Rejects, commit, sync_file, temporary_sibling, write_bytes_atomic
from ..io.atomic_files import disk_full_as_error, disk_full_named, json_bytes
from ..io.checksums import bytes_checksum, file_checksum
from ..models.embedder import model_path
from . import compaction, fresh, keyword, kinds, recall
from .build import build_from_index
from .directory import (
    INDEX_FILE,
    METADATA_FILE,
    PREVIOUS_SUM,
    STATE_METADATA,
    SUM,
    VectorIndex,
    seal,
    sum_key,
)
from .entries import CONTENT_IDS, GIVEN_IDS, Entry, EntryReader, vector_hash_of
from .legacy import convert_legacy
from .model_choice import ModelCheck, ModelChoice, TextEmbedder
from .staging import Changes, Embed, IndexSettings, IndexSource, add_rows_read, read_entries, stage, write_faiss
from .store import FILE as STORE_FILE
from .store import RecordStore
from .vector_file import VectorFile

log = logging.getLogger(__name__)

UPDATE_VECTORS = "vectors.new.f32"  # where sembed before fresh rows put an update's new vectors (index keeps none)


@dataclass(frozen=True)
class UpdateChoices:
    """What an update may change: the keys and model (else the index's own), mirroring, retraining."""

    given: frozenset[str]
    sync: bool = False
    retrain: bool = False


def update_index(
    source: IndexSource,
    directory: Path,
    settings: IndexSettings,
    choice: ModelChoice,
    choices: UpdateChoices,
    npy: Path | None = None,
) -> dict:
    """Apply the records of `source` to the index at `directory` (see update_in_place); returns its new
    metadata. An index of sembed 0.1 is converted first."""
    with exclusive(directory):
        loaded = VectorIndex.load(directory, writable=True)
        if loaded.legacy:
            loaded = convert_legacy(loaded)
        repair_metadata(loaded)
        try:
            return _update(loaded, source, settings, choice, choices, npy)
        finally:
            loaded.close()


def _update(
    loaded: VectorIndex,
    source: IndexSource,
    settings: IndexSettings,
    choice: ModelChoice,
    choices: UpdateChoices,
    npy: Path | None,
) -> dict:
    built = loaded.settings
    given = choices.given
    settings = replace(
        settings,
        **{
            key: built[key]
            for key in ("text_key", "embedding_key", "id_key", "doc_key")
            if key in built and key not in given
        },
    )
    # the keyword index as given, else as the index keeps it (one built before the choice gets one, as before)
    settings = replace(settings, keywords=keyword.wanted(built) if settings.keywords is None else settings.keywords)
    if "model" not in given:
        identity = loaded.identity
        name = loaded.metadata.get("model_path") or loaded.metadata["model"]
        if identity is not None and model_path(identity.name) is not None:
            name = identity.name
        choice = replace(choice, name=name)
    if "backend" not in given and "quantize" not in given:  # embedded as the index was
        choice = replace(
            choice,
            backend=built.get("backend", choice.backend),
            quantize="int8" if built.get("quantization") else choice.quantize,
        )
    reader = EntryReader(
        settings.text_key,
        settings.embedding_key,
        settings.id_key,
        npy,
        loaded.dimension,
        given_ids=built.get("ids", GIVEN_IDS) == GIVEN_IDS,
        doc_key=settings.doc_key,
        content_ids=built.get("ids") == CONTENT_IDS,  # the index's ids stay as they were made: never re-keyed
        vector_hash=vector_hash_of(built),  # and its hashes: an unchanged record stays unchanged
    )
    check = ModelCheck(reader, choice, loaded)
    embedder = TextEmbedder(choice, check)
    entries = read_entries(source, reader, check)
    previous_count = loaded.count

    written: list[dict] = []

    def metadata(updated: Updated) -> dict:
        embedder.report()  # the warnings before sembed.json, which records them
        if source.summary():
            log.warning(source.summary())
        meta = dict(loaded.metadata)
        previous = meta.get("data", {})
        fresh = describe("sembed index", {}, {})
        meta.update(
            count=updated.count,
            command_line=fresh["command_line"],
            created=fresh["created"],
            versions=fresh["versions"],
        )
        changes = updated.changes
        meta["data"] = {
            **previous,
            "input": source.rejects.name,
            # the counts are of this input, as a build's are of its own: what the index holds is `count`
            "records": changes.added + changes.replaced + changes.unchanged + changes.repeated,
            "skipped": len(source.rejects.skipped),
            "repeated": changes.repeated,
            "sha256": updated.data_sha256,
            "update": {
                "previous_count": previous_count,
                **updated.changes.describe(),
                "previous_sha256": previous.get("sha256"),
            },
        }
        meta["settings"] = {**built, keyword.SETTING: settings.keywords}
        if changes.removed or changes.added:  # the recall measured again after the rows it changed
            # fresh rows are scored exactly, so they change the measured recall only once folded into FAISS
            changed = changes.folded + len(changes.removed) + changes.compacted
            meta["settings"].update(recall.measure_update(loaded, built, settings.seed, changed))
        written.append(meta)
        return meta

    updated = update_in_place(loaded, entries, embedder, source.rejects, choices.sync, settings, metadata)
    if reader.content_ids and reader.documents:
        log.info(
            f"note: {reader.documents} record(s) name their document ({settings.doc_key}), but {loaded.path} keys "
            f"records by their content alone (it was built before sembed kept one entry per document and sentence); "
            f"rebuild it with `sembed index ... -o {loaded.path} --force` to keep them apart"
        )
    changes = updated.changes
    log.info(
        f"{changes.added} new, {changes.replaced} changed, {changes.unchanged} unchanged record(s)"
        + (f", {changes.synced} removed (not in the input)" if choices.sync else "")
        + (f", {changes.repeated} repeated (indexed once)" if changes.repeated else "")
        + f"; {updated.count} in all"
    )
    if embedder.count:
        log.info(f"embedded {embedder.count} texts")
    if choices.retrain:
        return rebuild(loaded.path, replace(settings, requested_type=built.get("requested_type", "auto")))
    return written[-1]


def rebuild(directory: Path, settings: IndexSettings) -> dict:
    """The index at `directory` built afresh from its own rows and vectors (new cells; rows renumbered)."""
    old = VectorIndex.load(directory, writable=True)
    try:
        with building(directory, force=True) as work, disk_full_named(work, directory, STORE_FILE):
            built = build_from_index(work, old, settings)
            meta = dict(old.metadata)
            fresh = {**meta, "count": built.count, "type": built.kind.name}
            fresh["settings"] = {
                **meta.get("settings", {}),
                **built.kind.describe(),
                "trained_sha256": built.trained_sha256,
                "rerank": settings.rerank if built.kind.lossy else "none",
                keyword.SETTING: settings.keywords is not False,
                **built.recall,
            }
            fresh["data"] = {**meta.get("data", {}), "sha256": built.data_sha256, "rebuilt": True}
            seal(work, fresh)
    finally:
        old.close()
    log.info(f"rebuilt {directory}: {built.count} vectors, {built.kind.name} index ({built.kind.factory})")
    return fresh


# --- the rows, the vectors and FAISS, in one transaction ----------------------------------------------------


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
    settings: IndexSettings,
    write_metadata: Callable[[Updated], dict],
) -> Updated:
    """Apply `entries` to the index `loaded` (opened writable, its lock held): one transaction, committed with
    the new FAISS file, the checksums and sembed.json (written under a hidden name before the commit, renamed in
    after it; the state holds it too, so it never disagrees with the rows); on any failure the index stays as it
    was and nothing is left. `settings`: the batch size and whether the index keeps its keyword index (added or
    dropped here where that changes). `write_metadata(updated)` gives sembed.json. The FAISS file of the
    generation before stays until the next update, for a search that read the state just before this commit."""
    store, path = loaded.store, loaded.path
    assert isinstance(store, RecordStore)
    committed = store.number("vector_rows")
    committed_rows = store.next_row
    first_fresh = loaded.fresh_start
    kept = loaded.vectors
    new_files: list[Path] = []
    metadata_file = path / METADATA_FILE
    hidden_metadata = temporary_sibling(metadata_file)
    previous_faiss = store.state.get("faiss_file", INDEX_FILE)
    on_disk = store.state.get(sum_key(METADATA_FILE))
    fresh_file = loaded.fresh
    stays_fresh = False

    def vectors(dim: int) -> VectorFile:
        """Where the new rows' vectors go: the kept vectors, else the fresh rows' own file (fresh.py)."""
        nonlocal fresh_file
        if kept is not None:
            kept.cut(committed)
            return kept
        if fresh_file is None:
            fresh_file = VectorFile(path / fresh.file_name(first_fresh), dim, "float32", base=first_fresh)
            fresh_file.remove()  # what a killed update left under this name
            new_files.append(fresh_file.path)
        fresh_file.cut(committed_rows)
        loaded.fresh = fresh_file
        return fresh_file

    store.begin()
    try:
        with disk_full_as_error(path / STORE_FILE):
            keyword.keep(store.db, loaded.settings.get("text_key", "text"), settings.keywords is not False)
            staging = stage(store, entries, vectors, embed, rejects, settings.batch_size, sync)
        changes = staging.changes
        faiss_file = previous_faiss
        sums: dict[str, str] = {}
        if staging.next_row > first_fresh:
            loaded.fresh_from = first_fresh  # rows FAISS lacks: vectors_of reads them from the fresh rows' file
        if changes.removed or staging.next_row > staging.first_new:
            graph = kinds.hnsw_of(loaded.index) is not None
            # every search skips the removed rows: FAISS's by a selector, the fresh rows' in their scan
            store.mark_removed(changes.removed)
            removed = np.asarray(store.removed(), dtype=np.int64)
            held = removed[removed < first_fresh]  # removed rows FAISS still holds
            stays_fresh = fresh.keeps(staging.next_row - first_fresh, staging.next_row) and not compaction.due(
                len(held), loaded.index.ntotal
            )
            if stays_fresh:
                log.debug(f"{staging.next_row - first_fresh} fresh rows, searched beside {previous_faiss}")
            else:
                index = loaded.faiss_in_memory()
                changes.folded = fold(loaded, first_fresh, staging.next_row)
                if not graph and len(held):  # inverted lists and flat codes remove by id
                    index.remove_ids(held)
                    store.clear_removed()
                held_count = len(store.removed()) if graph else 0
                if compaction.due(held_count, index.ntotal):
                    index = loaded.index = compaction.compact(loaded, loaded.settings.get("seed", 0), staging.next_row)
                    store.clear_removed()
                    changes.compacted = held_count
                generation = store.number("generation") + 1
                faiss_file = f"index.{generation}.faiss"
                new_files.append(path / faiss_file)
                sums[sum_key(faiss_file)] = write_faiss(index, path / faiss_file)
                store.forget_state(SUM + "index")  # the checksums of earlier generations' files
                store.set_state(faiss_file=faiss_file, previous_faiss=previous_faiss, generation=generation)
            count = store.count + changes.added + changes.replaced - len(changes.removed)
            store.forget_state(SUM + "fresh.")
            store.set_state(
                next_row=staging.next_row,
                count=count,
                vector_rows=staging.next_row if kept is not None else 0,
                data_sha256=staging.digest.hexdigest(),
                **{fresh.STATE: first_fresh if stays_fresh else staging.next_row},
            )
            if stays_fresh and fresh_file is not None:
                fresh_file.sync()
                size = (staging.next_row - fresh_file.base) * fresh_file.row_bytes
                sums[sum_key(fresh_file.path.name)] = file_checksum(fresh_file.path, size)
        if kept is not None:
            kept.sync()
            size = (store.number("vector_rows") - kept.base) * kept.row_bytes
            sums[sum_key(kept.path.name)] = file_checksum(kept.path, size)  # the rows this commit counts
        updated = Updated(changes, store.count, store.state.get("data_sha256", ""), faiss_file)
        metadata = with_warnings(write_metadata(updated))
        data = json_bytes(metadata)
        with disk_full_as_error(metadata_file):
            hidden_metadata.write_bytes(data)
            sync_file(hidden_metadata)
        if on_disk is None and metadata_file.exists():
            on_disk = bytes_checksum(metadata_file.read_bytes())
        store.set_state(
            **sums,
            **{
                sum_key(METADATA_FILE): bytes_checksum(data),
                PREVIOUS_SUM + METADATA_FILE: on_disk or "",
                STATE_METADATA: data.decode("utf-8"),
            },
        )
        with disk_full_as_error(path / STORE_FILE):
            store.commit()
    except BaseException:
        store.rollback()
        if kept is not None:
            kept.cut(committed)
        if fresh_file is not None and fresh_file.path not in new_files:
            fresh_file.cut(committed_rows)
        for file in (*new_files, hidden_metadata):
            file.unlink(missing_ok=True)
        raise
    commit(hidden_metadata, metadata_file)  # a rename: no disk space needed (a kill before it: `repair_metadata`)
    remove_old_generations(path, store.state)
    return updated


def fold(loaded: VectorIndex, first_fresh: int, next_row: int) -> int:
    """The fresh rows first_fresh .. next_row - 1 into FAISS (read whole: `faiss_in_memory`), inside the update's
    transaction: a graph whose rows are its positions takes them all (removed ones stay in `removed`); an index
    of ids takes the live ones, and their removed rows are forgotten (FAISS never held them). Returns how many
    rows it added."""
    rows = np.zeros(0, dtype=np.int64)
    if next_row > first_fresh:
        store = cast(RecordStore, loaded.store)
        index = loaded.index
        if kinds.positional(index):
            rows = np.arange(first_fresh, next_row, dtype=np.int64)
        else:
            rows = np.fromiter(store.row_numbers(), dtype=np.int64)
            rows = rows[rows >= first_fresh]
            store.clear_removed(first_fresh)
        add_rows_read(index, rows, lambda chunk: loaded.vectors_of(chunk, next_row))
    loaded.fresh_from, loaded.fresh = None, None  # FAISS holds every row now
    return len(rows)


def with_warnings(metadata: dict) -> dict:
    from .. import console

    return {**metadata, "warnings": list(console.state.warnings)} if console.state.warnings is not None else metadata


def remove_old_generations(path: Path, state: dict) -> None:
    """The FAISS files of generations before the state's (its own and the one before, which a search that read
    the state just before the last commit may still be opening), fresh rows' files of earlier folds (a search
    that finds its file gone reads the state again), and those of killed updates."""
    keep = {state.get("faiss_file", INDEX_FILE), state.get("previous_faiss", "")}
    first_fresh = int(state.get(fresh.STATE, state.get("next_row", 0)))
    if first_fresh < int(state.get("next_row", 0)):
        keep.add(fresh.file_name(first_fresh))
    for file in (*path.glob("index*.faiss"), *path.glob("fresh.*.f32")):
        if file.name not in keep:
            file.unlink(missing_ok=True)


def repair_metadata(loaded: VectorIndex) -> None:
    """Under the index's lock: put back the sembed.json of the last commit where an update was killed between its
    commit and the rename of sembed.json (the state holds it), and remove what killed updates left."""
    from ..artifacts import remove_dead_runs

    store, path = loaded.store, loaded.path
    assert isinstance(store, RecordStore)
    remove_dead_runs(path / METADATA_FILE)
    (path / UPDATE_VECTORS).unlink(missing_ok=True)  # a killed update's new vectors (this run holds the lock)
    recorded, data = store.state.get(sum_key(METADATA_FILE)), store.state.get(STATE_METADATA)
    if recorded is None or data is None:
        return
    file = path / METADATA_FILE
    stale = not file.exists() or bytes_checksum(file.read_bytes()) != recorded
    if stale and bytes_checksum(data.encode("utf-8")) == recorded:
        log.info(f"restoring {file} from the last commit (an update was killed before it renamed it)")
        write_bytes_atomic(file, data.encode("utf-8"))
    remove_old_generations(path, store.state)
