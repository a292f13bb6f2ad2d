"""SIGTERM and SIGHUP handled like Ctrl-C, so `timeout`, cron, systemd and Kubernetes stop sembed cleanly.

Each raises `Interrupted`, a KeyboardInterrupt that carries the signal, so every cleanup that already handles
Ctrl-C runs: the batches written so far are flushed, an `embed --npy` matrix is finalised, temporary files and
directories are removed, a training run keeps (or saves) a checkpoint that `--resume` continues. The exit status
is 128 + the signal's number (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP; see `main.SembedGroup`).

Only the first signal interrupts: later ones would interrupt that cleanup, and are ignored (SIGKILL still stops
the process at once). Code that must not be cut in half, such as one optimiser step and its counters, runs
inside `deferred()`, and a signal arriving there interrupts right after it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """The process was asked to stop by `signum`."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _State:
    received: int | None = None  # the first signal
    raised = False
    deferring = 0


_state = _State()


def exit_status(interruption: KeyboardInterrupt) -> int:
    """128 + the signal's number; a plain KeyboardInterrupt is Ctrl-C's."""
    return 128 + getattr(interruption, "signum", signal.SIGINT)


def describe(interruption: KeyboardInterrupt) -> str:
    signum = getattr(interruption, "signum", signal.SIGINT)
    return "interrupted" if signum == signal.SIGINT else f"interrupted by {signal.Signals(signum).name}"


def _handle(signum: int, frame: FrameType | None) -> None:
    if _state.received is not None:
        return
    _state.received = signum
    if not _state.deferring:
        _state.raised = True
        raise Interrupted(signum)


def install() -> None:
    """Handle SIGINT, SIGTERM and SIGHUP by raising `Interrupted` (in the main thread, where Python runs handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return
    _state.received, _state.raised, _state.deferring = None, False, 0
    for signum in HANDLED:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # `nohup` ignores SIGHUP: leave it so
            signal.signal(signum, _handle)


def received() -> int | None:
    """The signal that asked the process to stop, if one has."""
    return _state.received


@contextmanager
def deferred() -> Iterator[None]:
    """Run the block whole: a signal that arrives inside it interrupts right after it."""
    _state.deferring += 1
    try:
        yield
    finally:
        _state.deferring -= 1
    if not _state.deferring and _state.received is not None and not _state.raised:
        _state.raised = True
        raise Interrupted(_state.received)
