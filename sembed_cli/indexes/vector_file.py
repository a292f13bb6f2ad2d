"""The vectors beside a lossy index, row by row, for exact re-ranking: written by appending, read memory-mapped.

Row r of the file is the unit vector of the index's row r (rows removed by an update stay as garbage until the
index is rebuilt). Only the rows below the store's committed `vector_rows` count: an update appends past them and
a failed one is cut back, so a search beside it never reads a half-written row. float16 halves the disk and keeps
cosines to about 1e-3, which re-ranks FAISS's candidates as float32 does (bench/index_scale.py); float32 is exact.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..io import sync_file

DTYPES = {"float16": "vectors.f16", "float32": "vectors.f32"}


class VectorFile:
    """Unit vectors of `dim` dimensions, of `dtype` (float16 or float32), in the file `path`."""

    def __init__(self, path: Path, dim: int, dtype: str, base: int = 0, mapped: bool = True):
        """`base`: the row the file begins at (an update's new rows alone, for an index that keeps no vectors);
        `mapped`: `read` goes through a memory map (a search), else row by row (`unmapped`)."""
        self.path, self.dim, self.dtype, self.base, self.mapped = Path(path), dim, np.dtype(dtype), base, mapped
        self.row_bytes = dim * self.dtype.itemsize
        self._map: np.ndarray | None = None  # a memory map, or an empty array before the first row
        self._mapped_rows = 0
        self._exact: tuple[np.ndarray, object] | None = None  # (the map, its FAISS index) of `exact_index`

    @classmethod
    def named(cls, directory: Path, dim: int, dtype: str) -> VectorFile:
        return cls(Path(directory) / DTYPES[dtype], dim, dtype)

    def unmapped(self) -> VectorFile:
        """The same file, read row by row (`rows`): a recall measurement re-ranks a thousand queries' hundred
        candidates a breadth, rows all over the file, and every row read through a map brings the 64 KB around
        it into the process (the kernel's fault-around), so a 10M index's 5.8 GB of float16 rows counted in full
        at each breadth (issue 36)."""
        return VectorFile(self.path, self.dim, self.dtype.name, self.base, mapped=False)

    def rows_on_disk(self) -> int:
        """One past the last row on disk."""
        return self.base + (self.path.stat().st_size // self.row_bytes if self.path.exists() else 0)

    def rows_held(self, descriptor: int) -> int:
        """One past the last row of the file open as `descriptor` (a search's load: the file of the commit it read,
        even once a later commit has removed or replaced the name)."""
        return self.base + os.fstat(descriptor).st_size // self.row_bytes

    def cut(self, rows: int) -> None:
        """Drop everything past `rows` rows (what a failed update appended)."""
        size = (rows - self.base) * self.row_bytes
        if self.path.exists() and self.path.stat().st_size > size:
            os.truncate(self.path, size)

    def append(self, vectors: np.ndarray, at_row: int) -> None:
        """Write `vectors` as rows at_row, at_row + 1, ...: the file must hold exactly at_row rows before."""
        from ..io.atomic_files import disk_full_as_error

        with disk_full_as_error(self.path), open(self.path, "ab") as f:
            if f.tell() != (at_row - self.base) * self.row_bytes:
                raise RuntimeError(f"{self.path} ends at row {self.base + f.tell() // self.row_bytes}, not {at_row}")
            f.write(np.ascontiguousarray(vectors, dtype=self.dtype).tobytes())

    def sync(self) -> None:
        from ..io.atomic_files import disk_full_as_error

        if self.path.exists():
            with disk_full_as_error(self.path):
                sync_file(self.path)

    def matrix(self, rows: int, descriptor: int | None = None) -> np.ndarray:
        """Rows base .. `rows` - 1, memory-mapped read-only (indexed from 0); of the file open as `descriptor` where
        one is given (a search's load maps the file it checked: a commit may remove the name just after)."""
        if self._map is None or self._mapped_rows != rows:
            if rows > self.base:
                with open(self.path if descriptor is None else descriptor, "rb", closefd=descriptor is None) as f:
                    self._map = np.memmap(f, dtype=self.dtype, mode="r", shape=(rows - self.base, self.dim))
            else:
                self._map = np.zeros((0, self.dim), dtype=self.dtype)
            self._mapped_rows = rows
        return self._map

    def exact_index(self, rows: int):
        """A FAISS index that scores rows 0 .. `rows` - 1 by these vectors as the file holds them (float16 through
        FAISS's fp16 scalar quantiser, which decodes them exactly; float32 as a flat index), for FAISS's IndexRefine
        to re-rank a search's candidates with (coarse.search): its codes are a view of the memory map, nothing is
        copied and a page is read as a candidate touches it. None where the vectors are read row by row
        (`unmapped`) or begin past row 0 (a fresh rows' file): those re-rank in numpy (VectorIndex.rerank).

        FAISS's refine decodes and multiplies in one SIMD pass over each candidate's bytes, where numpy gathered the
        rows, decoded them to float32 and took the products over those: 1,000 real queries' 100 candidates each at
        1M (MiniLM, float16) in 0.013 s against 0.052, the same rows and cosines to 2.4e-7 (docs/indexes.md)."""
        if not self.mapped or self.base or rows <= 0:
            return None
        mapped = self.matrix(rows)
        if self._exact is None or self._exact[0] is not mapped:
            import faiss

            raw = np.ascontiguousarray(mapped).view(np.uint8).reshape(-1)  # the map itself: it is contiguous
            index: faiss.IndexFlatCodes = (
                faiss.IndexScalarQuantizer(self.dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
                if self.dtype == np.float16
                else faiss.IndexFlatIP(self.dim)
            )
            # a view: FAISS never frees it (an empty owner); the map outlives it, held by the index (referenced)
            index.codes = faiss.MaybeOwnedVectorUInt8.create_view(  # type: ignore[attr-defined]  # not in the stubs
                faiss.swig_ptr(raw),
                raw.size,
                faiss.MaybeOwnedVectorUInt8().owner,  # type: ignore[attr-defined]
            )
            index.ntotal, index.is_trained = rows, True
            index.referenced_objects = [mapped, raw]  # type: ignore[attr-defined]
            self._exact = (mapped, index)
        return self._exact[1]

    def let_go(self) -> None:
        """Drop the map's pages from this process (`vector_rows.let_go`): a pass over every row through the map
        (an update's exact recall truth) would otherwise count the whole file."""
        from ..vector_rows import let_go

        let_go(self._map)

    def read(self, rows: np.ndarray, committed: int) -> np.ndarray:
        """float32 vectors of `rows` (row numbers below `committed`), in their order, through the memory map (a
        search's candidates: the page cache keeps what queries read often)."""
        if not self.mapped:
            return self.rows(rows)
        # gathered in the queries' order: sorting 100,000 candidates for the disk's order cost more than the
        # page-cache reads it saves (a fifth of the re-ranking at 10M)
        return as_float32(np.take(self.matrix(committed), np.asarray(rows) - self.base, axis=0))

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """float32 vectors of `rows`, in their order, read row by row (in the disk's order): rows scattered over a
        file larger than memory (a training sample, a measurement's candidates) map none of it, where mapped
        pages would count in the process's memory while it runs."""
        return as_float32(self.stored(rows))

    def stored(self, rows: np.ndarray) -> np.ndarray:
        """`rows` as the file holds them (float16 or float32), read as `rows` reads them."""
        order = np.argsort(rows, kind="stable")
        out = np.empty((len(rows), self.dim), dtype=self.dtype)
        with open(self.path, "rb", buffering=0) as f:
            descriptor = f.fileno()
            for n, row in zip(order.tolist(), np.asarray(rows)[order].tolist()):
                out[n] = np.frombuffer(
                    os.pread(descriptor, self.row_bytes, (row - self.base) * self.row_bytes), dtype=self.dtype
                )
        return out

    def chunks(self, rows: int, start: int | None = None, size: int = 100_000):
        """(first row, float32 block) over rows `start` (default: base) .. `rows` - 1, read a block at a time."""
        with open(self.path, "rb") as f:
            for first in range(start if start is not None else self.base, rows, size):
                count = min(rows, first + size) - first
                f.seek((first - self.base) * self.row_bytes)
                block = np.fromfile(f, dtype=self.dtype, count=count * self.dim)
                yield first, as_float32(block.reshape(count, self.dim))

    def remove(self) -> None:
        self._map = self._exact = None
        self.path.unlink(missing_ok=True)


def as_float32(rows: np.ndarray) -> np.ndarray:
    """`rows` as float32: float16 ones through FAISS's fp16 decoder (its SIMD conversion, exact: 1.4x numpy's cast,
    which was half of a 10M search's re-ranking), float32 ones as they are."""
    if rows.dtype == np.float32:
        return rows
    if rows.dtype != np.float16 or not len(rows):
        return rows.astype(np.float32)
    import faiss

    dim = rows.shape[1]
    decoder = faiss.ScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16)
    return decoder.decode(np.ascontiguousarray(rows).view(np.uint8).reshape(len(rows), 2 * dim))
