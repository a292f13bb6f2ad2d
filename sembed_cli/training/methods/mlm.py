"""mlm: masked-LM training, either adapting an encoder (`training/mlm_adaptation.py`) or the POI paper's stage 1,
a character BERT from scratch (`training/mlm_from_scratch.py`); both on the loop of `training/masked_lm_loop.py`."""

from __future__ import annotations

from dataclasses import dataclass

from .method import (
    Job,
    Method,
    OptionError,
    Recipe,
    checkpoint_steps,
    max_steps,
    option,
    refuse,
    start_model,
    training_precision,
)

ADAPTING = Recipe(
    1,
    32,
    2e-4,
    0.05,
    unit="sentences",
    note=("ours, the head at 25 times it; an epoch of the corpora is hours on a CPU: build_mlm.sh stops at 2000 steps"),
)
FROM_SCRATCH = Recipe(
    1, 512, 1e-3, 0.05, unit="names", note=("the paper's epochs and batch; its rate, 2.5e-6, is for 5 hours on 8 GPUs")
)


@dataclass(frozen=True)
class Settings:
    model: str = start_model()
    from_scratch: bool = option(
        False,
        "--from-scratch",
        help=("a new small character-level BERT on POI names (the POI paper's stage 1) instead of adapting --model."),
    )
    layers: int = option(
        4,
        "--layers",
        metavar="N",
        min=1,
        max=24,
        help="transformer layers of the --from-scratch BERT (the paper: 4 to 7).",
    )
    hidden: int = option(
        128, "--hidden", metavar="N", min=8, help="hidden size of the --from-scratch BERT (4 heads of N/4)."
    )
    vocab: str = option(
        "characters",
        "--vocab",
        choices=("characters", "wordpiece"),
        help=(
            "the --from-scratch BERT's tokens: characters (the paper's), or a WordPiece vocabulary of --vocab-size "
            "learnt from the training names (the paper's taste ranked Chinese characters among thousands; English has "
            "~40 letters). Measured on the English gazetteer neither taste tells a city from a word (test ROC AUC "
            "0.46 characters, 0.52 word pieces): use taste --neighbours with a stage-2 model there."
        ),
    )
    vocab_size: int = option(8000, "--vocab-size", metavar="N", min=100, help="the --vocab wordpiece size.")
    samples: int = option(
        10,
        "--samples",
        metavar="N",
        min=1,
        help=("samples of each name an epoch, one character masked at random in each (the paper's)."),
    )
    holdout: float = option(
        0.02,
        "--holdout",
        metavar="SHARE",
        min=0.0,
        max=0.5,
        help=(
            "adapting: share of the records never trained on, chosen by a hash of their text (the same for "
            "every seed), "
            "named in sembed.json so a benchmark measures the model on them."
        ),
    )
    precision: str = training_precision()
    max_steps: int | None = max_steps()
    checkpoint_steps: int = checkpoint_steps()


def check(settings: Settings, given: frozenset[str]) -> None:
    if settings.from_scratch:
        refuse(given, ("model", "holdout"), "only without --from-scratch")
        if settings.vocab != "wordpiece":
            refuse(given, ("vocab_size",), "only with --vocab wordpiece")
        if settings.hidden % 4:
            raise OptionError("hidden", "must be a multiple of 4 (4 attention heads)")
    else:
        refuse(given, ("layers", "hidden", "samples", "vocab", "vocab_size"), "only with --from-scratch")


def run(job: Job, settings: Settings) -> None:
    if settings.from_scratch:
        from ..mlm_from_scratch import train_char_bert

        train_char_bert(job, settings)
    else:
        from ..mlm_adaptation import adapt_encoder

        adapt_encoder(job, settings)


METHOD = Method(
    "mlm",
    "masked-LM (an encoder adapted, for gensets; POI stage 1 with --from-scratch)",
    "Masked-LM training. --from-scratch: the POI paper's stage 1 (Zhang et al., section 4): a new character-level "
    "BERT (--layers, --hidden) on the text of the records with is_poi true (or absent) and split train (or "
    "absent), each name --samples times an epoch with one character masked at random. Without --from-scratch: "
    "--model, a BERT encoder without a prediction head (all-MiniLM-L6-v2 by default), becomes an English masked-LM "
    "on prose records (text; e.g. sembed convert --from prose), the default of gensets (examples/build_mlm.sh): "
    "BERT's head (dense + GELU + LayerNorm, decoder tied to the word-piece embeddings, bias from the word-piece "
    "frequencies) is trained at 25 x --lr while the encoder is fine-tuned at --lr; [MASK], never seen by such an "
    "encoder, starts as the average word piece; BERT's masking over whole words, but of 40% of a sentence's words "
    "(at least one; as Wettig et al. 2023: more learnt a step): [MASK] 80%, random pieces 10%, kept 10%; the loss "
    "at those pieces only; no dropout; sentences cut at 128 word pieces; --holdout of the records kept out. It "
    "writes a Hugging Face masked-LM directory (AutoModelForMaskedLM, AutoTokenizer) that is also a "
    "sentence-transformers one (mean pooling, normalised), for `sembed taste`, `sembed embed` and `sembed index`.",
    ADAPTING,
    Settings,
    run,
    check=check,
    recipes={"from_scratch": FROM_SCRATCH},
)
