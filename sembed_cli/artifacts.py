"""Artifacts (models, indexes, salience tables): built atomically, never overwritten by accident, described.

An artifact is a directory. It is built under a temporary sibling name and
renamed into place only once complete, so a reader never sees half of one and
an interrupted run leaves the previous version intact (SPEC section 1). An
existing artifact is replaced only with ``--force``. Each carries a metadata
JSON (`sembed.json` for models): what made it, from which data, with which
settings, seed and package versions. One run at a time writes an artifact: a
second one refuses while the first holds its lock (`exclusive`).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata as package_metadata
from pathlib import Path

import orjson

from . import console
from .errors import SembedError
from .io import commit, dumps, temporary_sibling, write_json_atomic
from .version import __version__

log = logging.getLogger(__name__)

VERSIONED_PACKAGES = ("torch", "transformers", "sentence-transformers")


def refuse_existing(path: Path, force: bool) -> None:
    """Fail early, before any work, when `path` exists and may not be replaced."""
    if path.exists() and not force:
        raise SembedError(f"{path} already exists", "pass --force to replace it, or choose another -o")
    if path.exists() and not path.is_dir():
        raise SembedError(f"{path} exists and is not a directory", "choose another -o")


STALE_AGE_S = 24 * 3600  # a temporary folder older than this is a dead run's, wherever it ran


def process_alive(pid: int) -> bool:
    """Whether a process `pid` runs on this host (one of another user counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:  # past any pid
        return False
    return True


def remove_dead_runs(path: Path) -> None:
    """Remove the `.NAME.tmp-PID` and `.NAME.old-PID` folders that runs writing `path` left when they were killed:
    their process is gone from this host, or they are older than STALE_AGE_S (a run on another host of a shared
    file system, whose process cannot be asked). Called under the artifact's lock, so no live run of this host
    is writing them."""
    pattern = re.compile(re.escape(f".{path.name}.") + r"(?:tmp|old)-(\d+)")
    try:
        siblings = list(path.parent.iterdir())
    except OSError:
        return
    for sibling in siblings:
        found = pattern.fullmatch(sibling.name)
        if found is None or int(found.group(1)) == os.getpid():
            continue
        try:
            old = time.time() - sibling.lstat().st_mtime > STALE_AGE_S
        except OSError:
            continue
        if old or not process_alive(int(found.group(1))):
            log.info(f"removing {sibling}, left by a run that was killed")
            if sibling.is_dir() and not sibling.is_symlink():
                shutil.rmtree(sibling, ignore_errors=True)
            else:
                sibling.unlink(missing_ok=True)


def lock_file(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


_held: dict[Path, int] = {}  # artifacts this process holds the lock of: how many `exclusive` blocks deep


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the lock of the artifact `path` while the block runs; another process holding it is an error.

    The lock is an ``flock`` on the hidden sibling `.NAME.lock`: the kernel releases it when its holder exits,
    however it ends, so a crashed run never leaves a stale lock (at most the file, which the next run reuses).
    Nested blocks for the same path (a training run, then the `building` that writes its model) share it.
    """
    key = Path(os.path.abspath(path))
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    lock = lock_file(key)
    lock.parent.mkdir(parents=True, exist_ok=True)
    descriptor = _acquire(lock, path)
    _held[key] = 1
    try:
        yield
    finally:
        del _held[key]
        with contextlib.suppress(OSError):
            lock.unlink()  # before the lock goes, so no one locks a file that is no longer the lock
        os.close(descriptor)


def _acquire(lock: Path, path: Path) -> int:
    while True:
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(descriptor, 32).decode("ascii", "replace").strip()
            os.close(descriptor)
            raise SembedError(
                f"{path} is being written by another run{f' (process {holder})' if holder else ''}",
                f"wait for it to end, or choose another output; the lock is {lock}",
            ) from None
        try:
            current = os.stat(lock).st_ino == os.fstat(descriptor).st_ino
        except FileNotFoundError:
            current = False
        if current:  # else the run we waited on removed it as it ended: lock the next one
            with contextlib.suppress(OSError):  # who holds it, for the message of a second run: not on a full disk
                os.ftruncate(descriptor, 0)
                os.write(descriptor, f"{os.getpid()}\n".encode())
            return descriptor
        os.close(descriptor)


@contextmanager
def building(path: Path, force: bool = False) -> Iterator[Path]:
    """Yield an empty temporary directory; on success it becomes `path`, on failure it is removed.

    With `force` an existing `path` is moved aside, replaced, then deleted:
    at every moment either the old or the new artifact is at `path`. The
    artifact's lock is held throughout (`exclusive`).
    """
    with exclusive(path), _building(path, force) as work:
        yield work


@contextmanager
def _building(path: Path, force: bool) -> Iterator[Path]:
    refuse_existing(path, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_runs(path)
    work = temporary_sibling(path, "tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        yield work
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    old = None
    if path.exists():
        refuse_existing(path, force)  # it may have appeared while we worked
        old = temporary_sibling(path, "old")
        commit(path, old)  # the old one aside, then the new one in its place
    commit(work, path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


class ContentHash:
    """SHA-256 over a sequence of JSON values, one compact line each: the fingerprint of training data."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.count = 0

    def add(self, value: object) -> None:
        self._hash.update(dumps(value, orjson.OPT_SORT_KEYS))  # big integers too
        self.count += 1

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def package_versions(packages: tuple[str, ...] = VERSIONED_PACKAGES) -> dict[str, str | None]:
    """sembed's version and the installed versions of `packages` (None when not installed), without importing them."""
    versions: dict[str, str | None] = {"sembed": __version__, "python": sys.version.split()[0]}
    for name in packages:
        try:
            versions[name] = package_metadata.version(name)
        except package_metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def command_line() -> list[str] | None:
    """The command line that is running, when it is the sembed program (not a test runner calling it in-process)."""
    program = Path(sys.argv[0]).name if sys.argv else ""
    if program in ("sembed", "__main__.py"):
        return ["sembed", *sys.argv[1:]]
    return None


def describe(command: str, data: dict, settings: dict, **fields: object) -> dict:
    """The metadata every artifact carries; `fields` (method, cf_weight, ...) go first, at the top level."""
    return {
        **fields,
        "command": command,
        "command_line": command_line(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "data": data,
        "settings": settings,
        "versions": package_versions(),
    }


def write_metadata(directory: Path, metadata: dict, name: str) -> Path:
    """`metadata` as `name` in `directory`, with the warnings of the command that made it (none are lost under -q)."""
    if console.state.warnings is not None:
        metadata = {**metadata, "warnings": list(console.state.warnings)}
    path = directory / name
    write_json_atomic(path, metadata)
    return path
