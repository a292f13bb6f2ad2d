"""The record stream: JSONL in, JSONL out, with exact error locations.

Every subcommand reads records through `RecordSource` and writes them through
`RecordSink`. Reading is lazy, one physical line at a time, so memory stays
flat; `batched` groups records for the model and hands over a partial batch
before an input error surfaces, so everything before a bad line is written.

The rules of the stream live here and only here (README, "The record
stream"): a UTF-8 byte-order mark opens a file harmlessly; gzip is read by
its magic bytes and written for a `.gz` output; plain text lines are records
with `--lines` or a `.txt` input; pass-through values come out as they came
in (integers of any size digit for digit); `-o FILE` never replaces an
existing file without --force, is never an input, and is written under a
temporary name renamed at the end, also after an error or an interrupt.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import logging
import math
import os
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol, TypeVar

import orjson

from .errors import BadRecord, SembedError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

T = TypeVar("T")

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
BOM = "\ufeff"
DEFAULT_TEXT_KEYS = ("text", "text_a", "text_b")
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
            raw = open(path, "rb")
        except OSError as e:
            raise SembedError(f"cannot open {path}: {e.strerror}", "check the path") from None
        owned = True
    try:
        if position is not None and owned:
            position.file, position.size = raw, _regular_size(raw)
        buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
        stream: IO[bytes] = gzip.GzipFile(fileobj=buffered) if buffered.peek(2)[:2] == GZIP_MAGIC else buffered
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


class Rejects:
    """The bad-input policy of one input: stop at the first bad line, or count and go on."""

    def __init__(self, name: str, skip_errors: bool = False):
        self.name = name
        self.skip_errors = skip_errors
        self.skipped: list[tuple[int, str]] = []

    def reject(self, line: int, message: str, hint: str | None = None) -> None:
        if not self.skip_errors:
            raise BadRecord(f"{self.name}:{line}: {message}", hint)
        self.skipped.append((line, message))

    def summary(self) -> str | None:
        """One line for stderr about skipped records, or None when nothing was skipped."""
        if not self.skipped:
            return None
        shown = ", ".join(str(line) for line, _ in self.skipped[:10])
        more = f" and {len(self.skipped) - 10} more" if len(self.skipped) > 10 else ""
        return f"skipped {len(self.skipped)} bad record(s) in {self.name}: line {shown}{more}; first: {self.skipped[0][1]}"


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


def text_lines(path: str, rejects: Rejects, decode: LineDecoder | None = None,
               position: ReadPosition | None = None) -> Iterator[tuple[int, str]]:
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
                    rejects.reject(number, f"not valid {decode.name} (byte 0x{raw[e.start]:02x} at column {e.start + 1})")
                    continue
                if text.startswith(BOM):  # also where `cat` joined files that each had one
                    text = text[1:]
                yield number, text.rstrip("\r\n")
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            problem = "cut short" if isinstance(e, EOFError) else "damaged"
            raise SembedError(f"{rejects.name}: gzip data {problem} after line {number}",
                              "the lines before it were read; recompress or re-download the file") from None
        except OSError as e:
            raise SembedError(f"{rejects.name}: cannot read: {e.strerror or e}") from None


class Shard:
    """One of N round-robin shares of a stream (SPEC section 6): the k-th non-blank line (k from 0) belongs to
    shard k mod N + 1, so N jobs given the same input with --shard 1/N ... N/N each take a disjoint share, and
    together all of it, without knowing the input's length."""

    def __init__(self, index: int, count: int):
        if not (count >= 1 and 1 <= index <= count):
            raise ValueError(f"'{index}/{count}' is not a shard: I/N needs 1 <= I <= N")
        self.index, self.count = index, count

    @classmethod
    def parse(cls, spec: str) -> Shard:
        index, slash, count = spec.partition("/")
        if not slash or not index.strip().isdigit() or not count.strip().isdigit():
            raise ValueError(f"'{spec}' is not I/N (e.g. 2/8: the second of eight shares)")
        return cls(int(index), int(count))

    def owns(self, position: int) -> bool:
        return position % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


class RecordReader(Protocol):
    """What a stream reads records from: a `RecordSource` (a file or stdin), or records built another way (search's
    --query texts), each checked as a file's are and counted by the same --skip-errors policy."""

    @property
    def path(self) -> str | None: ...  # the file read, which -o must not name; None: no file

    @property
    def position(self) -> ReadPosition: ...  # how far into the input, for the progress line

    def checked(self, check: Callable[[dict], object] | None) -> Iterator[dict]: ...

    def summary(self) -> str | None: ...


