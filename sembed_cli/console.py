"""The one stderr console: messages, warnings, progress, and the -q/-v state.

stdout carries JSONL only, so everything meant for people goes through here.
Progress bars show only when stderr is a terminal and -q is not given.

Library modules do not call this module for messages: they log through
``logging.getLogger(__name__)`` and add no handlers (as sentence-transformers
does). The CLI's -q/-v options install the one handler, on the ``sembed_cli``
logger, that shows those records here: INFO as `say` does, WARNING as `warn`
does, DEBUG (with -v only) as ``DEBUG module: message``.

-q shows errors only, so that a cron job mails nothing but failures. A warning
is never dropped silently: every one of a command's warnings, shown or not, is
kept in `state.warnings`, which an artifact's metadata records (`artifacts.
write_metadata`: ``"warnings": [...]`` in an index's or a model's sembed.json).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol, TypeVar

from rich.console import Console

if TYPE_CHECKING:  # rich.progress is imported when a bar is shown, not at start-up
    from rich.progress import Progress, TaskID


class ReadPosition(Protocol):
    """How far a reader is into its input (io.ReadPosition): what a progress bar needs."""

    size: int | None  # None for stdin or a pipe

    def bytes_read(self) -> int: ...


T = TypeVar("T")

console = Console(stderr=True, highlight=False, soft_wrap=True)


class _State:
    quiet = False
    verbose = bool(os.environ.get("SEMBED_DEBUG"))
    rank = 0  # a distributed run sets its process's rank: only rank 0 shows progress and information
    # The warnings of the command that is running, shown or hidden by -q; None outside a command (the Python API).
    warnings: list[str] | None = None

    @property
    def shows_progress(self) -> bool:
        return not self.quiet and self.rank == 0 and console.is_terminal


state = _State()


def set_quiet(value: bool) -> None:
    state.quiet = value
    _configure_logging()


def start_command() -> None:
    """A command begins: its warnings are counted afresh."""
    state.warnings = []


def set_verbose(value: bool) -> None:
    state.verbose = value or bool(os.environ.get("SEMBED_DEBUG"))
    _configure_logging()


class _ConsoleHandler(logging.Handler):
    """Shows the records of sembed's library modules on the console, so that -q, -v and the rank rule apply to them
    as to the CLI's own lines: INFO is information (hidden by -q and on ranks other than 0), WARNING a warning
    (hidden by -q too, but kept in `state.warnings`); DEBUG and ERROR keep the logging form,
    ``LEVEL module: message``."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.levelno == logging.INFO:
                say(record.getMessage())
            elif record.levelno == logging.WARNING:
                warn(record.getMessage())
            elif record.levelno >= logging.ERROR or state.verbose:
                sys.stderr.write(self.format(record) + "\n")  # whatever sys.stderr is now (test runners swap it)
        except Exception:
            self.handleError(record)


_handler = _ConsoleHandler()
_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))


def _configure_logging() -> None:
    level = logging.DEBUG if state.verbose else logging.WARNING if state.quiet else logging.INFO
    logger = logging.getLogger("sembed_cli")
    logger.setLevel(level)
    if _handler not in logger.handlers:
        logger.addHandler(_handler)
    # A library that logs through the root logger (onnxruntime's quantizer: logging.warning) or calls
    # logging.basicConfig installs a stderr handler on the root, and every sembed message then came out twice
    # ("warning: ..." and "WARNING:sembed_cli...:"). A root that already has a handler is left alone by both.
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def say(message: str) -> None:
    """An informational line on stderr (silenced by -q, and on ranks other than 0)."""
    if not state.quiet and state.rank == 0:
        console.print(message, markup=False)


def warn(message: str) -> None:
    """A warning line on stderr; under -q none (only errors show), but the warning is kept in `state.warnings`."""
    if state.warnings is not None:
        state.warnings.append(message)
    if not state.quiet:
        console.print(f"warning: {message}", markup=False)


def error(message: str) -> None:
    console.print(f"error: {message}", markup=False)


def progress(items: Iterable[T], description: str, total: int | None = None, unit: str = "records") -> Iterator[T]:
    """Iterate `items` with a live count on a terminal; a plain pass-through otherwise."""
    if not state.shows_progress:
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [
        SpinnerColumn(),
        TextColumn(description),
        MofNCompleteColumn() if total else TextColumn("{task.completed} " + unit),
        BarColumn() if total else TextColumn(""),
        TimeElapsedColumn(),
    ]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)


class StreamProgress:
    """The progress of a record stream on a terminal: the records written (not read: a record counts once it is
    out), how far into the input file that is (by its bytes as stored, gzip included, so no line counting delays
    the start), the rate in records per second and the time left; then one summary line. Nothing where stderr is
    not a terminal, under -q or on a rank other than 0.

    `position` tells the bytes read and the file's size (None for stdin or a pipe: no total, no ETA then).
    """

    def __init__(self, description: str, position: ReadPosition | None = None):
        self.description = description
        self.position = position
        self.count = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._started = 0.0

    def __enter__(self) -> StreamProgress:
        import time

        self._started = time.monotonic()
        if not state.shows_progress:
            return self
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns = [
            SpinnerColumn(),
            TextColumn(self.description),
            TextColumn("{task.fields[written]} records"),
            TextColumn("{task.fields[rate]}"),
        ]
        if self._size():
            columns[3:3] = [BarColumn(), TaskProgressColumn()]
            columns += [TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
        else:
            columns.append(TimeElapsedColumn())
        self._bar = Progress(*columns, console=console, transient=True)
        self._bar.start()
        self._task = self._bar.add_task(self.description, total=self._size(), written="0", rate="")
        return self

    def _size(self) -> int | None:
        return getattr(self.position, "size", None) or None

    def written(self, count: int) -> None:
        """`count` records are out so far."""
        self.count = count
        if self._bar is None or self._task is None:
            return
        import time

        seconds = max(time.monotonic() - self._started, 1e-9)
        done = self.position.bytes_read() if self.position is not None and self._size() else None
        self._bar.update(self._task, completed=done, written=f"{count:,}", rate=f"{count / seconds:,.1f} records/s")

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is None:
            return
        import time

        self._bar.stop()
        seconds = time.monotonic() - self._started
        minutes, rest = divmod(int(seconds), 60)
        console.print(
            f"{self.description}: {self.count:,} records written in {minutes}:{rest:02d} "
            f"({self.count / max(seconds, 1e-9):,.1f} records/s)",
            markup=False,
        )


SHADES = ("grey23", "grey35", "grey50", "grey66", "grey82", "white")  # backgrounds from faint to strong


def weighted_words(words: list[list]) -> None:
    """One text on stderr with each word shaded by its weight (relative to the text's largest), as the TA-SBERT
    paper's Tables 1-2 show Token Attention; where stderr is not a terminal, each word is followed by its weight."""
    from rich.text import Text

    if not console.is_terminal:
        console.print(" ".join(f"{word}({weight:.3f})" for word, weight in words), markup=False)
        return
    top = max((weight for _, weight in words), default=0.0) or 1.0
    line = Text()
    for n, (word, weight) in enumerate(words):
        shade = SHADES[min(len(SHADES) - 1, int(weight / top * len(SHADES)))]
        line.append(word, style=f"black on {shade}")
        if n < len(words) - 1:
            line.append(" ")
    console.print(line)
