"""What a static model learns from its teacher: the teacher's passes over its vocabulary and over corpus sentences.

Two passes, both forward only:

- `pieces_alone`: every word-piece t run alone as [CLS] t [SEP] (the
  tokenizer's own special tokens). Its `sentence` vector is the teacher's
  sentence vector of that input (model2vec's `distill`); its `output` is
  the teacher's last-layer output at t's position, the raw vector the
  teacher's mean pooling averages.
- `corpus_pass`: corpus sentences through the teacher, in batches sorted by
  length. It keeps each sentence's vector (what `--fit teacher` fits) and,
  for every piece, the sum and count of its last-layer outputs over the
  sentences (special tokens left out): their mean is the piece's
  *contextual* vector, the one static vector that best stands for its
  outputs in context (Bommasani et al. 2020's pooled "aggregated"
  embeddings; `--piece-vectors corpus`). A teacher that mean-pools, as MiniLM does,
  makes a sentence vector that is the mean of those outputs, so a static
  sentence, the mean of its pieces' contextual vectors, is its first-order
  approximation.

The corpus pass is the slow part (docs/static-mode.md has its time), so
`--teacher-cache FILE` keeps it: a later run with the same teacher and the
same sentences reads it back, and one whose texts begin with the kept ones
(more text after them: --teacher-windows after the same sentences) passes
only the rest and adds it to the kept pass (the sums and counts add).
"""

from __future__ import annotations

import copy
import logging
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import console
from ..artifacts import ContentHash
from ..errors import SembedError
from ..io.atomic_files import atomic_path

log = logging.getLogger(__name__)

TOKEN_BATCH = 1024  # vocabulary pieces a teacher forward pass
SENTENCE_BATCH = 128  # corpus sentences a teacher forward pass on a CPU (sorted by length, so little padding)
ACCELERATOR_BATCH = 1024  # on an accelerator, whose passes cost little more for more sentences
CACHE_FORMAT = 1


