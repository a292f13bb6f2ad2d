"""The trainer of `--method static`: a static model distilled from a sentence-transformers teacher, one weighted
vector per word-piece.

Vectors (--piece-vectors), from the teacher's passes (`static_teacher.py`):

    corpus  each piece's mean last-layer output over the corpus sentences the
            teacher reads (its contextual vector; a piece the corpus lacks: its
            output alone, [CLS] t [SEP]). A sentence of them is the first-order
            approximation of a mean-pooling teacher's vector. The default.
    alone   the teacher's sentence vector of [CLS] t [SEP] (model2vec's
            `distill`, Tulkens and van Dongen 2024): no corpus pass.

PCA reduces them to --dim: centred for `alone` (model2vec's), uncentred for
`corpus`, whose rows live in the space of the teacher's mean pooling, origin
included. A sentence is then the mean of its pieces' rows
(`models/static_model.py`).

Weights, one per piece, folded into its row:

    sif     a / (a + p(t)), a = 1e-3, p(t) the piece's share of the pieces of the
            corpus read (Arora et al. 2017; NWS paper's SIF baseline); a piece the
            corpus lacks weighs 1
    zipf    the same with p(t) estimated from the piece's rank in the vocabulary by
            Zipf's law, a = 1e-4 (model2vec's default; no corpus counts)
    none    1

--fit nws replaces them by Neural Word Saliency scores (Samardzhiev et al.
2018, eq. 1-9, as `train --method nws` learns them: `nws.py` run
with the pieces as its words and these vectors frozen, neighbouring
sentences of a document as positives; its recipe, ISF start).

--words N gives the input's N most frequent words that the teacher splits
into pieces a token and a row of their own (`static_words.py`).

--fit teacher instead learns the weights (the log of each, started at the
weighting's) and with --fit-vectors the vectors too, against the teacher's
own vectors of the corpus sentences (never an evaluation set), by
--fit-loss cosine or infonce: `static_fit.py`.

--norm-power P last raises each row's length (its piece's weight, all
folded in) to the power P, its direction kept (`raised_norms`); 1, the
default, keeps the rows as they are.

The teacher reads up to --teacher-sentences of the input's texts of 5 to 40
words and, with --teacher-windows N, up to N windows of WINDOW words at a
stride of STRIDE words through each document (its texts, doc_id records,
joined): more unlabelled text from the same input, read after the
sentences, so that a kept pass over the sentences alone is reused
(`static_teacher.cached_corpus_pass`). The piece counts (sif) are always the
input's own.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..artifacts import ContentHash, building, describe, refuse_existing, write_metadata
from ..errors import BadRecord, SembedError
from ..io import RecordSource, check_text, dumps
from ..models.word_vectors import WordVectors
from . import static_teacher, static_words
from .data import TrainingInput
from .job import Job, Recipe
from .model_card import write_model_card
from .static_fit import TEMPERATURE

if TYPE_CHECKING:
    from .nws import NwsSettings

log = logging.getLogger(__name__)

SIF_A = 1e-3  # Arora et al.'s a, as sembed's SIF over word vectors uses it (models/salience.py)
ZIPF_A = 1e-4  # model2vec's sif_coefficient for its Zipf estimate
COUNT_CHUNK = 10_000  # texts tokenised at a time while counting
SENTENCE_WORDS = (5, 40)  # the corpus sentences the teacher reads: 5 to 40 words, like the STS sets'
WINDOW, STRIDE = 12, 3  # --teacher-windows: words a window, and words between two windows' starts


class StaticSettings(Protocol):
    """static's settings that this module reads (`training/methods/static.py` declares them)."""

    @property
    def model(self) -> str: ...
    @property
    def dim(self) -> int: ...
    @property
    def piece_vectors(self) -> str: ...
    @property
    def weighting(self) -> str: ...
    @property
    def fit(self) -> str: ...
    @property
    def fit_vectors(self) -> bool: ...
    @property
    def fit_loss(self) -> str: ...
    @property
    def teacher_sentences(self) -> int: ...
    @property
    def teacher_windows(self) -> int: ...
    @property
    def teacher_cache(self) -> str | None: ...
    @property
    def words(self) -> int: ...
    @property
    def norm_power(self) -> float: ...

    def reads_corpus(self) -> bool: ...


