"""Reading an input line by line: a file or stdin, gzip by its magic bytes, each line decoded and numbered.

Lines are physical lines (`enumerate(f, 1)`, blank lines counted), so an error names the line an editor shows. A
UTF-8 byte-order mark opens a file harmlessly; a gzip file cut short ends in an error after the last whole line.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, cast

from ..errors import SembedError
from .rejects import Rejects

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
BOM = "\ufeff"
TEXT_SUFFIXES = (".txt", ".txt.gz")  # read as plain text lines, as with --lines


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


class ReadPosition:
    """How far a reader has got into its file, in bytes of the file as stored (compressed for gzip), and how
    big that file is: what a progress display needs for a total and an ETA without counting lines first."""

    def __init__(self) -> None:
        self.file: IO[bytes] | None = None
        self.size: int | None = None  # None for stdin, a pipe or a device

    def bytes_read(self) -> int:
        try:
            return self.file.tell() if self.file is not None else 0
        except (OSError, ValueError):
            return 0


@contextmanager
def open_binary(path: str, position: ReadPosition | None = None) -> Iterator[IO[bytes]]:
    """Open a path or stdin for binary reading; gzip is detected by its magic bytes."""
    if path == STDIN:
        stdin = sys.stdin
        if stdin is None:
            raise SembedError("cannot read <stdin>: it is closed", "give an INPUT file")
        raw: IO[bytes] = stdin.buffer if hasattr(stdin, "buffer") else io.BytesIO(stdin.read().encode())
        owned = False
    else:
        try:
            raw = open(path, "rb")  # noqa: SIM115 (closed after the last line, when owned)
        except OSError as e:
            raise SembedError(f"cannot open {path}: {e.strerror}", "check the path") from None
        owned = True
    try:
        if position is not None and owned:
            position.file, position.size = raw, _regular_size(raw)
        buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[type-var]  # typeshed: raw streams only
        gzipped = buffered.peek(2)[:2] == GZIP_MAGIC
        stream = cast(IO[bytes], gzip.GzipFile(fileobj=buffered)) if gzipped else buffered  # a binary file
        yield stream
    finally:
        if owned:
            raw.close()


def _regular_size(file: IO[bytes]) -> int | None:
    try:
        info = os.fstat(file.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


AUTO_ENCODING = "auto"


class LineDecoder:
    """Decodes one line's bytes: strictly in `encoding`, or, with "auto", as UTF-8 falling back to
    Windows-1252 line by line (old corpora mix the two, even within one file)."""

    def __init__(self, encoding: str = "utf-8"):
        self.encoding = encoding
        self.fallbacks: list[int] = []  # lines that "auto" read as Windows-1252

    @property
    def name(self) -> str:
        return "UTF-8" if self.encoding.lower().replace("_", "-") in ("utf-8", "utf8", AUTO_ENCODING) else self.encoding

    def __call__(self, raw: bytes, number: int) -> str:
        if self.encoding != AUTO_ENCODING:
            return raw.decode(self.encoding)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.fallbacks.append(number)
            try:
                return raw.decode("cp1252")
            except UnicodeDecodeError:  # the five bytes Windows-1252 leaves undefined
                return raw.decode("latin-1")


def text_lines(
    path: str, rejects: Rejects, decode: LineDecoder | None = None, position: ReadPosition | None = None
) -> Iterator[tuple[int, str]]:
    """Physical lines as (line number, text without newline, CR or LF); a line that does not decode is rejected.

    A byte-order mark opening a line (Windows tools write one at the start of a file) is not text and goes. A
    gzip file that is cut short or damaged ends in an error naming the last line read whole; the lines before it
    are all given.
    """
    decode = decode or LineDecoder()
    number = 0
    with open_binary(path, position) as f:
        try:
            for number, raw in enumerate(f, 1):
                try:
                    text = decode(raw, number)
                except UnicodeDecodeError as e:
                    rejects.reject(
                        number, f"not valid {decode.name} (byte 0x{raw[e.start]:02x} at column {e.start + 1})"
                    )
                    continue
                if text.startswith(BOM):  # also where `cat` joined files that each had one
                    text = text[1:]
                yield number, text.rstrip("\r\n")
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            problem = "cut short" if isinstance(e, EOFError) else "damaged"
            raise SembedError(
                f"{rejects.name}: gzip data {problem} after line {number}",
                "the lines before it were read; recompress or re-download the file",
            ) from None
        except OSError as e:
            raise SembedError(f"{rejects.name}: cannot read: {e.strerror or e}") from None
