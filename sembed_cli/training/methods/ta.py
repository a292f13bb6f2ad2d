"""ta: TA-SBERT (Seo et al. 2022), Token Attention pooling with a reconstruction head; the trainer is
`training/ta.py`."""

from __future__ import annotations

from dataclasses import dataclass

from .method import Job, Method, OptionError, Recipe, checkpoint_steps, max_steps, option, score_range, start_model

RECIPE = Recipe(1, 16, 2e-5, 0.1, note="the paper's; Token Attention and the heads at 3e-5")


@dataclass(frozen=True)
class Settings:
    model: str = start_model()
    score_range: str | None = score_range()
    pooling: str = option(
        "ta",
        "--pooling",
        choices=("ta", "mean"),
        help=("Token Attention pooling (eq. 1-4), or mean: the encoder's tokens averaged (the ablation's SBERT row)."),
    )
    no_recon: bool = option(False, "--no-recon", help="leave out the reconstruction head and loss (eq. 5, 7).")
    recon_init: str = option(
        "uniform",
        "--recon-init",
        choices=("uniform", "embeddings"),
        help=(
            "initial W_r of the reconstruction head (the paper does not say): uniform like Token Attention, or "
            "a copy of "
            "the encoder's word-piece embeddings (as BERT's tied masked-LM decoder)."
        ),
    )
    objective: str = option(
        "nli",
        "--objective",
        choices=("nli", "sts"),
        help=(
            "nli: a softmax classifier over (u, v, |u - v|) on the pairs' label (eq. 6), or sts: cosine "
            "similarity against "
            "the scaled score, MSE."
        ),
    )
    validation: str | None = option(
        None,
        "--validation",
        metavar="FILE",
        help=(
            "with --objective nli: held-out labelled pairs; the trained classifier's accuracy and cross-entropy "
            "on them "
            "go to stderr and into sembed.json (the paper's Fig. 9)."
        ),
    )
    max_steps: int | None = max_steps()
    checkpoint_steps: int = checkpoint_steps()


def check(settings: Settings, given: frozenset[str]) -> None:
    if settings.score_range is not None and settings.objective != "sts":
        raise OptionError("score_range", "only with --objective sts")
    if settings.validation is not None and settings.objective != "nli":
        raise OptionError("validation", "only with --objective nli")


def run(job: Job, settings: Settings) -> None:
    from ..ta import train_ta

    train_ta(job, settings)


METHOD = Method(
    "ta",
    "TA-SBERT",
    "TA-SBERT (Seo et al. 2022): the encoder's pooling replaced by Token Attention (eq. 1-4; --pooling mean for the "
    "ablation) with the reconstruction head (eq. 5; --no-recon drops it); loss L_sen + 0.017 (L_rec(a) + L_rec(b)) "
    "(eq. 7), L_sen the softmax classifier over (u, v, |u - v|) on text_a, text_b, label (entailment, neutral, "
    "contradiction: eq. 6), or with --objective sts the sbert loss on scores. Encoder at --lr, Token Attention and "
    "the heads at 3e-5, initialised uniform with mean 0 and variance 0.02 (section IV-A). The base model's "
    "normalisation is dropped. Base-form input is `sembed normalize` before training and before embedding. "
    "SentenceTransformer(DIR, trust_remote_code=True) loads the model where sembed is installed "
    "(sentence-transformers 6 asks for it for any module class of another package).",
    RECIPE,
    Settings,
    run,
    text_fields=2,
    check=check,
    distributed=True,
)
