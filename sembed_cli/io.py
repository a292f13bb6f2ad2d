"""The record stream: JSONL in, JSONL out, with exact error locations.

Every subcommand reads records through `RecordSource` and writes them through
`RecordSink`. Reading is lazy, one physical line at a time, so memory stays
flat; `batched` groups records for the model and hands over a partial batch
before an input error surfaces, so everything before a bad line is written.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TypeVar

import orjson

from .errors import BadRecord, SembedError

T = TypeVar("T")

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_TEXT_KEYS = ("text", "text_a", "text_b")


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


@contextmanager
def open_binary(path: str) -> Iterator[IO[bytes]]:
    """Open a path or stdin for binary reading; gzip is detected by its magic bytes."""
    if path == STDIN:
        raw: IO[bytes] = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else io.BytesIO(sys.stdin.read().encode())
        owned = False
    else:
        try:
            raw = open(path, "rb")
        except OSError as e:
            raise SembedError(f"cannot open {path}: {e.strerror}", "check the path") from None
        owned = True
    try:
        buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
        stream: IO[bytes] = gzip.GzipFile(fileobj=buffered) if buffered.peek(2)[:2] == GZIP_MAGIC else buffered
        yield stream
    finally:
        if owned:
            raw.close()


class Rejects:
    """The bad-input policy of one input: stop at the first bad line, or count and go on."""

    def __init__(self, name: str, skip_errors: bool = False):
        self.name = name
        self.skip_errors = skip_errors
        self.skipped: list[tuple[int, str]] = []

    def reject(self, line: int, message: str) -> None:
        if not self.skip_errors:
            raise BadRecord(f"{self.name}:{line}: {message}")
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


def text_lines(path: str, rejects: Rejects, decode: LineDecoder | None = None) -> Iterator[tuple[int, str]]:
    """Physical lines as (line number, text without newline); a line that does not decode is rejected."""
    decode = decode or LineDecoder()
    with open_binary(path) as f:
        try:
            for number, raw in enumerate(f, 1):
                try:
                    text = decode(raw, number)
                except UnicodeDecodeError as e:
                    rejects.reject(number, f"not valid {decode.name} (byte 0x{raw[e.start]:02x} at column {e.start + 1})")
                    continue
                yield number, text.rstrip("\r\n")
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise SembedError(f"{rejects.name}: cannot read: {e}") from None


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


class RecordSource:
    """JSONL records from a file or stdin, with the skip-errors policy.

    Iterating yields dicts. `checked(check)` also runs `check(record)` as each
    record is read, so a `BadRecord` it raises is reported with this record's
    file and line. With ``skip_errors`` bad records are counted and dropped.
    Blank lines are ignored but counted, so line numbers stay physical. With a
    `shard`, lines of other shards are passed over unread (their errors are
    theirs to report).
    """

    def __init__(self, path: str = STDIN, *, skip_errors: bool = False, shard: Shard | None = None):
        self.path = path
        self.rejects = Rejects(display_name(path), skip_errors)
        self.shard = shard

    def __iter__(self) -> Iterator[dict]:
        return self.checked(None)

    def checked(self, check: Callable[[dict], object] | None) -> Iterator[dict]:
        reject = self.rejects.reject
        position = -1
        for line, text in text_lines(self.path, self.rejects):
            if not text.strip():
                continue
            position += 1
            if self.shard is not None and not self.shard.owns(position):
                continue
            try:
                record = orjson.loads(text)
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
                    reject(line, e.message)
                    continue
            yield record

    def summary(self) -> str | None:
        return self.rejects.summary()


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
    """

    def __init__(self, keys: Sequence[str] | None = None):
        self.keys = tuple(keys) if keys else None

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
            check_text(record, key)
        return keys


def check_text(record: dict, key: str) -> str:
    """The text in `record[key]`: a string that is not blank, or a BadRecord saying what it is instead."""
    value = record[key]
    if not isinstance(value, str):
        raise BadRecord(f"'{key}' must be a string, got {json_type(value)}")
    if not value.strip():
        raise BadRecord(f"empty text in '{key}'")
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
    """Compact JSONL to stdout or a file, flushed every `flush_every` records and on close."""

    def __init__(self, path: str = STDIN, *, flush_every: int = 1):
        self.path = path
        self.flush_every = max(1, flush_every)
        self.count = 0
        self._pending: list[bytes] = []
        self._owned = path != STDIN
        self._out: IO[bytes] | None = None

    def __enter__(self) -> RecordSink:
        if self._owned:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                self._out = open(self.path, "wb")
            except OSError as e:
                raise SembedError(f"cannot write {self.path}: {e.strerror}") from None
        else:
            self._out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
        return self

    def write(self, record: dict) -> None:
        self._pending.append(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE))
        self.count += 1
        if len(self._pending) >= self.flush_every:
            self.flush()

    def write_all(self, records: Iterable[dict]) -> int:
        for record in records:
            self.write(record)
        return self.count

    def flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if self._out is None:  # a text-only stdout (as under some test runners)
                sys.stdout.write(data.decode("utf-8"))
                sys.stdout.flush()
            else:
                self._out.write(data)
                self._out.flush()

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not BrokenPipeError:
                self.flush()  # what was produced before an error is kept
        except BrokenPipeError:
            if exc_type is None:
                raise
        finally:
            if self._owned and self._out is not None:
                self._out.close()


def temporary_sibling(path: Path, tag: str = "tmp") -> Path:
    """A hidden name next to `path` on the same file system, so the final rename is atomic."""
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}")


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON under a temporary name, then rename, so readers never see half a file."""
    tmp = temporary_sibling(path)
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    os.replace(tmp, path)


def run_stream(source: RecordSource, check: Callable[[dict], object] | None,
               transform: Callable[[Iterable[dict]], Iterable[dict]], output: str, flush_every: int,
               description: str) -> int:
    """Read checked records, transform them lazily, write them, report skips; returns the count written."""
    from . import console

    with RecordSink(output, flush_every=flush_every) as sink:
        sink.write_all(transform(console.progress(source.checked(check), description)))
    summary = source.summary()
    if summary:
        console.warn(summary)
    return sink.count
