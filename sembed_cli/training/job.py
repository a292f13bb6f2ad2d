"""What a training run is given besides its method's own settings: the `Job` and the method's `Recipe`.

Both the registry (`training/methods/`) and the trainers import this module,
and it imports neither, so settings flow one way: a method module declares
its frozen `Settings`, its `run(job, settings)` hands them whole to its
trainer, and a trainer reads the fields it needs through a small
`typing.Protocol` of its own. Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..io import RecordSource


@dataclass(frozen=True)
class Recipe:
    """A method's optimisation defaults: the paper's, or ours where the paper's cannot run here (`note` says)."""

    epochs: int
    batch_size: int
    lr: float
    warmup: float | None  # share of the steps warming up; None: the method has no schedule to warm up
    optimizer: str = "AdamW"
    unit: str = "pairs"  # what --batch-size counts
    note: str = ""

    def describe(self) -> str:
        epochs = f"{self.epochs} epoch{'s' if self.epochs != 1 else ''}"
        warmup = f", {self.warmup:.0%} warm-up" if self.warmup else ", no warm-up" if self.warmup is not None else ""
        return f"{epochs}, batch {self.batch_size} {self.unit}, {self.optimizer} {self.lr:g}{warmup}" + (
            f" ({self.note})" if self.note else ""
        )


@dataclass(frozen=True)
class Job:
    """What every method's `run` gets besides its own settings, and passes on to its trainer."""

    source: RecordSource
    output: Path
    recipe: Recipe  # the method's, with --epochs, --batch-size, --lr and --warmup applied
    text_keys: tuple[str, ...] | None
    seed: int
    device: str
    resume: bool
    force: bool

    def text_key(self) -> str:
        """The one text field of a method that reads one (`Method.check_usage` checked there is one)."""
        return self.text_keys[0] if self.text_keys else "text"