class RecordSource:
    """JSONL records from a file or stdin, with the skip-errors policy.

    Iterating yields dicts. `checked(check)` also runs `check(record)` as each
    record is read, so a `BadRecord` it raises is reported with this record's
    file and line. With ``skip_errors`` bad records are counted and dropped.
    Blank lines are ignored but counted, so line numbers stay physical. With a
    `shard`, lines of other shards are passed over unread (their errors are
    theirs to report).
    """

    def __init__(self, path: str = STDIN, *, skip_errors: bool = False, shard: Shard | None = None,
                 lines: bool = False):
        self.path = path
        self.rejects = Rejects(display_name(path), skip_errors)
        self.shard = shard
        self.lines = lines or path.lower().endswith(TEXT_SUFFIXES)  # plain text: each line is {"text": line}
        self.position = ReadPosition()
        self.line = 0  # the physical line of the record last read

    def __iter__(self) -> Iterator[dict]:
        return self.checked(None)

    def checked(self, check: Callable[[dict], object] | None) -> Iterator[dict]:
        reject = self.rejects.reject
        position = -1
        for line, text in text_lines(self.path, self.rejects, position=self.position):
            if not text.strip():
                continue
            self.line = line
            position += 1
            if self.shard is not None and not self.shard.owns(position):
                continue
            if self.lines:
                record: object = {"text": text}
            else:
                try:
                    record = loads(text)
                except orjson.JSONDecodeError as e:
                    reject(line, f"invalid JSON: {json_problem(e)}")
                    continue
            if not isinstance(record, dict):
                reject(line, f"expected a JSON object, got {json_type(record)}")
                continue
            if check is not None:
                try:
                    check(record)
                except BadRecord as e:
                    reject(line, e.message, e.hint)
                    continue
            yield record

    def summary(self) -> str | None:
        return self.rejects.summary()


@dataclass(frozen=True)
class StreamOptions:
    """The options that travel together through every record-stream command: INPUT, -o/--output, --lines,
    --force, --shard and --skip-errors (a command without --lines or --shard leaves them out). Built once from the
    command's arguments, it makes the stream's two ends, so no command passes the six on one by one:

        stream = StreamOptions(input, output, lines=lines, force=force, shard=shard, skip_errors=skip_errors)
        stream.run(check, transform, batch_size, "parsing")
    """

    input: str = STDIN
    output: str = STDIN
    lines: bool = False
    force: bool = False
    shard: Shard | None = None
    skip_errors: bool = False

    def source(self) -> RecordSource:
        """The records of INPUT (its share, with a shard), read with the --skip-errors policy."""
        return RecordSource(self.input, skip_errors=self.skip_errors, shard=self.shard, lines=self.lines)

    def sink(self, flush_every: int = 1, progress=None) -> RecordSink:
        """-o FILE (or stdout), refused when it exists without --force or when it is INPUT."""
        return RecordSink(self.output, flush_every=flush_every, force=self.force, inputs=[self.input],
                          progress=progress)

    def run(self, check: Callable[[dict], object] | None, transform: Callable[[Iterable[dict]], Iterable[dict]],
            flush_every: int, description: str, source: RecordReader | None = None) -> int:
        """`run_stream` from `source` (by default, a new `source()`) to -o; returns the count written."""
        return run_stream(source if source is not None else self.source(), check, transform, self.output,
                          flush_every, description, force=self.force)


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 20  # orjson reads an integer past 64 bits as a float: 20 digits or more in a row may be one


def loads(text: str | bytes) -> object:
    """One JSON value, exactly: orjson, except that a line with a run of 20 or more digits (an integer that may not
    fit 64 bits, such as a 30-digit id) is read again with the standard library, whose integers have no limit.

    A float is read as the nearest double, as by every JSON reader that computes with numbers; `dumps` writes
    it back as the shortest text that reads as that double (1.10 as 1.1, 1e5 as 100000.0: the same number).
    """
    value = orjson.loads(text)
    raw = text if isinstance(text, bytes) else text.encode()
    if _LONG_NUMBER in raw.translate(_DIGITS_AS_ZERO):
        value = json.loads(raw)  # orjson has found it valid JSON (without NaN or Infinity)
    return value


def dumps(record: object, options: int = 0) -> bytes:
    """One compact JSON line (orjson `options` added); integers past 64 bits, which orjson refuses, are written
    digit for digit."""
    option = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE | options
    try:
        return orjson.dumps(record, option=option)
    except orjson.JSONEncodeError as e:
        if "64-bit" not in str(e):
            raise
        return orjson.dumps(_big_ints_as_text(record), option=option)


