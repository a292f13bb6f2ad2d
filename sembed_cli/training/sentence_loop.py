"""The loop of the sentence-encoder methods, sbert and cf (`sbert.py`) and ta (`ta.py`): fine-tuning a
sentence-transformers model under sembed's rules, and writing it as a model directory.

The loop is sentence-transformers' own `SentenceTransformerTrainer` (the
transformers Trainer underneath), so the same command runs on one CPU, one
GPU, or several under `torchrun` / `accelerate launch` (distributed data
parallel), and checkpoints hold everything an exact resume needs. sembed adds:
progress on the stderr console and nothing on stdout, the checkpoint folder
and `--resume` (see `checkpoints`), the seed, and the atomic model directory
with its `sembed.json`.
"""

from __future__ import annotations

import itertools
import logging
import time
import warnings
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import torch
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from transformers import TrainerCallback, set_seed

from .. import console, signals
from ..artifacts import building, describe, refuse_existing, write_metadata
from ..distributed import finish, is_main_process, world_size  # under torchrun only rank 0 writes artifacts
from ..models import sentence_models
from . import checkpoints
from .job import Job
from .model_card import write_model_card
from .schedule import Schedule, ScheduleSettings
from .scored_pairs import PairFields, ScoreRange

log = logging.getLogger(__name__)

COMMAND = "sembed train"


class SentenceSettings(ScheduleSettings, Protocol):
    """The settings of sbert, cf and ta that this module reads (declared in `training/methods/`)."""

    @property
    def model(self) -> str: ...
    @property
    def score_range(self) -> str | None: ...


def score_range_of(settings: SentenceSettings) -> ScoreRange:
    """--score-range as a `ScoreRange` (0:5, STS-B's, when not given)."""
    return ScoreRange.parse(settings.score_range) if settings.score_range else ScoreRange()


def pair_fields_of(job: Job) -> PairFields:
    """The two text fields of a pair: --text-key given twice, else text_a and text_b."""
    return PairFields(*job.text_keys) if job.text_keys else PairFields()


@dataclass
class TrainingRun:
    """What a fine-tuning run did: the trained model and a summary for the metadata."""

    model: SentenceTransformer
    steps: int = 0
    epochs: float = 0.0
    epoch_losses: list[float] = field(default_factory=list)
    train_loss: float | None = None
    seconds: float = 0.0
    device: str = "cpu"
    resumed_from_step: int | None = None
    world_size: int = 1  # processes of a distributed run (torchrun), each with its share of every batch
    global_batch_size: int = 0  # examples per optimiser step over all of them

    def summary(self) -> dict:
        summary = {
            "steps": self.steps,
            "epochs": self.epochs,
            "epoch_losses": self.epoch_losses,
            "train_loss": self.train_loss,
            "seconds": round(self.seconds, 1),
            "device": self.device,
            "world_size": self.world_size,
            "global_batch_size": self.global_batch_size,
        }
        if self.resumed_from_step is not None:
            summary["resumed_from_step"] = self.resumed_from_step
        return summary


def quiet_libraries() -> None:
    """The libraries' own progress bars and notices would bypass the console (and -q); keep their errors only."""
    import datasets
    import transformers

    if not log.isEnabledFor(logging.DEBUG):  # -v shows them
        transformers.utils.logging.set_verbosity_error()
        logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
        # accelerate's notice about DDP's arguments under torchrun, which are transformers' to pass
        warnings.filterwarnings("ignore", message=".*broadcast_buffers", category=FutureWarning)
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()


class Trainer(SentenceTransformerTrainer):
    """sentence-transformers' trainer without its model-card callback, which encodes example texts for a hub
    widget at start-up (with a progress bar of its own); the saved model gets sembed's card (`model_card`)."""

    def add_model_card_callback(self, default_args_dict: dict) -> None:
        pass

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: torch.nn.Module | None = None) -> None:
        """sentence-transformers' resume, which rebuilds the model from the checkpoint and loads its whole state
        dict. An encoder that came from a masked-LM (BertForMaskedLM has no pooler; the `mlm` start of
        examples/build_mlm.sh) is rebuilt there as a BertModel with a pooler initialised afresh, which the model
        being trained does not have and which mean pooling never uses: those keys are left out, any other
        mismatch still fails. transformers passes `model` only for FSDP and SageMaker, where sentence-transformers'
        own resume (which takes none) cannot load it either."""
        if model is not None and model is not self.model:
            raise NotImplementedError("resuming a wrapped (FSDP or SageMaker) model from a checkpoint")
        trained = self.model
        load = trained.load_state_dict

        def without_new_pooler(state_dict, *load_args, **load_kwargs):
            own = trained.state_dict().keys()
            state_dict = {k: v for k, v in state_dict.items() if k in own or ".pooler." not in k}
            return load(state_dict, *load_args, **load_kwargs)

        # deliberately shadows the method on this instance, for the call below only
        trained.load_state_dict = without_new_pooler  # type: ignore[method-assign]  # a patch, undone in `finally`
        try:
            super()._load_from_checkpoint(resume_from_checkpoint)
        finally:
            del trained.load_state_dict


