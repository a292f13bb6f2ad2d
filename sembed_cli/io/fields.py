"""What a command reads from one record's fields, each checked: the texts it works on, a number, a label, a group.

Every check raises `BadRecord` with the field's name and what is wrong; the record source adds FILE:LINE (or skips
the record with --skip-errors). Vectors are checked in `vector_fields`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import BadRecord
from .json_codec import json_type

DEFAULT_TEXT_KEYS = ("text", "text_a", "text_b")


class TextFields:
    """Which text fields of a record a command works on, and the check that they are usable.

    With explicit keys (``--text-key``) each must be present. Otherwise the
    record's own ``text``, ``text_a`` and ``text_b`` are used, at least one.
    A command whose library refuses longer texts (spaCy's parser) gives
    `limit` = (characters, whose limit it is); a longer text is bad input.
    """

    def __init__(self, keys: Sequence[str] | None = None, limit: tuple[int, str] | None = None):
        self.keys = tuple(keys) if keys else None
        self.limit = limit

    def of(self, record: dict) -> list[str]:
        if self.keys is None:
            keys = [k for k in DEFAULT_TEXT_KEYS if k in record]
            if not keys:
                raise BadRecord("missing key 'text' (or 'text_a'/'text_b'; --text-key names another)")
        else:
            keys = list(self.keys)
            for key in keys:
                if key not in record:
                    raise BadRecord(f"missing key '{key}'")
        for key in keys:
            check_text(record, key, self.limit)
        return keys


def counted_keys(given: Sequence[str] | None, default: tuple[str, ...]) -> tuple[str, ...] | None:
    """The text fields of something that reads exactly len(`default`) of them: `default` when none are given, the
    given ones when there are that many, None when there are not (the caller says why, as a usage error)."""
    if not given:
        return default
    return tuple(given) if len(given) == len(default) else None


def check_text(record: dict, key: str, limit: tuple[int, str] | None = None) -> str:
    """The text in `record[key]`: a string that is not blank (nor past `limit`), or a BadRecord saying what it is."""
    value = record[key]
    if not isinstance(value, str):
        raise BadRecord(f"'{key}' must be a string, got {json_type(value)}")
    if not value.strip():
        raise BadRecord(f"empty text in '{key}'")
    if limit is not None and len(value) > limit[0]:
        raise BadRecord(
            f"'{key}' is {len(value):,} characters, over {limit[1]} of {limit[0]:,}",
            "split long texts first, e.g. with sembed convert --from prose",
        )
    return value


def check_number(record: dict, key: str, what: str) -> float:
    """`record[key]` as a finite float (not a boolean); `what` says what the field is for when it is missing."""
    if key not in record:
        raise BadRecord(f"missing key '{key}' ({what})")
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRecord(f"'{key}' must be a number, got {json_type(value)}")
    if not math.isfinite(value):
        raise BadRecord(f"'{key}' must be a finite number, got {value}")
    return float(value)


def derived_key(text_key: str, name: str) -> str:
    """The field derived from a text field: text -> name, text_a -> name_a, other -> name_other."""
    if text_key == "text":
        return name
    if text_key.startswith("text_"):
        return name + text_key[4:]
    return f"{name}_{text_key}"


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
