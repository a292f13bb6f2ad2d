"""The JSON text of a window's vectors, written by worker processes while this one reads, encodes and writes.

orjson holds the GIL, and the text of 256 float32 values (the shortest text that reads back as each one) costs
more than a third of a static model's record path (docs/static-mode.md, "Where the time goes"), so a thread
cannot take it off the writer. `VectorJson` hands each window's vector matrices to processes of its own
(`rows_json`, in a `ProcessPoolExecutor`), and the writer puts each row's text into its record as an
`orjson.Fragment`, which orjson copies as it is: the bytes written are those of the row written in place,
since the text is orjson's own, of the same float32 row. Windows come back in the order they went.

A window of fewer than PROCESS_ROWS rows (the first windows of a stream, which grow from one record, and a
query) is left to the writer: the first records never wait for a worker to start.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

import orjson

from ..errors import SembedError

if TYPE_CHECKING:
    import numpy as np

PROCESS_ROWS = 128  # windows of fewer rows are written by the writer itself
# a worker keeps up with about four threads (it formats a row in a fifth of its encoding); below four there is
# none: on two cores the rows' text crossing the pipe (2.6 MB a window of 1000) costs more CPU than the worker
# takes off the writer (2 threads, 105,660 sentences: 46,000 sentences/s and 3.9 CPU-s without a worker, 42,600
# and 4.2 with one; docs/static-mode.md)
THREADS_A_PROCESS = 4
T = TypeVar("T")


def rows_json(matrices: dict[str, np.ndarray]) -> dict[str, list[bytes]]:
    """Each row of each matrix as the JSON text `json_codec.dumps` writes for it inside a record (a worker
    process's task)."""
    option = orjson.OPT_SERIALIZE_NUMPY
    return {name: [orjson.dumps(row, option=option) for row in matrix] for name, matrix in matrices.items()}


def processes_for(threads: int) -> int:
    """Worker processes for a command of `threads` threads: one to every THREADS_A_PROCESS threads (none below)."""
    return threads // THREADS_A_PROCESS


def _quiet_worker() -> None:
    """A worker ignores Ctrl-C, SIGTERM and SIGHUP, which reach the whole process group: the command stops on
    them and then shuts its workers down, after the windows it wrote (signals.py)."""
    import signal

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)


def _ended() -> SembedError:
    return SembedError(
        "a process writing the vectors' JSON ended unexpectedly", "--threads 1 writes them in this process"
    )


class VectorJson:
    """Worker processes writing the JSON text of vectors, a window at a time; a context manager that shuts them
    down (their pending windows dropped) when the command ends, however it ends."""

    def __init__(self, processes: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: the command's threads (the read-ahead, the tokenizer's pool) are not copied half-way
        self.pool = ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"), initializer=_quiet_worker
        )
        for _ in range(processes):  # started now, beside the first windows' reading and encoding
            self.pool.submit(int)

    def ahead(
        self, windows: Iterable[tuple[list[dict], T, dict[str, np.ndarray]]]
    ) -> Iterator[tuple[list[dict], T, Future]]:
        """Each window with its vectors replaced by a Future of them as `written` stores them; the window's JSON
        text is being written while the next windows are read and encoded."""
        for batch, jobs, outputs in windows:
            if min(len(matrix) for matrix in outputs.values()) < PROCESS_ROWS:
                kept: Future = Future()
                kept.set_result(outputs)
                yield batch, jobs, kept
            else:
                yield batch, jobs, self._submitted(outputs)

    def _submitted(self, outputs: dict[str, np.ndarray]) -> Future:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self.pool.submit(rows_json, outputs)
        except BrokenProcessPool:
            raise _ended() from None

    def written(self, window: Future) -> dict[str, Sequence]:
        """A window's vectors by field name, a value a row: a float32 row, or its JSON text from a worker."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            rows = window.result()
        except BrokenProcessPool:
            raise _ended() from None
        return {
            name: [orjson.Fragment(text) for text in values] if isinstance(values, list) else values
            for name, values in rows.items()
        }

    def __enter__(self) -> VectorJson:
        return self

    def __exit__(self, *_) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
