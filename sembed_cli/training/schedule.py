"""The optimisation schedule every gradient-trained method of `sembed train` shares: the one `Schedule`.

sbert, cf and ta (on the sentence-transformers trainer, `sentence_loop.py`) and mlm and poi (on the plain torch
loop, `masked_lm_loop.py`) all train with AdamW, a linear warm-up and a linear decay, weight decay 0.01 and
gradient clipping at norm 1: what sentence-transformers' `fit` always used for SBERT (the paper names only "Adam,
learning rate 2e-5, 10% linear warm-up, batch 16"), and the POI paper's polynomial decay of power 1.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Protocol

from .job import Job

WEIGHT_DECAY = 0.01  # sentence-transformers' `fit` for SBERT, as AdamW's weight decay
MAX_GRAD_NORM = 1.0  # and its gradient clipping


class ScheduleSettings(Protocol):
    """The settings of a method that the schedule reads (`training/methods/` declares them)."""

    @property
    def max_steps(self) -> int | None: ...
    @property
    def checkpoint_steps(self) -> int: ...


@dataclass(frozen=True)
class Schedule:
    """AdamW, linear warm-up, then linear decay over the run's optimiser steps."""

    epochs: int
    batch_size: int
    learning_rate: float
    warmup_ratio: float
    weight_decay: float = WEIGHT_DECAY
    max_grad_norm: float = MAX_GRAD_NORM
    max_steps: int | None = None  # stop after this many optimiser steps (the schedule spans them)
    checkpoint_steps: int = 0  # a checkpoint every this many steps; 0: at each epoch's end only
    seed: int = 42

    @classmethod
    def of(cls, job: Job, settings: ScheduleSettings) -> Schedule:
        """The job's recipe (with --epochs, --batch-size, --lr, --warmup applied), --max-steps, --checkpoint-steps
        and --seed."""
        recipe = job.recipe
        return cls(
            epochs=recipe.epochs,
            batch_size=recipe.batch_size,
            learning_rate=recipe.lr,
            warmup_ratio=recipe.warmup or 0.0,
            max_steps=settings.max_steps,
            checkpoint_steps=settings.checkpoint_steps,
            seed=job.seed,
        )

    def settings(self) -> dict:
        """The schedule as the metadata and the checkpoints' fingerprint record it."""
        return {"optimizer": "AdamW", "scheduler": "linear warm-up, then linear decay", **asdict(self)}
