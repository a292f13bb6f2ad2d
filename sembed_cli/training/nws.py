"""The trainer of `--method nws`: Neural Word Saliency (Samardzhiev, Gargett and Bollegala, "Learning Neural Word
Saliency Scores").

One scalar q(w) per vocabulary word, word vectors frozen. A sentence is
s = sum_{w in S} q(w) w over its distinct words (eq. 1). For each sentence S_i
of a document, (S_i, S_{i-1}) and (S_i, S_{i+1}) are positive pairs; each
pair gets K = 2 negatives S_j drawn uniformly from the whole corpus with
j not in {i-1, i, i+1}. The loss is the cross-entropy of the softmax of the
inner products s_i^T s over (positive, negatives) (eq. 2 with the NCE-style
sampled normalisation, eq. 3), minimised by AdaGrad with learning rate 0.01.
q starts at ISF (eq. 13, the paper's best), 1, or uniform in [0, 1).

The corpus is read whole (the negatives come from all of it), tokenised as
the vectors were built, and held as flat arrays of word ids; a batch of pairs
is one `embedding_bag` over all its sentences, so an epoch is a few thousand
vectorised steps. Negatives of epoch e are drawn with seed (--seed, e), so a
run resumed at an epoch boundary ends where an uninterrupted one would.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .. import console
from ..artifacts import ContentHash, building, describe, refuse_existing
from ..errors import BadRecord, SembedError
from ..io import check_text
from ..models.salience import SIF_A, SalienceTable, first_component, isf, sif_weights, unseen_score
from ..models.word_vectors import Coverage, WordVectors
from .data import TrainingInput
from .job import Job
from .model_card import write_model_card

log = logging.getLogger(__name__)

INITS = ("isf", "random", "ones")
NEGATIVES = 2  # K in the paper
DOC_KEY = "doc_id"  # the document of a sentence: its neighbours there are its positives
EPOCH_DIR = "epochs"  # --save-epochs: DIR/epochs/N, a salience table after epoch N (0: the initial scores)


@dataclass
class Corpus:
    """Sentences as word ids into `words` (the corpus words that have a vector), in reading order."""

    words: list[str] = field(default_factory=list)
    word_ids: dict[str, int] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)  # every known token, sentence after sentence
    token_starts: list[int] = field(default_factory=lambda: [0])
    distinct: list[int] = field(default_factory=list)  # the distinct known words of each sentence (eq. 1)
    distinct_starts: list[int] = field(default_factory=lambda: [0])
    documents: list[int] = field(default_factory=list)  # the document number of each sentence
    document_names: dict[str, int] = field(default_factory=dict)
    coverage: Coverage = field(default_factory=Coverage)
    hash: ContentHash = field(default_factory=ContentHash)

    @property
    def sentences(self) -> int:
        return len(self.documents)

    def add(self, doc_id: str, text: str, vectors: WordVectors) -> None:
        known, unknown = vectors.words_of(text)
        self.coverage.add(len(known), unknown)
        self.hash.add([doc_id, text])
        ids = []
        for word in known:
            i = self.word_ids.get(word)
            if i is None:
                i = self.word_ids[word] = len(self.words)
                self.words.append(word)
            ids.append(i)
        self.tokens += ids
        self.token_starts.append(len(self.tokens))
        self.distinct += dict.fromkeys(ids)
        self.distinct_starts.append(len(self.distinct))
        self.documents.append(self.document_names.setdefault(doc_id, len(self.document_names)))

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(sentences containing each word, occurrences of each word)."""
        size = len(self.words)
        return (
            np.bincount(np.asarray(self.distinct, dtype=np.int64), minlength=size),
            np.bincount(np.asarray(self.tokens, dtype=np.int64), minlength=size),
        )

    def pairs(self) -> np.ndarray:
        """(anchor, positive) sentence numbers: both directions of every adjacent pair in one document, both
        sentences with a known word."""
        documents = np.asarray(self.documents)
        lengths = np.diff(np.asarray(self.distinct_starts))
        i = np.flatnonzero((documents[:-1] == documents[1:]) & (lengths[:-1] > 0) & (lengths[1:] > 0))
        return np.concatenate([np.stack([i, i + 1], 1), np.stack([i + 1, i], 1)]).astype(np.int64)


