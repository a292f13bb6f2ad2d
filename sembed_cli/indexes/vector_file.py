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

    def __init__(self, path: Path, dim: int, dtype: str, base: int = 0):
        """`base`: the row the file begins at (an update's new rows alone, for an index that keeps no vectors)."""
        self.path, self.dim, self.dtype, self.base = Path(path), dim, np.dtype(dtype), base
        self.row_bytes = dim * self.dtype.itemsize
        self._map: np.ndarray | None = None  # a memory map, or an empty array before the first row
        self._mapped_rows = 0

    @classmethod
    def named(cls, directory: Path, dim: int, dtype: str) -> VectorFile:
        return cls(Path(directory) / DTYPES[dtype], dim, dtype)

    def rows_on_disk(self) -> int:
        """One past the last row on disk."""
        return self.base + (self.path.stat().st_size // self.row_bytes if self.path.exists() else 0)

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

    def matrix(self, rows: int) -> np.ndarray:
        """Rows base .. `rows` - 1, memory-mapped read-only (indexed from 0)."""
        if self._map is None or self._mapped_rows != rows:
            self._map = (
                np.memmap(self.path, dtype=self.dtype, mode="r", shape=(rows - self.base, self.dim))
                if rows > self.base
                else np.zeros((0, self.dim), dtype=self.dtype)
            )
            self._mapped_rows = rows
        return self._map

    def let_go(self) -> None:
        """Drop the map's pages from this process (`vector_rows.let_go`): a pass that reads rows all over a large
        file (the recall measurement's re-ranking, a thousand queries a breadth) would otherwise count every page
        it touched."""
        from ..vector_rows import let_go

        let_go(self._map)

    def read(self, rows: np.ndarray, committed: int) -> np.ndarray:
        """float32 vectors of `rows` (row numbers below `committed`), in their order, through the memory map (a
        search's candidates: the page cache keeps what queries read often)."""
        matrix = self.matrix(committed)
        order = np.argsort(rows, kind="stable")
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        out[order] = matrix[rows[order] - self.base]  # ascending reads: the disk's order
        return out

    def sample(self, rows: np.ndarray) -> np.ndarray:
        """float32 vectors of the sorted `rows`, read row by row: a training sample scattered over a file larger
        than memory maps none of it (mapped pages would count in the process's memory while it runs)."""
        out = np.empty((len(rows), self.dim), dtype=self.dtype)
        with open(self.path, "rb", buffering=0) as f:
            descriptor = f.fileno()
            for n, row in enumerate(rows.tolist()):
                out[n] = np.frombuffer(
                    os.pread(descriptor, self.row_bytes, (row - self.base) * self.row_bytes), dtype=self.dtype
                )
        return out.astype(np.float32, copy=False)

    def chunks(self, rows: int, start: int | None = None, size: int = 100_000):
        """(first row, float32 block) over rows `start` (default: base) .. `rows` - 1, read a block at a time."""
        with open(self.path, "rb") as f:
            for first in range(start if start is not None else self.base, rows, size):
                count = min(rows, first + size) - first
                f.seek((first - self.base) * self.row_bytes)
                block = np.fromfile(f, dtype=self.dtype, count=count * self.dim)
                yield first, block.reshape(count, self.dim).astype(np.float32, copy=False)

    def remove(self) -> None:
        self._map = None
        self.path.unlink(missing_ok=True)
