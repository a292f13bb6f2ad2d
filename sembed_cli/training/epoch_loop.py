"""The epoch loop of the plain torch trainers (mlm, poi, nws, syntax) and their checkpoints, written once.

`EpochLoop` counts a run's progress and checkpoints it by the one policy of `checkpoints.py` (`checkpoints.save`:
the state file last, the newest two kept). Progress is counted in optimiser steps (the masked-LM loop: a checkpoint
every --checkpoint-steps steps, at each epoch's end, and after a signal stopped the run; a resumed epoch draws its
batches again from (seed, epoch) and skips those done) or in whole epochs (nws, syntax: one "step" an epoch; the
checkpoint keeps the RNG the next epoch draws from). Either way the resumed run ends where an uninterrupted one
ends. The sentence-encoder methods (sbert, cf, ta) train on the transformers Trainer instead
(`sentence_loop.py`), whose checkpoints follow the same policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from . import checkpoints


class EpochLoop:
    """Where a run stands (`step` of `total`) and its checkpoints in `directory`.

    `state()` is what a checkpoint keeps (weights, optimiser, RNG states...); `saved` is the state of the
    checkpoint the run resumes from, for the trainer to restore, or None.
    """

    def __init__(
        self,
        directory: Path,
        resume_from: Path | None,
        total: int,
        state: Callable[[], dict],
        steps_per_epoch: int = 1,
        checkpoint_steps: int = 0,
        counted: str = "global_step",
        map_location: str = "cpu",
    ):
        self.directory, self.total, self.state = directory, total, state
        self.steps_per_epoch, self.checkpoint_steps, self.counted = steps_per_epoch, checkpoint_steps, counted
        self.saved: dict | None = None
        self.step = 0
        if resume_from is not None:
            self.saved = checkpoints.load(resume_from, map_location)
            self.step = checkpoints.step_of(resume_from)
        self._checkpointed = self.step

    @property
    def finished(self) -> bool:
        return self.step >= self.total

    def epochs(self) -> Iterator[tuple[int, int]]:
        """(epoch, steps of it done before an interruption) for each epoch left; the body calls `advance` after
        each step. A checkpoint follows every epoch but the last (the model written next makes it useless)."""
        while self.step < self.total:
            yield divmod(self.step, self.steps_per_epoch)
            if self.step < self.total:
                self.checkpoint()

    def advance(self) -> None:
        """One step done: a checkpoint every `checkpoint_steps` steps (none after the last)."""
        self.step += 1
        if self.checkpoint_steps and self.step % self.checkpoint_steps == 0 and self.step < self.total:
            self.checkpoint()

    def checkpoint(self) -> None:
        checkpoints.save(self.directory, self.step, self.state(), self.counted)
        self._checkpointed = self.step

    def keep_progress(self) -> None:
        """After an interruption: a checkpoint of the steps done since the last one, if any."""
        if self.step > self._checkpointed:
            self.checkpoint()