class ConsoleProgress(TrainerCallback):
    """Training progress through the sembed console: a bar on a terminal, one line per epoch in any case."""

    def __init__(self) -> None:
        self._ticks: Iterator[None] | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        remaining = max(0, state.max_steps - state.global_step)
        label = "training" if state.global_step == 0 else f"training (from step {state.global_step})"
        # console.progress advances its bar each time the next item is asked for
        self._ticks = console.progress(itertools.repeat(None, remaining), label, total=remaining, unit="steps")
        next(self._ticks, None)

    def on_step_end(self, args, state, control, **kwargs):
        if self._ticks is not None:
            next(self._ticks, None)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            label = progress_label(state.global_step, state.max_steps, state.epoch or 0.0, state.num_train_epochs)
            log.info(f"{label}: mean loss {float(logs['loss']):.4f}")

    def on_save(self, args, state, control, **kwargs):
        log.debug("checkpoint at step %d in %s", state.global_step, args.output_dir)

    def on_train_end(self, args, state, control, **kwargs):
        self.close()

    def close(self) -> None:
        if self._ticks is not None:
            if isinstance(self._ticks, Generator):  # console.progress's generator, annotated as an Iterator
                self._ticks.close()  # leaves the bar's context, so the terminal is clean
            self._ticks = None


def progress_label(step: int, steps: int, epoch: float, epochs: int) -> str:
    """Where training stands, as true as the numbers allow: "epoch 2/4 (step 20/40)" at an epoch's end, and
    "step 120/120 (0.33 of an epoch)" where --max-steps ends the run inside an epoch (`epochs` then counts the
    epochs the steps reach, as the Trainer's state does)."""
    if epoch >= 1 and abs(epoch - round(epoch)) < 1e-6:
        return f"epoch {round(epoch)}/{epochs} (step {step}/{steps})"
    share = f"{epoch:.2g} of an epoch" if epoch < 1 else f"{epoch:.2f} epochs"
    return f"step {step}/{steps} ({share})"


def fine_tune(
    model,
    columns: dict[str, list],
    loss: torch.nn.Module,
    schedule: Schedule,
    device: str,
    checkpoint_dir: Path,
    resume_from: Path | None,
    callbacks: tuple[TrainerCallback, ...] = (),
    learning_rates: dict[str, float] | None = None,
) -> TrainingRun:
    """Train `model` on the dataset `columns` (inputs in the loss's order, then "label") with `loss`.

    `learning_rates` maps regular expressions over the loss's parameter names
    to their own peak learning rates (the encoder keeps the schedule's).
    """
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainingArguments
    from transformers import PrinterCallback, ProgressCallback

    args = SentenceTransformerTrainingArguments(
        output_dir=str(checkpoint_dir),
        num_train_epochs=schedule.epochs,
        max_steps=schedule.max_steps or -1,
        per_device_train_batch_size=schedule.batch_size,
        learning_rate=schedule.learning_rate,
        warmup_steps=schedule.warmup_ratio,  # a float below 1 is a share of all steps
        lr_scheduler_type="linear",
        optim="adamw_torch",
        weight_decay=schedule.weight_decay,
        max_grad_norm=schedule.max_grad_norm,
        seed=schedule.seed,
        save_strategy="steps" if schedule.checkpoint_steps > 0 else "no",
        save_steps=schedule.checkpoint_steps if schedule.checkpoint_steps > 0 else 500,
        save_total_limit=checkpoints.KEEP,
        logging_strategy="epoch",
        report_to="none",
        disable_tqdm=True,
        use_cpu=device == "cpu",
        learning_rate_mapping=learning_rates or {},
    )
    progress = ConsoleProgress()
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict(columns),
        loss=loss,
        callbacks=[checkpoints.EpochEndCheckpoints(), checkpoints.CheckpointOnSignal(), progress, *callbacks],
    )
    for callback in (PrinterCallback, ProgressCallback):  # they print to stdout, which is for records only
        trainer.remove_callback(callback)
    resumed = checkpoints.step_of(resume_from) if resume_from is not None else None
    start = time.perf_counter()
    try:
        with signals.deferred():  # a signal ends the step under way, checkpointed (CheckpointOnSignal)
            output = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    except KeyboardInterrupt:
        log.warning(f"interrupted; checkpoints are kept in {checkpoint_dir}: the same command with --resume continues")
        raise
    finally:
        progress.close()
    epoch_losses = [round(float(entry["loss"]), 6) for entry in trainer.state.log_history if "loss" in entry]
    if args.world_size > 1:
        release_wrapper(trainer)
    return TrainingRun(
        model=trainer.model,
        steps=trainer.state.global_step,
        epochs=round(trainer.state.epoch or 0, 4),
        epoch_losses=epoch_losses,
        train_loss=round(float(output.training_loss), 6),
        seconds=time.perf_counter() - start,
        device=str(args.device),
        resumed_from_step=resumed,
        world_size=args.world_size,
        global_batch_size=args.train_batch_size * args.gradient_accumulation_steps * args.world_size,
    )


