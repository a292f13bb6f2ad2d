"""nws: Neural Word Saliency (Samardzhiev et al. 2018); the trainer is `training/nws.py`."""

from __future__ import annotations

from dataclasses import dataclass

from .method import Job, Method, Recipe, option

RECIPE = Recipe(5, 128, 0.01, None, optimizer="AdaGrad", note="the paper's; its curves flatten after 5 or 6 epochs")


@dataclass(frozen=True)
class Settings:
    vectors: str = option(
        "glove-6b-50d",
        "--vectors",
        metavar="SPEC",
        help=(
            "the frozen word vectors: glove-6b-50d (packaged), spacy:NAME|PATH (e.g. spacy:en_core_web_md), "
            "glove:FILE, "
            "word2vec:FILE, word2vec-bin:FILE, or a FILE of any of the three."
        ),
        envvar="SEMBED_VECTORS",
    )
    init: str = option(
        "isf",
        "--init",
        choices=("isf", "random", "ones"),
        help=("initial scores: ISF (eq. 13, the paper's best), uniform in [0, 1) by --seed, or 1."),
    )
    save_epochs: bool = option(
        False,
        "--save-epochs",
        help=("also keep the scores after every epoch as salience tables DIR/epochs/N (0: the initial ones)."),
    )


def run(job: Job, settings: Settings) -> None:
    from ...models import word_vectors
    from ..nws import train_nws

    train_nws(job, settings, word_vectors.load(settings.vectors))


METHOD = Method(
    "nws",
    "Neural Word Saliency scores",
    "Neural Word Saliency (Samardzhiev et al. 2018): one score q(w) per word with frozen word vectors (--vectors), "
    "s = sum q(w) w over a sentence's distinct words (eq. 1); reads doc_id and text of a sentence-ordered corpus "
    "(sembed convert --from lines|prose|brown); each sentence's neighbours in its document are positives, K = 2 "
    "negatives are drawn uniformly from the corpus; softmax cross-entropy over the inner products; AdaGrad. DIR is "
    "a salience table: salience.tsv (word, score, sentences, tokens; highest first), sif_component.npy, "
    "sembed.json; it carries the corpus counts `sembed embed --method isf|sif` use. One-sentence documents give no "
    "pair, sentences without a known word are left out, words never in a pair keep their initial score: all "
    "counted on stderr. An empty corpus is an error.",
    RECIPE,
    Settings,
    run,
)