def described(job: Job, settings: StaticSettings) -> dict:
    """The run's settings as the metadata records them."""
    recipe = job.recipe
    return {
        "model": settings.model,
        "dim": settings.dim,
        "piece_vectors": settings.piece_vectors,
        "weighting": settings.weighting,
        "fit": settings.fit,
        "fit_vectors": settings.fit_vectors,
        "fit_loss": settings.fit_loss,
        "teacher_sentences": settings.teacher_sentences,
        "teacher_windows": settings.teacher_windows,
        "words": settings.words,
        "norm_power": settings.norm_power,
        "epochs": recipe.epochs,
        "batch_size": recipe.batch_size,
        "learning_rate": recipe.lr,
        "seed": job.seed,
    }


@dataclass
class Corpus:
    """The corpus read: each piece's count, and the sentences the teacher may read."""

    counts: np.ndarray
    texts: int = 0
    hash: ContentHash = field(default_factory=ContentHash)
    sentences: list[str] = field(default_factory=list)  # its texts of 5 to 40 words
    documents: list[tuple[str, str]] = field(default_factory=list)  # (doc_id, text) of every text: --fit nws, windows


def read_corpus(
    source: TrainingInput,
    tokenizer,
    text_key: str = "text",
    doc_key: str | None = None,
    words: static_words.WordCounter | None = None,
) -> Corpus:
    """Count the word-pieces of every text (as the static model will split them: no special tokens), and its
    words into `words` when given; with a `doc_key`, also keep each text with its document."""
    corpus = Corpus(np.zeros(tokenizer.get_vocab_size(), dtype=np.int64), hash=source.hash)
    pending: list[str] = []

    def count() -> None:
        ids = [i for encoding in tokenizer.encode_batch(pending, add_special_tokens=False) for i in encoding.ids]
        corpus.counts += np.bincount(np.asarray(ids, dtype=np.int64), minlength=len(corpus.counts))
        if words is not None:
            words.add(pending)
        pending.clear()

    def check(record: dict) -> None:
        if doc_key is not None and doc_key not in record:
            raise BadRecord(
                f"missing key '{doc_key}' (the document of the text: --fit nws learns from neighbouring sentences, "
                "--teacher-windows reads windows through each document)"
            )
        if text_key not in record:
            raise BadRecord(f"missing key '{text_key}'")
        check_text(record, text_key)

    for record in source.read(check, "counting word-pieces", unit="texts"):
        text = record[text_key]
        corpus.hash.add(text)
        corpus.texts += 1
        pending.append(text)
        if SENTENCE_WORDS[0] <= len(text.split()) <= SENTENCE_WORDS[1]:
            corpus.sentences.append(text)
        if doc_key is not None:
            corpus.documents.append((str(record[doc_key]), text))
        if len(pending) >= COUNT_CHUNK:
            count()
    count()
    source.refuse_empty(
        corpus.texts,
        "texts",
        "train --method static reads a corpus of text records (sembed convert --from lines|prose|brown)",
    )
    return corpus


def sample(texts: list[str], size: int) -> list[str]:
    """At most `size` of `texts`, evenly spaced through them: the same sample whatever the --seed, so a kept teacher
    pass serves every seed."""
    if len(texts) <= size:
        return texts
    return [texts[i] for i in np.linspace(0, len(texts) - 1, size).round().astype(np.int64)]


def windows(documents: list[tuple[str, str]]) -> list[str]:
    """Windows of WINDOW words at a stride of STRIDE through each document (its consecutive texts, joined); a
    document shorter than a window is one window."""
    found: list[str] = []
    for _, texts in itertools.groupby(documents, key=lambda document: document[0]):
        words = [word for _, text in texts for word in text.split()]
        found.extend(
            " ".join(words[start : start + WINDOW]) for start in range(0, max(len(words) - WINDOW, 0) + 1, STRIDE)
        )
    return found


def teacher_texts(corpus: Corpus, settings: StaticSettings) -> list[str]:
    """What the teacher reads: a sample of the corpus sentences, then (--teacher-windows) a sample of the windows."""
    texts = sample(corpus.sentences, settings.teacher_sentences)
    if settings.teacher_windows:
        texts = texts + sample(windows(corpus.documents), settings.teacher_windows)
    return texts


