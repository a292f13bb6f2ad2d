"""sbert: SBERT's Siamese cosine fine-tuning (Reimers and Gurevych 2019); the trainer is `training/siamese.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .method import Job, Method, Recipe, checkpoint_steps, max_steps, score_range, start_model

RECIPE = Recipe(4, 16, 2e-5, 0.1, note="the paper's")


@dataclass(frozen=True)
class Settings:
    model: str = start_model()
    score_range: Optional[str] = score_range()
    max_steps: Optional[int] = max_steps()
    checkpoint_steps: int = checkpoint_steps()


def sentence_trainer_arguments(job: Job, settings) -> dict:
    """The arguments sbert, cf and ta give their trainer alike (training/sentence_trainer.py)."""
    from ..scored_pairs import PairFields, ScoreRange
    from ..sentence_trainer import Schedule

    recipe = job.recipe
    schedule = Schedule(epochs=recipe.epochs, batch_size=recipe.batch_size, learning_rate=recipe.lr,
                        warmup_ratio=recipe.warmup, max_steps=settings.max_steps, seed=job.seed)
    return {"base_model": settings.model, "schedule": schedule,
            "score_range": ScoreRange.parse(settings.score_range) if settings.score_range else ScoreRange(),
            "fields": PairFields(*job.text_keys) if job.text_keys else PairFields(), "device": job.device,
            "checkpoint_steps": settings.checkpoint_steps, "resume": job.resume, "force": job.force}


def train_siamese(job: Job, settings, method: str, cf_weight: float) -> None:
    """sbert and cf: training/siamese.py."""
    from .. import siamese

    siamese.train_siamese(job.source, job.output, method=method, cf_weight=cf_weight,
                          **sentence_trainer_arguments(job, settings))


def run(job: Job, settings: Settings) -> None:
    train_siamese(job, settings, "sbert", cf_weight=0.0)


METHOD = Method(
    "sbert", "Siamese cosine fine-tuning (SBERT)",
    "SBERT: text_a, text_b, score; both texts through one encoder, cosine of the two embeddings, mean squared error "
    "against the score scaled by --score-range.",
    RECIPE, Settings, run, text_fields=2, distributed=True)
