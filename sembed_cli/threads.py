"""How many CPU threads a command computes with, set once for every library that keeps a thread pool.

Precedence: ``--threads N``, then ``SEMBED_THREADS`` (parsed here, by `count`, for the command line and the
library alike), then ``OMP_NUM_THREADS``, then a default that fits the machine as it is now: the cores this process
may run on (its CPU affinity, and the cgroup's CPU quota) less the work already running on them, rounded, and at
least one. The work running is measured, not remembered: the machine's busy time in /proc/stat over a fifth of a
second while this process waits (the one-minute load average lags by minutes, still counting a script's previous
command). Where /proc/stat cannot be read, the larger of the load average and the processes runnable now stands in.

Why not the libraries' own default (one thread per core): their parallel regions are many and short, and each
waits for its slowest thread; when another process holds a core, that thread is descheduled for a whole time
slice and every region waits for it, which on a shared machine costs many times the work (bench/threads.py
measures the default against fixed settings, quiet and under contention; the figures are in the docs).

`apply` sets torch's intra-op (and, when still possible, inter-op) threads, the BLAS and OpenMP pools already
loaded (through threadpoolctl), FAISS's OpenMP when loaded, and the ``OMP_NUM_THREADS`` family of variables so
libraries loaded later start with the same count.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
from pathlib import Path

log = logging.getLogger(__name__)

VARIABLE = "SEMBED_THREADS"

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "RAYON_NUM_THREADS",
)  # tokenizers' batch encoding (a static model's whole work)
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
LOADAVG = Path("/proc/loadavg")
PROC_STAT = Path("/proc/stat")
SAMPLE_SECONDS = 0.2  # long enough for 20 clock ticks a core at the usual 100 Hz
USER_OMP_THREADS = os.environ.get("OMP_NUM_THREADS", "")  # as the user set it, before `apply` sets it for libraries


class _Request:
    """What the command line asked for (--threads, or SEMBED_THREADS through it), once `configure` has run."""

    configured = False
    threads: int | None = None
    chosen: int | None = None  # the count `configure` chose and applied


_request = _Request()


def count(text: str) -> int:
    """A thread count as --threads and SEMBED_THREADS give it; ValueError unless it is a positive whole number."""
    try:
        threads = int(text)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"must be a positive whole number, got {text!r}")
    return threads


def requested_count() -> int | None:
    """The thread count the user asked for: --threads or SEMBED_THREADS as the command line read them, or, in a
    process without sembed's command line, SEMBED_THREADS; None when neither is given (a library such as ONNX Runtime
    then keeps its own default). A bad SEMBED_THREADS is a SembedError."""
    if _request.configured:
        return _request.threads
    value = os.environ.get(VARIABLE)
    if not value:
        return None
    try:
        return count(value)
    except ValueError as e:
        from .errors import SembedError

        raise SembedError(f"{VARIABLE} {e}") from None


def configured_count() -> int | None:
    """The thread count `configure` chose for this command, else the one the user asked for (SEMBED_THREADS in a
    process without sembed's command line); None when neither is known."""
    return _request.chosen if _request.chosen is not None else requested_count()


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask, bounded by a cgroup CPU quota (containers)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def other_work() -> float:
    """How many cores other processes are keeping busy now: measured (`busy_cores`), else estimated (`queued_work`)."""
    busy = busy_cores()
    return busy if busy is not None else queued_work()


def cpu_times() -> tuple[int, int] | None:
    """(all, idle) clock ticks of the machine's CPUs since boot, from /proc/stat; None where it cannot be read."""
    try:
        ticks = [int(value) for value in PROC_STAT.read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(ticks) < 5:
        return None
    return sum(ticks), ticks[3] + ticks[4]  # user nice system idle iowait irq softirq steal; idle + iowait


def busy_cores(seconds: float = SAMPLE_SECONDS) -> float | None:
    """The cores busy over the next `seconds` while this process sleeps (so: other processes' work), or None."""
    import time

    before = cpu_times()
    if before is None:
        return None
    time.sleep(seconds)
    after = cpu_times()
    if after is None or after[0] <= before[0]:
        return None
    busy_share = 1 - (after[1] - before[1]) / (after[0] - before[0])
    return max(0.0, busy_share * (os.cpu_count() or 1))


def queued_work() -> float:
    """The larger of the one-minute load average (what has been running) and the runnable processes now, this one
    left out (what has just started, e.g. the other stages of a pipeline)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    try:
        running = int(LOADAVG.read_text().split()[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        running = 0
    return max(load, float(running), 0.0)


def default_threads() -> int:
    """The usable cores less the other work on them, rounded half up, at least 1."""
    cores = usable_cores()
    return max(1, min(cores, math.floor(cores - other_work() + 0.5)))


def choose(requested: int | None) -> tuple[int, str]:
    """The thread count and where it came from: the option (or SEMBED_THREADS, which the option reads through
    `count`), OMP_NUM_THREADS, or the machine."""
    if requested is not None:
        return requested, "--threads"
    if USER_OMP_THREADS.isdigit() and int(USER_OMP_THREADS) > 0:
        return int(USER_OMP_THREADS), "OMP_NUM_THREADS"
    return default_threads(), "default"


def apply(threads: int) -> None:
    """Use `threads` threads in every thread pool loaded now, and in those loaded later."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    if "torch" in sys.modules:
        _torch(threads)
    if "faiss" in sys.modules:
        sys.modules["faiss"].omp_set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=threads)  # numpy's and scipy's BLAS, and the OpenMP runtimes already loaded


def _torch(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # only possible before the first inter-op parallel work of the process
        torch.set_num_interop_threads(threads)


def configure(requested: int | None) -> int:
    """Choose the thread count, apply it, and log the choice (shown with -v)."""
    _request.configured, _request.threads = True, requested
    threads, origin = choose(requested)
    _request.chosen = threads
    apply(threads)
    if origin == "default" and log.isEnabledFor(logging.DEBUG):  # measuring other work again costs 0.2 s
        log.debug("%d thread(s): %d usable core(s), %.1f busy with other work", threads, usable_cores(), other_work())
    else:
        log.debug("%d thread(s) (%s)", threads, origin)
    return threads
