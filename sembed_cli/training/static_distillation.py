"""A static model distilled from a sentence-transformers teacher: one weighted vector per word-piece.

Distillation (model2vec's `distill`, Tulkens and van Dongen 2024): every
word-piece t of the teacher's vocabulary is run through the teacher alone,
as the text [CLS] t [SEP] (the tokenizer's own special tokens), and its
vector is the teacher's sentence vector of that input (its own Pooling and
Normalize): the teacher's output, not its input embeddings. PCA (centred)
reduces the vectors to --dim. A sentence is then the mean of its pieces'
vectors (`models/static_model.py`).

Weights, one per piece, folded into its row:

    sif     a / (a + p(t)), a = 1e-3, p(t) the piece's share of the pieces of the
            corpus read (Arora et al. 2017; NWS paper's SIF baseline); a piece the
            corpus lacks weighs 1
    zipf    the same with p(t) estimated from the piece's rank in the vocabulary by
            Zipf's law, a = 1e-4 (model2vec's default; no corpus counts)
    none    1

--fit nws replaces them by Neural Word Saliency scores (Samardzhiev et al.
2018, eq. 1-9, as `train --method nws` learns them: `word_saliency.py` run
with the pieces as its words and these vectors frozen, neighbouring
sentences of a document as positives; its recipe, ISF start).

--fit teacher instead learns the weights (the log of each, started at the
weighting's) and with --fit-vectors the vectors too, so that the static
sentence vectors of unlabelled corpus sentences (never an evaluation set)
take the teacher's geometry: the loss is the mean squared difference
between the two models' cosine-similarity matrices over a batch, which needs
no map between the static and the teacher's dimensions (tokenlearn fits the
teacher's vectors themselves after PCA).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .. import console
from ..artifacts import ContentHash, building, describe, refuse_existing, write_metadata
from ..errors import BadRecord, SembedError
from ..io import RecordSource, check_text, dumps
from ..models.word_vectors import WordVectors
from .job import Job, Recipe
from .model_card import write_model_card

if TYPE_CHECKING:
    from .word_saliency import NwsSettings

log = logging.getLogger(__name__)

SIF_A = 1e-3  # Arora et al.'s a, as sembed's SIF over word vectors uses it (models/salience.py)
ZIPF_A = 1e-4  # model2vec's sif_coefficient for its Zipf estimate
COUNT_CHUNK = 10_000  # texts tokenised at a time while counting
TOKEN_BATCH = 1024  # vocabulary pieces a teacher forward pass
FIT_WORDS = (5, 40)  # the corpus sentences --fit teacher learns from: 5 to 40 words, like the STS sets'


class StaticSettings(Protocol):
    """static's settings that this module reads (`training/methods/static.py` declares them)."""

    @property
    def model(self) -> str: ...
    @property
    def dim(self) -> int: ...
    @property
    def weighting(self) -> str: ...
    @property
    def fit(self) -> str: ...
    @property
    def fit_vectors(self) -> bool: ...
    @property
    def fit_sentences(self) -> int: ...


def described(job: Job, settings: StaticSettings) -> dict:
    """The run's settings as the metadata records them."""
    recipe = job.recipe
    return {
        "model": settings.model,
        "dim": settings.dim,
        "weighting": settings.weighting,
        "fit": settings.fit,
        "fit_vectors": settings.fit_vectors,
        "fit_sentences": settings.fit_sentences,
        "epochs": recipe.epochs,
        "batch_size": recipe.batch_size,
        "learning_rate": recipe.lr,
        "seed": job.seed,
    }


@dataclass
class Corpus:
    """The corpus read: each piece's count, and the sentences --fit teacher may learn from."""

    counts: np.ndarray
    texts: int = 0
    hash: ContentHash = field(default_factory=ContentHash)
    fit_texts: list[str] = field(default_factory=list)
    documents: list[tuple[str, str]] = field(default_factory=list)  # (doc_id, text) of every text, for --fit nws


