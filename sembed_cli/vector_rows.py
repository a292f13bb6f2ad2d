"""Reading back the vectors `embed --npy FILE` wrote: records hold row numbers, the matrix holds the rows.

`embed --npy` gives each record the row of each vector in a field named
after it plus _row (embedding_row, embedding_row_a, embedding_basic_row_b,
...), and FILE.npy.json (the sidecar) names the model that made the rows.
`RowVectors` puts each row back under the vector's own name (embedding_a...)
as a float32 array, so `index` and `eval` read these records as if the
vectors were in the JSONL. The matrix is memory-mapped: only the rows used
are read.
"""

from __future__ import annotations

import json
import mmap
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import BadRecord, SembedError
from .io import json_type
from .models import model_identity

if TYPE_CHECKING:
    import numpy as np

ROW = "_row"
PREFIX = "embedding"
RELEASE_EVERY = 256 << 20  # bytes read through the map between two lettings-go of its pages (`RowVectors.read`)


def let_go(mapped: np.ndarray | None) -> None:
    """Drop the pages of `mapped` (a numpy memmap) from this process, where the OS can (madvise DONTNEED): the page
    cache keeps them, so reading them again costs no disk, but the process no longer counts the pages it touched,
    which a pass over a file larger than memory would otherwise all keep."""
    handle = getattr(mapped, "_mmap", None)
    if handle is not None and hasattr(mmap, "MADV_DONTNEED"):
        handle.madvise(mmap.MADV_DONTNEED)


def vector_field(row_field: str) -> str | None:
    """The vector field a row-number field stands for (embedding_row_a -> embedding_a), None for other fields."""
    if not row_field.startswith(PREFIX) or ROW not in row_field or row_field == model_identity.FIELD:
        return None
    return row_field.replace(ROW, "", 1)


class RowVectors:
    """A .npy matrix `embed --npy` wrote, with its sidecar's identity; `attach` fills a record's vectors in."""

    def __init__(self, path: str | Path):
        import numpy as np

        from .models.sentence_embedding import sidecar_path

        self.path = Path(path)
        try:
            self.matrix = np.load(self.path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise SembedError(
                f"cannot read the vectors in {self.path}: {e}", "pass a .npy file `sembed embed --npy` wrote"
            ) from None
        if self.matrix.ndim != 2 or self.matrix.dtype.kind != "f":
            raise SembedError(
                f"{self.path} holds a {self.matrix.ndim}-d {self.matrix.dtype} array, not a matrix of float vectors"
            )
        self.rows = self.matrix.view(np.ndarray)  # a row of it is a plain array (a memmap row costs 6 us to make)
        self._read_since_release = 0
        self.identity: model_identity.Identity | None = None
        sidecar = sidecar_path(self.path)
        if sidecar.exists():
            try:
                meta = json.loads(sidecar.read_text(encoding="utf-8"))
                value = meta.get(model_identity.FIELD) if isinstance(meta, dict) else None
                self.identity = model_identity.Identity.parse(value) if value is not None else None
            except (OSError, ValueError, AttributeError) as e:
                raise SembedError(
                    f"unreadable {sidecar}: {e}", "it is the metadata `sembed embed --npy` writes next to the matrix"
                ) from None

    def attach(self, record: dict) -> dict:
        """The record with each embedding..._row replaced by the row it names, as a float32 array."""
        for field in [f for f in record if f.startswith(PREFIX) and ROW in f and vector_field(f) is not None]:
            record.setdefault(vector_field(field), self.rows[self.checked_row(record, field)])
        return record

    def read(self, rows: np.ndarray) -> np.ndarray:
        """float32 copies of the matrix's `rows` (an int array), read through the map. Every RELEASE_EVERY bytes
        read, the map's pages are let go (`let_go`), so a pass over a matrix of 11.6 GB holds about that much of
        it, not all: 10.4 GB of peak RSS at 11.3M x 256 before."""
        import numpy as np

        block = np.asarray(self.rows[rows], dtype=np.float32)  # fancy indexing: a copy, not a view of the map
        self._read_since_release += len(block) * self.matrix.strides[0]
        if self._read_since_release >= RELEASE_EVERY:
            self._read_since_release = 0
            let_go(self.matrix)
        return block

    def row_of(self, record: dict, key: str) -> int | None:
        """The row `record` names for its vector `key` (embedding_row for embedding, embedding_row_a for
        embedding_a), checked, where the record does not hold the vector itself; else None. For a reader that
        reads a batch's rows together (indexes/entries.py)."""
        if key in record or not key.startswith(PREFIX):
            return None
        field = PREFIX + ROW + key[len(PREFIX) :]
        return self.checked_row(record, field) if field in record else None

    def checked_row(self, record: dict, field: str) -> int:
        row = record[field]
        if isinstance(row, bool) or not isinstance(row, int):
            raise BadRecord(f"'{field}' must be a row number, got {json_type(row)}")
        if not 0 <= row < len(self.matrix):
            raise BadRecord(f"'{field}' is {row}, but {self.path} has rows 0 to {len(self.matrix) - 1}")
        return row