@dataclass(frozen=True)
class Projection:
    """PCA's map from the teacher's space to the static model's: (x - mean) @ components.T."""

    mean: np.ndarray
    components: np.ndarray

    def __call__(self, vectors: np.ndarray) -> np.ndarray:
        return ((vectors - self.mean) @ self.components.T).astype(np.float32)


def pca(vectors: np.ndarray, dim: int, centre: bool = True) -> tuple[np.ndarray, dict, Projection]:
    """The vectors projected on their first `dim` principal components (all of them when dim is larger), centred
    first unless `centre` is false (then the components are those of the uncentred vectors, so the origin, which
    a mean of vectors keeps, stays where it is); the share of the variance kept; the projection."""
    mean = vectors.mean(axis=0) if centre else np.zeros(vectors.shape[1], dtype=vectors.dtype)
    _, singular, components = np.linalg.svd(vectors - mean, full_matrices=False)
    dim = min(dim, components.shape[0])
    variance = singular**2
    projection = Projection(mean, components[:dim])
    return (
        projection(vectors),
        {
            "dim": int(dim),
            "teacher_dim": int(vectors.shape[1]),
            "centred": centre,
            "variance_kept": round(float(variance[:dim].sum() / variance.sum()), 4),
        },
        projection,
    )


def piece_weights(weighting: str, counts: np.ndarray) -> np.ndarray:
    """One weight per piece (see the module docstring): sif from the corpus counts, zipf from the vocabulary rank."""
    if weighting == "sif":
        share = counts / max(int(counts.sum()), 1)
        return (SIF_A / (SIF_A + share)).astype(np.float32)
    if weighting == "zipf":  # model2vec: p(rank r) proportional to 1 / r, from r = 2
        inverse_rank = 1.0 / np.arange(2, len(counts) + 2)
        return (ZIPF_A / (ZIPF_A + inverse_rank / inverse_rank.sum())).astype(np.float32)
    return np.ones(len(counts), dtype=np.float32)


class PieceVectors(WordVectors):
    """The distilled vectors as NWS's word vectors: its words are the word-pieces, a text split by the tokenizer."""

    def __init__(self, tokenizer, matrix: np.ndarray):
        super().__init__(
            "word-pieces",
            [tokenizer.id_to_token(i) for i in range(tokenizer.get_vocab_size())],
            matrix,
            lowercase=False,
        )
        self.tokenizer = tokenizer

    def words_of(self, text: str) -> tuple[list[str], list[str]]:
        return self.tokenizer.encode(text, add_special_tokens=False).tokens, []


def nws_scores(
    documents: list[tuple[str, str]],
    tokenizer,
    vectors: np.ndarray,
    job: Job,
    nws_recipe: Recipe,
    nws_settings: NwsSettings,
) -> tuple[np.ndarray, dict]:
    """NWS scores of the pieces (eq. 1-9, `nws.train_nws` on the corpus with the pieces as words, by
    nws's recipe and settings and the job's seed and device; a piece it never saw gets its unseen score), and the
    table's metadata."""
    import tempfile

    from . import nws

    with tempfile.TemporaryDirectory(prefix="sembed-nws-") as scratch:
        corpus = Path(scratch) / "corpus.jsonl"
        with open(corpus, "wb") as f:
            for doc_id, text in documents:
                f.write(dumps({"doc_id": doc_id, "text": text}) + b"\n")
        nws_job = Job(
            RecordSource(str(corpus)),
            Path(scratch) / "nws",
            nws_recipe,
            None,
            job.seed,
            job.device,
            resume=False,
            force=False,
        )
        table = nws.train_nws(nws_job, nws_settings, PieceVectors(tokenizer, vectors))
    scores = np.full(tokenizer.get_vocab_size(), table.metadata["unseen_score"], dtype=np.float32)
    scores[[tokenizer.token_to_id(word) for word in table.words]] = table.scores
    return scores, table.metadata


@dataclass
class Reading:
    """What the teacher gave: all a distillation needs besides its --dim, --weighting, --fit and --seed."""

    teacher: str  # its identity
    tokenizer: Any  # tokenizers.Tokenizer: the static model's (the teacher's, with --words the words added)
    corpus: Corpus  # its counts by that tokenizer
    alone: static_teacher.PiecesAlone
    texts: list[str]  # the corpus texts it read, in order
    passed: static_teacher.CorpusPass | None  # its pass over them
    added: static_words.AddedWords | None = None  # --words

    @functools.cached_property
    def ids(self) -> list[list[int]]:
        """Each text's pieces, as the static model splits it."""
        return [encoding.ids for encoding in self.tokenizer.encode_batch(self.texts, add_special_tokens=False)]


