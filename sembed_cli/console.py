"""The one stderr console: messages, warnings, progress, and the -q/-v state.

stdout carries JSONL only, so everything meant for people goes through here.
Progress bars show only when stderr is a terminal and -q is not given.
"""

from __future__ import annotations

import logging
import sys
import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console

T = TypeVar("T")

console = Console(stderr=True, highlight=False, soft_wrap=True)


class _State:
    quiet = False
    verbose = bool(os.environ.get("SEMBED_DEBUG"))


state = _State()


def set_quiet(value: bool) -> None:
    state.quiet = value
    _configure_logging()


def set_verbose(value: bool) -> None:
    state.verbose = value or bool(os.environ.get("SEMBED_DEBUG"))
    _configure_logging()


class _StderrHandler(logging.Handler):
    """Writes to whatever sys.stderr is at the time (test runners swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


_handler = _StderrHandler()
_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))


def _configure_logging() -> None:
    level = logging.DEBUG if state.verbose else logging.ERROR if state.quiet else logging.WARNING
    logger = logging.getLogger("sembed_cli")
    logger.setLevel(level)
    if _handler not in logger.handlers:
        logger.addHandler(_handler)


def say(message: str) -> None:
    """An informational line on stderr (silenced by -q)."""
    if not state.quiet:
        console.print(message, markup=False)


def warn(message: str) -> None:
    """A warning line on stderr (kept under -q)."""
    console.print(f"warning: {message}", markup=False)


def error(message: str) -> None:
    console.print(f"error: {message}", markup=False)


def progress(items: Iterable[T], description: str, total: int | None = None, unit: str = "records") -> Iterator[T]:
    """Iterate `items` with a live count on a terminal; a plain pass-through otherwise."""
    if state.quiet or not console.is_terminal:
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [SpinnerColumn(), TextColumn(description), MofNCompleteColumn() if total else TextColumn("{task.completed} " + unit),
               BarColumn() if total else TextColumn(""), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)


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