def read_corpus(source: TrainingInput, vectors: WordVectors, text_key: str = "text", doc_key: str = "doc_id") -> Corpus:
    corpus = Corpus()

    def check(record: dict) -> None:
        if doc_key not in record:
            raise BadRecord(f"missing key '{doc_key}' (the document of the sentence)")
        if text_key not in record:
            raise BadRecord(f"missing key '{text_key}'")
        check_text(record, text_key)

    for record in source.read(check, "reading the corpus", unit="sentences"):
        corpus.add(str(record[doc_key]), record[text_key], vectors)
    source.refuse_empty(
        corpus.sentences,
        "sentences",
        "train --method nws reads a sentence-ordered corpus: doc_id, text records from sembed convert",
    )
    return corpus


def initial_scores(init: str, sentence_counts: np.ndarray, sentences: int, seed: int) -> np.ndarray:
    if init == "isf":
        return isf(sentence_counts, sentences)
    if init == "ones":
        return np.ones(len(sentence_counts), dtype=np.float32)
    return np.random.default_rng(seed).random(len(sentence_counts), dtype=np.float32)


def negatives(anchors: np.ndarray, usable: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """K sentences a pair, uniform over the usable sentences, none of them the anchor or next to it."""
    drawn = usable[rng.integers(0, len(usable), size=(len(anchors), k))]
    for _ in range(100):
        clash = np.abs(drawn - anchors[:, None]) <= 1
        if not clash.any():
            break
        drawn[clash] = usable[rng.integers(0, len(usable), size=int(clash.sum()))]
    return drawn


class PairBatches:
    """The torch side: sentence vectors by `embedding_bag` over the flat word ids, weighted by q (eq. 1)."""

    def __init__(self, corpus: Corpus, matrix: np.ndarray, device: str):
        import torch

        self.torch = torch
        self.device = device
        self.ids = torch.as_tensor(np.asarray(corpus.distinct, dtype=np.int64), device=device)
        starts = np.asarray(corpus.distinct_starts, dtype=np.int64)
        self.starts = torch.as_tensor(starts[:-1], device=device)
        self.lengths = torch.as_tensor(np.diff(starts), device=device)
        self.vectors = torch.as_tensor(matrix, device=device)

    def embed(self, sentences, q):
        """s = sum q(w) w over each sentence's distinct words (NWS eq. 1), for a tensor of sentence numbers."""
        torch = self.torch
        lengths = self.lengths[sentences]
        offsets = torch.cumsum(lengths, 0) - lengths
        within = torch.arange(int(lengths.sum()), device=self.device) - torch.repeat_interleave(offsets, lengths)
        flat = self.ids[torch.repeat_interleave(self.starts[sentences], lengths) + within]
        return torch.nn.functional.embedding_bag(flat, self.vectors, offsets, mode="sum", per_sample_weights=q[flat])

    def loss(self, anchors, positives, negative_sets, q):
        """Cross-entropy of the softmax over inner products with the positive (class 0) and the K negatives."""
        torch = self.torch
        b, k = negative_sets.shape
        s = self.embed(torch.cat([anchors, positives, negative_sets.reshape(-1)]), q)
        anchor, candidates = s[:b], torch.cat([s[b : 2 * b, None], s[2 * b :].view(b, k, -1)], 1)
        logits = torch.einsum("bd,bkd->bk", anchor, candidates)
        return torch.nn.functional.cross_entropy(logits, torch.zeros(b, dtype=torch.long, device=self.device))


class NwsSettings(Protocol):
    """nws's settings that this module reads (`training/methods/nws.py` declares them; --vectors is loaded there)."""

    @property
    def init(self) -> str: ...
    @property
    def save_epochs(self) -> bool: ...


def described(job: Job, settings: NwsSettings) -> dict:
    """The run's settings as the metadata and the checkpoints' fingerprint record them."""
    recipe = job.recipe
    return {
        "epochs": recipe.epochs,
        "batch_size": recipe.batch_size,
        "learning_rate": recipe.lr,
        "optimizer": "AdaGrad",
        "init": settings.init,
        "negatives": NEGATIVES,
        "seed": job.seed,
        "loss": "softmax cross-entropy over inner products (positive vs K uniform negatives)",
        "sentence": "sum of q(w) w over the distinct words (eq. 1)",
    }


def train_nws(job: Job, settings: NwsSettings, vectors: WordVectors) -> SalienceTable:
    """Learn NWS scores over the frozen `vectors` on the corpus of the job's input and write the salience table to
    its output."""
    import torch

    from ..models.sentence_models import resolve_device
    from . import checkpoints
    from .epoch_loop import EpochLoop

    source, output, resume, force, seed = TrainingInput(job.source), job.output, job.resume, job.force, job.seed
    epochs, batch_size = job.recipe.epochs, job.recipe.batch_size
    if not resume:
        refuse_existing(output, force)
    device = resolve_device(job.device)
    started = time.perf_counter()
    corpus = read_corpus(source, vectors, job.text_key(), DOC_KEY)
    summary = corpus.coverage.summary(vectors.spec)
    if summary:
        log.info(summary)
    sentence_counts, token_counts = corpus.counts()
    pairs = corpus.pairs()
    lengths = np.diff(np.asarray(corpus.distinct_starts))
    usable = np.flatnonzero(lengths > 0)
    singles = np.bincount(np.asarray(corpus.documents)).tolist().count(1)
    log.info(
        f"{corpus.sentences} sentences in {len(corpus.document_names)} documents, {corpus.coverage.tokens} "
        f"tokens, {len(corpus.words)} words with a vector; {len(pairs)} adjacent pairs"
        + (f"; {singles} one-sentence document(s) give no pair" if singles else "")
        + (f"; {corpus.coverage.empty} sentence(s) without a known word are left out" if corpus.coverage.empty else "")
    )
    if not len(pairs):
        raise SembedError(
            "the corpus has no two adjacent sentences with a known word in one document",
            "NWS learns from neighbouring sentences: give documents of several sentences (doc_id)",
        )
    if len(usable) < 4:
        raise SembedError(f"only {len(usable)} sentences with a known word: too few to draw negatives from")
    data = source.provenance(
        corpus.hash.hexdigest(),
        sentences=corpus.sentences,
        documents=len(corpus.document_names),
        tokens=corpus.coverage.tokens,
        pairs=len(pairs),
    )
    run = {"method": "nws", "vectors": vectors.spec, "data": data["sha256"], "settings": described(job, settings)}
    directory, resume_from = checkpoints.prepare(output, run, resume, force)

    generator = torch.Generator().manual_seed(seed)
    init = initial_scores(settings.init, sentence_counts, corpus.sentences, seed)
    q = torch.nn.Parameter(torch.as_tensor(init.copy(), device=device))
    optimizer = torch.optim.Adagrad([q], lr=job.recipe.lr)
    snapshots: list[tuple[int, np.ndarray]] = [(0, init)] if settings.save_epochs else []
    history: list[dict] = []
    loop = EpochLoop(
        directory,
        resume_from,
        epochs,
        lambda: {
            "q": q.detach().cpu(),
            "optimizer": optimizer.state_dict(),
            "generator": generator.get_state(),
            "history": history,
            "snapshots": [(e, s.tolist()) for e, s in snapshots],
        },
        counted="epoch",
        map_location=device,
    )
    if loop.saved is not None:
        with torch.no_grad():
            q.copy_(loop.saved["q"])
        optimizer.load_state_dict(loop.saved["optimizer"])
        generator.set_state(loop.saved["generator"])
        if settings.save_epochs:
            snapshots = [(e, np.asarray(s)) for e, s in loop.saved["snapshots"]]
        history = list(loop.saved["history"])
    batches = PairBatches(corpus, vectors.vectors([vectors.index[w] for w in corpus.words]), device)
    anchors_all = torch.as_tensor(pairs[:, 0], device=device)
    positives_all = torch.as_tensor(pairs[:, 1], device=device)
    for epoch, _ in loop.epochs():
        tick = time.perf_counter()
        order = torch.randperm(len(pairs), generator=generator).to(device)
        rng = np.random.default_rng([seed, epoch])
        negative_sets = torch.as_tensor(negatives(pairs[:, 0], usable, NEGATIVES, rng), device=device)
        total, steps = 0.0, 0
        for start in console.progress(
            range(0, len(pairs), batch_size),
            f"epoch {epoch + 1}",
            total=(len(pairs) + batch_size - 1) // batch_size,
            unit="steps",
        ):
            chosen = order[start : start + batch_size]
            loss = batches.loss(anchors_all[chosen], positives_all[chosen], negative_sets[chosen], q)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
            steps += 1
        seconds = time.perf_counter() - tick
        history.append(
            {
                "epoch": epoch + 1,
                "loss": round(total / steps, 6),
                "seconds": round(seconds, 2),
                "sentences_per_second": round(corpus.sentences / seconds, 1),
            }
        )
        log.info(
            f"epoch {epoch + 1}/{epochs}: loss {total / steps:.4f}, {seconds:.1f} s, "
            f"{corpus.sentences / seconds:,.0f} sentences/s"
        )
        if settings.save_epochs:
            snapshots.append((epoch + 1, q.detach().cpu().numpy().copy()))
        loop.advance()

    scores = q.detach().cpu().numpy()
    seen = np.zeros(len(corpus.words), dtype=bool)
    seen[
        np.asarray(corpus.distinct, dtype=np.int64)[
            np.isin(np.repeat(np.arange(corpus.sentences), lengths), np.unique(pairs))
        ]
    ] = True
    never = int((~seen).sum())
    if never:
        log.info(f"{never} vocabulary word(s) never occur in a training pair and keep their initial score")
    component = sif_component(batches, token_counts, corpus, device)
    metadata = describe(
        "train --method nws",
        data,
        described(job, settings),
        method="nws",
        vectors=vectors.describe(),
        corpus={
            "sentences": corpus.sentences,
            "tokens": corpus.coverage.tokens,
            "documents": len(corpus.document_names),
            **corpus.coverage.as_dict(),
        },
        unseen_score=unseen_score(settings.init, corpus.sentences),
        never_trained=never,
        sif={"a": SIF_A, "component": "first principal component of the corpus's SIF sentence vectors"},
        history=history,
        seconds=round(time.perf_counter() - started, 1),
    )
    table = SalienceTable(list(corpus.words), scores, sentence_counts, token_counts, metadata, component)
    with building(output, force=True if resume else force) as work:
        table.save(work)
        write_model_card(work, job, settings, metadata, library=None)
        for epoch, snapshot in snapshots:
            (work / EPOCH_DIR / str(epoch)).mkdir(parents=True)
            SalienceTable(
                table.words, snapshot, sentence_counts, token_counts, {**metadata, "epoch": epoch}, component
            ).save(work / EPOCH_DIR / str(epoch))
    checkpoints.remove(directory)
    top, bottom = table.extremes(10, min_sentences=5)
    log.info("highest: " + ", ".join(f"{w} {s:.3g}" for w, s in top))
    log.info("lowest: " + ", ".join(f"{w} {s:.3g}" for w, s in bottom))
    log.info(f"wrote {output} ({len(table.words)} words) in {time.perf_counter() - started:.0f} s")
    return table


def sif_component(batches: PairBatches, token_counts: np.ndarray, corpus: Corpus, device: str) -> np.ndarray:
    """The first principal component of the SIF vectors of all corpus sentences (Arora et al. 2017), from their
    accumulated Gram matrix, so `embed --method sif` removes the corpus's component from any stream."""
    import torch

    weights = torch.as_tensor(sif_weights(token_counts, corpus.coverage.tokens), device=device)
    tokens = torch.as_tensor(np.asarray(corpus.tokens, dtype=np.int64), device=device)
    starts = np.asarray(corpus.token_starts, dtype=np.int64)
    lengths = np.diff(starts)
    dim = batches.vectors.shape[1]
    gram = torch.zeros(dim, dim, dtype=torch.float64, device=device)
    chunk = 65536
    for begin in range(0, corpus.sentences, chunk):
        idx = np.flatnonzero(lengths[begin : begin + chunk] > 0) + begin
        if not len(idx):
            continue
        first, last = int(starts[idx[0]]), int(starts[idx[-1] + 1])
        flat = tokens[first:last]
        offsets = torch.as_tensor(starts[idx] - first, device=device)
        v = torch.nn.functional.embedding_bag(
            flat, batches.vectors, offsets, mode="sum", per_sample_weights=weights[flat]
        )
        v = v / torch.as_tensor(lengths[idx], device=device, dtype=v.dtype)[:, None]
        gram += v.T.double() @ v.double()
    return first_component(gram.cpu().numpy())
