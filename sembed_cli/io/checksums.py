"""Checksums of the files sembed writes, recorded at write and checked on open: damage is an error, never an answer.

A checksum here is "ALGORITHM:SIZE:HEX". The algorithm is XXH3-64 (xxhash, which the index extras install with
FAISS), streamed in 1 MiB reads: any flipped bit changes it except with odds of 2^-64, and it costs about a third of
zlib's CRC-32 in CPU (0.09 s against 0.28 s over the 1.47 GB FAISS file of a million 384-d vectors, measured on the
shared 2-core machine: bench/results/checksum_startup.json), which is what keeps a check at `search` start-up
within a fifth of it. Where xxhash is missing, CRC-32 ("crc32:..."); both are read back. They guard against
accidents (rot, a torn copy, a stray write), not an attacker, who would rewrite the checksum too. The size comes
first, so a truncated or grown file is told at a stat, before any read.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Protocol

CHUNK = 1 << 20


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


class Crc32:
    """zlib's CRC-32 behind the interface of hashlib's objects."""

    def __init__(self) -> None:
        self.value = 0

    def update(self, data: bytes, /) -> None:
        self.value = zlib.crc32(data, self.value)

    def hexdigest(self) -> str:
        return f"{self.value:08x}"


def _xxh3() -> Hasher | None:
    try:
        import xxhash
    except ImportError:
        return None
    return xxhash.xxh3_64()


DEFAULT = "xxh3" if _xxh3() is not None else "crc32"


def hasher(algorithm: str = DEFAULT) -> Hasher:
    if algorithm == "xxh3":
        made = _xxh3()
        if made is None:
            raise ValueError("a checksum of XXH3-64, but xxhash is not installed (pip install xxhash)")
        return made
    if algorithm == "crc32":
        return Crc32()
    raise ValueError(f"a checksum of an unknown algorithm: {algorithm}")


def parse(checksum: str) -> tuple[str, int, str]:
    """(algorithm, size, hex digest) of a checksum."""
    algorithm, size, digest = checksum.split(":")
    return algorithm, int(size), digest


def make(algorithm: str, size: int, digest: str) -> str:
    return f"{algorithm}:{size}:{digest}"


def _digest(file: Path | int, size: int, algorithm: str) -> str:
    """The digest of bytes 0 .. size - 1 of `file` (a path, or an open descriptor read with pread)."""
    descriptor = file if isinstance(file, int) else os.open(file, os.O_RDONLY)
    made = hasher(algorithm)
    try:
        position = 0
        while position < size:
            block = os.pread(descriptor, min(CHUNK, size - position), position)
            if not block:
                raise OSError(f"{file} ends at byte {position}, before {size}")
            made.update(block)
            position += len(block)
    finally:
        if not isinstance(file, int):
            os.close(descriptor)
    return made.hexdigest()


def file_checksum(path: Path, size: int | None = None, algorithm: str = DEFAULT) -> str:
    """The checksum of the first `size` bytes of the file at `path` (all of it by default)."""
    size = os.stat(path).st_size if size is None else size
    return make(algorithm, size, _digest(path, size, algorithm))


def bytes_checksum(data: bytes, algorithm: str = DEFAULT) -> str:
    made = hasher(algorithm)
    made.update(data)
    return make(algorithm, len(data), made.hexdigest())


def mismatch(file: Path | int, checksum: str, whole: bool = True, name: str | None = None) -> str | None:
    """Why `file` (a path or an open descriptor) does not match `checksum`, None when it does: its size first (a
    stat), then its bytes. `whole`: the file must be exactly that size (else it may be longer: rows appended past
    a commit). `name`: the file's name in the message."""
    algorithm, size, digest = parse(checksum)
    name = name or (file.name if isinstance(file, Path) else str(file))
    try:
        actual = os.fstat(file).st_size if isinstance(file, int) else os.stat(file).st_size
        if actual < size or (whole and actual != size):
            return f"{name} has {actual} bytes, its checksum was taken over {size}"
        if _digest(file, size, algorithm) != digest:
            return f"{name} does not match its checksum (its bytes changed after they were written)"
    except FileNotFoundError:
        return f"{name} is missing"
    return None