def read_corpus(source: RecordSource, tokenizer, text_key: str = "text", doc_key: str | None = None) -> Corpus:
    """Count the word-pieces of every text (as the static model will split them: no special tokens); with a
    `doc_key`, also keep each text with its document."""
    corpus = Corpus(np.zeros(tokenizer.get_vocab_size(), dtype=np.int64))
    pending: list[str] = []

    def count() -> None:
        ids = [i for encoding in tokenizer.encode_batch(pending, add_special_tokens=False) for i in encoding.ids]
        corpus.counts += np.bincount(np.asarray(ids, dtype=np.int64), minlength=len(corpus.counts))
        pending.clear()

    def check(record: dict) -> None:
        if doc_key is not None and doc_key not in record:
            raise BadRecord(
                f"missing key '{doc_key}' (the document of the sentence: --fit nws learns from neighbouring sentences)"
            )
        if text_key not in record:
            raise BadRecord(f"missing key '{text_key}'")
        check_text(record, text_key)

    for record in console.progress(source.checked(check), "counting word-pieces", unit="texts"):
        text = record[text_key]
        corpus.hash.add(text)
        corpus.texts += 1
        pending.append(text)
        if FIT_WORDS[0] <= len(text.split()) <= FIT_WORDS[1]:
            corpus.fit_texts.append(text)
        if doc_key is not None:
            corpus.documents.append((str(record[doc_key]), text))
        if len(pending) >= COUNT_CHUNK:
            count()
    count()
    summary = source.summary()
    if summary:
        log.warning(summary)
    if not corpus.texts:
        raise SembedError(
            f"no texts in {source.rejects.name}",
            "train --method static reads a corpus of text records (sembed convert --from lines|prose|brown)",
        )
    return corpus


