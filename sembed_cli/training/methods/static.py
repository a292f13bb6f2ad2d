"""static: a static word-piece model distilled from a sentence-transformers teacher; the trainer is
`training/static.py`, the runtime `models/static_model.py`."""

from __future__ import annotations

from dataclasses import dataclass

from .method import Job, Method, Recipe, option, refuse, start_model

RECIPE = Recipe(
    5, 256, 1e-3, None, optimizer="Adam", unit="sentences", note="--fit teacher only; distillation itself has no steps"
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
    piece_vectors: str = option(
        "corpus",
        "--piece-vectors",
        choices=("corpus", "alone"),
        help=(
            "each word-piece's vector: corpus the mean of the model's outputs for it over the input's sentences "
            "(--teacher-sentences of them; its output alone where they lack it); alone the model's vector of the "
            "piece alone (model2vec's distill: no pass over the corpus)."
        ),
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
    fit_loss: str = option(
        "cosine",
        "--fit-loss",
        choices=("cosine", "infonce"),
        help=(
            "with --fit teacher: cosine 1 - the cosine of each sentence's static vector and the model's; infonce "
            "InfoNCE against the model's vectors of the batch (in-batch negatives, temperature 0.07)."
        ),
    )
    teacher_sentences: int = option(
        100_000,
        "--teacher-sentences",
        metavar="N",
        min=2,
        help=(
            "with --piece-vectors corpus or --fit teacher: input sentences of 5 to 40 words the model reads (evenly "
            "spaced through the input when it has more)."
        ),
    )
    teacher_windows: int = option(
        0,
        "--teacher-windows",
        metavar="N",
        min=0,
        help=(
            "with --piece-vectors corpus or --fit teacher: the model also reads up to N windows of 12 words at a "
            "stride of 3 through each document of the input (doc_id, text records), after the sentences (evenly "
            "spaced when there are more)."
        ),
    )
    teacher_cache: str | None = option(
        None,
        "--teacher-cache",
        metavar="FILE",
        help=(
            "with --piece-vectors corpus or --fit teacher: keep the model's pass over the sentences in FILE (.npz), "
            "and read it from there when a later run has the same model and sentences (another --dim, --weighting, "
            "--fit or --seed); a run that reads more after them (--teacher-windows) reads only the rest."
        ),
    )
    words: int = option(
        0,
        "--words",
        metavar="N",
        min=0,
        help=(
            "give the N most frequent input words that --model splits into word-pieces (seen 5 times or more) a "
            "token and a vector of their own, added to its vocabulary: first the mean of their pieces' vectors, "
            "then fitted with --fit teacher --fit-vectors. 0: the model's word-pieces only."
        ),
    )

    norm_power: float = option(
        1.0,
        "--norm-power",
        metavar="P",
        min=0.0,
        help=(
            "raise each row's length to the power P at the end, its direction kept: a sentence is the mean of its "
            "pieces' rows, so a row's length is its piece's weight, and P below 1 evens the weights out (0.85, "
            "chosen on STS-B dev, after --fit teacher --fit-vectors: +0.47 on STS-B test, +0.90 on SICK-R); 1 keeps "
            "the rows as distilled."
        ),
    )

    def reads_corpus(self) -> bool:
        """Whether the teacher reads corpus sentences: for the vectors, or for --fit teacher's targets."""
        return self.piece_vectors == "corpus" or self.fit == "teacher"


def check(settings: Settings, given: frozenset[str]) -> None:
    if settings.fit != "teacher":
        refuse(given, ("fit_vectors", "fit_loss", "epochs", "batch_size", "lr"), "only with --fit teacher")
    if not settings.reads_corpus():
        refuse(
            given,
            ("teacher_sentences", "teacher_windows", "teacher_cache"),
            "only with --piece-vectors corpus or --fit teacher",
        )


def run(job: Job, settings: Settings) -> None:
    from ..static import train_static
    from . import nws

    train_static(job, settings, nws.RECIPE, nws.Settings())


METHOD = Method(
    "static",
    "a static word-piece model distilled from --model",
    "Static fast mode: every word-piece of --model's vocabulary gets one vector, the mean of the model's outputs "
    "for it over the input's sentences (--piece-vectors corpus; text records, e.g. sembed convert --from prose) or its "
    "vector alone (--piece-vectors alone, model2vec's distillation), reduced by PCA to --dim and weighted "
    "(--weighting; sif counts the pieces of the input). --fit teacher then learns the weights (--fit-vectors: "
    "and the vectors) on the input's sentences against the model's own sentence vectors; --fit nws learns NWS "
    "scores instead (as --method nws, the pieces as its words). DIR is a "
    "sentence-transformers StaticEmbedding model: `sembed embed -m DIR` embeds with numpy and tokenizers only "
    "(no torch), and plain sentence-transformers loads it too.",
    RECIPE,
    Settings,
    run,
    check=check,
)