def fast_tokenizer(teacher):
    """A copy of the teacher's `tokenizers.Tokenizer`, without truncation or padding: what the static model keeps."""
    backend = getattr(teacher.tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise SembedError("train --method static needs a model with a fast tokenizer (tokenizer.json)")
    tokenizer = copy.deepcopy(backend)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@dataclass
class PiecesAlone:
    sentence: np.ndarray  # vocabulary x teacher dim: the teacher's sentence vector of [CLS] t [SEP]
    output: np.ndarray  # vocabulary x teacher dim: its last-layer output at t


def pieces_alone(teacher, tokenizer, device: str, batch: int = TOKEN_BATCH) -> PiecesAlone:
    """Each vocabulary piece alone, between the special tokens its tokenizer adds, through the teacher."""
    import torch

    size = tokenizer.get_vocab_size()
    plain = tokenizer.encode("a", add_special_tokens=False)  # one piece, to see where the special tokens go
    template = tokenizer.post_process(plain).ids
    at = template.index(plain.ids[0])
    with_types = "token_type_ids" in teacher.tokenizer.model_input_names
    sentence: np.ndarray | None = None
    output: np.ndarray | None = None
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
            out = teacher.forward(features)
            vectors = out["sentence_embedding"].float().cpu().numpy()
            if sentence is None or output is None:
                sentence = np.empty((size, vectors.shape[1]), dtype=np.float32)
                output = np.empty((size, out["token_embeddings"].shape[2]), dtype=np.float32)
            sentence[start : start + len(vectors)] = vectors
            output[start : start + len(vectors)] = out["token_embeddings"][:, at].float().cpu().numpy()
    assert sentence is not None and output is not None
    return PiecesAlone(sentence, output)


class PassLines:
    """A long pass's progress as lines on stderr (INFO: -q hides them), wherever stderr goes: a terminal also has
    `console.progress`'s bar, but a log file (`2> train.err`, a batch job) has nothing else for the quarter of an
    hour the teacher reads. A line at each tenth of the work, with the time so far and the time left, the work
    counted in `weights` (one per item, in the order the pass takes them: characters, since the batches go from
    the shortest sentences to the longest, and a count of sentences would run ahead of the clock)."""

    STEPS = 10

    def __init__(self, description: str, weights: list[int], unit: str):
        self.description, self.unit = description, unit
        self.done = np.concatenate([[0], np.cumsum(np.asarray(weights, dtype=np.float64))])
        self.total = max(float(self.done[-1]), 1.0)
        self.next_step = 1
        self.started = time.monotonic()

    def reached(self, items: int) -> None:
        """The pass has finished its first `items` items."""
        share = float(self.done[min(items, len(self.done) - 1)]) / self.total
        if share * self.STEPS < self.next_step or share >= 1:  # the pass's own line says when it is done
            return
        while self.next_step <= share * self.STEPS:
            self.next_step += 1
        seconds = time.monotonic() - self.started
        log.info(
            f"{self.description}: {share:.0%} ({items:,} of {len(self.done) - 1:,} {self.unit}) in {clock(seconds)}, "
            f"about {clock(seconds / share - seconds)} left"
        )


def clock(seconds: float) -> str:
    """m:ss (h:mm:ss from an hour on)."""
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{rest:02d}" if hours else f"{minutes}:{rest:02d}"


@dataclass
class CorpusPass:
    sentences: np.ndarray  # texts x teacher dim: the teacher's sentence vector of each text
    sums: np.ndarray  # vocabulary x output dim: the sum of each piece's last-layer outputs over the texts
    counts: np.ndarray  # vocabulary: how many outputs each sum adds

    def contextual(self, alone: np.ndarray) -> tuple[np.ndarray, int]:
        """Each piece's mean output over the corpus; `alone` (its output alone) for a piece the corpus lacks. Also
        how many pieces the corpus had."""
        seen = self.counts > 0
        vectors = alone.copy()
        vectors[seen] = self.sums[seen] / self.counts[seen, None]
        return vectors.astype(np.float32), int(seen.sum())

    def then(self, more: CorpusPass) -> CorpusPass:
        """The pass over this pass's texts followed by `more`'s."""
        return CorpusPass(
            np.concatenate([self.sentences, more.sentences]), self.sums + more.sums, self.counts + more.counts
        )


def corpus_pass(teacher, texts: list[str], device: str, batch: int | None = None) -> CorpusPass:
    """The teacher's sentence vectors of `texts` and its per-piece output sums and counts (see the docstring), in
    batches of `batch` texts (SENTENCE_BATCH on a CPU, ACCELERATOR_BATCH elsewhere)."""
    import torch

    batch = batch or (SENTENCE_BATCH if device == "cpu" else ACCELERATOR_BATCH)

    special = torch.tensor(sorted(set(teacher.tokenizer.all_special_ids)), device=device)
    order = np.argsort([len(text) for text in texts], kind="stable")
    prepare = getattr(teacher, "preprocess", None) or teacher.tokenize  # sentence-transformers 6 renamed tokenize
    sentences: np.ndarray | None = None
    sums: torch.Tensor | None = None
    counts: torch.Tensor | None = None
    lines = PassLines("the teacher reads the corpus", [len(texts[i]) for i in order], "sentences")
    with torch.inference_mode():
        for start in console.progress(
            range(0, len(texts), batch), "the teacher reads the corpus", unit="batches", total=-(-len(texts) // batch)
        ):
            lines.reached(start)
            chosen = order[start : start + batch]
            features = prepare([texts[i] for i in chosen])
            features = {name: value.to(device) if torch.is_tensor(value) else value for name, value in features.items()}
            out = teacher.forward(features)
            vectors = out["sentence_embedding"].float().cpu().numpy()
            outputs = out["token_embeddings"]
            if sentences is None or sums is None or counts is None:
                sentences = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
                size = len(teacher.tokenizer)  # the vocabulary with any added tokens
                sums = torch.zeros((size, outputs.shape[2]), dtype=torch.float64, device=device)
                counts = torch.zeros(size, dtype=torch.int64, device=device)
            sentences[chosen] = vectors
            ids = features["input_ids"]
            kept = features["attention_mask"].bool() & ~torch.isin(ids, special)
            sums.index_add_(0, ids[kept], outputs[kept].double())
            counts += torch.bincount(ids[kept], minlength=len(counts))
    assert sentences is not None and sums is not None and counts is not None
    return CorpusPass(sentences, sums.float().cpu().numpy(), counts.cpu().numpy())


def pass_key(teacher_identity: str, texts: list[str]) -> str:
    """What a cached corpus pass must match: the teacher and the sentences, in order."""
    key = ContentHash()
    key.add({"format": CACHE_FORMAT, "teacher": teacher_identity, "texts": len(texts)})
    for text in texts:
        key.add(text)
    return key.hexdigest()


def cached_corpus_pass(
    cache: Path | None, teacher_identity: str, texts: list[str], run: Callable[[list[str]], CorpusPass]
) -> CorpusPass:
    """The teacher's corpus pass over `texts` (`run(texts)`), read from `cache` when it holds it; when the cache
    holds the pass over the first texts only, `run` reads the rest. With a cache, a pass that ran is kept there."""
    key = pass_key(teacher_identity, texts)
    kept = read_cache(cache) if cache is not None else None
    if kept is not None and kept[0] == key:
        log.info(f"the teacher's pass over the corpus read from {cache}")
        return kept[1]
    start = kept[1] if kept is not None and begins(kept, teacher_identity, texts) else None
    if start is not None:
        log.info(
            f"the teacher's pass over the first {len(start.sentences):,} texts read from {cache}; it reads the rest"
        )
        corpus = start.then(run(texts[len(start.sentences) :]))
    else:
        if kept is not None:
            log.warning(f"{cache} holds another teacher's or other sentences' pass: the teacher reads them again")
        corpus = run(texts)
    if cache is not None:
        with atomic_path(cache) as partial, open(partial, "wb") as f:  # a file object: numpy adds no .npz to it
            np.savez(f, key=np.array(key), sentences=corpus.sentences, sums=corpus.sums, counts=corpus.counts)
        log.info(f"kept the teacher's pass over the corpus in {cache}")
    return corpus


def begins(kept: tuple[str, CorpusPass], teacher_identity: str, texts: list[str]) -> bool:
    """Whether a kept pass (its key and pass) is this teacher's over the first of `texts`, and not all of them."""
    read = len(kept[1].sentences)
    return 0 < read < len(texts) and kept[0] == pass_key(teacher_identity, texts[:read])


def read_cache(cache: Path) -> tuple[str, CorpusPass] | None:
    """The key and pass a cache file holds; None when there is no file."""
    if not cache.exists():
        return None
    try:
        with np.load(cache, allow_pickle=False) as kept:
            return str(kept["key"]), CorpusPass(kept["sentences"], kept["sums"], kept["counts"])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        raise SembedError(
            f"cannot read the teacher cache {cache}: {error}", "remove it, or name another file"
        ) from None
