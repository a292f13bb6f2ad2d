"""Checksums of the files sembed writes, recorded at write and checked on open: damage is an error, never an answer.

A checksum here is "SIZE:CRC32" (zlib.crc32 streamed in 1 MiB chunks, as hex): CRC-32 finds every burst of up to 32
flipped bits and any odd number of flips, which is what a bad sector, a torn copy or a stray write leaves, and at
about 4 GB/s on one core it costs little beside the reads that open the file anyway (docs/unattended.md gives the
measured cost at `search` start-up). It guards against accidents, not against an attacker (who would rewrite the
checksum too). The size comes first, so a truncated or grown file is told at a stat, before any read.

`extend` continues a checksum over bytes appended to a file (the vectors an update adds), so an update reads only
what it wrote.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

CHUNK = 1 << 20


def _crc(file: Path | int, start: int, stop: int, value: int) -> int:
    """CRC-32 of bytes start .. stop - 1 of `file` (a path, or an open descriptor read with pread), from `value`."""
    descriptor = file if isinstance(file, int) else os.open(file, os.O_RDONLY)
    try:
        position = start
        while position < stop:
            block = os.pread(descriptor, min(CHUNK, stop - position), position)
            if not block:
                raise OSError(f"{file} ends at byte {position}, before {stop}")
            value = zlib.crc32(block, value)
            position += len(block)
    finally:
        if not isinstance(file, int):
            os.close(descriptor)
    return value


def file_checksum(path: Path, size: int | None = None) -> str:
    """The checksum of the first `size` bytes of the file at `path` (all of it by default)."""
    size = os.stat(path).st_size if size is None else size
    return f"{size}:{_crc(path, 0, size, 0):08x}"


def parse(checksum: str) -> tuple[int, int]:
    size, crc = checksum.split(":")
    return int(size), int(crc, 16)


def extend(checksum: str, path: Path, size: int) -> str:
    """The checksum of the first `size` bytes of `path`, given `checksum` of a prefix of them."""
    start, crc = parse(checksum)
    return f"{size}:{_crc(path, start, size, crc):08x}"


def bytes_checksum(data: bytes) -> str:
    return f"{len(data)}:{zlib.crc32(data):08x}"


def mismatch(file: Path | int, checksum: str, whole: bool = True, name: str | None = None) -> str | None:
    """Why `file` (a path or an open descriptor) does not match `checksum`, None when it does: its size first (a
    stat), then its bytes. `whole`: the file must be exactly that size (else it may be longer: rows appended past
    a commit). `name`: the file's name in the message."""
    size, crc = parse(checksum)
    name = name or (file.name if isinstance(file, Path) else str(file))
    try:
        actual = os.fstat(file).st_size if isinstance(file, int) else os.stat(file).st_size
        if actual < size or (whole and actual != size):
            return f"{name} has {actual} bytes, its checksum was taken over {size}"
        if _crc(file, 0, size, 0) != crc:
            return f"{name} does not match its checksum (its bytes changed after they were written)"
    except FileNotFoundError:
        return f"{name} is missing"
    return None