def read_teacher(
    teacher, teacher_identity: str, source: TrainingInput, settings: StaticSettings, text_key: str, device: str
) -> Reading:
    """The corpus counted, the teacher's pass over its pieces alone and (when the settings need it) over its texts,
    read from --teacher-cache when it holds them."""
    tokenizer = static_teacher.fast_tokenizer(teacher)
    documents = settings.fit == "nws" or settings.teacher_windows > 0
    counted = static_words.WordCounter(tokenizer) if settings.words else None
    corpus = read_corpus(source, tokenizer, text_key, "doc_id" if documents else None, counted)
    log.info(
        f"{corpus.texts} texts, {int(corpus.counts.sum())} word-pieces, "
        f"{int((corpus.counts > 0).sum())} of the {len(corpus.counts)} pieces seen"
    )
    added = None
    if counted is not None:
        added = static_words.add_words(tokenizer, counted, settings.words)
        log.info(
            f"{len(added.words)} words of the input seen {static_words.MIN_COUNT} times or more get a token of "
            f"their own (of {settings.words} asked for)"
        )
    tick = time.perf_counter()
    alone = static_teacher.pieces_alone(teacher, tokenizer, device)
    log.info(f"the teacher read its {len(alone.output)} word-pieces alone in {time.perf_counter() - tick:.0f} s")
    texts: list[str] = []
    passed: static_teacher.CorpusPass | None = None
    if settings.reads_corpus():
        texts = teacher_texts(corpus, settings)
        if len(texts) < 2:
            raise SembedError(
                f"the teacher found {len(texts)} corpus sentence(s) of {SENTENCE_WORDS[0]} to {SENTENCE_WORDS[1]} "
                "words to read",
                "give it a corpus of sentences, or --piece-vectors alone",
            )

        def run_pass(texts: list[str]) -> static_teacher.CorpusPass:
            tick = time.perf_counter()
            result = static_teacher.corpus_pass(teacher, texts, device)
            log.info(f"the teacher read {len(texts)} corpus texts in {time.perf_counter() - tick:.0f} s")
            return result

        cache = Path(settings.teacher_cache) if settings.teacher_cache else None
        passed = static_teacher.cached_corpus_pass(cache, teacher_identity, texts, run_pass)
    if added is None:
        return Reading(teacher_identity, tokenizer, corpus, alone, texts, passed)
    corpus = dataclasses.replace(corpus, counts=added.counts)
    return Reading(teacher_identity, added.tokenizer, corpus, alone, texts, passed, added)


@dataclass
class Distilled:
    matrix: np.ndarray  # the static model's rows, its weights folded in
    parts: dict  # what the metadata records of the distillation


