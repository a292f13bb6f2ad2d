"""Files written whole or not at all: under a hidden temporary name beside the target, renamed at the end."""

from __future__ import annotations

import os
from pathlib import Path

import orjson


def temporary_sibling(path: Path, tag: str = "tmp") -> Path:
    """A hidden name next to `path` on the same file system, so the final rename is atomic."""
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}")


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON under a temporary name, then rename, so readers never see half a file."""
    tmp = temporary_sibling(path)
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    os.replace(tmp, path)
