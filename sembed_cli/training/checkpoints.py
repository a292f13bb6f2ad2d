"""Checkpoints of a training run, and resuming one.

A run that writes model DIR keeps its checkpoints in the sibling DIR.checkpoints:
one `checkpoint-N` folder per save (the model, optimizer, learning-rate
scheduler, the RNG states and the step counter: what the transformers Trainer
writes for sbert, cf and ta, and what `save` writes for the plain torch loops
of the other methods, `epoch_loop.EpochLoop`), plus `sembed-run.json`, the
run's fingerprint (method, base model, data hash, settings). `--resume`
continues from the newest checkpoint only when the fingerprint matches, so the
resumed run ends where an uninterrupted one would. The folder is removed once
the model is written.

One policy for every method: a checkpoint is complete once its state file
(`trainer_state.json`) exists, written last; the newest `KEEP` (two) are kept,
so a crash while one is written still leaves a whole one to resume from.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

from transformers import TrainerCallback

from .. import signals
from ..errors import SembedError
from ..io import atomic_path, write_json_atomic

log = logging.getLogger(__name__)

SUFFIX = ".checkpoints"
RUN_FILE = "sembed-run.json"
STATE = "state.pt"  # what `save` keeps of a plain torch loop
STATE_FILE = "trainer_state.json"  # written last into a checkpoint by the Trainer: its presence means complete
CHECKPOINT = re.compile(r"checkpoint-(\d+)")
KEEP = 2  # the newest two, so a crash while writing one still leaves a whole one


def directory_for(output: Path) -> Path:
    return output.with_name(output.name + SUFFIX)


def latest(directory: Path) -> Path | None:
    """The complete checkpoint with the highest step in `directory`, if any."""
    if not directory.is_dir():
        return None
    found = [
        (int(m.group(1)), path)
        for path in directory.iterdir()
        if (m := CHECKPOINT.fullmatch(path.name)) and (path / STATE_FILE).exists()
    ]
    return max(found)[1] if found else None


def finished(output: Path) -> bool:
    """A model is at `output` and no unfinished run beside it: nothing to resume (the model directory appears
    only once complete, see artifacts.building)."""
    return output.is_dir() and latest(directory_for(output)) is None


def step_of(checkpoint: Path) -> int:
    """The optimiser step a checkpoint was taken at."""
    match = CHECKPOINT.fullmatch(checkpoint.name)
    if match is None:
        raise ValueError(f"not a checkpoint folder name: '{checkpoint.name}' (expected checkpoint-<step>)")
    return int(match.group(1))


def prepare(output: Path, run: dict, resume: bool, force: bool) -> tuple[Path, Path | None]:
    """The checkpoint folder for a run writing `output`, and the checkpoint to resume from (or None).

    A folder left by an unfinished run is continued with `resume` when its
    fingerprint matches `run`; otherwise it is discarded with `force` and is an
    error without, so that hours of training are never thrown away silently.
    (`resume` with `force` thus continues what can be continued, else starts over.)
    """
    directory = directory_for(output)
    newest = latest(directory)
    if newest is not None and resume:
        differences = _differences(_read_run(directory), run)
        if not differences:
            log.info(f"resuming from {newest}")
            return directory, newest
        if not force:
            raise SembedError(
                f"the checkpoints in {directory} are of a different run ({'; '.join(differences)})",
                "repeat the interrupted command with --resume, or pass --force to start over",
            )
        log.info(f"the checkpoints in {directory} are of a different run: starting over (--force)")
    elif newest is not None and not force:
        raise SembedError(
            f"{directory} holds the checkpoints of an unfinished run",
            "add --resume to continue it, or --force to start over",
        )
    elif resume:
        log.info(f"no checkpoint in {directory}: starting from the beginning")
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    write_json_atomic(directory / RUN_FILE, run)
    return directory, None


def save(directory: Path, number: int, state: dict, counted: str = "global_step") -> Path:
    """Checkpoint `number` of a plain torch loop: `state` (torch.save), then the state file that marks it complete
    ({counted: number}); both reach the disk before the next step, and the newest `KEEP` checkpoints are kept."""
    import torch

    path = directory / f"checkpoint-{number}"
    path.mkdir(parents=True, exist_ok=True)
    with atomic_path(path / STATE, durable=True) as partial:
        torch.save(state, partial)
    write_json_atomic(path / STATE_FILE, {counted: number}, durable=True)
    found = sorted((step_of(p), p) for p in directory.iterdir() if CHECKPOINT.fullmatch(p.name))
    for _, old in found[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return path


def load(checkpoint: Path, map_location: str = "cpu") -> dict:
    """The state `save` kept in `checkpoint` (sembed's own file, RNG states included: not weights only)."""
    import torch

    return torch.load(checkpoint / STATE, map_location=map_location, weights_only=False)


def remove(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)


def _read_run(directory: Path) -> dict:
    try:
        return json.loads((directory / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _differences(recorded: dict, current: dict, prefix: str = "") -> list[str]:
    """What differs between two fingerprints, as 'settings.epochs: 4 -> 1' lines."""
    if not recorded:
        return ["its fingerprint is missing"]
    found = []
    for key in sorted(set(recorded) | set(current)):
        old, new = recorded.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            found += _differences(old, new, f"{prefix}{key}.")
        elif old != new:
            shown = f"{old} -> {new}" if max(len(str(old)), len(str(new))) < 40 else "differs"
            found.append(f"{prefix}{key}: {shown}")
    return found


class EpochEndCheckpoints(TrainerCallback):
    """A checkpoint at the end of every epoch too, besides every N steps."""

    def on_epoch_end(self, args, state, control, **kwargs):
        control.should_save = True
        return control


class CheckpointOnSignal(TrainerCallback):
    """Training run under `signals.deferred()`: a SIGTERM, SIGHUP or Ctrl-C ends the step under way, saves a
    checkpoint of it and stops; the signal then interrupts the command, and --resume continues from that step."""

    def on_step_end(self, args, state, control, **kwargs):
        if signals.received() is not None:
            control.should_save = True
            control.should_training_stop = True
        return control
