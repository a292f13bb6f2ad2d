"""The training loop that masked-LM training shares: mlm (`mlm_adaptation`, an encoder adapted;
`mlm_from_scratch`, the POI paper's character BERT, stage 1) and poi (`poi`, stage 2), and the model directory
they write.

A plain torch loop on `epoch_loop.EpochLoop`, counted in optimiser steps: the
data of an epoch (order and masked positions) follows from the seed and the
epoch number alone, so a checkpoint (weights, optimiser, scheduler, RNG
states, step) is enough for `--resume` to end where an uninterrupted run ends.
The model directory is what `AutoModelForMaskedLM` /
`AutoTokenizer` load, and also a sentence-transformers directory (the encoder
in 0_Transformer, mean pooling, normalisation: `SentenceTransformer(DIR)`,
`sembed embed --model DIR`), with `sembed.json` and its model card.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

from .. import console, signals
from ..artifacts import building, write_metadata
from ..io import write_json_atomic
from ..models import sentence_models
from ..models.precision import autocast
from . import checkpoints
from .epoch_loop import EpochLoop
from .job import Job
from .model_card import write_model_card
from .schedule import Schedule

log = logging.getLogger(__name__)

COMMAND = "sembed train"
MLM_IGNORE = -100  # positions without a masked-LM label (torch's CrossEntropyLoss ignore_index)


BUCKET_BATCHES = 50  # batches sorted by length together: less padding, order still random


def length_batches(order: list[int], lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """`order` cut into batches of names of similar length (within windows of BUCKET_BATCHES batches), shuffled."""
    window = batch_size * BUCKET_BATCHES
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


# --- the loop ------------------------------------------------------------------------------------------


def to_device(batch: dict, device: str) -> dict:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def parameter_groups(
    model, weight_decay: float, learning_rate: float, lr_scale: Callable[[str], float] | None = None
) -> list[dict]:
    """AdamW groups: weight decay except on biases and LayerNorms; each parameter at learning_rate * lr_scale(name)."""
    groups: dict[tuple[bool, float], list] = {}
    for name, parameter in model.named_parameters():  # a tied weight once, under its first name
        exempt = any(x in name for x in ("bias", "LayerNorm"))
        groups.setdefault((exempt, lr_scale(name) if lr_scale else 1.0), []).append(parameter)
    return [
        {"params": params, "weight_decay": 0.0 if exempt else weight_decay, "lr": learning_rate * scale}
        for (exempt, scale), params in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[0][1]))
    ]


def run_loop(
    model,
    epoch_batches: Callable[[int], Iterable[dict]],
    steps_per_epoch: int,
    loss: Callable[[object, dict], tuple[torch.Tensor, dict]],
    schedule: Schedule,
    device: str,
    checkpoint_dir: Path,
    resume_from: Path | None,
    lr_scale: Callable[[str], float] | None = None,
    log_steps: int = 0,
    precision: str = "fp32",
) -> dict:
    """Train `model` with `loss` over the epochs; checkpoints in `checkpoint_dir`; returns a summary.

    `lr_scale(name)`, when given, multiplies the schedule's learning rate for that parameter (one warm-up and decay
    for all). With `log_steps`, a line with the mean losses since the last one goes to stderr every that many steps
    (long epochs, logs that are not a terminal). `precision` (fp32 or bf16, precision.resolve_training) is the
    forward pass's: bf16 autocast keeps the weights, gradients and optimiser in fp32. Like the device it is not part
    of the run's fingerprint: a run may resume in another precision.
    """
    from transformers import get_linear_schedule_with_warmup
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # its "Writing model shards" bar is noise on our stderr

    total = steps_per_epoch * schedule.epochs
    if schedule.max_steps is not None:
        total = min(total, schedule.max_steps)
    optimizer = torch.optim.AdamW(
        parameter_groups(model, schedule.weight_decay, schedule.learning_rate, lr_scale), lr=schedule.learning_rate
    )
    scheduler = get_linear_schedule_with_warmup(optimizer, int(schedule.warmup_ratio * total), total)
    loop = EpochLoop(
        checkpoint_dir,
        resume_from,
        total,
        lambda: {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "python_rng": random.getstate(),
        },
        steps_per_epoch,
        schedule.checkpoint_steps,
    )
    if loop.saved is not None:
        model.load_state_dict(loop.saved["model"])
        optimizer.load_state_dict(loop.saved["optimizer"])
        scheduler.load_state_dict(loop.saved["scheduler"])
        torch.set_rng_state(loop.saved["torch_rng"])
        random.setstate(loop.saved["python_rng"])
    model.to(device).train()
    started, losses = time.perf_counter(), {}
    recent: dict[str, float] = {}  # losses since the last log line
    recent_steps = 0
    try:
        for epoch, skip in loop.epochs():
            running: dict[str, float] = {}
            count = 0
            for index, batch in enumerate(
                console.progress(epoch_batches(epoch), f"epoch {epoch + 1}", steps_per_epoch, "steps")
            ):
                if index < skip:
                    continue  # done before the interruption: the same batches, drawn again from (seed, epoch)
                with signals.deferred():  # a step whole, or not at all: a checkpoint at `step` is then exact
                    with autocast(precision, device):
                        value, parts = loss(model, to_device(batch, device))
                    value.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), schedule.max_grad_norm)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                    loop.advance()
                count += 1
                for name, v in parts.items():
                    running[name] = running.get(name, 0.0) + v
                    recent[name] = recent.get(name, 0.0) + v
                recent_steps += 1
                if log_steps and loop.step % log_steps == 0:
                    log.info(
                        f"step {loop.step}/{total}: mean loss "
                        + ", ".join(f"{k} {v / recent_steps:.4f}" for k, v in recent.items())
                        + f" ({time.perf_counter() - started:.0f} s)"
                    )
                    recent, recent_steps = {}, 0
                if loop.finished:
                    break
            losses = {name: round(v / max(count, 1), 4) for name, v in running.items()}
            log.info(
                f"epoch {epoch + 1}: step {loop.step}/{total}, mean loss "
                + ", ".join(f"{k} {v:.4f}" for k, v in losses.items())
            )
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP (signals.py): keep the steps done
        loop.keep_progress()
        log.warning(
            f"stopped at step {loop.step}/{total}; checkpoint in {checkpoint_dir}: the same command with --resume "
            "continues"
        )
        raise
    model.eval()
    return {
        "steps": total,
        "final_epoch_losses": losses,
        "seconds": round(time.perf_counter() - started, 1),
        "precision": precision,
    }


# --- the model directory -------------------------------------------------------------------------------


def save_model_directory(directory: Path, model, tokenizer, max_length: int) -> None:
    """A Hugging Face masked-LM directory that is also a sentence-transformers one (mean pooling, normalised).

    The root holds the masked-LM (`AutoModelForMaskedLM.from_pretrained(DIR)` tastes names); the
    sentence-transformers modules (`SentenceTransformer(DIR)` embeds them) hold a copy of its encoder, without
    the prediction head, in 0_Transformer, so each library loads exactly the weights it expects (a few MB twice).
    One model thus serves `taste`, `embed` and `index`.
    """
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    encoder = directory / "0_Transformer"
    model.bert.save_pretrained(encoder)
    tokenizer.save_pretrained(encoder)
    # no pooler: the masked-LM has none, and mean pooling needs none (without this it would be made up at random)
    write_json_atomic(
        encoder / "sentence_bert_config.json",
        {"max_seq_length": max_length, "do_lower_case": False, "model_args": {"add_pooling_layer": False}},
    )
    hidden = model.config.hidden_size
    modules = [
        {"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    write_json_atomic(directory / "modules.json", modules)
    (directory / "1_Pooling").mkdir()
    write_json_atomic(
        directory / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    )
    (directory / "2_Normalize").mkdir()


def finish(
    job: Job,
    settings: Any,
    model,
    tokenizer,
    max_length: int,
    metadata: dict,
    checkpoint_dir: Path,
    extra: Callable[[Path], None] | None = None,
) -> dict:
    """Write the job's model directory atomically (`extra(directory)` adds files of its own) with its metadata and
    its model card, then drop the checkpoints."""
    with building(job.output, job.force) as work:
        save_model_directory(work, model, tokenizer, max_length)
        if extra is not None:
            extra(work)
        write_metadata(work, metadata, sentence_models.METADATA_FILE)
        write_model_card(work, job, settings, metadata)
    checkpoints.remove(checkpoint_dir)
    log.info(f"wrote {job.output}")
    return metadata
