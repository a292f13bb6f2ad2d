"""`train --method syntax`: the syntactic transformation f of the syntax-distillation paper.

"Unsupervised Distillation of Syntactic Information from Contextualized Word
Representations", sections 3.2-3.3. Input: `sembed gensets` records, each a
set E of structurally equivalent sentences whose word i corresponds across
the set. Every word gets a frozen contextual vector (contextual_words: the
mean of all layers concatenated with the layer two thirds up, mean over its
word pieces). f is one linear layer to 75 dimensions. Per set and epoch, about
11 samples: two sentences S^A != S^P of the set and two word indices
i1 != i2, giving the pair vectors

    V^A = f(S^A[i1]) - f(S^A[i2])    (eq. 1)
    V^P = f(S^P[i1]) - f(S^P[i2])    (eq. 2)

The negative of each anchor is the closest anchor pair of the batch that
comes from another set (eq. 3, 5: hard in-batch negatives, cosine distance),
and each (anchor, positive) is also added as (positive, anchor). The loss is
the softmax triplet loss

    L = e^{d(V^A, V^P)} / (e^{d(V^A, V^P)} + e^{d(V^A, V^N)})    (eq. 4)

with d the cosine distance, minimised by Adam over batches of 500 samples for
5 epochs; the last model is kept. A share of the sets is held out, and the
loss and triplet accuracy (d(A, P) < d(A, N)) on them are reported each epoch.

The encoder is frozen, so every word vector is computed once (stored in half
precision) and cached with the checkpoints: a resumed run skips encoding.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from .. import console
from ..artifacts import building, describe, refuse_existing, write_metadata
from ..errors import BadRecord, SembedError
from ..io import json_type
from ..models.syntax_map import SyntaxMap
from . import checkpoints
from .data import TrainingInput
from .epoch_loop import EpochLoop
from .job import Job
from .model_card import write_model_card

log = logging.getLogger(__name__)

COMMAND = "train --method syntax"
VECTORS_FILE = "word-vectors.pt"  # the encoded sets, cached beside the checkpoints


HELD_OUT = 0.05  # share of the sets kept for the held-out loss and accuracy
ENCODE_BATCH_SIZE = 32  # sentences a forward pass of the frozen encoder


class SyntaxSettings(Protocol):
    """syntax's settings that this module reads (`training/methods/syntax.py` declares them)."""

    @property
    def model(self) -> str: ...
    @property
    def random_init(self) -> bool: ...
    @property
    def dimension(self) -> int: ...
    @property
    def pairs_per_set(self) -> int: ...


def described(job: Job, settings: SyntaxSettings) -> dict:
    """The run's settings as the metadata and the checkpoints' fingerprint record them."""
    recipe = job.recipe
    return {
        "optimizer": "Adam",
        "loss": "softmax triplet loss (eq. 4), cosine distance, hardest in-batch "
        "negative from another set (eq. 5), symmetric pairs",
        "epochs": recipe.epochs,
        "batch_size": recipe.batch_size,
        "learning_rate": recipe.lr,
        "pairs_per_set": settings.pairs_per_set,
        "dimension": settings.dimension,
        "held_out": HELD_OUT,
        "seed": job.seed,
    }


# --- data ----------------------------------------------------------------------------------------------


def read_sets(source: TrainingInput, key: str = "words") -> tuple[list[list[list[str]]], dict]:
    """The aligned word lists of every set, and the data description for the metadata."""
    sets: list[list[list[str]]] = []

    def keep(record: dict) -> None:
        if key not in record:
            raise BadRecord(f"missing key '{key}' (train --method syntax reads `sembed gensets` output)")
        words = record[key]
        if not isinstance(words, list) or not all(isinstance(s, list) for s in words):
            raise BadRecord(f"'{key}' must be a list of word lists, got {json_type(words)}")
        if len(words) < 2:
            raise BadRecord(f"'{key}' holds {len(words)} sentence(s): a set needs at least 2")
        if not all(isinstance(w, str) and w for s in words for w in s):
            raise BadRecord(f"'{key}' must hold non-empty strings")
        lengths = {len(s) for s in words}
        if len(lengths) != 1:
            raise BadRecord(
                f"the sentences of '{key}' differ in length ({sorted(lengths)} words): a set's words must be aligned"
            )
        if lengths.pop() < 2:
            raise BadRecord(f"the sentences of '{key}' have fewer than 2 words: no word pair to sample")
        sets.append(words)
        source.hash.add(repr(words))

    for _ in source.read(keep, "reading sets"):
        pass
    if len(sets) < 4:
        raise SembedError(
            f"{len(sets)} usable set(s) in {source.name}: too few",
            "give `sembed gensets` output of many sentences (negatives come from other sets)",
        )
    return sets, source.provenance(sets=len(sets), sentences=sum(len(s) for s in sets))