def release_wrapper(trainer: Trainer) -> None:
    """Free the DistributedDataParallel wrapper of a distributed run now, while the process group is alive.

    Left to the garbage collector, the trainer's cycles kept it to interpreter exit, or to after
    `distributed.finish` had left the group: its Reducer then held the last reference to the gloo process group
    and destroyed it holding the GIL while a gloo thread waited for the GIL (a hang, seen under gdb), or tore
    gloo's threads down at exit ("terminate called without an active exception", a rank aborting now and then).
    """
    import gc

    trainer.accelerator.free_memory()
    trainer.model_wrapped = trainer.model
    trainer.optimizer = trainer.lr_scheduler = None
    gc.collect()


@dataclass
class MethodParts:
    """What a sentence-encoder method adds to the shared flow, besides its data and loss."""

    prepare_model: Callable[[object], object] | None = None  # reshapes the loaded model (new pooling, heads)
    learning_rates: Callable[[torch.nn.Module], dict[str, float]] | None = None  # by parameter-name pattern of the loss
    validate: Callable[[object, torch.nn.Module], dict] | None = None  # held-out figures for the metadata


def train_and_save(
    job: Job,
    settings: SentenceSettings,
    *,
    method: str,
    make_data: Callable[[], tuple[dict[str, list], dict]],
    make_loss: Callable[[object], torch.nn.Module],
    described: dict,
    fields: dict | None = None,
    parts: MethodParts | None = None,
) -> dict:
    """The whole `train` flow of a sentence-encoder method; returns the metadata written as `sembed.json`.

    `make_data` reads the training data: (columns, the metadata's `data`
    part); `make_loss` builds the loss around the loaded model. `described`
    are the method's own settings as the metadata records them, `fields` its
    top-level metadata (cf_weight...), `parts` its other hooks.
    """
    parts = parts if parts is not None else MethodParts()
    output, base_model, device = job.output, settings.model, job.device
    schedule = Schedule.of(job, settings)
    refuse_existing(output, job.force)  # before reading the data or loading a model
    quiet_libraries()
    resolved_device = sentence_models.resolve_device(device)
    columns, data = make_data()
    optimisation = schedule.settings()
    checkpoint_steps = optimisation.pop("checkpoint_steps")  # with the device, free to change between resumes
    all_settings = {**described, **optimisation, "checkpoint_steps": checkpoint_steps, "device": device}
    fingerprint = {
        "method": method,
        "base_model": base_model,
        "data": {"records": data["records"], "sha256": data["sha256"]},
        "settings": {key: value for key, value in all_settings.items() if key not in ("checkpoint_steps", "device")},
    }  # free to change between resumes
    if is_main_process():
        checkpoint_dir, resume_from = checkpoints.prepare(output, fingerprint, job.resume, job.force)
    else:  # the other ranks of a distributed run only read what rank 0 prepares
        checkpoint_dir = checkpoints.directory_for(output)
        resume_from = checkpoints.latest(checkpoint_dir) if job.resume else None

    set_seed(schedule.seed)  # before building anything a method initialises at random
    model = sentence_models.open_model(base_model, resolved_device)  # fresh: never the one `embed` caches
    if parts.prepare_model is not None:
        model = parts.prepare_model(model)
    loss = make_loss(model)
    processes = world_size()
    span = f"at most {schedule.max_steps} step(s)" if schedule.max_steps else f"{schedule.epochs} epoch(s)"
    log.info(
        f"training {method} on {data['records']} pairs from {base_model}: {span}, "
        f"batch {schedule.batch_size}, on {resolved_device}"
        + (
            f" in each of {processes} processes (global batch {schedule.batch_size * processes})"
            if processes > 1
            else ""
        )
    )
    run = fine_tune(
        model,
        columns,
        loss,
        schedule,
        resolved_device,
        checkpoint_dir,
        resume_from,
        learning_rates=parts.learning_rates(loss) if parts.learning_rates else None,
    )
    metadata = describe(
        COMMAND,
        data,
        all_settings,
        method=method,
        **(fields or {}),
        base_model=base_model,
        base_model_path=str(sentence_models.resolve_path(base_model)),
        seed=schedule.seed,
    )
    metadata["training"] = run.summary()
    if parts.validate is not None:
        metadata["validation"] = parts.validate(run.model, loss)
    if is_main_process():
        with building(output, job.force) as work:
            run.model.save(str(work))
            write_metadata(work, metadata, sentence_models.METADATA_FILE)
            write_model_card(work, job, settings, metadata)
        checkpoints.remove(checkpoint_dir)
        log.info(
            f"wrote {output} ({run.steps} steps in {run.seconds:.0f}s, final epoch loss "
            f"{run.epoch_losses[-1] if run.epoch_losses else float('nan'):.4f})"
        )
    finish()  # every rank together, once rank 0 has written
    return metadata