def _big_ints_as_text(value: object) -> object:
    if isinstance(value, dict):
        return {key: _big_ints_as_text(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_big_ints_as_text(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and not -(1 << 63) <= value < (1 << 64):
        return orjson.Fragment(str(value).encode())
    return value


def json_problem(error: orjson.JSONDecodeError) -> str:
    """orjson's reason with the column, without its 'line 1' (our lines are physical ones)."""
    reason = str(error).split(": line ")[0]
    if error.doc[error.pos:].lstrip("-").startswith(("NaN", "Infinity")):
        reason = "NaN and Infinity are not JSON numbers"
    return f"{reason} at column {error.colno}"


def json_type(value: object) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


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
        raise BadRecord(f"'{key}' is {len(value):,} characters, over {limit[1]} of {limit[0]:,}",
                        "split long texts first, e.g. with sembed convert --from prose")
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


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of up to `size` items; on an input error the partial batch comes out first."""
    batch: list[T] = []
    try:
        for item in items:
            batch.append(item)
            if len(batch) >= size:
                yield batch
                batch = []
    except SembedError:
        if batch:
            yield batch
        raise
    if batch:
        yield batch


def text_jobs(batch: list[dict], fields: TextFields) -> list[tuple[dict, str]]:
    """Every (record, text key) of a batch, in order: the units a model works on."""
    return [(record, key) for record in batch for key in fields.of(record)]


def map_texts(records: Iterable[dict], fields: TextFields, batch_size: int,
              process: Callable[[list[str]], Iterable[T]], store: Callable[[dict, str, T], None]) -> Iterator[dict]:
    """Run `process` over all texts of each batch at once, `store` each result in its record, pass records on."""
    for batch in batched(records, batch_size):
        jobs = text_jobs(batch, fields)
        for (record, key), result in zip(jobs, process([record[key] for record, key in jobs])):
            store(record, key, result)
        yield from batch


class RecordSink:
    """Compact JSONL to stdout or `-o FILE`, flushed every `flush_every` records and on close.

    The rules for FILE, the same in every command: an existing FILE is refused unless `force`; FILE is
    never one of `inputs` (the same file under any name), with or without `force`; FILE.gz is written as
    gzip. The records go to a hidden temporary file beside FILE that is renamed to FILE when the sink
    closes: after success, and equally after bad input, a closed pipe, an interrupt or an error, so every
    batch already flushed is kept and no temporary file stays behind (only a killed process, SIGKILL or a
    power cut, leaves the temporary file, the batches it had flushed inside). A FILE that is not a regular
    file (/dev/null, a named pipe) is written in place. `progress` (a `console.StreamProgress`) hears of
    each flush.
    """

    def __init__(self, path: str = STDIN, *, flush_every: int = 1, force: bool = False,
                 inputs: Sequence[str] = (), progress=None):
        self.path = path
        self.flush_every = max(1, flush_every)
        self.force = force
        self.inputs = inputs
        self.progress = progress
        self.count = 0
        self._pending: list[bytes] = []
        self._owned = path != STDIN
        self._out: IO[bytes] | None = None
        self._file: IO[bytes] | None = None  # the file under _out (gzip writes through it)
        self._tmp: Path | None = None
        self._good = 0  # bytes of _file that hold whole records

    @property
    def name(self) -> str:
        return self.path if self._owned else "<stdout>"

    def __enter__(self) -> RecordSink:
        if self._owned:
            self._open_file()
        else:
            self._out = _stdout()
        return self

    def _open_file(self) -> None:
        target = Path(self.path)
        existing = _stat(target)
        if existing is not None:
            if stat.S_ISDIR(existing.st_mode):
                raise SembedError(f"cannot write {self.path}: it is a directory", "give -o a file name")
            for source in self.inputs:
                same = _input_stat(source)
                if same is not None and os.path.samestat(existing, same):
                    raise SembedError(f"-o {self.path} is the input {display_name(source)}: writing it would "
                                      "destroy what is being read", "write to another file, then rename it")
            if stat.S_ISREG(existing.st_mode) and not self.force:
                raise SembedError(f"{self.path} already exists", "pass --force to replace it, or choose another -o")
        blocking = next((parent for parent in target.parents if parent.exists() and not parent.is_dir()), None)
        if blocking is not None:
            raise SembedError(f"cannot write {self.path}: {blocking} is a file, not a folder")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if existing is not None and not stat.S_ISREG(existing.st_mode):
                self._file = open(target, "wb")  # a device or a named pipe: nothing to rename
            else:
                self._tmp = temporary_sibling(target)
                self._file = open(self._tmp, "wb")
        except OSError as e:
            raise SembedError(f"cannot write {self.path}: {e.strerror}") from None
        self._out = self._file
        if self.path.lower().endswith(".gz"):
            self._out = gzip.GzipFile(filename="", mode="wb", fileobj=self._file, mtime=0)
        self._good = self._file.tell()

    def write(self, record: dict) -> None:
        self._pending.append(dumps(record))
        self.count += 1
        if len(self._pending) >= self.flush_every:
            self.flush()

    def write_all(self, records: Iterable[dict]) -> int:
        for record in records:
            self.write(record)
        return self.count

    def flush(self) -> None:
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        try:
            if self._out is None:  # a text-only stdout (as under some test runners)
                sys.stdout.write(data.decode("utf-8"))
                sys.stdout.flush()
            else:
                self._out.write(data)
                self._out.flush()  # gzip: a sync flush, so the data so far decompresses
            if self._file is not None and self._tmp is not None:
                self._good = self._file.tell()
        except BrokenPipeError:
            raise
        except OSError as e:
            kept = self._tmp is not None and self._out is self._file  # see _close_file
            raise SembedError(f"cannot write {self.name}: {e.strerror or e}",
                              "the records written before it are kept" if kept else None) from None
        if self.progress is not None:
            self.progress.written(self.count)

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not BrokenPipeError:
                self.flush()  # what was produced before an error is kept
        except BrokenPipeError:
            if exc_type is None:
                raise
        finally:
            if self._owned:
                self._close_file()

    def _close_file(self) -> None:
        """Finish FILE: the gzip trailer, then the rename; after a failed write, only the whole records."""
        if self._file is None:
            return
        broken = self._tmp is not None and self._file.tell() != self._good
        try:
            if broken and self._out is self._file:
                self._file.truncate(self._good)  # a record cut by the failed write goes
            elif not broken and self._out is not self._file:
                self._out.close()  # the gzip trailer; a gzip stream cut by a failed write cannot be mended
            self._file.close()
            if self._tmp is not None:
                if broken and self._out is not self._file:
                    self._tmp.unlink()
                else:
                    os.replace(self._tmp, self.path)
        except OSError as e:
            raise SembedError(f"cannot write {self.path}: {e.strerror or e}") from None
        finally:
            if self._tmp is not None and self._tmp.exists():
                self._tmp.unlink()


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _input_stat(source: str) -> os.stat_result | None:
    """What an input is on disk: its file, or for stdin the file redirected into it (< FILE)."""
    if source != STDIN:
        return _stat(Path(source))
    try:
        return os.fstat(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def _stdout() -> IO[bytes] | None:
    """stdout for bytes; a closed one (`>&-`) is refused before anything is computed for it."""
    stdout = sys.stdout
    if stdout is None:
        raise SembedError("cannot write <stdout>: it is closed", "redirect it (> FILE) or give -o FILE")
    try:
        os.fstat(stdout.fileno())
    except OSError as e:
        if e.errno == errno.EBADF:
            raise SembedError("cannot write <stdout>: it is closed", "redirect it (> FILE) or give -o FILE") from None
    except (ValueError, AttributeError, io.UnsupportedOperation):
        pass  # not a real file (a test runner's): nothing to check
    return stdout.buffer if hasattr(stdout, "buffer") else None


def temporary_sibling(path: Path, tag: str = "tmp") -> Path:
    """A hidden name next to `path` on the same file system, so the final rename is atomic."""
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}")


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON under a temporary name, then rename, so readers never see half a file."""
    tmp = temporary_sibling(path)
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    os.replace(tmp, path)


def run_stream(source: RecordReader, check: Callable[[dict], object] | None,
               transform: Callable[[Iterable[dict]], Iterable[dict]], output: str, flush_every: int,
               description: str, force: bool = False) -> int:
    """Read checked records, transform them lazily, write them (progress: the records written, and how far into
    the input), report skips; returns the count written."""
    from . import console

    with console.StreamProgress(description, source.position) as progress, \
            RecordSink(output, flush_every=flush_every, force=force, inputs=[source.path] if source.path else [],
                       progress=progress) as sink:
        sink.write_all(transform(source.checked(check)))
    summary = source.summary()
    if summary:
        log.warning(summary)
    return sink.count


# --- field readers ---------------------------------------------------------------------------------------
# What one record gives a command that reads values rather than text: vectors, a label, a group, each checked.
# Every reader raises `BadRecord` with the field's name and what is wrong; the record source adds FILE:LINE.
# `Dimension` remembers the size of the first record's vectors, so a vector of another size is named with both
# sizes. numpy is imported where a reader needs it, so the stream itself loads without it.

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


def float32_vector(record: dict, key: str, size: int | None = None, cosine: bool = True,
                   hint: str = "run sembed embed first") -> np.ndarray:
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
