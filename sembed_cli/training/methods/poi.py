"""poi: the POI paper's stage 2 (Zhang et al.), batch-all triplets plus the masked-LM loss; the trainer is
`training/poi.py`."""

from __future__ import annotations

from dataclasses import dataclass

from ...models.sentence_models import DEFAULT_MODEL
from .method import (
    Job,
    Method,
    OptionError,
    Recipe,
    checkpoint_steps,
    max_steps,
    option,
    start_model,
    training_precision,
)

RECIPE = Recipe(1, 128, 2e-4, 0.1, unit="names")


@dataclass(frozen=True)
class Settings:
    model: str = start_model()
    distance: str = option(
        "euclidean",
        "--distance",
        choices=("euclidean", "cosine", "manhattan"),
        help="distance of the batch-all triplet loss.",
    )
    margin: float = option(
        0.5, "--margin", metavar="M", min=0.0, help=("triplet margin on the unit-length embeddings.")
    )
    triplet_weight: float = option(1.0, "--triplet-weight", metavar="W", min=0.0, help="L = L_mlm + W * L_triplet.")
    variants: int = option(
        0,
        "--variants",
        metavar="N",
        min=0,
        help=(
            "N generated variants of each POI name of a batch (a typo, a word or suffix dropped, accents or case "
            "changed) as its positives, every other name a negative: the paper's triplets only part POI names from "
            "other text, these teach the embedding to find a place from a misspelt or shortened query (0: off)."
        ),
    )
    variant_weight: float = option(
        1.0, "--variant-weight", metavar="W", min=0.0, help="weight of the variants' triplet loss (with --variants)."
    )
    ngram_weight: float = option(
        0.0,
        "--ngram-weight",
        metavar="W",
        min=0.0,
        max=1.0,
        help=(
            "W > 0 also saves hashed character n-grams with the model: embed, index and search then write "
            "[sqrt(1 - W) e_stage2, sqrt(W) e_ngrams], whose inner product is (1 - W) cos(stage 2) + W cos(n-grams); "
            "the spelling a short name's typo leaves is what finds it (sembed_cli/models/poi_lookup.py). 0: the "
            "stage-2 embedding alone."
        ),
    )
    precision: str = training_precision()
    max_steps: int | None = max_steps()
    checkpoint_steps: int = checkpoint_steps()


def check(settings: Settings, given: frozenset[str]) -> None:
    if settings.model == DEFAULT_MODEL:
        raise OptionError(
            "model",
            "poi continues a stage-1 model: give the directory `sembed train --method mlm --from-scratch` wrote",
        )


def run(job: Job, settings: Settings) -> None:
    from ..poi import train_poi

    train_poi(job, settings)


METHOD = Method(
    "poi",
    "POI stage 2",
    "The POI paper's stage 2: --model, a stage-1 directory, goes on with batch-all online triplet mining (POI "
    "names against non-POI queries, one class; --distance, --margin) plus the masked-LM loss on the POI names: "
    "L = L_mlm + W * L_triplet. Reads text and is_poi of the train split (all records without split). For looking "
    "places up: --variants and --ngram-weight. It writes a masked-LM directory as mlm does.",
    RECIPE,
    Settings,
    run,
    check=check,
)
