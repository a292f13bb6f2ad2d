"""The record stream: JSONL in, JSONL out, with exact error locations.

Every subcommand reads records through `RecordSource` and writes them through
`RecordSink`; `StreamOptions` carries the options that make the two ends and
`run_stream` joins them. Reading is lazy, one physical line at a time, so
memory stays flat.

The rules of the stream (README, "The record stream"): plain text lines are
records with `--lines` or a `.txt` input; pass-through values come out as they
came in (integers of any size digit for digit); `-o FILE` never replaces an
existing file without --force, is never an input, and is written under a
temporary name renamed at the end, also after an error or an interrupt.
"""

from __future__ import annotations

import errno
import gzip
import io
import logging
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol, cast

import orjson

from ..errors import BadRecord, SembedError
from .atomic_files import commit, temporary_sibling
from .batches import window_sizes
from .json_codec import dumps, json_problem, json_type, loads
from .lines import STDIN, TEXT_SUFFIXES, ReadPosition, display_name, text_lines
from .lookalike_formats import JSONL_HINT, PAIR_LINES, is_json_object, pair_format, pair_hint
from .rejects import Rejects

log = logging.getLogger(__name__)

PLAIN_TEXT_HINT = 'this looks like plain text: pass --lines to read each line as a record {"text": LINE}'


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

    `lines` is the command's --lines/--jsonl: True reads plain text, False
    JSONL, None decides by the name (a `.txt` is plain text, anything else
    JSONL). The first line (blank lines aside) can show that the input is
    something else, and the error says so in its hint (`lookalike_formats`):
    read as JSONL, a line that is not JSON is a SICK or STS-B pair file
    (`sembed convert` reads those) or plain text (`plain_text_hint`: the
    command's way to read it, --lines or "embed first"; None: no hint); read as
    plain text because of a `.txt` name, a JSON object or a pair file is an
    error whatever --skip-errors says, as the whole file would be misread.
    """

    def __init__(
        self,
        path: str = STDIN,
        *,
        skip_errors: bool = False,
        shard: Shard | None = None,
        lines: bool | None = None,
        plain_text_hint: str | None = None,
    ):
        self.path = path
        self.rejects = Rejects(display_name(path), skip_errors)
        self.shard = shard
        self.plain_text_hint = plain_text_hint
        self.by_name = lines is None
        # plain text: each line is {"text": line}
        self.lines = lines if lines is not None else path.lower().endswith(TEXT_SUFFIXES)
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
                if position == 0 and self.by_name:
                    self._refuse_lookalike(line, text)
                record: object = {"text": text}
            else:
                try:
                    record = loads(text)
                except orjson.JSONDecodeError as e:
                    reject(line, f"invalid JSON: {json_problem(e)}", self._text_hint(text) if position == 0 else None)
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

    def _text_hint(self, text: str) -> str | None:
        """The hint for an input whose first line is not JSON: a pair file `convert` reads, or, opening with neither
        an object nor an array, plain text (a JSONL input with a broken line further on gets none)."""
        if text.lstrip().startswith(("{", "[")):
            return None
        return pair_hint(text, self.path) or self.plain_text_hint

    def _refuse_lookalike(self, line: int, text: str) -> None:
        """A `.txt` input read as plain text whose first line is a JSON object or opens a pair file: an error."""
        hint: str | None
        if is_json_object(text):
            what, hint = "a JSON object", JSONL_HINT
        elif (fmt := pair_format(text)) is not None:
            what, hint = PAIR_LINES[fmt], pair_hint(text, self.path)
        else:
            return
        raise SembedError(f"{self.rejects.name}:{line}: a .txt INPUT is plain text, but this line is {what}", hint)

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
    lines: bool | None = None  # None: the command has no --lines (RecordSource)
    force: bool = False
    shard: Shard | None = None
    skip_errors: bool = False

    def source(self) -> RecordSource:
        """The records of INPUT (its share, with a shard), read with the --skip-errors policy; plain text read as
        JSONL says to pass --lines (every command that streams through these options has it)."""
        return RecordSource(
            self.input,
            skip_errors=self.skip_errors,
            shard=self.shard,
            lines=self.lines,
            plain_text_hint=PLAIN_TEXT_HINT,
        )

    def sink(self, flush_every: int = 1, progress=None) -> RecordSink:
        """-o FILE (or stdout), refused when it exists without --force or when it is INPUT."""
        return RecordSink(
            self.output, flush_every=flush_every, force=self.force, inputs=[self.input], progress=progress
        )

    def run(
        self,
        check: Callable[[dict], object] | None,
        transform: Callable[[Iterable[dict]], Iterable[dict]],
        flush_every: int,
        description: str,
        source: RecordReader | None = None,
    ) -> int:
        """`run_stream` from `source` (by default, a new `source()`) to -o; returns the count written."""
        return run_stream(
            source if source is not None else self.source(),
            check,
            transform,
            self.output,
            flush_every,
            description,
            force=self.force,
        )


class RecordSink:
    """Compact JSONL to stdout or `-o FILE`, flushed every `flush_every` records (the first flushes sooner, as
    `batches.window_sizes` grows to it, so a first window of one record is out at once) and on close.

    The rules for FILE, the same in every command: an existing FILE is refused unless `force`; FILE is
    never one of `inputs` (the same file under any name), with or without `force`; FILE.gz is written as
    gzip. The records go to a hidden temporary file beside FILE that is renamed to FILE when the sink
    closes: after success, and equally after bad input, a closed pipe, an interrupt or an error, so every
    batch already flushed is kept and no temporary file stays behind (only a killed process, SIGKILL or a
    power cut, leaves the temporary file, the batches it had flushed inside). A FILE that is not a regular
    file (/dev/null, a named pipe) is written in place. `progress` (a `console.StreamProgress`) hears of
    each flush.
    """

    def __init__(
        self, path: str = STDIN, *, flush_every: int = 1, force: bool = False, inputs: Sequence[str] = (), progress=None
    ):
        self.path = path
        self.flush_every = max(1, flush_every)
        self._flush_sizes = window_sizes(self.flush_every)  # growing as the windows of `batched` grow
        self._flush_at = next(self._flush_sizes)
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
                    raise SembedError(
                        f"-o {self.path} is the input {display_name(source)}: writing it would "
                        "destroy what is being read",
                        "write to another file, then rename it",
                    )
            if stat.S_ISREG(existing.st_mode) and not self.force:
                raise SembedError(f"{self.path} already exists", "pass --force to replace it, or choose another -o")
        blocking = next((parent for parent in target.parents if parent.exists() and not parent.is_dir()), None)
        if blocking is not None:
            raise SembedError(f"cannot write {self.path}: {blocking} is a file, not a folder")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if existing is not None and not stat.S_ISREG(existing.st_mode):
                self._file = open(target, "wb")  # noqa: SIM115 (close() closes it) a device or a pipe: no rename
            else:
                self._tmp = temporary_sibling(target)
                self._file = open(self._tmp, "wb")  # noqa: SIM115 (the sink closes it, then renames)
        except OSError as e:
            raise SembedError(f"cannot write {self.path}: {e.strerror}") from None
        self._out = self._file
        if self.path.lower().endswith(".gz"):
            self._out = cast(IO[bytes], gzip.GzipFile(filename="", mode="wb", fileobj=self._file, mtime=0))
        self._good = self._file.tell()

    def write(self, record: dict) -> None:
        self._pending.append(dumps(record))
        self.count += 1
        if len(self._pending) >= self._flush_at:
            self._flush_at = next(self._flush_sizes)
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
            raise SembedError(
                f"cannot write {self.name}: {e.strerror or e}",
                "the records written before it are kept" if kept else None,
            ) from None
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
            elif not broken and self._out is not None and self._out is not self._file:
                self._out.close()  # the gzip trailer; a gzip stream cut by a failed write cannot be mended
            self._file.close()
            if self._tmp is not None:
                if broken and self._out is not self._file:
                    self._tmp.unlink()
                else:
                    commit(self._tmp, Path(self.path))
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


def run_stream(
    source: RecordReader,
    check: Callable[[dict], object] | None,
    transform: Callable[[Iterable[dict]], Iterable[dict]],
    output: str,
    flush_every: int,
    description: str,
    force: bool = False,
) -> int:
    """Read checked records, transform them lazily, write them (progress: the records written, and how far into
    the input), report skips; returns the count written."""
    from .. import console

    with (
        console.StreamProgress(description, source.position) as progress,
        RecordSink(
            output, flush_every=flush_every, force=force, inputs=[source.path] if source.path else [], progress=progress
        ) as sink,
    ):
        sink.write_all(transform(source.checked(check)))
    summary = source.summary()
    if summary:
        log.warning(summary)
    return sink.count
