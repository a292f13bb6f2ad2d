"""Files written whole or not at all: under a hidden temporary name beside the target, renamed at the end.

The one way sembed writes a file that a reader may open while it is written, or that a crash must not leave
half-written: `atomic_path` (a name to write to, renamed into place when the block ends without error, removed
otherwise), `write_bytes_atomic` and `write_json_atomic` over it, and `commit` for a writer that keeps its own
temporary file open (the record sink). `durable=True` also survives a power cut: the file is synced before the
rename and its directory after it, at the cost of waiting for the disk; without it a crash of sembed (not of the
machine) still leaves the old file or the new one, never a mix.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson


def temporary_sibling(path: Path, tag: str = "tmp") -> Path:
    """A hidden name next to `path` on the same file system, so the final rename is atomic."""
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}")


def sync_file(path: Path) -> None:
    """Make the contents of the file at `path` durable."""
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def sync_directory(directory: Path) -> None:
    """Make renames in `directory` durable (a power cut after it keeps them)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some file systems (and platforms) cannot sync a directory; the rename is still atomic
    finally:
        os.close(descriptor)


def commit(temporary: Path, path: Path, durable: bool = False) -> None:
    """Rename the finished `temporary` to `path` (a file, or a directory: `artifacts.building`); with `durable`,
    the file first reaches the disk, and the rename after it."""
    if durable and temporary.is_file():
        sync_file(temporary)
    os.replace(temporary, path)
    if durable:
        sync_directory(path.parent)


@contextmanager
def atomic_path(path: Path, durable: bool = False) -> Iterator[Path]:
    """Yield a temporary name beside `path` to write the file to; it becomes `path` when the block ends, and is
    removed if the block raises."""
    temporary = temporary_sibling(path)
    try:
        yield temporary
        commit(temporary, path, durable)
    finally:
        temporary.unlink(missing_ok=True)


def write_bytes_atomic(path: Path, data: bytes, durable: bool = False) -> None:
    """Write `data` to `path` whole or not at all."""
    with atomic_path(path, durable) as temporary:
        temporary.write_bytes(data)


def write_json_atomic(path: Path, data: object, durable: bool = False) -> None:
    """Write JSON (indented; numpy values as numbers) whole or not at all, so readers never see half a file."""
    write_bytes_atomic(path, orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY), durable)
