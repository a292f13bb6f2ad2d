"""Runs under `torchrun` (or `accelerate launch`): which commands can share the work, and which must refuse.

A launcher starts the same command once per rank, with WORLD_SIZE and RANK set. Only the sentence-encoder
methods of `train` (sbert, cf, ta: the transformers Trainer, distributed data parallel) split their work
between ranks; every other command would compute and write everything once per rank, racing on its output, so
it refuses at start. In a run that can go on, rank 0 alone logs and writes the model (with the world size and the
global batch in sembed.json); the other ranks are quiet.
"""

from __future__ import annotations

import os

import typer

from .errors import SembedError


def world_size() -> int:
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def rank() -> int:
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def is_main_process() -> bool:
    """Rank 0, or a run that is not distributed."""
    return rank() == 0


def refuse(what: str) -> None:
    """Stop a distributed run of `what`, which cannot share its work: one line from rank 0, exit 1 everywhere."""
    if world_size() == 1:
        return
    if not is_main_process():
        raise typer.Exit(1)
    raise SembedError(
        f"{what} cannot run distributed (WORLD_SIZE={world_size()}): every rank would do all of it "
        "and write the same output",
        "run it as one process, without torchrun; `train --method sbert|cf|ta` can run distributed",
    )


def finish() -> None:
    """End a distributed run together: each rank waits at a barrier until rank 0 has written the model, then all
    leave the process group at once, its threads joined while the interpreter still runs. The training's
    DistributedDataParallel wrapper must be gone by then (`sentence_loop.release_wrapper`): its Reducer holding
    the group past this point destroyed it later under the GIL, a deadlock with gloo's threads."""
    if world_size() == 1:
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
