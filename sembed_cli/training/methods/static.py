"""static: a static word-piece model distilled from a sentence-transformers teacher; the trainer is
`training/static_distillation.py`, the runtime `models/static_model.py`."""

from __future__ import annotations

from dataclasses import dataclass

from .method import Job, Method, Recipe, option, refuse, start_model

RECIPE = Recipe(
    10, 256, 0.01, None, optimizer="Adam", unit="sentences", note="--fit teacher only; distillation itself has no steps"
)


@dataclass(frozen=True)
class Settings:
    model: str = start_model()
    dim: int = option(
        256,
        "--dim",
        metavar="N",
        min=1,
        help=("dimensions kept by PCA of the distilled word-piece vectors (the teacher's own when larger)."),
    )
    weighting: str = option(
        "sif",
        "--weighting",
        choices=("sif", "zipf", "none"),
        help=(
            "each word-piece's weight: sif a / (a + p) with p its share of the input corpus's pieces; zipf "
            "p from its vocabulary rank (model2vec's, no counts); none."
        ),
    )
    fit: str = option(
        "none",
        "--fit",
        choices=("none", "teacher", "nws"),
        help=(
            "teacher learns the weights (with --fit-vectors the vectors too) so that the static vectors of "
            "input sentences match the teacher's cosine similarities; nws replaces the weights by NWS scores learnt on "
            "the input's neighbouring sentences (doc_id, text records), as --method nws learns them, with its recipe."
        ),
    )
    fit_vectors: bool = option(False, "--fit-vectors", help="with --fit teacher: learn the vectors as well.")
    fit_sentences: int = option(
        20000,
        "--fit-sentences",
        metavar="N",
        min=2,
        help=("with --fit teacher: input sentences of 5 to 40 words it learns from (a sample by --seed)."),
    )


def check(settings: Settings, given: frozenset[str]) -> None:
    if settings.fit != "teacher":
        refuse(given, ("fit_vectors", "fit_sentences", "epochs", "batch_size", "lr"), "only with --fit teacher")


def run(job: Job, settings: Settings) -> None:
    from ..static_distillation import train_static
    from . import nws

    train_static(job, settings, nws.RECIPE, nws.Settings())


METHOD = Method(
    "static",
    "a static word-piece model distilled from --model",
    "Static fast mode: every word-piece of --model's vocabulary is run through the model alone ([CLS] t [SEP]) "
    "and its sentence vector kept (model2vec's distillation), reduced by PCA to --dim and weighted (--weighting; "
    "sif counts the pieces of the input corpus: text records, e.g. sembed convert --from prose). --fit teacher "
    "then learns the weights on the corpus's sentences against the model's own vectors; --fit nws learns NWS "
    "scores instead (as --method nws, the pieces as its words). DIR is a "
    "sentence-transformers StaticEmbedding model: `sembed embed -m DIR` embeds with numpy and tokenizers only "
    "(no torch), and plain sentence-transformers loads it too.",
    RECIPE,
    Settings,
    run,
    check=check,
)