def fast_tokenizer(teacher):
    """A copy of the teacher's `tokenizers.Tokenizer`, without truncation or padding: what the static model keeps."""
    import copy

    backend = getattr(teacher.tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise SembedError("train --method static needs a model with a fast tokenizer (tokenizer.json)")
    tokenizer = copy.deepcopy(backend)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def piece_vectors(teacher, tokenizer, device: str, batch: int = TOKEN_BATCH) -> np.ndarray:
    """The teacher's sentence vector of each vocabulary piece alone, between the special tokens its tokenizer adds
    ([CLS] t [SEP] for BERT): model2vec's distillation."""
    import torch

    size = tokenizer.get_vocab_size()
    plain = tokenizer.encode("a", add_special_tokens=False)  # one piece, to see where the special tokens go
    template = tokenizer.post_process(plain).ids
    at = template.index(plain.ids[0])
    with_types = "token_type_ids" in teacher.tokenizer.model_input_names
    vectors: np.ndarray | None = None
    with torch.inference_mode():
        for start in console.progress(
            range(0, size, batch), "distilling word-pieces", unit="batches", total=(size + batch - 1) // batch
        ):
            ids = torch.tensor(
                [template[:at] + [t] + template[at + 1 :] for t in range(start, min(size, start + batch))],
                device=device,
            )
            features = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
            if with_types:
                features["token_type_ids"] = torch.zeros_like(ids)
            out = teacher.forward(features)["sentence_embedding"].float().cpu().numpy()
            if vectors is None:
                vectors = np.empty((size, out.shape[1]), dtype=np.float32)
            vectors[start : start + len(out)] = out
    assert vectors is not None
    return vectors


def pca(vectors: np.ndarray, dim: int) -> tuple[np.ndarray, dict]:
    """The vectors centred and projected on their first `dim` principal components (all of them when dim is
    larger), and the share of the variance kept."""
    mean = vectors.mean(axis=0)
    centred = vectors - mean
    _, singular, components = np.linalg.svd(centred, full_matrices=False)
    dim = min(dim, components.shape[0])
    variance = singular**2
    return (centred @ components[:dim].T).astype(np.float32), {
        "dim": int(dim),
        "teacher_dim": int(vectors.shape[1]),
        "variance_kept": round(float(variance[:dim].sum() / variance.sum()), 4),
    }


def piece_weights(weighting: str, counts: np.ndarray) -> np.ndarray:
    """One weight per piece (see the module docstring): sif from the corpus counts, zipf from the vocabulary rank."""
    if weighting == "sif":
        share = counts / max(int(counts.sum()), 1)
        return (SIF_A / (SIF_A + share)).astype(np.float32)
    if weighting == "zipf":  # model2vec: p(rank r) proportional to 1 / r, from r = 2
        inverse_rank = 1.0 / np.arange(2, len(counts) + 2)
        return (ZIPF_A / (ZIPF_A + inverse_rank / inverse_rank.sum())).astype(np.float32)
    return np.ones(len(counts), dtype=np.float32)


def teacher_vectors(teacher, texts: list[str], batch_size: int = 64) -> np.ndarray:
    vectors = teacher.encode(texts, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True)
    return np.asarray(vectors, dtype=np.float32)


def fit_to_teacher(
    vectors: np.ndarray,
    weights: np.ndarray,
    ids: list[list[int]],
    targets: np.ndarray,
    recipe: Recipe,
    seed: int,
    fit_vectors: bool,
    device: str,
) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """Learn log-weights (and with `fit_vectors` the vectors) so that the static sentence vectors' cosine matrix over
    a batch matches the teacher's: Adam at `recipe.lr`, `recipe.epochs` passes, batches of `recipe.batch_size`
    sentences."""
    import torch

    generator = np.random.default_rng(seed)
    torch.manual_seed(seed)
    lengths = np.fromiter((len(piece) for piece in ids), dtype=np.int64, count=len(ids))
    usable = np.flatnonzero(lengths)
    log_weights = torch.nn.Parameter(torch.log(torch.as_tensor(weights, device=device)))
    table = torch.nn.Parameter(torch.as_tensor(vectors, device=device), requires_grad=fit_vectors)
    optimizer = torch.optim.Adam([log_weights, table] if fit_vectors else [log_weights], lr=recipe.lr)
    goal = torch.nn.functional.normalize(torch.as_tensor(targets, device=device), dim=1)
    history = []
    for epoch in range(recipe.epochs):
        tick, total, steps = time.perf_counter(), 0.0, 0
        order = generator.permutation(usable)
        for start in console.progress(
            range(0, len(order), recipe.batch_size),
            f"epoch {epoch + 1}",
            total=(len(order) + recipe.batch_size - 1) // recipe.batch_size,
            unit="steps",
        ):
            chosen = order[start : start + recipe.batch_size]
            flat = torch.as_tensor(np.concatenate([ids[i] for i in chosen]), device=device)
            offsets = torch.as_tensor(np.concatenate(([0], np.cumsum(lengths[chosen])[:-1])), device=device)
            rows = table[flat] * torch.exp(log_weights[flat])[:, None]
            sentences = torch.nn.functional.embedding_bag(
                torch.arange(len(flat), device=device), rows, offsets, mode="sum"
            )
            sentences = torch.nn.functional.normalize(sentences, dim=1)
            wanted = goal[torch.as_tensor(chosen, device=device)]
            loss = ((sentences @ sentences.T - wanted @ wanted.T) ** 2).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total, steps = total + float(loss.detach()), steps + 1
        seconds = time.perf_counter() - tick
        history.append({"epoch": epoch + 1, "loss": round(total / steps, 6), "seconds": round(seconds, 2)})
        log.info(f"epoch {epoch + 1}/{recipe.epochs}: loss {total / steps:.5f}, {seconds:.1f} s")
    return (table.detach().cpu().numpy(), torch.exp(log_weights.detach()).cpu().numpy(), history)


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
    """NWS scores of the pieces (eq. 1-9, `word_saliency.train_nws` on the corpus with the pieces as words, by
    nws's recipe and settings and the job's seed and device; a piece it never saw gets its unseen score), and the
    table's metadata."""
    import tempfile

    from . import word_saliency

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
        table = word_saliency.train_nws(nws_job, nws_settings, PieceVectors(tokenizer, vectors))
    scores = np.full(tokenizer.get_vocab_size(), table.metadata["unseen_score"], dtype=np.float32)
    scores[[tokenizer.token_to_id(word) for word in table.words]] = table.scores
    return scores, table.metadata


def train_static(job: Job, settings: StaticSettings, nws_recipe: Recipe, nws_settings: NwsSettings) -> Path:
    """Distil the teacher --model into a static model at the job's output (see the module docstring); --fit nws
    learns its weights by `nws_recipe` and `nws_settings`."""
    from ..models import model_identity, sentence_models, static_model

    source, output, force, seed = job.source, job.output, job.force, job.seed

    refuse_existing(output, force)
    started = time.perf_counter()
    device = sentence_models.resolve_device(job.device)
    if static_model.is_static(sentence_models.resolve_path(settings.model)):
        raise SembedError(f"'{settings.model}' is a static model already", "distil a transformer model")
    teacher = sentence_models.load(settings.model, device)
    tokenizer = fast_tokenizer(teacher)
    corpus = read_corpus(source, tokenizer, job.text_key(), "doc_id" if settings.fit == "nws" else None)
    log.info(
        f"{corpus.texts} texts, {int(corpus.counts.sum())} word-pieces, "
        f"{int((corpus.counts > 0).sum())} of the {len(corpus.counts)} pieces seen"
    )
    tick = time.perf_counter()
    vectors, reduction = pca(piece_vectors(teacher, tokenizer, device), settings.dim)
    log.info(
        f"distilled {len(vectors)} word-pieces in {time.perf_counter() - tick:.0f} s; PCA to {reduction['dim']} "
        f"dimensions keeps {reduction['variance_kept']:.1%} of the variance"
    )
    weights = piece_weights(settings.weighting, corpus.counts)
    fit: dict = {}
    if settings.fit == "nws":
        weights, table = nws_scores(corpus.documents, tokenizer, vectors, job, nws_recipe, nws_settings)
        fit = {
            "objective": "NWS (Samardzhiev et al. 2018, eq. 1-9)",
            "settings": table["settings"],
            "unseen_score": table["unseen_score"],
            "history": table["history"],
        }
    if settings.fit == "teacher":
        rng = np.random.default_rng(seed)
        texts = corpus.fit_texts
        if len(texts) > settings.fit_sentences:
            texts = [texts[i] for i in sorted(rng.choice(len(texts), settings.fit_sentences, replace=False))]
        if len(texts) < 2:
            raise SembedError(
                f"--fit teacher found {len(texts)} corpus sentence(s) of {FIT_WORDS[0]} to "
                f"{FIT_WORDS[1]} words to learn from",
                "give it a corpus of sentences",
            )
        tick = time.perf_counter()
        targets = teacher_vectors(teacher, texts)
        log.info(f"the teacher embedded {len(texts)} corpus sentences in {time.perf_counter() - tick:.0f} s")
        ids = [encoding.ids for encoding in tokenizer.encode_batch(texts, add_special_tokens=False)]
        vectors, weights, history = fit_to_teacher(
            vectors, weights, ids, targets, job.recipe, seed, settings.fit_vectors, device
        )
        fit = {
            "sentences": len(texts),
            "words": list(FIT_WORDS),
            "loss": "MSE of the cosine-similarity matrices",
            "optimizer": "Adam",
            "history": history,
        }
    data = {
        "input": source.rejects.name,
        "texts": corpus.texts,
        "pieces": int(corpus.counts.sum()),
        "sha256": corpus.hash.hexdigest(),
        "skipped": len(source.rejects.skipped),
    }
    metadata = describe(
        "train --method static",
        data,
        described(job, settings),
        method="static",
        teacher=str(model_identity.of_sentence_model(settings.model)),
        pca=reduction,
        weighting={
            "sif": {"a": SIF_A, "p": "corpus piece counts"},
            "zipf": {"a": ZIPF_A, "p": "Zipf's law on the vocabulary rank"},
            "none": {},
        }[settings.weighting]
        | {"name": settings.weighting},
        fit=fit,
        seconds=round(time.perf_counter() - started, 1),
    )
    with building(output, force=force) as work:
        static_model.save(work, tokenizer, vectors * weights[:, None])
        write_metadata(work, metadata, sentence_models.METADATA_FILE)
        write_model_card(work, job, settings, metadata)
    log.info(f"wrote {output} ({len(vectors)} pieces x {vectors.shape[1]}) in {time.perf_counter() - started:.0f} s")
    return output
