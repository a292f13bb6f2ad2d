"""cf: CF-BERT (Yin et al. 2020): SBERT with component focusing (eq. 1); the trainer is `training/sbert.py`."""

from __future__ import annotations

from dataclasses import dataclass

from .method import Job, Method, Recipe, checkpoint_steps, max_steps, option, score_range, start_model

RECIPE = Recipe(4, 16, 2e-5, 0.1, note="the paper's")


@dataclass(frozen=True)
class Settings:
    model: str = start_model()
    cf_weight: float = option(
        0.2,
        "--cf-weight",
        metavar="W",
        help=(
            "W_cf of emb(text) + W_cf * emb(s_cf) in training, saved with the model for `embed` (the paper's, Table 7)."
        ),
    )
    score_range: str | None = score_range()
    max_steps: int | None = max_steps()
    checkpoint_steps: int = checkpoint_steps()


def run(job: Job, settings: Settings) -> None:
    from ..sbert import train_cf

    train_cf(job, settings)


METHOD = Method(
    "cf",
    "CF-BERT",
    "CF-BERT (Yin et al. 2020, eq. 1): as sbert, each side embedded as emb(text) + W_cf * emb(s_cf) before the "
    "cosine; reads s_cf_a / s_cf_b, built as `sembed spo` does where missing. W_cf = 0 is sbert. `sembed embed "
    "--model DIR` applies W_cf.",
    RECIPE,
    Settings,
    run,
    text_fields=2,
    distributed=True,
)