@dataclass
class EncodedSets:
    """Every word vector of every set in one (words, D) half-precision matrix; set j's sentence s, word i is at
    row start[j] + s * words[j] + i."""

    vectors: torch.Tensor
    start: torch.Tensor  # (sets,)
    sentences: torch.Tensor  # (sets,) sentences in each set
    words: torch.Tensor  # (sets,) words in each sentence of the set

    def save(self, path: Path) -> None:
        torch.save(asdict(self), path)

    @classmethod
    def load(cls, path: Path) -> EncodedSets:
        return cls(**torch.load(path, map_location="cpu"))


CHUNK = 2048  # sentences encoded before their vectors are packed in half precision


def encode_sets(sets: list[list[list[str]]], encoder, batch_size: int = 32) -> EncodedSets:
    sentences = torch.tensor([len(s) for s in sets])
    words = torch.tensor([len(s[0]) for s in sets])
    sizes = sentences * words
    start = torch.cumsum(sizes, 0) - sizes
    vectors = torch.empty(int(sizes.sum()), encoder.dimension, dtype=torch.float16)
    flat = [sentence for s in sets for sentence in s]
    row = 0
    chunks = range(0, len(flat), CHUNK)
    for first in console.progress(chunks, f"encoding {len(flat)} sentences", len(chunks), f"x {CHUNK} sentences"):
        for encoded in encoder.encode(flat[first : first + CHUNK], batch_size=batch_size):
            vectors[row : row + len(encoded)] = encoded.to(torch.float16)
            row += len(encoded)
    return EncodedSets(vectors, start, sentences, words)


def sample_pairs(
    encoded: EncodedSets, set_ids: torch.Tensor, per_set: int, generator: torch.Generator
) -> tuple[torch.Tensor, ...]:
    """For each set of `set_ids`, `per_set` samples (anchor rows i1, i2; positive rows i1, i2; set)."""
    chosen = set_ids.repeat_interleave(per_set)
    k, n = encoded.sentences[chosen], encoded.words[chosen]

    def below(limit: torch.Tensor) -> torch.Tensor:  # uniform integers in [0, limit), element-wise
        return (torch.rand(len(limit), generator=generator) * limit).long()

    anchor = below(k)
    positive = (anchor + 1 + below(k - 1)) % k  # another sentence of the set
    i1 = below(n)
    i2 = (i1 + 1 + below(n - 1)) % n  # another word index
    base = encoded.start[chosen]
    return base + anchor * n + i1, base + anchor * n + i2, base + positive * n + i1, base + positive * n + i2, chosen


# --- the loss ------------------------------------------------------------------------------------------


