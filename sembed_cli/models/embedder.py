"""The one way from a model to vectors: `Embedder`, a model (or a recorded identity) that turns texts into rows.

`Embedder.open(model, method=..., backend=..., ...)` opens a model given by name or path (a sentence-transformers
directory on torch or ONNX Runtime, a static model, a POI lookup model, or word vectors with a salience table);
`Embedder.for_identity(identity)` opens the model a recorded `embedding_model` names, refusing one whose files or
settings have changed since. Every command that makes vectors from texts (embed, index, search, taste, parts) and
the Python API open one, so the identity stamped on a vector and the way it was made are decided here once:

- `identity`: what `embedding_model` says (model_identity): the model's content digest, and the settings that
  change its vectors (`VECTOR_SETTINGS`: CF-BERT's W_cf; for word vectors the method, salience table and SIF
  component). A new setting that changes vectors is one more keyword of `open`, added to the identity in
  `_identity` and read back in `for_identity` (docs/architecture.md).
- `encode(texts)`: float32 rows, one per text, in order, as `sembed embed` writes them; with W_cf, CF-BERT eq. 1
  (Yin et al. 2020): emb(text) + W_cf * emb(S_cf), S_cf parsed from the text where not given. The rows are unit
  length wherever the model normalises (all the packaged sentence models, a static model, a POI model); CF-BERT's
  sum and word-vector methods are not, and an index makes every row unit length (cosine) before it stores it.
- `dimension`, `device`, `backend` (what besides the model decides the rows, recorded by an index).

Every encoder the Embedder runs satisfies `Encoder`, in the spirit of sentence-transformers' `Module` contract:
SentenceTransformer itself, `onnx_encoder.OnnxEncoder`, `static_model.StaticModel`, `poi_lookup.LookupEncoder`
and `salience.SentenceEmbedder` (word vectors).

Light at import (no numpy, no torch): the commands import it for --help.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import SembedError
from . import model_identity, sentence_models
from .model_identity import Identity

if TYPE_CHECKING:
    import numpy as np

    from .sentence_embedding import LongTexts

log = logging.getLogger(__name__)

WORD_VECTOR_METHODS = ("avg", "isf", "sif", "nws")  # embed --method: sentence vectors from word vectors
METHODS = ("model", *WORD_VECTOR_METHODS)
VECTOR_SETTINGS = ("cf",)  # settings of a sentence model's identity that a text is embedded with (for_identity)
CPU_ENCODE_BATCH = 32  # texts per forward pass: sentence-transformers' own default
CUDA_ENCODE_BATCH = 128  # a GPU wants more texts per pass


def encode_batch_for(device: str, given: int | None) -> int:
    """Texts per forward pass: the one given, else the default of the (resolved) device."""
    return given or (CUDA_ENCODE_BATCH if device.startswith("cuda") else CPU_ENCODE_BATCH)


@runtime_checkable
class Encoder(Protocol):
    """What every sentence encoder sembed runs gives: sentence-transformers' `encode` with the arguments sembed
    passes (float32 rows in the texts' order), the row length, and the longest input in tokens (no window: a
    very large number)."""

    max_seq_length: int

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
    ) -> np.ndarray: ...

    def get_embedding_dimension(self) -> int | None: ...


@dataclass
class Embedder:
    """An opened model and what it stamps on its vectors (see the module docstring). Open one with `open` or
    `for_identity`; the constructor is for an encoder already in hand (tests, the Python API)."""

    encoder: Encoder
    identity: Identity
    device: str = "cpu"
    cf_weight: float | None = None
    long_texts: LongTexts | None = None  # sentence_embedding.LongTexts (--long-text); None for word vectors
    encode_batch_size: int = CPU_ENCODE_BATCH
    distinct: bool = True  # a text repeated is encoded once; not for word vectors (SIF's batch component sees all)

    @classmethod
    def open(
        cls,
        model: str | None = sentence_models.DEFAULT_MODEL,
        *,
        method: str = "model",
        backend: str = "torch",
        quantize: str = "none",
        precision: str = "auto",
        cf_weight: float | None = None,
        long_text: str = "truncate",
        device: str = "auto",
        encode_batch_size: int | None = None,
        salience: str | None = None,
        sif_component: str = "corpus",
    ) -> Embedder:
        """The model `model` (a packaged name or a directory), on `backend` (torch, or onnx with `quantize`
        none|int8) and `device`, with CF-BERT's `cf_weight` (None: the W_cf the model saved, else none) and the
        --long-text policy; or, with `method` avg|isf|sif|nws, the word vectors `model` (None: the salience
        table's, else the packaged GloVe) weighted by the salience table at `salience`."""
        if method in WORD_VECTOR_METHODS:
            return cls._word_vectors(method, model, salience, sif_component)
        if method != "model":
            raise SembedError(f"unknown method '{method}'", f"use one of {', '.join(METHODS)}")
        model = model or sentence_models.DEFAULT_MODEL
        weight = cf_weight if cf_weight is not None else sentence_models.saved_cf_weight(model)
        if cf_weight is None and weight is not None:
            log.info(f"using the W_cf = {weight:g} saved with the model (--cf-weight overrides it)")
        encoder, resolved = sentence_models.load_encoder(model, device, precision, backend, quantize)
        identity = model_identity.of_sentence_model(model)
        return cls._sentence_model(encoder, identity, resolved, weight or None, long_text)

    @classmethod
    def for_identity(
        cls,
        identity: Identity,
        *,
        model: str | None = None,
        backend: str = "torch",
        quantize: str = "none",
        long_text: str = "truncate",
        device: str = "auto",
        where: str | Path = "",
    ) -> Embedder:
        """The model that made vectors of `identity`, to embed texts as they were (`model`: where it is when its
        recorded name does not find it). A sentence model must still be the one recorded (by content), and a
        word-vector method's vectors and salience table too; an identity with settings a text cannot be embedded
        with (--words, a syntax map) is refused. `where`: the index that recorded it, named in the messages."""
        settings = dict(identity.settings)
        if "method" in settings:
            salience = Identity.parse(settings["salience"]).name if "salience" in settings else None
            embedder = cls._word_vectors(
                settings["method"], identity.name, salience, settings.get("sif_component", "corpus")
            )
            model_identity.refuse_another_model(
                embedder.identity,
                identity,
                f"the index at '{where}' holds vectors of '{identity}', but its word vectors and salience table "
                f"are now '{embedder.identity}'",
                "query with embeddings, or rebuild the index",
            )
            return embedder
        other = [key for key in settings if key not in VECTOR_SETTINGS]
        if other:
            raise SembedError(
                f"the index holds vectors of '{identity}', which search cannot make from a text ({', '.join(other)})",
                "give query records with embeddings made the same way (sembed embed ... | sembed search)",
            )
        name = model or identity.name
        try:
            theirs = model_identity.of_sentence_model(name)
        except SembedError as e:
            raise SembedError(
                f"the index's model '{identity}' is not at hand: {e.message}",
                "pass the same model with --model, or query with embeddings",
            ) from None
        model_identity.refuse_another_model(
            theirs,
            identity,
            f"the index at '{where}' holds vectors of the model '{identity}', but the queries are embedded with "
            f"'{theirs}', another model",
            "search with the index's model (leave out --model), or rebuild the index",
            weights_only=True,
        )
        cf = settings.get("cf")
        encoder, resolved = sentence_models.load_encoder(name, device, backend=backend, quantize=quantize)
        return cls._sentence_model(encoder, theirs, resolved, float(cf) if cf is not None else None, long_text)

    @classmethod
    def _sentence_model(
        cls, encoder, identity: Identity, device: str, cf_weight: float | None, long_text: str
    ) -> Embedder:
        from .sentence_embedding import LongTexts

        return cls(
            encoder,
            _identity(identity, cf_weight),
            device,
            cf_weight,
            LongTexts(encoder, long_text),
            encode_batch_for(device, None),
        )

    @classmethod
    def _word_vectors(cls, method: str, vectors: str | None, salience: str | None, sif_component: str) -> Embedder:
        from . import word_vectors
        from .salience import SalienceTable, SentenceEmbedder

        table = SalienceTable.load(salience) if salience is not None else None
        spec = vectors or (table.vectors if table is not None else word_vectors.DEFAULT_VECTORS)
        encoder = SentenceEmbedder(method, word_vectors.load(spec), table, sif_component)
        identity = model_identity.of_word_vector_method(
            word_vectors.identity(encoder.vectors), method, salience, sif_component
        )
        return cls(encoder, identity, distinct=False)

    # --- what it makes ----------------------------------------------------------------------------------------

    @property
    def dimension(self) -> int:
        """The length of its rows."""
        dimension = self.encoder.get_embedding_dimension()
        if dimension is None:
            raise SembedError(f"the model '{self.identity}' does not say how long its vectors are")
        return int(dimension)

    @property
    def backend(self) -> dict:
        """What besides the model decides the rows: {"backend": "torch"}, {"backend": "onnx", "quantization": ...},
        {"backend": "static"}; {} for word vectors (their identity says it all)."""
        if self.long_texts is None:
            return {}
        return sentence_models.backend_identity(self.encoder)

    @property
    def focus(self) -> bool:
        """Whether its rows are CF-BERT's sum (and a text needs its S_cf)."""
        return bool(self.cf_weight)

    def with_batch_size(self, encode_batch_size: int | None) -> Embedder:
        """The same model with `encode_batch_size` texts per forward pass (None: the device's default)."""
        return replace(self, encode_batch_size=encode_batch_for(self.device, encode_batch_size))

    def encode(self, texts: Sequence[str], s_cf: Sequence[str] | None = None) -> np.ndarray:
        """float32 rows of `texts` as `sembed embed` writes them (see the module docstring); `s_cf`: each text's
        S_cf where the records carry one (CF-BERT only; parsed from the texts when None)."""
        if not self.focus:
            return self.encode_plain(texts)
        basic, cf = self.encode_parts(texts, s_cf)
        return basic + self.weight() * cf  # CF-BERT eq. 1

    def weight(self):
        """W_cf as a float32 scalar (0 without component focusing)."""
        import numpy as np

        return np.float32(self.cf_weight or 0.0)

    def encode_parts(self, texts: Sequence[str], s_cf: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(emb(text), emb(S_cf)) of each text, encoded in one pass (CF-BERT eq. 1's two terms)."""
        if s_cf is None:
            s_cf = parsed_s_cf(texts)
        matrix = self.encode_plain([*texts, *s_cf])
        return matrix[: len(texts)], matrix[len(texts) :]

    def encode_plain(self, texts: Sequence[str]) -> np.ndarray:
        """The model's own rows of `texts`, long texts met by the --long-text policy (no component focusing)."""
        import numpy as np

        from .sentence_embedding import encode

        if self.long_texts is not None:
            return self.long_texts.encode(texts, self.encode_batch_size)
        if self.distinct:
            return encode(self.encoder, texts, self.encode_batch_size)
        rows = self.encoder.encode(list(texts), self.encode_batch_size, show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(rows, dtype=np.float32)

    def check_long(self, record: dict, key: str) -> None:
        """--long-text error: a text past the model's window is bad input (as the records are read)."""
        if self.long_texts is not None:
            self.long_texts.check(record, key)

    def report(self) -> None:
        """What the run met, on the log: texts past the window; words without a vector."""
        if self.long_texts is not None:
            self.long_texts.report()
        report = getattr(self.encoder, "report", None)
        if report is not None:
            report()


def _identity(identity: Identity, cf_weight: float | None) -> Identity:
    """The identity of a sentence model's rows: the model's, with each setting of VECTOR_SETTINGS that changes them.
    The backend and precision are not part of it (an index records the backend beside it)."""
    return identity.with_setting("cf", cf_weight) if cf_weight else identity


def parsed_s_cf(texts: Sequence[str]) -> list[str]:
    """Each text's S_cf (CF-BERT section 3.3), built from its parse as `sembed spo` builds it."""
    from ..io import derived_key
    from ..text.component_focus import S_CF, write_s_cf

    records = [{"text": text} for text in texts]
    write_s_cf([(record, "text") for record in records])
    return [record[derived_key("text", S_CF)] for record in records]


def model_path(name: str) -> str | None:
    """The resolved directory of a sentence model named `name`, when it is one here (None otherwise)."""
    try:
        return str(sentence_models.resolve_path(name).resolve())
    except SembedError:
        return None