def distil(
    reading: Reading, settings: StaticSettings, job: Job, nws_recipe: Recipe, nws_settings: NwsSettings
) -> Distilled:
    """The piece vectors, their PCA and weights (see the module docstring), by the job's recipe, seed and device."""
    from .static_fit import fit_to_teacher

    passed, texts = reading.passed, reading.texts
    if settings.piece_vectors == "corpus":
        assert passed is not None
        raw, seen = passed.contextual(reading.alone.output)
        log.info(f"{seen} of the {len(raw)} word-pieces have a contextual vector; the rest their output alone")
    else:
        raw = reading.alone.sentence
    if reading.added is not None:
        raw = reading.added.vectors(raw)
    vectors, reduction, projection = pca(raw, settings.dim, centre=settings.piece_vectors == "alone")
    log.info(f"PCA to {reduction['dim']} dimensions keeps {reduction['variance_kept']:.1%} of the variance")
    weights = piece_weights(settings.weighting, reading.corpus.counts)
    fit: dict = {}
    if settings.fit == "nws":
        weights, table = nws_scores(reading.corpus.documents, reading.tokenizer, vectors, job, nws_recipe, nws_settings)
        fit = {
            "objective": "NWS (Samardzhiev et al. 2018, eq. 1-9)",
            "settings": table["settings"],
            "unseen_score": table["unseen_score"],
            "history": table["history"],
        }
    if settings.fit == "teacher":
        assert passed is not None
        if passed.sentences.shape[1] != raw.shape[1]:
            raise SembedError(
                f"--fit teacher fits the teacher's sentence vectors in the space of the piece vectors, and this "
                f"teacher's are {passed.sentences.shape[1]}-dimensional against its outputs' {raw.shape[1]} (a layer "
                "after its pooling)",
                "use --piece-vectors alone",
            )
        fitted = fit_to_teacher(
            vectors,
            weights,
            reading.ids,
            projection(passed.sentences),
            job.recipe,
            job.seed,
            settings.fit_vectors,
            job.device,
            settings.fit_loss,
        )
        vectors, weights = fitted.vectors, fitted.weights
        fit = {
            "sentences": len(texts) - fitted.held_out,
            "held_out": fitted.held_out,
            "kept_epoch": fitted.best_epoch,
            "loss": {
                "cosine": "1 - cosine to the teacher's vector, projected by the PCA",
                "infonce": f"InfoNCE, in-batch negatives, temperature {TEMPERATURE}, against the teacher's vectors "
                "projected by the PCA",
            }[settings.fit_loss],
            "optimizer": "Adam",
            "history": fitted.history,
        }
    return Distilled(
        raised_norms(vectors * weights[:, None], settings.norm_power),
        {
            "vectors": {
                "corpus": "each piece's mean last-layer output over the corpus texts the teacher read (its output "
                "alone if unseen)",
                "alone": "the teacher's sentence vector of the piece alone (model2vec's distill)",
            }[settings.piece_vectors],
            "pca": reduction,
            "weighting": {
                "sif": {"a": SIF_A, "p": "corpus piece counts"},
                "zipf": {"a": ZIPF_A, "p": "Zipf's law on the vocabulary rank"},
                "none": {},
            }[settings.weighting]
            | {"name": settings.weighting},
            "fit": fit,
            **({"words": reading.added.described()} if reading.added is not None else {}),
        },
    )


def raised_norms(matrix: np.ndarray, power: float) -> np.ndarray:
    """Each row of `matrix` with its length raised to `power`, its direction kept (--norm-power): a static
    sentence vector is the mean of its pieces' rows, so the lengths are the pieces' weights, and a power below 1
    evens them out. The fit learns lengths that match the teacher's vectors of corpus sentences; evened out, they
    rank the similarities of STS pairs better than the fit's own (docs/static-mode.md). 1: `matrix` itself."""
    if power == 1.0:
        return matrix
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, np.finfo(np.float32).tiny) * norms**power).astype(matrix.dtype)


def train_static(job: Job, settings: StaticSettings, nws_recipe: Recipe, nws_settings: NwsSettings) -> Path:
    """Distil the teacher --model into a static model at the job's output (see the module docstring); --fit nws
    learns its weights by `nws_recipe` and `nws_settings`."""
    from ..models import model_identity, sentence_models, static_model

    source, output, force = TrainingInput(job.source), job.output, job.force
    refuse_existing(output, force)
    started = time.perf_counter()
    device = sentence_models.resolve_device(job.device)
    if static_model.is_static(sentence_models.resolve_path(settings.model)):
        raise SembedError(f"'{settings.model}' is a static model already", "distil a transformer model")
    teacher = sentence_models.load(settings.model, device)
    teacher_identity = str(model_identity.of_sentence_model(settings.model))
    reading = read_teacher(teacher, teacher_identity, source, settings, job.text_key(), device)
    distilled = distil(reading, settings, dataclasses.replace(job, device=device), nws_recipe, nws_settings)
    data = {
        **source.provenance(texts=reading.corpus.texts, pieces=int(reading.corpus.counts.sum())),
        "teacher_read": len(reading.texts),
    }
    metadata = describe(
        "train --method static",
        data,
        described(job, settings),
        method="static",
        teacher=teacher_identity,
        **distilled.parts,
        seconds=round(time.perf_counter() - started, 1),
    )
    with building(output, force=force) as work:
        static_model.save(work, reading.tokenizer, distilled.matrix)
        write_metadata(work, metadata, sentence_models.METADATA_FILE)
        write_model_card(work, job, settings, metadata)
    matrix = distilled.matrix
    log.info(f"wrote {output} ({len(matrix)} pieces x {matrix.shape[1]}) in {time.perf_counter() - started:.0f} s")
    return output