def triplet_loss(anchor: torch.Tensor, positive: torch.Tensor, sets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 4 with the negatives of eq. 5, over (anchor, positive) and the symmetric (positive, anchor).

    Returns the mean loss and the triplet accuracy (share of samples with d(A, P) < d(A, N)).
    """
    anchors = torch.nn.functional.normalize(torch.cat([anchor, positive]), dim=-1)
    positives = torch.nn.functional.normalize(torch.cat([positive, anchor]), dim=-1)
    sets = torch.cat([sets, sets])
    to_positive = 1 - (anchors * positives).sum(-1)
    similarity = anchors @ anchors.T
    similarity = similarity.masked_fill(sets[:, None] == sets[None, :], float("-inf"))  # only other sets (eq. 5)
    to_negative = 1 - similarity.max(dim=1).values
    # e^a / (e^a + e^b) = sigmoid(a - b)
    loss = torch.sigmoid(to_positive - to_negative).mean()
    return loss, (to_positive < to_negative).float().mean()


def pair_vectors(f: torch.nn.Linear, vectors: torch.Tensor, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """f(x_first) - f(x_second), eq. 1-3."""
    device = f.weight.device
    return f(vectors[first].to(device).float()) - f(vectors[second].to(device).float())


def batch_loss(f, encoded: EncodedSets, sample: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    a1, a2, p1, p2, sets = sample
    return triplet_loss(
        pair_vectors(f, encoded.vectors, a1, a2), pair_vectors(f, encoded.vectors, p1, p2), sets.to(f.weight.device)
    )


def evaluate(f, encoded: EncodedSets, sample: tuple[torch.Tensor, ...], batch_size: int) -> dict:
    """Mean loss and triplet accuracy on held-out samples, in batches of the training size (same negatives' pool)."""
    losses, accuracies, weights = [], [], []
    with torch.no_grad():
        for first in range(0, len(sample[0]), batch_size):
            part = tuple(t[first : first + batch_size] for t in sample)
            if len(part[0]) < 2 or len(torch.unique(part[4])) < 2:
                continue
            loss, accuracy = batch_loss(f, encoded, part)
            losses.append(float(loss))
            accuracies.append(float(accuracy))
            weights.append(len(part[0]))
    total = sum(weights) or 1
    return {
        "loss": round(sum(v * w for v, w in zip(losses, weights)) / total, 5),
        "accuracy": round(sum(v * w for v, w in zip(accuracies, weights)) / total, 5),
    }


# --- training ------------------------------------------------------------------------------------------


def train_syntax(job: Job, settings: SyntaxSettings) -> SyntaxMap:
    """Learn f on the sets of the job's input over vectors of --model (randomly initialised with --random-init)."""
    from ..models.contextual_words import WordEncoder
    from ..models.sentence_models import resolve_device

    source, output, resume, force, seed = job.source, job.output, job.resume, job.force, job.seed
    model, random_init = settings.model, settings.random_init
    epochs, batch_size = job.recipe.epochs, job.recipe.batch_size

    if not resume:
        refuse_existing(output, force)
    started = time.perf_counter()
    device = resolve_device(job.device)
    sets, data = read_sets(TrainingInput(source))
    encoder = WordEncoder.open(model, random_init=random_init, seed=seed, device=device)
    run = {
        "method": "syntax",
        "encoder": encoder.describe(),
        "data": data["sha256"],
        "settings": described(job, settings),
    }
    directory, resume_from = checkpoints.prepare(output, run, resume, force)

    cache = directory / VECTORS_FILE
    if resume_from is not None and cache.exists():
        encoded = EncodedSets.load(cache)
    else:
        log.info(
            f"encoding the words of {data['sentences']} sentences in {len(sets)} sets with "
            f"{encoder.describe()['model']}{' (randomly initialised)' if random_init else ''}"
        )
        encoded = encode_sets(sets, encoder, ENCODE_BATCH_SIZE)
        encoded.save(cache)
    del encoder

    torch.manual_seed(seed)
    order = torch.randperm(len(sets), generator=torch.Generator().manual_seed(seed))
    held = max(1, round(HELD_OUT * len(sets))) if HELD_OUT > 0 else 0
    held_ids, train_ids = order[:held], order[held:]
    held_sample = (
        sample_pairs(encoded, held_ids, settings.pairs_per_set, torch.Generator().manual_seed(seed + 1))
        if held >= 2
        else None
    )
    f = torch.nn.Linear(encoded.vectors.shape[1], settings.dimension).to(device)
    optimizer = torch.optim.Adam(f.parameters(), lr=job.recipe.lr)
    generator = torch.Generator().manual_seed(seed)
    history: list[dict] = []
    loop = EpochLoop(
        directory,
        resume_from,
        epochs,
        lambda: {
            "f": f.state_dict(),
            "optimizer": optimizer.state_dict(),
            "generator": generator.get_state(),
            "history": history,
        },
        counted="epoch",
        map_location=device,
    )
    if loop.saved is not None:
        f.load_state_dict(loop.saved["f"])
        optimizer.load_state_dict(loop.saved["optimizer"])
        generator.set_state(loop.saved["generator"])
        history = loop.saved["history"]
    if held_sample is not None and not history:
        history.append({"epoch": 0, "held_out": evaluate(f, encoded, held_sample, batch_size)})
    samples = len(train_ids) * settings.pairs_per_set
    steps = (samples + batch_size - 1) // batch_size
    log.info(
        f"{len(train_ids)} training sets ({held} held out), {samples} samples an epoch, "
        f"{encoded.vectors.shape[1]} -> {settings.dimension} dimensions, {steps} steps an epoch on {device}"
    )
    for epoch, _ in loop.epochs():
        tick = time.perf_counter()
        sample = sample_pairs(encoded, train_ids, settings.pairs_per_set, generator)
        shuffle = torch.randperm(len(sample[0]), generator=generator)
        sample = tuple(t[shuffle] for t in sample)
        total, accuracy = 0.0, 0.0
        for first in console.progress(range(0, samples, batch_size), f"epoch {epoch + 1}", steps, "steps"):
            loss, correct = batch_loss(f, encoded, tuple(t[first : first + batch_size] for t in sample))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
            accuracy += float(correct)
        entry: dict[str, Any] = {
            "epoch": epoch + 1,
            "loss": round(total / steps, 5),
            "accuracy": round(accuracy / steps, 5),
            "seconds": round(time.perf_counter() - tick, 2),
        }
        if held_sample is not None:
            entry["held_out"] = evaluate(f, encoded, held_sample, batch_size)
        history.append(entry)
        log.info(
            f"epoch {epoch + 1}/{epochs}: loss {entry['loss']:.4f}, triplet accuracy "
            f"{entry['accuracy']:.3f}"
            + (
                f"; held out: loss {entry['held_out']['loss']:.4f}, accuracy {entry['held_out']['accuracy']:.3f}"
                if held_sample is not None
                else ""
            )
        )
        loop.advance()

    syntax_map = SyntaxMap(f.weight.detach().cpu(), f.bias.detach().cpu(), run["encoder"])
    metadata = describe(
        COMMAND,
        data,
        described(job, settings),
        method="syntax",
        encoder=run["encoder"],
        held_out_sets=held,
        history=history,
        seconds=round(time.perf_counter() - started, 1),
    )
    with building(output, force=True if resume else force) as work:
        syntax_map.save(work)
        write_metadata(work, metadata, "sembed.json")
        write_model_card(work, job, settings, metadata, library=None)
    checkpoints.remove(directory)
    log.info(f"wrote {output} in {time.perf_counter() - started:.0f} s")
    return syntax_map
