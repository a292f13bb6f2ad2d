"""Query texts embedded as an index's vectors were made: its model (checked against the identity the index
records), on the backend and quantization that embedded its texts, or with the word vectors and salience table of
`embed --method`. `sembed search` embeds its queries with it, and `taste --neighbours` the names it votes on."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SembedError
from ..models import sentence_models

if TYPE_CHECKING:
    from ..models.sentence_embedding import LongTexts


def index_backend(loaded, backend: str | None = None, quantize: str | None = None) -> tuple[str, str]:
    """The backend and quantization for queries to the index `loaded`: those given, else those that embedded its
    texts (int8 only on the backend that made it)."""
    built = loaded.metadata.get("settings", {})
    backend = backend or built.get("backend", "torch")
    quantize = quantize or ("int8" if built.get("quantization") and backend == built.get("backend") else "none")
    return backend, quantize


class QueryEncoder:
    """Embeds query texts as the index's vectors were made (its model, and CF-BERT's W_cf where its identity has
    one), loaded at the first text query; `check` loads it at once (for --model)."""

    TEXT_SETTINGS = ("cf",)  # settings of a sentence-transformers identity that a text query is embedded with here

    def __init__(
        self,
        loaded,
        model: str | None,
        device: str,
        text_key: str,
        long_text: str = "truncate",
        backend: str = "torch",
        quantize: str = "none",
    ):
        self.loaded, self.model, self.device, self.text_key = loaded, model, device, text_key
        self.long_text, self.backend, self.quantize = long_text, backend, quantize
        self._encoder: Any = None  # a sentence encoder, or WordVectorQueries
        self._long_texts: LongTexts | None = (
            None  # sentence_embedding.LongTexts of a sentence-transformers query model (--long-text)
        )
        self.cf_weight: float | None = None

    def long_texts(self):
        """The query model's long-text policy (None for word-vector queries, which have no window)."""
        from ..models.sentence_embedding import LongTexts

        encoder = self.check()
        if self._long_texts is None and not isinstance(encoder, WordVectorQueries):
            self._long_texts = LongTexts(encoder, self.long_text)
        return self._long_texts

    def check_long(self, record: dict, key: str) -> None:
        """--long-text error: a query text past the model's window is bad input."""
        if self.long_text == "error" and self.long_texts() is not None:
            self.long_texts().check(record, key)

    def report(self) -> None:
        if self._long_texts is not None:
            self._long_texts.report()

    def check(self):
        """The sentence-transformers model for the queries, after making sure it is the index's."""
        if self._encoder is not None:
            return self._encoder
        from ..models import model_identity

        identity, metadata = self.loaded.identity, self.loaded.metadata
        if identity is None:  # an index written before identities: its fingerprint decides
            name = self.model or metadata.get("model_path") or metadata["model"]
            encoder = self.load(name)
            self.loaded.check_model(name, model_identity.model_fingerprint(encoder))
            self._encoder = encoder
            return encoder
        settings = dict(identity.settings)
        if "method" in settings:
            self._encoder = WordVectorQueries(identity, self.loaded.path)
            return self._encoder
        other = [key for key in settings if key not in self.TEXT_SETTINGS]
        if other:
            raise SembedError(
                f"the index holds vectors of '{identity}', which search cannot make from a text ({', '.join(other)})",
                "give query records with embeddings made the same way (sembed embed ... | sembed search)",
            )
        name = self.model or identity.name
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
            f"the index at '{self.loaded.path}' holds vectors of the model '{identity}', but the "
            f"queries are embedded with '{theirs}', another model",
            "search with the index's model (leave out --model), or rebuild the index",
            weights_only=True,
        )
        cf = dict(identity.settings).get("cf")
        self.cf_weight = float(cf) if cf is not None else None
        self._encoder = self.load(name)
        return self._encoder

    def load(self, name: str):
        """The sentence encoder of `name` on the chosen backend (sentence_models.load_encoder)."""
        return sentence_models.load_encoder(name, self.device, backend=self.backend, quantize=self.quantize)[0]

    def encode(self, texts: list[str], **_):
        """The query vectors of `texts` (float32, one row each)."""
        import numpy as np

        from ..io import TextFields, derived_key
        from ..models.sentence_embedding import embed_records

        encoder = self.check()
        if isinstance(encoder, WordVectorQueries):
            return encoder.encode(texts)
        if not self.cf_weight:
            return self.long_texts().encode(texts, batch_size=256)
        records = [{self.text_key: text} for text in texts]  # CF-BERT eq. 1 needs each text's S_cf: as embed does
        embedded = embed_records(
            records, encoder, TextFields([self.text_key]), len(records), self.cf_weight, long_texts=self.long_texts()
        )
        return np.stack([record[derived_key(self.text_key, "embedding")] for record in embedded])


class WordVectorQueries:
    """Query texts embedded as `embed --method avg|isf|sif|nws` made an index's vectors: the word vectors and the
    salience table its identity names, checked against the digests recorded there."""

    def __init__(self, identity, index_path: Path):
        from ..models import model_identity, word_vectors
        from ..models.salience import SalienceTable, SentenceEmbedder

        settings = dict(identity.settings)
        salience = model_identity.Identity.parse(settings["salience"]).name if "salience" in settings else None
        vectors = word_vectors.load(identity.name)
        sif_component = settings.get("sif_component", "corpus")
        found = model_identity.of_word_vector_method(
            word_vectors.identity(vectors), settings["method"], salience, sif_component
        )
        model_identity.refuse_another_model(
            found,
            identity,
            f"the index at '{index_path}' holds vectors of '{identity}', but its word vectors and "
            f"salience table are now '{found}'",
            "query with embeddings, or rebuild the index",
        )
        table = SalienceTable.load(salience) if salience is not None else None
        self.embedder = SentenceEmbedder(settings["method"], vectors, table, sif_component)

    def encode(self, texts: list[str]):
        return self.embedder.embed(texts)
