"""What one record gives an evaluation: vectors, a gold score, a label, a group, each checked.

Every reader raises `BadRecord` with the field's name and what is wrong; the
record source adds FILE:LINE. `Dimension` remembers the size of the first
record's vectors, so a vector of another size is named with both sizes.
"""

from __future__ import annotations


import numpy as np

from ..errors import BadRecord
from ..io import json_type

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
    """`record[key]` as a float64 vector: a non-empty list of finite numbers (sizes: `Dimension`)."""
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


def _finite(key: str, array: np.ndarray) -> np.ndarray:
    finite = np.isfinite(array)
    if not finite.all():
        index = int(np.argmin(finite))
        raise BadRecord(f"'{key}' has a NaN or infinite value at index {index}")
    return array


SAFE_MAGNITUDES = (1e-100, 1e100)  # sums of squares of values in this range stay far inside float64's


def unit_scaled(vector: np.ndarray) -> np.ndarray:
    """`vector`, divided by its largest absolute value where that is outside SAFE_MAGNITUDES, so its norm and dot
    products neither overflow nor underflow to zero: a cosine or correlation is the same of the scaled vector. In
    the safe range it is returned as it is, so ordinary results keep every bit (and their ties)."""
    peak = float(np.max(np.abs(vector))) if len(vector) else 0.0
    low, high = SAFE_MAGNITUDES
    return vector / peak if peak > 0 and not low <= peak <= high else vector


def nonzero(key: str, norm: float) -> None:
    """A cosine needs two non-zero vectors."""
    if norm == 0.0:
        raise BadRecord(f"'{key}' is a zero vector (cosine undefined)")


def label(record: dict, key: str) -> str:
    """A class label, a string or an integer, as text (so 1 and "1" are one class)."""
    if key not in record:
        raise BadRecord(f"missing key '{key}' (the gold label)")
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise BadRecord(f"'{key}' must be a string or an integer label, got {json_type(value)}")
    if isinstance(value, str) and not value.strip():
        raise BadRecord(f"empty label in '{key}'")
    return str(value)


def group(record: dict, key: str) -> str:
    """The --group-by value as text: a string, number or boolean field."""
    if key not in record:
        raise BadRecord(f"missing key '{key}' (--group-by)")
    value = record[key]
    if value is None or isinstance(value, (dict, list)):
        raise BadRecord(f"'{key}' must be a string or a number to group by, got {json_type(value)}")
    return value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
