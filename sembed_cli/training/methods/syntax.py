"""syntax: the syntax-distillation map (section 3); the trainer is `training/syntax.py`."""

from __future__ import annotations

from dataclasses import dataclass

from .method import Job, Method, Recipe, option, start_model

RECIPE = Recipe(
    5,
    500,
    1e-3,
    None,
    optimizer="Adam",
    unit="samples",
    note="the paper's epochs and batch; it gives no rate: PyTorch's default",
)


@dataclass(frozen=True)
class Settings:
    model: str = start_model()
    random_init: bool = option(
        False,
        "--random-init",
        help=(
            "train the map on vectors of --model with its weights re-initialised at random (by --seed): the paper's "
            "control."
        ),
    )
    dimension: int = option(
        75,
        "--dimension",
        metavar="N",
        min=1,
        help=("dimensions of the map's output (the paper's, chosen on its development set)."),
    )
    pairs_per_set: int = option(
        11,
        "--pairs-per-set",
        metavar="N",
        min=1,
        help=("samples (two sentences, two word indices) drawn from each set an epoch (the paper: about 11)."),
    )


def run(job: Job, settings: Settings) -> None:
    from ..syntax import train_syntax

    train_syntax(job, settings)


METHOD = Method(
    "syntax",
    "the syntax-distillation map",
    "The syntax-distillation map (section 3): reads `sembed gensets` records (aligned `words` of a set of "
    "structurally equivalent sentences); each word's vector from --model, frozen (mean of all layers + the layer "
    "two thirds up, mean over word pieces: `sembed embed --words`); f, one linear layer to --dimension, learnt "
    "with the softmax triplet loss (eq. 4) on word-pair differences f(x_i1) - f(x_i2) of two sentences of a set "
    "(eq. 1-2), the negative the closest pair of the batch from another set (eq. 5), both orders; Adam. 5% of the "
    "sets are held out: their loss and triplet accuracy go to stderr each epoch and into sembed.json. "
    "--random-init: the same on a randomly initialised encoder. DIR is applied by `sembed embed --words "
    "--syntax-map DIR`.",
    RECIPE,
    Settings,
    run,
    text_fields=0,
    text_key_error="syntax reads the aligned `words` of gensets records",
)
