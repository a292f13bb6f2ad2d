"""The model side of building an index: which model embeds the records' texts (`ModelChoice`), the identity the
index's vectors are of (`ModelCheck`, decided by the first record), the embedder of texts (`TextEmbedder`), and
how search is to embed text queries (`query_backend`). `build.py` and `update.py` use them alike.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import SembedError
from ..models.embedder import Embedder
from .directory import VectorIndex
from .entries import EntryReader

if TYPE_CHECKING:
    from ..models.model_identity import Identity

log = logging.getLogger(__name__)

ENCODE_BATCH = 32  # texts per forward pass, as `sembed embed` runs them: memory stays that of embed


@dataclass(frozen=True)
class ModelChoice:
    """The model that embeds records' texts (when they bring no vectors) and how: --model, --device, --backend,
    --quantize, --long-text; `given` says whether --model was typed (it must then match labelled vectors)."""

    name: str
    given: bool = False
    device: str = "auto"
    backend: str = "torch"
    quantize: str = "none"
    long_text: str = "truncate"

    def open(self) -> Embedder:
        """The Embedder of this choice as the index commands embed texts: plainly (no W_cf), ENCODE_BATCH at once."""
        return Embedder.open(
            self.name,
            backend=self.backend,
            quantize=self.quantize,
            cf_weight=0.0,
            long_text=self.long_text,
            device=self.device,
        ).with_batch_size(ENCODE_BATCH)


class TextEmbedder:
    """Embeds texts with the chosen model's Embedder, opened at the first text; counts what it embedded. `check`
    holds the identity the first record decided (named in the progress line). The texts are embedded plainly
    (no W_cf), as the identity ModelCheck decides says."""

    def __init__(self, choice: ModelChoice, check: ModelCheck):
        self.choice, self.check = choice, check
        self.embedder: Embedder | None = None
        self.count = 0

    def open(self) -> Embedder:
        if self.embedder is None:
            self.embedder = self.choice.open()
            log.info(f"embedding texts with {self.check.identity} on {self.embedder.device}")
        return self.embedder

    def __call__(self, texts: list[str]) -> np.ndarray:
        embedder = self.open()
        if self.choice.long_text == "error":
            for text in texts:
                embedder.check_long({"text": text}, "text")
        self.count += len(texts)
        return embedder.encode(texts)

    def backend(self) -> dict:
        return self.embedder.backend if self.embedder is not None else {}

    def report(self) -> None:
        if self.embedder is not None:
            self.embedder.report()


class ModelCheck:
    """The identity of an index's vectors, decided by the first record: the records' embedding_model for vectors
    (a --model given must agree; an index to update must hold the same), else --model's."""

    def __init__(self, reader: EntryReader, choice: ModelChoice, old: VectorIndex | None):
        self.reader, self.choice, self.old = reader, choice, old
        self.identity: Identity | None = None

    def __call__(self) -> None:
        from ..models import model_identity

        old, choice = self.old, self.choice
        refuse = model_identity.refuse_another_model
        labelled = self.reader.models.identity if self.reader.uses_vectors else None
        held, where = (old.identity, old.path) if old is not None else (None, None)
        refuse(
            labelled,
            held,
            f"the records' vectors are of '{labelled}', but the index at '{where}' holds vectors of '{held}'",
            "embed them with the index's model, or build a new index",
        )
        if labelled is not None:
            if choice.given:
                refuse(
                    labelled,
                    model_identity.of_sentence_model(choice.name),
                    f"the records' vectors are of '{labelled}', not of --model '{choice.name}'",
                    "leave out --model: the index takes the records' model",
                )
            self.identity = labelled
            return
        identity = model_identity.of_sentence_model(choice.name)
        refuse(
            identity,
            held,
            f"the index at '{where}' holds vectors of '{held}', but '{choice.name}' is '{identity}', another model",
            "update with the index's model (leave out --model)",
        )
        if self.reader.uses_vectors:
            log.warning(f"the records' vectors carry no embedding_model: taken to be of --model '{identity}'")
            dimension = old.dimension if old is not None else model_dimension(choice)
            if self.reader.known_dimension != dimension:
                raise SembedError(
                    f"'{self.reader.embedding_key}' has {self.reader.known_dimension} dimensions, but the "
                    f"model '{choice.name}' makes {dimension}: it was embedded with another model"
                )
        self.identity = identity


def model_dimension(choice: ModelChoice) -> int:
    """The length of the rows the chosen model makes (its Embedder, opened as the texts would be)."""
    return Embedder.open(choice.name, backend=choice.backend, quantize=choice.quantize, device=choice.device).dimension


def query_backend(embedder: TextEmbedder, reader: EntryReader, choice: ModelChoice) -> dict:
    """How text queries are to be embedded: as the texts were, or as the user says the vectors were made."""
    if not reader.uses_vectors:
        return embedder.backend()
    if choice.backend == "torch":
        return {}
    return {"backend": choice.backend, **({"quantization": "int8"} if choice.quantize == "int8" else {})}
