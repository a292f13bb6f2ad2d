"""The vectors of a record, checked: what a command that reads values rather than text takes from a record.

Every reader raises `BadRecord` with the field's name and what is wrong; the record source adds FILE:LINE.
`Dimension` remembers the size of the first record's vectors, so a vector of another size is named with both
sizes. numpy is imported where a reader needs it, so the stream itself loads without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import BadRecord
from .json_codec import json_type

if TYPE_CHECKING:
    import numpy as np

_NONE = object()  # "no bad element found", since None itself is a bad element


class Dimension:
    """The vector size every record must share: the first record read sets it."""

    def __init__(self) -> None:
        self.size: int | None = None

    def check(self, vectors: dict[str, np.ndarray]) -> None:
        """All of one record's vectors (key -> vector) have one size, the size of earlier records."""
        (first_key, first), *others = vectors.items()
        for key, other in others:
            if len(other) != len(first):
                raise BadRecord(f"'{key}' has {len(other)} dimensions, '{first_key}' has {len(first)}")
        if self.size is None:
            self.size = len(first)
        elif len(first) != self.size:
            raise BadRecord(f"'{first_key}' has {len(first)} dimensions, earlier records {self.size}")


def vector(record: dict, key: str, hint: str = "run sembed embed first") -> np.ndarray:
    """`record[key]` as a float64 vector: a non-empty list of numbers (no strings, booleans or nulls), each finite
    and inside float32's range (sizes: `Dimension`; a cosine's zero vector: `nonzero`). The one check of every
    vector sembed reads: index records, --npy rows, search queries, taste and eval inputs (`float32_vector`)."""
    import numpy as np

    if key not in record:
        raise BadRecord(f"missing key '{key}' ({hint})")
    value = record[key]
    if isinstance(value, np.ndarray):  # a row of an `embed --npy` matrix (vector_rows.RowVectors)
        return _finite(key, np.asarray(value, dtype=np.float64))
    if not isinstance(value, list):
        raise BadRecord(f"'{key}' must be a list of numbers, got {json_type(value)}")
    if not value:
        raise BadRecord(f"'{key}' is an empty list")
    bad = next((x for x in value if type(x) is not float and type(x) is not int), _NONE)
    if bad is not _NONE:  # bool is not int here: True is no coordinate
        raise BadRecord(f"'{key}' must be a list of numbers, found {json_type(bad)}")
    return _finite(key, np.asarray(value, dtype=np.float64))


FLOAT32_MAX = 3.4028234663852886e38


def _finite(key: str, array: np.ndarray) -> np.ndarray:
    import numpy as np

    finite = np.isfinite(array)
    if not finite.all():
        index = int(np.argmin(finite))
        raise BadRecord(f"'{key}' has a NaN or infinite value at index {index}")
    if array.size and float(np.max(np.abs(array))) > FLOAT32_MAX:
        index = int(np.argmax(np.abs(array) > FLOAT32_MAX))
        raise BadRecord(f"'{key}' has a value at index {index} past float32's range (about 3.4e38)")
    return array


def float32_vector(
    record: dict, key: str, size: int | None = None, cosine: bool = True, hint: str = "run sembed embed first"
) -> np.ndarray:
    """`vector` as float32, of `size` dimensions when given, and not all zeros when a cosine is taken of it.
    A list of plain numbers is converted by numpy in C; anything else gets `vector`'s exact message."""
    import numpy as np

    value = record.get(key)
    array = None
    if isinstance(value, list) and value and set(map(type, value)) <= _NUMBERS:
        with np.errstate(over="ignore"):  # past float32's range: inf here, then `vector`'s message
            array = np.asarray(value, dtype=np.float32)
    elif isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind == "f":
        array = np.asarray(value, dtype=np.float32)
    if array is None or not np.isfinite(array).all():  # the precise message: what, where
        array = vector(record, key, hint).astype(np.float32)
    if size is not None and len(array) != size:
        raise BadRecord(f"'{key}' has {len(array)} dimensions, expected {size}")
    if cosine and not array.any():
        nonzero(key, 0.0)
    return array


_NUMBERS = {float, int}


SAFE_MAGNITUDES = (1e-100, 1e100)  # sums of squares of values in this range stay far inside float64's


def unit_scaled(vector: np.ndarray) -> np.ndarray:
    """`vector`, divided by its largest absolute value where that is outside SAFE_MAGNITUDES, so its norm and dot
    products neither overflow nor underflow to zero: a cosine or correlation is the same of the scaled vector. In
    the safe range it is returned as it is, so ordinary results keep every bit (and their ties)."""
    import numpy as np

    peak = float(np.max(np.abs(vector))) if len(vector) else 0.0
    low, high = SAFE_MAGNITUDES
    return vector / peak if peak > 0 and not low <= peak <= high else vector


def nonzero(key: str, norm: float) -> None:
    """A cosine needs two non-zero vectors."""
    if norm == 0.0:
        raise BadRecord(f"'{key}' is a zero vector (cosine undefined)")
