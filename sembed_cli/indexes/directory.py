"""A loaded index directory: the FAISS index (memory-mapped), its rows in SQLite, and search with re-ranking.

Loading reads the metadata and the store's state, and maps the FAISS file: nothing that grows with the corpus is
read before the first query, so start-up does not grow with it. `search` asks FAISS for the nearest rows (skipping
the rows an update removed; a lossy index RERANK_FACTOR x k candidates, re-ranked by exact cosine from the vectors
kept beside it), merged with the nearest of the fresh rows FAISS does not hold yet, scored exactly (fresh.py);
`records` fetches the ids and payloads of the rows a search returns.

A search beside an update reads one commit: the store's state is read inside the read transaction every later
read of rows sees, the FAISS file it names is opened then (an update keeps the previous generation's file, and a
file that vanished all the same, or a directory replaced meanwhile, is a reason to read the state again, not an
error), and the kept vectors are read only below the rows that commit counts. sembed.json is the commit's too:
an update records it in the state (`metadata`), which the loader prefers to the file.

Damage is an error, never an answer: the state records a checksum of the FAISS file, the kept vectors and
sembed.json (io.checksums); a size is compared at load, and the bytes are hashed in a thread started at load and
joined before the first answer (`verified`), so the hash overlaps the model's loading (docs/unattended.md gives
its measured cost). Rows carry their own checks (store.py). `check` verifies everything, SQLite included.

Indexes written by sembed 0.1 (records.jsonl beside index.faiss) load as before, read whole: they are small;
`sembed index --update` converts one.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from ..errors import SembedError
from ..io import loads, loads_many
from ..io.checksums import bytes_checksum, mismatch, parse
from ..threads import configured_count
from . import coarse, fresh, kinds
from .entries import unit_rows

if TYPE_CHECKING:  # imported where an index is read or searched, not at start-up
    import faiss
from .store import FILE as STORE_FILE
from .store import RecordStore
from .vector_file import DTYPES, VectorFile

log = logging.getLogger(__name__)
T = TypeVar("T")

INDEX_FILE = "index.faiss"
METADATA_FILE = "sembed.json"
LEGACY_RECORDS_FILE = "records.jsonl"
REBUILD = "rebuild it with sembed index -o DIR --force"
SUM = "sum:"  # state keys: "sum:FILE" -> the checksum of FILE at this commit (io.checksums)
PREVIOUS_SUM = "previous_sum:"  # sembed.json's of the commit before: the file is renamed in just after a commit
STATE_METADATA = "metadata"  # the commit's sembed.json, in the state
LOAD_TRIES = 6  # reads of the state when a commit moved the files in between
# queries re-ranked at a time: their candidates' rows, decoded to float32 (64 x 100 x 384 x 4 bytes, 9.8 MB), are
# still in the cache when their dot products read them; the blocks go to the command's threads. 1,000 real queries
# at 1M, 100 candidates each: 42 ms re-ranked at once, 35 ms a block at a time, 28 ms over two threads (the same
# bits: each row's dot product is the same whatever the block)
RERANK_BLOCK = 64
ROWS_CHUNK = 10_000  # rows whose ids and payloads `rows` reads in one JSON call each


class Changed(Exception):
    """The index changed under a load (a commit or a rebuild in between): read the state again."""


def sum_key(name: str) -> str:
    return SUM + name


class Verifier:
    """The checksums of an index's files, compared in a thread: (name, descriptor, checksum, whole) each; the
    descriptors were opened at load, so the files hashed are the ones the load read, whatever a commit renames."""

    def __init__(self, directory: Path, files: list[tuple[str, int, str, bool]]):
        self.directory, self.files = directory, files
        self.problem: str | None = None
        self.thread = threading.Thread(target=self._run, name="sembed-checksums", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for name, descriptor, checksum, whole in self.files:
                problem = mismatch(descriptor, checksum, whole, name)
                if problem is not None:
                    self.problem = problem
                    return
        except OSError as e:
            self.problem = f"{e}"
        finally:
            for _, descriptor, _, _ in self.files:
                os.close(descriptor)

    def result(self) -> None:
        self.thread.join()
        if self.problem is not None:
            raise SembedError(f"damaged index at '{self.directory}': {self.problem}", REBUILD)


def metadata_problem(metadata: object, dimension: int) -> str | None:
    """What is wrong with an index's sembed.json (read back for FAISS's `dimension`), or None."""
    from ..models.model_identity import FIELD, Identity

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


def payload_record(payload: str | bytes) -> dict:
    """A stored row's payload, read back: the JSON of the record sembed indexed (always an object)."""
    return cast(dict, loads(payload))


