"""Engines that run a split's parts: a loop in this process, or an actor pool on a Ray cluster.

Either is handed `run_part(index) -> exit status`, which makes the same `embed_part.embed_part` call as the
`sembed embed ... --shard I/N --parts DIR` of a Slurm array task or a shell loop, and the numbers of the parts to
run. The parts' files and manifests make a
part run twice harmless (the second finds it done, or redoes a half-written one), so an engine may retry freely.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartRun:
    """How one part's run ended: its exit status (0 done or skipped, 1 a failure sembed reported, None: the worker
    died more often than the retries allow), where it ran."""

    index: int
    status: int | None
    host: str = ""
    pid: int = 0
    error: str = ""


def run_local(indices: Sequence[int], run_part: Callable[[int], int]) -> list[PartRun]:
    """Every part in this process, one after another (the model is loaded once: it is cached per process)."""
    return [PartRun(index, run_part(index), socket.gethostname(), os.getpid()) for index in indices]


@dataclass(frozen=True)
class RayOptions:
    """Where and how: `address` of a running cluster (None starts a local one, `ray.init`), `workers` actors
    (None: one per CPU of the cluster), `worker_gpus` GPUs each, `retries` restarts of a killed worker and
    re-runs of its part."""

    address: str | None = None
    workers: int | None = None
    worker_gpus: float = 0.0
    retries: int = 3


class PartWorker:
    """A Ray actor: one process that loads the model at its first part and keeps it for the next ones."""

    def __init__(self, run_part: Callable[[int], int]):
        self.run_part = run_part

    def run(self, index: int) -> PartRun:
        return PartRun(index, self.run_part(index), socket.gethostname(), os.getpid())

    def where(self) -> tuple[str, int]:
        return socket.gethostname(), os.getpid()


def run_ray(indices: Sequence[int], run_part: Callable[[int], int], options: RayOptions) -> list[PartRun]:
    """The parts as tasks of an actor pool, one part at a time per actor. A worker killed mid-part (SIGKILL, a
    lost node) is restarted by Ray and its part run again, up to `options.retries` times; a part whose worker
    dies more often is reported, not retried for ever."""
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            address=options.address,
            num_cpus=None if options.address else options.workers,
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=True,
        )
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        workers = max(1, min(options.workers or cpus, len(indices)))
        actor = ray.remote(max_restarts=options.retries, max_task_retries=options.retries)(PartWorker)
        pool = [actor.options(num_cpus=1, num_gpus=options.worker_gpus).remote(run_part) for _ in range(workers)]
        log.info(f"running {len(indices)} part(s) on {workers} Ray worker(s)")
        waiting = list(indices)
        running: dict = {}  # a task's reference -> (its worker, its part)

        def hand_out(worker) -> None:
            if waiting:
                index = waiting.pop(0)
                running[worker.run.remote(index)] = (worker, index)

        for worker in pool:
            hand_out(worker)
        results: list[PartRun] = []
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            worker, index = running.pop(ready[0])
            try:
                result = ray.get(ready[0])
            except ray.exceptions.RayError as e:  # the worker died past its retries: it is gone, the others go on
                results.append(PartRun(index, None, error=str(e).strip().splitlines()[0]))
                continue
            results.append(result)
            log.info(f"part {result.index}: exit status {result.status} on {result.host} (pid {result.pid})")
            hand_out(worker)
        results += [PartRun(index, None, error="no Ray worker left to run it") for index in waiting]
        return sorted(results, key=lambda run: run.index)
    finally:
        if started_here:
            ray.shutdown()
