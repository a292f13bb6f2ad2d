"""sembed train: fine-tune a model with one of the papers' methods and write it as a model directory."""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..io import RecordSource
from ..options import Device, Force, Input, Quiet, Seed, SkipErrors, TextKeys, Verbose
from ..sentence_models import DEFAULT_MODEL


class Method(str, Enum):
    """One per paper; each has its trainer module under sembed_cli/training."""

    sbert = "sbert"
    cf = "cf"


def _score_range(value: str) -> str:
    from ..training.scored_pairs import ScoreRange

    try:
        ScoreRange.parse(value)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    return value


def _finite(value: Optional[float]) -> Optional[float]:
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter("must be a finite number")
    return value


MethodOption = Annotated[Method, typer.Option("--method", case_sensitive=False, metavar="sbert|cf", show_default=False,
                                              help="sbert: Siamese cosine fine-tuning (SBERT); cf: CF-BERT.")]
ModelDir = Annotated[Path, typer.Option("-o", "--output", metavar="DIR", show_default=False, resolve_path=False,
                                        help="The model directory to write (required). Checkpoints go to "
                                             "DIR.checkpoints until it is written.")]
StartModel = Annotated[str, typer.Option(
    "--model", "-m", metavar="MODEL",
    help="sentence-transformers model to start from: a directory or all-MiniLM-L6-v2, the packaged default. "
         "Never downloaded.")]
Epochs = Annotated[int, typer.Option("--epochs", min=1, metavar="N", help="Passes over the data (the paper: 4).")]
TrainBatchSize = Annotated[int, typer.Option("--batch-size", "-b", min=1, metavar="N",
                                             help="Pairs per optimiser step (the paper: 16).")]
LearningRate = Annotated[float, typer.Option("--lr", min=0.0, metavar="LR", help="AdamW peak learning rate.")]
Warmup = Annotated[float, typer.Option("--warmup", min=0.0, max=1.0, metavar="SHARE",
                                       help="Share of all steps for the linear learning-rate warm-up.")]
MaxSteps = Annotated[Optional[int], typer.Option(
    "--max-steps", min=1, metavar="N", show_default=False,
    help="Stop after N optimiser steps (a trial run; the learning-rate schedule then spans N steps).")]
CfWeight = Annotated[Optional[float], typer.Option(
    "--cf-weight", metavar="W", callback=_finite, show_default=False,
    help="cf: W_cf of emb(text) + W_cf * emb(s_cf) in training, saved with the model for `embed` (default 0.2).")]
ScoreRangeOption = Annotated[str, typer.Option(
    "--score-range", metavar="LOW:HIGH", callback=_score_range,
    help="Scale of the gold scores, mapped onto [0, 1]: 0:5 for STS-B (score / 5), 1:5 for SICK "
         "((score - 1) / 4); a score outside it is an error.")]
CheckpointSteps = Annotated[int, typer.Option("--checkpoint-steps", min=0, metavar="N",
                                              help="Checkpoint every N steps (0: only at the end of each epoch).")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue an interrupted run from its newest checkpoint "
                                                       "(repeat its command, with --resume; with --force too, start "
                                                       "over when the checkpoints are of another run).")]


def train_command(
    input: Input = "-",
    method: MethodOption = ...,
    output: ModelDir = ...,
    model: StartModel = DEFAULT_MODEL,
    epochs: Epochs = 4,
    batch_size: TrainBatchSize = 16,
    lr: LearningRate = 2e-5,
    warmup: Warmup = 0.1,
    max_steps: MaxSteps = None,
    cf_weight: CfWeight = None,
    score_range: ScoreRangeOption = "0:5",
    text_keys: TextKeys = None,
    checkpoint_steps: CheckpointSteps = 500,
    resume: Resume = False,
    force: Force = False,
    seed: Seed = 42,
    device: Device = "auto",
    skip_errors: SkipErrors = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Fine-tune a sentence encoder on scored pairs and write it as a model directory.

    Reads records with text_a, text_b (or two --text-key) and a gold score;
    --method cf also reads s_cf_a / s_cf_b, building them as `sembed spo`
    does (from tokens_a / tokens_b when present) where they are missing.
    Writes nothing to stdout: the model goes to DIR, a normal
    sentence-transformers directory (SentenceTransformer(DIR) loads it) with
    sembed.json: method, cf_weight, base model, the data (input, record
    count, SHA-256 of the pairs), every setting, the seed, package versions.
    Training sees the whole input before the first step, so all of it is read
    into memory first.

    \b
    Methods:
      sbert  SBERT: both texts through one encoder, cosine of the two
             embeddings, mean squared error against the scaled score.
      cf     CF-BERT (Yin et al. 2020, eq. 1): each side embedded as
             emb(text) + W_cf * emb(s_cf) before the cosine. W_cf = 0 is
             sbert. `sembed embed --model DIR` applies the saved W_cf.

    Optimisation (the paper's, after SBERT): batch 16, AdamW (weight decay
    0.01, gradient norm clipped at 1), learning rate 2e-5 with a linear
    warm-up over the first 10% of steps and a linear decay to 0, 4 epochs,
    data shuffled each epoch by --seed. The default of 4 epochs is the
    paper's recipe; on a CPU, fewer epochs on a subsample give a quick model.

    Progress and one line per epoch go to stderr. Checkpoints go to
    DIR.checkpoints every --checkpoint-steps steps and at each epoch's end;
    after an interruption the same command with --resume continues from the
    newest one and ends with the weights an uninterrupted run would have
    (same data and settings required). An existing DIR, or checkpoints of an
    unfinished run, are replaced only with --force. DIR appears complete or
    not at all. Runs under torchrun / accelerate launch for several GPUs.

    Bad input stops with 'error: FILE:LINE: what is wrong' (missing or empty
    text, missing, non-numeric or out-of-range score), exit 1; --skip-errors
    trains on the rest and reports what it skipped.

    \b
    Example:
      sembed convert --from stsb sts-train.csv | sembed parse | sembed spo \\
        | sembed train --method cf -o stsb-cf --epochs 4
      sembed convert --from sick SICK_train.txt \\
        | sembed train --method sbert --score-range 1:5 -o sick-sbert
    """
    from ..training import siamese
    from ..training.scored_pairs import PairFields, ScoreRange
    from ..training.sentence_trainer import Schedule

    if cf_weight is not None and method != Method.cf:
        raise typer.BadParameter("only for --method cf", param_hint="'--cf-weight'")
    if text_keys is not None and len(text_keys) != 2:
        raise typer.BadParameter("give it twice, for the two texts of a pair", param_hint="'--text-key'")
    schedule = Schedule(epochs=epochs, batch_size=batch_size, learning_rate=lr, warmup_ratio=warmup,
                        max_steps=max_steps, seed=seed)
    source = RecordSource(input, skip_errors=skip_errors)
    if method in (Method.sbert, Method.cf):
        fields = PairFields(*text_keys) if text_keys else PairFields()
        siamese.train_siamese(source, output, method=method.value, base_model=model, schedule=schedule,
                              cf_weight=siamese.DEFAULT_CF_WEIGHT if cf_weight is None else cf_weight,
                              score_range=ScoreRange.parse(score_range), fields=fields, device=device,
                              checkpoint_steps=checkpoint_steps, resume=resume, force=force)