class LegacyRecords:
    """The rows of a sembed 0.1 index (records.jsonl, read whole), behind the RecordStore calls search makes."""

    def __init__(self, ids: list, payloads: list[dict]):
        self.ids, self.payloads = ids, payloads
        self.next_row = self.count = len(ids)

    def records(self, rows) -> dict[int, tuple[bytes, bytes]]:
        from ..io import dumps

        return {
            int(row): (dumps(self.ids[row], line=False), dumps(self.payloads[row], line=False))
            for row in {int(r) for r in rows}
            if 0 <= row < len(self.ids)
        }

    def rows(self, below: int | None = None) -> Iterator[tuple[int, str, str, bytes]]:
        from ..io import dumps

        for row, (record_id, payload) in enumerate(zip(self.ids, self.payloads)):
            yield row, dumps(record_id, line=False).decode(), "", dumps(payload, line=False)

    def removed(self) -> list[int]:
        return []

    def close(self) -> None:
        pass


@dataclass
class VectorIndex:
    """An index directory, loaded: its FAISS index, rows, kept vectors (lossy types) and metadata."""

    path: Path
    index: faiss.Index
    store: RecordStore | LegacyRecords
    metadata: dict
    vectors: VectorFile | None = None
    removed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    verifier: Verifier | None = None
    fresh_from: int | None = None  # the first row FAISS does not hold (indexes/fresh.py); None: it holds every row
    fresh: VectorFile | None = None  # the fresh rows' own vectors, beside an index that keeps none
    _made: dict[str, tuple[tuple, Any]] = field(default_factory=dict, init=False, repr=False, compare=False)

    # --- what it holds ---------------------------------------------------------------------------------------

    @property
    def dimension(self) -> int:
        return int(self.metadata["dimension"])

    @property
    def count(self) -> int:
        """Rows that answer queries."""
        return self.store.count

    @property
    def row_count(self) -> int:
        """One past the highest row number (rows removed by updates leave gaps below it)."""
        return self.store.next_row

    @property
    def fresh_start(self) -> int:
        """The first fresh row (row_count when there is none): FAISS holds the rows below it."""
        return self.row_count if self.fresh_from is None else self.fresh_from

    def made_once(self, name: str, make: Callable[[], T]) -> T:
        """`make()`, made once for this loaded index while its rows stay the same (the same row count and removed
        rows): what searches build from many rows (the fresh rows' vectors, --spelling's index of the names'
        words) is kept between the searches of one process."""
        rows = (self.fresh_start, self.row_count, len(self.removed))
        kept = self._made.get(name)
        if kept is None or kept[0] != rows:
            kept = self._made[name] = (rows, make())
        return kept[1]

    def fresh_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The fresh rows an answer may hold (removed ones left out) and their unit vectors as float32, read once
        (they are few)."""
        return self.made_once("fresh rows", self._read_fresh_rows)

    def _read_fresh_rows(self) -> tuple[np.ndarray, np.ndarray]:
        start, stop = self.fresh_start, self.row_count
        source = self.vectors if self.vectors is not None else self.fresh
        rows = np.setdiff1d(np.arange(start, stop, dtype=np.int64), self.removed, assume_unique=True)
        if source is None or not len(rows):
            return rows[:0], np.zeros((0, self.dimension), dtype=np.float32)
        block = source.matrix(stop)[start - source.base :]
        return rows, np.ascontiguousarray(block[rows - start], dtype=np.float32)

    @property
    def legacy(self) -> bool:
        return isinstance(self.store, LegacyRecords)

    @property
    def identity(self):
        """The model_identity.Identity of the vectors; None for an index written before identities."""
        from ..models.model_identity import FIELD, Identity

        value = self.metadata.get(FIELD)
        return Identity.parse(value) if value is not None else None

    @property
    def settings(self) -> dict:
        return self.metadata.get("settings", {})

    @property
    def rerank_factor(self) -> int:
        """Candidates a query re-ranks from the kept vectors (lossy types), as a multiple of k: the depth the
        recall measurement chose (settings.rerank_factor, indexes/recall.py), else kinds.RERANK_FACTOR."""
        return int(self.settings.get("rerank_factor", kinds.RERANK_FACTOR))

    def records(self, rows) -> dict[int, tuple[object, dict]]:
        """row -> (id, payload) of `rows` (-1 and removed rows left out)."""
        found = self.store.records(rows)
        values = loads_many([key for key, _ in found.values()] + [payload for _, payload in found.values()])
        return dict(zip(found, zip(values[: len(found)], values[len(found) :])))

    def rows(self) -> Iterator[tuple[int, object, dict]]:
        """Every (row, id, payload) in row order, their JSON read ROWS_CHUNK rows a call (`loads_many`): for the few
        readers that need them all (taste's labels, --spelling's names)."""
        stored = self.store.rows()
        while chunk := list(itertools.islice(stored, ROWS_CHUNK)):
            keys = loads_many([key for _, key, _, _ in chunk])
            payloads = loads_many([payload for _, _, _, payload in chunk])
            yield from zip([row for row, _, _, _ in chunk], keys, payloads)

    def texts(self, key: str) -> list[str | None]:
        """Each row's text under `key` (None for gaps and records without it), by row number."""
        texts: list[str | None] = [None] * self.row_count
        for row, _, payload in self.rows():
            value = payload.get(key)
            texts[row] = value if isinstance(value, str) else None
        return texts

    def vectors_of(self, rows: np.ndarray, below: int | None = None) -> np.ndarray:
        """The unit vectors of `rows`: from the kept vectors (rows below `below`, else below the committed rows),
        else from FAISS's own exact storage and the fresh rows' file."""
        if self.vectors is not None:
            return self.vectors.read(np.asarray(rows, dtype=np.int64), below or self.row_count)
        if not len(rows):
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows = np.asarray(rows, dtype=np.int64)
        later = rows >= self.fresh_from if self.fresh_from is not None else np.zeros(len(rows), dtype=bool)
        if later.any():
            assert self.fresh is not None, "fresh rows without their file"
            out = np.empty((len(rows), self.dimension), dtype=np.float32)
            out[later] = self.fresh.read(rows[later], below or self.row_count)
            if not later.all():
                out[~later] = self.vectors_of(rows[~later])
            return out
        ivf = kinds.ivf_of(self.index)
        if ivf is not None and ivf.direct_map.type == 0:  # inverted lists find a row by id only through a map
            import faiss

            ivf.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]  # not in faiss's stubs
        return self.index.reconstruct_batch(np.asarray(rows, dtype=np.int64))

    def faiss_in_memory(self):
        """The FAISS index read whole (an update that changes it; a load maps it unless asked for `whole`), checked
        against its checksum first."""
        self.verified()
        store = cast(RecordStore, self.store)
        self.index = read_faiss(self.path / store.state.get("faiss_file", INDEX_FILE), mapped=False)
        settings = self.settings
        kinds.set_search_breadth(self.index, settings.get("nprobe"), settings.get("ef_search"))
        return self.index

    def verified(self) -> None:
        """Wait for the checksums of the files this load read (an error if one differs); at once after the first."""
        if self.verifier is not None:
            verifier, self.verifier = self.verifier, None
            verifier.result()

    @property
    def checksummed(self) -> bool:
        return not self.legacy and any(key.startswith(SUM) for key in cast(RecordStore, self.store).state)

    def close(self) -> None:
        if self.verifier is not None:
            self.verifier.thread.join()
        self.store.close()

    def __enter__(self) -> VectorIndex:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    # --- loading ---------------------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path, writable: bool = False, whole: bool = False) -> VectorIndex:
        """The index at `path`; memory-mapped for search, writing nothing (a read-only directory or mount will do),
        or with `writable` its store open for an update (which reads FAISS whole once it changes it:
        `faiss_in_memory`); `whole`: read-only, but in RAM (a merge's pieces, a trained quantiser reused)."""
        path = Path(path)
        if not (path / METADATA_FILE).exists() or not ((path / STORE_FILE).exists() or (path / INDEX_FILE).exists()):
            raise SembedError(f"no sembed index at '{path}'", "build one with sembed index -o DIR")
        if not (path / STORE_FILE).exists():
            return cls._load_legacy(path)
        for attempt in range(LOAD_TRIES):
            try:
                return cls._load(path, writable, whole, last=attempt == LOAD_TRIES - 1)
            except Changed:
                time.sleep(0.02 * 2**attempt)
        raise AssertionError("the last attempt raises")

    @classmethod
    def _load(cls, path: Path, writable: bool, whole: bool, last: bool) -> VectorIndex:
        """One attempt at loading: Changed when a commit moved the files under it (unless `last`: then the error)."""

        def changed(problem: str) -> Changed:
            if last:
                raise SembedError(f"damaged index at '{path}': {problem}", REBUILD)
            return Changed(problem)

        store = RecordStore(path / STORE_FILE, readonly=not writable)
        descriptors: list[int] = []
        try:
            if not writable:
                store.snapshot()
            state = store.state
            faiss_file = state.get("faiss_file", INDEX_FILE)
            metadata = cls._metadata(path, state, changed)
            try:
                descriptors.append(os.open(path / faiss_file, os.O_RDONLY))
            except FileNotFoundError:
                raise changed(f"{faiss_file} is missing") from None
            # FAISS reads the file this descriptor holds, even once a later commit has removed its name
            held = Path(f"/proc/self/fd/{descriptors[0]}")
            try:
                index = read_faiss(held if held.exists() else path / faiss_file, not whole, path / faiss_file)
            except SembedError:
                if not _same_file(descriptors[0], path / faiss_file):
                    raise changed(f"{faiss_file} was replaced while it was read") from None
                if sum_key(faiss_file) in state:  # damage FAISS itself trips on: said as damage
                    problem = mismatch(descriptors[0], state[sum_key(faiss_file)], True, faiss_file)
                    if problem is not None:
                        raise SembedError(f"damaged index at '{path}': {problem}", REBUILD) from None
                raise
            if not held.exists() and not _same_file(descriptors[0], path / faiss_file):
                raise changed(f"{faiss_file} was replaced while it was read")
            problem = metadata_problem(metadata, index.d)
            if problem is not None:
                raise SembedError(f"damaged index at '{path}': {METADATA_FILE} {problem}", REBUILD)
            removed = np.asarray(store.removed(), dtype=np.int64)
            first_fresh = store.number(fresh.STATE, store.next_row)
            # a graph holds the rows it was told to remove (by position, or by id once compacted: compaction.py);
            # FAISS holds no fresh row (fresh.py)
            if kinds.positional(index):
                expected = first_fresh
            else:
                later = store.stored_from(first_fresh) + int(np.count_nonzero(removed >= first_fresh))
                expected = store.count + len(removed) - later
            if index.ntotal != expected:
                raise changed(f"{index.ntotal} vectors in {faiss_file} but {expected} rows in {STORE_FILE}")
            settings = metadata.get("settings", {})
            kinds.set_search_breadth(index, settings.get("nprobe"), settings.get("ef_search"))
            vectors = None
            checks: list[tuple[str, int, str, bool]] = []
            if sum_key(faiss_file) in state:
                checks.append((faiss_file, descriptors[0], state[sum_key(faiss_file)], True))
                descriptors.pop()

            def hold(file: VectorFile, committed: int) -> None:
                """The vector file mapped through its descriptor, kept open for its checksum where it has one."""
                descriptor = held_rows(file, committed, store.next_row, changed)
                key = sum_key(file.path.name)
                if key in state:
                    checks.append((file.path.name, descriptor, state[key], False))
                else:
                    os.close(descriptor)

            if settings.get("rerank") in ("float16", "float32"):
                vectors = VectorFile.named(path, index.d, settings["rerank"])
                hold(vectors, store.number("vector_rows"))
            fresh_file = None
            if vectors is None and first_fresh < store.next_row:
                fresh_file = VectorFile(path / fresh.file_name(first_fresh), index.d, "float32", base=first_fresh)
                hold(fresh_file, store.next_row)
            for name, descriptor, checksum, _ in checks:  # sizes now: a truncated file never loads
                size = os.fstat(descriptor).st_size
                if size < parse(checksum)[1]:
                    raise SembedError(
                        f"damaged index at '{path}': {name} has {size} bytes, its checksum was taken over "
                        f"{parse(checksum)[1]}",
                        REBUILD,
                    )
        except BaseException:
            store.close()
            for descriptor in descriptors + [c[1] for c in locals().get("checks", [])]:
                os.close(descriptor)
            raise
        for descriptor in descriptors:
            os.close(descriptor)
        if not checks:
            log.debug(f"{path} has no checksums (written before sembed kept them): its files are not checked")
        loaded = cls(
            path,
            index,
            store,
            metadata,
            vectors,
            removed,
            Verifier(path, checks) if checks else None,
            first_fresh if first_fresh < store.next_row else None,
            fresh_file,
        )
        if writable or whole:  # an update or a merge reads the whole file now anyway: never carry damage on
            try:
                loaded.verified()
            except BaseException:
                loaded.close()
                raise
        return loaded

    @staticmethod
    def _metadata(path: Path, state: dict, changed) -> dict:
        """The commit's sembed.json: the state's copy where an update left one, else the file; the file checked
        against its checksum (this commit's, or the one before, which it still is for the moment after a commit)."""
        try:
            data = (path / METADATA_FILE).read_bytes()
        except OSError as e:
            raise SembedError(f"unreadable index at '{path}': {METADATA_FILE}: {e.strerror or e}", REBUILD) from None
        recorded = state.get(sum_key(METADATA_FILE))
        if recorded is not None and bytes_checksum(data) not in (recorded, state.get(PREVIOUS_SUM + METADATA_FILE)):
            raise changed(f"{METADATA_FILE} does not match its checksum (its bytes changed after they were written)")
        try:
            return json.loads(state.get(STATE_METADATA, data))
        except ValueError as e:
            raise SembedError(f"damaged index at '{path}': {METADATA_FILE} is not JSON: {e}", REBUILD) from None

    @classmethod
    def _load_legacy(cls, path: Path) -> VectorIndex:
        import faiss

        try:
            metadata = json.loads((path / METADATA_FILE).read_text(encoding="utf-8"))
            # Any: read_index returns the concrete class (IndexHNSWFlat...), which faiss's stubs type as Index
            index: Any = faiss.read_index(str(path / INDEX_FILE))
            lines = [loads(line) for line in (path / LEGACY_RECORDS_FILE).read_bytes().splitlines() if line]
        except (OSError, ValueError, RuntimeError) as e:
            raise SembedError(f"unreadable index at '{path}': {e}", REBUILD) from None
        problem = metadata_problem(metadata, index.d)
        if problem is not None:
            raise SembedError(f"damaged index at '{path}': {METADATA_FILE} {problem}", REBUILD)
        rows = [row for row in lines if isinstance(row, dict) and "id" in row and isinstance(row.get("record"), dict)]
        if len(rows) != len(lines):
            raise SembedError(
                f"damaged index at '{path}': {LEGACY_RECORDS_FILE} has a line that is not "
                '{"id": ..., "record": {...}}',
                REBUILD,
            )
        if len(rows) != index.ntotal:
            raise SembedError(f"damaged index at '{path}': {index.ntotal} vectors but {len(rows)} records", REBUILD)
        settings = metadata.get("settings", {})
        if metadata.get("type") == "hnsw":
            index.hnsw.efSearch = settings.get("ef_search", kinds.HNSW_EF_SEARCH)
        elif metadata.get("type") == "ivf":
            index.nprobe = settings.get("nprobe", kinds.IVF_NPROBE)
        store = LegacyRecords([row["id"] for row in rows], [row["record"] for row in rows])
        return cls(path, index, store, metadata)

    # --- search ----------------------------------------------------------------------------------------------

    def search(
        self, queries: np.ndarray, k: int, ef_search: int | None = None, selector=None, nprobe: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(cosines, rows) of the k nearest rows of each query (unit-normalised first), best first; row -1 where
        fewer exist. ef_search: a wider graph search than the index's own for this call (never narrower);
        selector: a FAISS IDSelector of the only rows allowed (search --where; it leaves out removed rows itself),
        with `nprobe` inverted lists probed (None: the index's own)."""
        import faiss

        self.verified()  # damage is an error before the first answer
        queries = unit_rows(queries)
        allowed = selector  # the caller's: the removed rows are left out of the fresh ones apart
        asked = k * self.rerank_factor if self.vectors is not None else k
        graph = kinds.hnsw_of(self.index)
        params = None
        if selector is None and len(self.removed):
            selector = faiss.IDSelectorNot(faiss.IDSelectorBatch(self.removed))
        if graph is not None:
            breadth = max(graph.hnsw.efSearch, ef_search or 0, asked if self.vectors is not None else 0)
            if breadth != graph.hnsw.efSearch or selector is not None:
                params = faiss.SearchParametersHNSW(efSearch=breadth)  # type: ignore[attr-defined]  # not in the stubs
                if selector is not None:
                    params.sel = selector
        elif selector is not None:
            ivf = kinds.ivf_of(self.index)
            params = (
                faiss.SearchParametersIVF(sel=selector, nprobe=nprobe or ivf.nprobe)  # type: ignore[call-arg]
                if ivf is not None
                else faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]
            )
        exact = self.vectors.exact_index(self.row_count) if self.vectors is not None else None
        if exact is not None:  # FAISS re-ranks the candidates from the mapped vectors (VectorFile.exact_index)
            scores, rows = coarse.search(self.index, queries, k, params, exact, self.rerank_factor)
            scores[rows < 0] = -np.inf
        else:
            scores, rows = coarse.search(self.index, queries, asked, params)
            if self.vectors is not None:
                scores, rows = self.rerank(queries, rows, k)
        if self.fresh_start < self.row_count:  # rows FAISS does not hold yet, scored exactly (fresh.py)
            scores, rows = fresh.merged(scores, rows, *self.search_fresh(queries, k, allowed), k)
        return scores, rows

    def search_fresh(self, queries: np.ndarray, k: int, selector=None) -> tuple[np.ndarray, np.ndarray]:
        """(cosines, rows) of the k nearest fresh rows of each unit query: neither removed nor left out by
        `selector` (a FAISS IDSelector of the rows allowed)."""
        rows, vectors = self.fresh_rows()
        if selector is not None:
            inside = np.fromiter((selector.is_member(int(row)) for row in rows), dtype=bool, count=len(rows))
            rows, vectors = rows[inside], vectors[inside]
        return fresh.nearest(queries, vectors, rows, k)

    def rerank(self, queries: np.ndarray, candidates: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best of each query's candidate rows by exact cosine against the kept vectors, where they are read
        row by row (a recall measurement's, VectorFile.unmapped; a search re-ranks from the map in FAISS),
        RERANK_BLOCK queries at a time, the blocks over the command's threads (the reads, the float16 decoding and
        numpy's products run without the GIL)."""
        if self.vectors is None:
            raise ValueError("re-ranking needs the index's kept vectors (a lossy type built with --rerank)")
        blocks = [slice(start, start + RERANK_BLOCK) for start in range(0, max(1, len(queries)), RERANK_BLOCK)]

        def ranked(block: slice) -> tuple[np.ndarray, np.ndarray]:
            return self._rerank_block(queries[block], candidates[block], k)

        threads = min(len(blocks), configured_count() or 1)
        if threads <= 1:
            done = [ranked(block) for block in blocks]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(threads, thread_name_prefix="sembed-rerank") as pool:
                done = list(pool.map(ranked, blocks))
        return np.concatenate([scores for scores, _ in done]), np.concatenate([rows for _, rows in done])

    def _rerank_block(self, queries: np.ndarray, candidates: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        assert self.vectors is not None
        found = candidates >= 0
        vectors = self.vectors.read(np.where(found, candidates, 0).ravel(), self.row_count)
        exact = np.einsum("qkd,qd->qk", vectors.reshape(*candidates.shape, -1), queries)
        exact[~found] = -np.inf
        order = np.argsort(-exact, axis=1, kind="stable")[:, :k]
        scores, rows = np.take_along_axis(exact, order, 1), np.take_along_axis(candidates, order, 1)
        rows[~np.isfinite(scores)] = -1
        return np.where(np.isfinite(scores), scores, -np.inf).astype(np.float32), rows

    # --- the model check of queries --------------------------------------------------------------------------

    def check_fingerprint(self, name: str, fingerprint: str) -> None:
        """Refuse queries embedded by the model `name` (of `fingerprint`) when it is not the model of this index,
        written before identities, by the fingerprint it recorded. (An index with an identity is checked where its
        queries' Embedder is opened: `Embedder.for_identity`.)"""
        if fingerprint != self.metadata.get("model_fingerprint"):
            raise SembedError(
                f"the index at '{self.path}' holds vectors of the model '{self.metadata.get('model')}', "
                f"but the queries are embedded with '{name}', another model",
                "search with the index's model (leave out --model), or rebuild the index",
            )


def check_index(path: Path) -> str:
    """Verify the index at `path` fully (`sembed index --check`): each file against its checksum, SQLite's own
    integrity check and every row against its check. Returns what was checked, in a line; damage is a SembedError
    naming the file."""
    with VectorIndex.load(path) as loaded:
        if loaded.legacy:
            return f"{path} was written by sembed 0.1: it has no checksums (sembed index --update DIR converts it)"
        store = cast(RecordStore, loaded.store)
        files = sorted(key[len(SUM) :] for key in store.state if key.startswith(SUM))
        loaded.verified()
        problems = store.verify()
        if problems:
            raise SembedError(f"damaged index at '{path}': {problems[0]}", REBUILD)
    if not files:
        return (
            f"{path} has no checksums (written before sembed kept them): {STORE_FILE} passes SQLite's integrity "
            "check; rebuild the index to have its files checked"
        )
    rows = "its rows match their checks" if store.checked else "its rows carry no checks (written before them)"
    return (
        f"{path} is whole: {', '.join(files)} match their checksums; "
        f"{STORE_FILE} passes SQLite's integrity check, {rows}"
    )


def seal(directory: Path, metadata: dict) -> None:
    """Write sembed.json into the finished, still hidden index `directory` (a build's, a merge's, a rebuild's) and
    record the checksums of its files and the metadata in its state: one transaction, whole with the directory's
    rename."""
    from ..artifacts import write_metadata
    from ..io.checksums import file_checksum

    path = write_metadata(directory, metadata, METADATA_FILE)
    data = path.read_bytes()
    store = RecordStore(directory / STORE_FILE)
    try:
        state = store.state
        faiss_file = state.get("faiss_file", INDEX_FILE)
        sums = {sum_key(faiss_file): file_checksum(directory / faiss_file)}
        sums[sum_key(METADATA_FILE)] = bytes_checksum(data)
        for name in DTYPES.values():
            if (directory / name).exists():
                sums[sum_key(name)] = file_checksum(directory / name)
        store.begin()
        store.set_state(**sums, **{STATE_METADATA: data.decode("utf-8")})
        store.commit()
    finally:
        store.close()


def held_rows(file: VectorFile, committed: int, rows: int, changed) -> int:
    """A load's hold on a vector file: opened, checked to hold the `committed` rows the store counts, and rows
    .. `rows` - 1 mapped through the descriptor (returned, open), so that a commit that removes or replaces the name
    after the store's state was read (a fold of the fresh rows, a rebuild) cannot take the file from under the
    search; `changed` where the file is already gone or short (a commit in between: the state is read again)."""
    try:
        descriptor = os.open(file.path, os.O_RDONLY)
    except FileNotFoundError:
        raise changed(f"{file.path.name} is missing") from None
    try:
        ends = file.rows_held(descriptor)
        if ends < committed:
            raise changed(f"{file.path.name} ends at row {ends}, the store counts {committed}")
        file.matrix(rows, descriptor)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        return os.fstat(descriptor).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def read_faiss(path: Path, mapped: bool, shown: Path | None = None):
    """The FAISS index at `path` (named `shown` in errors): memory-mapped (inverted lists and flat codes stay on disk
    until read) or whole."""
    import faiss

    try:
        if mapped:
            flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY
            try:
                return faiss.read_index(str(path), flags | faiss.IO_FLAG_MMAP_IFC)
            except RuntimeError:
                return faiss.read_index(str(path), flags)
        return faiss.read_index(str(path))
    except RuntimeError as e:
        shown = shown or path
        problem = str(e).strip().splitlines()[-1].replace(str(path), str(shown))
        raise SembedError(f"unreadable index at '{shown.parent}': {shown.name}: {problem}", REBUILD) from None
