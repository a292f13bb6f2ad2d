"""Files written whole or not at all: under a hidden temporary name beside the target, renamed at the end.

The one way sembed writes a file that a reader may open while it is written, or that a crash must not leave
half-written: `atomic_path` (a name to write to, renamed into place when the block ends without error, removed
otherwise), `write_bytes_atomic` and `write_json_atomic` over it, and `commit` for a writer that keeps its own
temporary file open (the record sink). `durable=True` also survives a power cut: the file is synced before the
rename and its directory after it, at the cost of waiting for the disk; without it a crash of sembed (not of the
machine) still leaves the old file or the new one, never a mix.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from ..errors import SembedError


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


def json_bytes(data: object) -> bytes:
    """JSON as sembed writes its metadata files: indented, numpy values as numbers."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)


def write_json_atomic(path: Path, data: object, durable: bool = False) -> None:
    """Write JSON (indented; numpy values as numbers) whole or not at all, so readers never see half a file."""
    with disk_full_as_error(path):
        write_bytes_atomic(path, json_bytes(data), durable)


# --- a full disk: one line in the user's terms, never a traceback nor a library's text ----------------------------

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` says the disk (or the user's quota) is full: an OSError, SQLite's 'database or disk is full'
    or its failure to grow a WAL's shared-memory file (which it words 'disk I/O error': opening a store in WAL
    mode on a full disk), or a FAISS error carrying the system's text."""
    if isinstance(error, OSError) and error.errno in FULL_ERRNOS:
        return True
    text = str(error)
    if type(error).__name__ == "OperationalError":  # SQLite's
        return "disk is full" in text or getattr(error, "sqlite_errorname", "") == "SQLITE_IOERR_SHMSIZE"
    return isinstance(error, RuntimeError) and ("No space left on device" in text or "Disk quota exceeded" in text)


def megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size < 10e6 else f"{size / 1e6:,.0f} MB"


class DiskFull(SembedError):
    """No space left on the device while writing `path` (`needed` bytes for it, when known). The free space is
    measured when the message is shown: after the failed run removed what it wrote."""

    def __init__(self, path: Path, needed: int | None = None):
        self.path, self.needed = Path(path), needed
        super().__init__("", "free some space there (or write to another disk) and run it again; nothing was changed")

    @property
    def message(self) -> str:
        free = free_space(self.path)
        amounts = [f"{megabytes(self.needed)} needed"] if self.needed is not None else []
        if free is not None:
            amounts.append(f"{megabytes(free)} free")
        return f"no space left on device writing {self.path}" + (f" ({', '.join(amounts)})" if amounts else "")

    @message.setter
    def message(self, _: str) -> None:
        pass

    def shown_as(self, path: Path) -> DiskFull:
        """The same error naming `path` (the file's final name, not the hidden one it was written under)."""
        return DiskFull(path, self.needed)


@contextmanager
def disk_full_named(work: Path, final: Path, unnamed: str) -> Iterator[None]:
    """A full disk inside the block, named by its final place: a file of the hidden directory `work` (a build's)
    as the same file of `final`; an error naming no file (SQLite's) as the file `unnamed` there."""
    try:
        with disk_full_as_error(work / unnamed):
            yield
    except DiskFull as e:
        try:
            relative = e.path.relative_to(work)
        except ValueError:
            raise e from None
        raise e.shown_as(final / relative) from None


def free_space(path: Path) -> int | None:
    for folder in (path.parent, *path.parent.parents):
        try:
            return shutil.disk_usage(folder).free
        except OSError:
            continue
    return None


@contextmanager
def disk_full_as_error(path: Path, needed: int | None = None) -> Iterator[None]:
    """Turn a full-disk failure inside the block into DiskFull naming `path` (or the file the OSError names)."""
    try:
        yield
    except DiskFull:
        raise
    except Exception as e:
        if not is_disk_full(e):
            raise
        named = getattr(e, "filename", None)
        raise DiskFull(Path(named) if isinstance(named, str) else path, needed) from None
