"""sbert: SBERT's Siamese cosine fine-tuning (Reimers and Gurevych 2019); the trainer is `training/sbert.py`."""

from __future__ import annotations

from dataclasses import dataclass

from .method import Job, Method, Recipe, checkpoint_steps, max_steps, score_range, start_model

RECIPE = Recipe(4, 16, 2e-5, 0.1, note="the paper's")


@dataclass(frozen=True)
class Settings:
    model: str = start_model()
    score_range: str | None = score_range()
    max_steps: int | None = max_steps()
    checkpoint_steps: int = checkpoint_steps()


def run(job: Job, settings: Settings) -> None:
    from ..sbert import train_sbert

    train_sbert(job, settings)


METHOD = Method(
    "sbert",
    "Siamese cosine fine-tuning (SBERT)",
    "SBERT: text_a, text_b, score; both texts through one encoder, cosine of the two embeddings, mean squared error "
    "against the score scaled by --score-range.",
    RECIPE,
    Settings,
    run,
    text_fields=2,
    distributed=True,
)
