"""`sembed index`'s work, without the command line: build an index from records, update one, merge pieces.

Each function takes a record source and typed settings and writes an index directory (`writer` does the rows and
FAISS; this module decides the model, reads the records into entries, and writes the metadata).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .. import console
from ..artifacts import building, describe, exclusive, write_metadata
from ..errors import SembedError
from ..io import RecordReader, Rejects, loads
from . import kinds
from .directory import METADATA_FILE, VectorIndex
from .entries import Entry, EntryReader

if TYPE_CHECKING:
    from ..models.model_identity import Identity

from .writer import Built, IndexSettings, Updated, build_into, entries_of, merge_into, update_in_place

log = logging.getLogger(__name__)


class IndexSource(RecordReader, Protocol):
    """What an index reads: a `RecordSource` (a file or stdin), or the parts `sembed embed --parts` wrote
    (`parts.reassemble.PartsSource`), with the --skip-errors policy and the number of the record last read."""

    rejects: Rejects
    line: int


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


class TextEmbedder:
    """Embeds texts with the chosen model, loaded at the first text; counts what it embedded. `check` holds the
    identity the first record decided (named in the progress line)."""

    def __init__(self, choice: ModelChoice, check: ModelCheck):
        self.choice, self.check = choice, check
        self.encoder: Any = None  # a sentence encoder of any backend, loaded at the first text
        self.long_texts: Any = None  # its sentence_embedding.LongTexts
        self.count = 0
        self.device = choice.device

    def __call__(self, texts: list[str]) -> np.ndarray:
        from ..models import sentence_models
        from ..models.sentence_embedding import LongTexts

        if self.encoder is None:
            self.encoder, self.device = sentence_models.load_encoder(
                self.choice.name, self.choice.device, backend=self.choice.backend, quantize=self.choice.quantize
            )
            self.long_texts = LongTexts(self.encoder, self.choice.long_text)
            log.info(f"embedding texts with {self.check.identity} on {self.device}")
        if self.choice.long_text == "error":
            for text in texts:
                self.long_texts.check({"text": text}, "text")
        self.count += len(texts)
        return self.long_texts.encode(texts, batch_size=ENCODE_BATCH)

    def backend(self) -> dict:
        from ..models import sentence_models

        return sentence_models.backend_identity(self.encoder) if self.encoder is not None else {}

    def report(self) -> None:
        if self.long_texts is not None:
            self.long_texts.report()


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
            if self.reader.dimension != dimension:
                raise SembedError(
                    f"'{self.reader.embedding_key}' has {self.reader.dimension} dimensions, but the "
                    f"model '{choice.name}' makes {dimension}: it was embedded with another model"
                )
        self.identity = identity


def model_dimension(choice: ModelChoice) -> int:
    from ..models import sentence_models

    encoder = sentence_models.load(choice.name, sentence_models.resolve_device(choice.device))
    return (getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension)()


def read_entries(source: IndexSource, reader: EntryReader, check: ModelCheck) -> Iterator[Entry]:
    """The source's records as entries, each checked as it is read (a bad one names its line)."""
    made: list[Entry] = []

    def read(record: dict) -> None:
        entry = reader(record)
        entry.line = source.line
        if check.identity is None:
            check()
        made.append(entry)

    for _ in console.progress(source.checked(read), "reading records"):
        yield made.pop()


def model_path(name: str) -> str | None:
    """The resolved directory of a sentence-transformers model name, when it is one here (None otherwise)."""
    from ..models import sentence_models

    try:
        return str(sentence_models.resolve_path(name).resolve())
    except SembedError:
        return None


def query_backend(embedder: TextEmbedder, reader: EntryReader, choice: ModelChoice) -> dict:
    """How text queries are to be embedded: as the texts were, or as the user says the vectors were made."""
    if not reader.uses_vectors:
        return embedder.backend()
    if choice.backend == "torch":
        return {}
    return {"backend": choice.backend, **({"quantization": "int8"} if choice.quantize == "int8" else {})}


# --- build -------------------------------------------------------------------------------------------------------


def build_index(
    source: IndexSource,
    output: Path,
    settings: IndexSettings,
    choice: ModelChoice,
    npy: Path | None = None,
    force: bool = False,
    trained_from: Path | None = None,
) -> dict:
    """A new index at `output` from the records of `source`; returns its metadata."""
    trained = VectorIndex.load(trained_from, writable=True) if trained_from is not None else None
    reader = EntryReader(settings.text_key, settings.embedding_key, settings.id_key, npy)
    check = ModelCheck(reader, choice, None)
    embedder = TextEmbedder(choice, check)
    entries = read_entries(source, reader, check)
    try:
        with building(output, force=force) as work:
            built = build_into(work, entries, settings, embedder, source.rejects, trained)
            embedder.report()
            if source.summary():
                log.warning(source.summary())
            metadata = index_metadata(
                built,
                check.identity,
                settings,
                reader,
                query_backend(embedder, reader, choice),
                source.rejects,
                choice.name,
            )
            regression = labelled_regression(work, settings.text_key, built.data_sha256)
            if regression is not None:
                regression.save(work)
            write_metadata(work, metadata, METADATA_FILE)
    finally:
        if trained is not None:
            trained.close()
    log.info(
        f"wrote {output}: {built.count} vectors of {built.dimension} dimensions, {built.kind.name} index "
        f"({built.kind.factory})"
        + (f"; {built.changes.repeated} repeated record(s) indexed once" if built.changes.repeated else "")
    )
    return metadata


def index_metadata(
    built: Built, identity, settings: IndexSettings, reader: EntryReader, backend: dict, rejects: Rejects, model: str
) -> dict:
    from ..models import model_identity

    kind = built.kind
    rerank = settings.rerank if kind.lossy else "none"
    described = {
        **kind.describe(),
        **settings.describe(),
        "rerank": rerank,
        "metric": "inner product of unit vectors (cosine)",
        "source": reader.source,
        "ids": "given" if reader.given_ids else "content hash",
        **backend,
        "trained_sha256": built.trained_sha256,
        "bytes_per_vector": kinds.bytes_per_vector(
            kind, built.dimension, 2 * built.dimension if rerank == "float16" else 4 * built.dimension
        ),
    }
    if kind.name == "hnsw" or "HNSW" in kind.factory.split(",")[-1]:
        described.update(
            {"m": kinds.HNSW_M, "ef_construction": kinds.HNSW_EF_CONSTRUCTION, "ef_search": kinds.HNSW_EF_SEARCH}
        )
    data = {
        "input": rejects.name,
        "records": built.count + built.changes.repeated,
        "skipped": len(rejects.skipped),
        "repeated": built.changes.repeated,
        "sha256": built.data_sha256,
    }
    name = identity.name if identity is not None else model
    return describe(
        "sembed index",
        data,
        described,
        **{model_identity.FIELD: str(identity)},
        model=name,
        model_path=model_path(name),
        dimension=built.dimension,
        type=kind.name,
        count=built.count,
        seed=settings.seed,
    )


def labelled_regression(work: Path, text_key: str, digest: str):
    """The n-gram regression `taste --neighbours` mixes with its vote, for an index of names labelled is_poi (both
    kinds); None for any other index (the first unlabelled row ends the look)."""
    from ..models import ngram_classifier
    from .store import FILE, RecordStore

    store = RecordStore(work / FILE)
    try:
        payloads = []
        for _, _, _, payload in store.rows():
            record = loads(payload)
            if not isinstance(record, dict) or not isinstance(record.get(ngram_classifier.LABEL_KEY), bool):
                return None
            payloads.append(record)
    finally:
        store.close()
    found = ngram_classifier.labelled(payloads, text_key)
    if found is None:
        return None
    log.info(f"fitting the n-gram regression of taste --neighbours on {len(found[0])} labelled names")
    return ngram_classifier.NgramClassifier.fit(*found, digest)


# --- update ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UpdateChoices:
    """What an update may change: the keys and model (else the index's own), mirroring, retraining."""

    given: frozenset[str]
    sync: bool = False
    retrain: bool = False


def update_index(
    source: IndexSource,
    directory: Path,
    settings: IndexSettings,
    choice: ModelChoice,
    choices: UpdateChoices,
    npy: Path | None = None,
) -> dict:
    """Apply the records of `source` to the index at `directory` (see writer.update_in_place); returns its new
    metadata. An index of sembed 0.1 is converted first."""
    with exclusive(directory):
        loaded = VectorIndex.load(directory, writable=True)
        if loaded.legacy:
            loaded = convert_legacy(loaded)
        try:
            return _update(loaded, source, settings, choice, choices, npy)
        finally:
            loaded.close()


def _update(
    loaded: VectorIndex,
    source: IndexSource,
    settings: IndexSettings,
    choice: ModelChoice,
    choices: UpdateChoices,
    npy: Path | None,
) -> dict:
    built = loaded.settings
    given = choices.given
    settings = replace(
        settings,
        **{key: built[key] for key in ("text_key", "embedding_key", "id_key") if key in built and key not in given},
    )
    if "model" not in given:
        identity = loaded.identity
        name = loaded.metadata.get("model_path") or loaded.metadata["model"]
        if identity is not None and model_path(identity.name) is not None:
            name = identity.name
        choice = replace(choice, name=name)
    if "backend" not in given and "quantize" not in given:  # embedded as the index was
        choice = replace(
            choice,
            backend=built.get("backend", choice.backend),
            quantize="int8" if built.get("quantization") else choice.quantize,
        )
    reader = EntryReader(
        settings.text_key,
        settings.embedding_key,
        settings.id_key,
        npy,
        loaded.dimension,
        given_ids=built.get("ids", "given") == "given",
    )
    check = ModelCheck(reader, choice, loaded)
    embedder = TextEmbedder(choice, check)
    entries = read_entries(source, reader, check)
    previous_count = loaded.count

    written: list[dict] = []

    def metadata(updated: Updated) -> dict:
        embedder.report()  # the warnings before sembed.json, which records them
        if source.summary():
            log.warning(source.summary())
        meta = dict(loaded.metadata)
        previous = meta.get("data", {})
        fresh = describe("sembed index", {}, {})
        meta.update(
            count=updated.count,
            command_line=fresh["command_line"],
            created=fresh["created"],
            versions=fresh["versions"],
        )
        meta["data"] = {
            **previous,
            "input": source.rejects.name,
            "sha256": updated.data_sha256,
            "update": {
                "previous_count": previous_count,
                **updated.changes.describe(),
                "previous_sha256": previous.get("sha256"),
            },
        }
        written.append(meta)
        return meta

    updated = update_in_place(loaded, entries, embedder, source.rejects, choices.sync, settings.batch_size, metadata)
    changes = updated.changes
    log.info(
        f"{changes.added} new, {changes.replaced} changed, {changes.unchanged} unchanged record(s)"
        + (f", {changes.synced} removed (not in the input)" if choices.sync else "")
        + (f", {changes.repeated} repeated (indexed once)" if changes.repeated else "")
        + f"; {updated.count} in all"
    )
    if embedder.count:
        log.info(f"embedded {embedder.count} texts")
    if choices.retrain:
        return rebuild(loaded.path, replace(settings, requested_type=built.get("requested_type", "auto")))
    return written[-1]


def rebuild(directory: Path, settings: IndexSettings) -> dict:
    """The index at `directory` built afresh from its own rows and vectors (new cells; rows renumbered)."""
    old = VectorIndex.load(directory, writable=True)
    try:
        with building(directory, force=True) as work:
            built = build_into(work, entries_of(old), settings, None, Rejects(str(directory)))
            meta = dict(old.metadata)
            fresh = {**meta, "count": built.count, "type": built.kind.name}
            fresh["settings"] = {
                **meta.get("settings", {}),
                **built.kind.describe(),
                "trained_sha256": built.trained_sha256,
                "rerank": settings.rerank if built.kind.lossy else "none",
            }
            fresh["data"] = {**meta.get("data", {}), "sha256": built.data_sha256, "rebuilt": True}
            copy_regression(old.path, work)
            write_metadata(work, fresh, METADATA_FILE)
    finally:
        old.close()
    log.info(f"rebuilt {directory}: {built.count} vectors, {built.kind.name} index ({built.kind.factory})")
    return fresh


def copy_regression(source: Path, work: Path) -> None:
    import shutil

    from ..models import ngram_classifier

    saved = source / ngram_classifier.FILE
    if saved.exists():
        shutil.copy(saved, work / saved.name)


def convert_legacy(old: VectorIndex) -> VectorIndex:
    """A sembed 0.1 index (records.jsonl) rewritten in today's format, in place (same rows, type and settings)."""
    directory = old.path
    log.info(f"converting {directory}, written by sembed 0.1, to the SQLite records store")
    settings = IndexSettings(
        requested_type=old.settings.get("requested_type", old.metadata.get("type", "auto")),
        text_key=old.settings.get("text_key", "text"),
        embedding_key=old.settings.get("embedding_key", "embedding"),
        id_key=old.settings.get("id_key", "id"),
        seed=int(old.metadata.get("seed", 42)),
    )
    with building(directory, force=True) as work:
        built = build_into(work, entries_of(old), settings, None, Rejects(str(directory)))
        meta = dict(old.metadata)
        meta["settings"] = {
            **meta.get("settings", {}),
            **built.kind.describe(),
            "rerank": "none",
            "trained_sha256": built.trained_sha256,
        }
        meta.update(count=built.count, type=built.kind.name)
        meta["data"] = {**meta.get("data", {}), "converted_from": "sembed 0.1"}
        copy_regression(directory, work)
        write_metadata(work, meta, METADATA_FILE)
    old.close()
    return VectorIndex.load(directory, writable=True)


# --- merge -------------------------------------------------------------------------------------------------------


def merge_indexes(pieces: list[Path], output: Path, force: bool = False) -> dict:
    """One index at `output` holding every piece's rows, piece after piece (writer.merge_into)."""
    if len({piece.resolve() for piece in pieces}) < len(pieces):
        raise SembedError("the same piece twice", "merge each index once")
    loaded = [VectorIndex.load(piece, writable=True) for piece in pieces]
    try:
        with building(output, force=force) as work:
            count, kind = merge_into(work, loaded)
            meta = dict(loaded[0].metadata)
            fresh = describe("sembed index merge", {}, {})
            meta.update(
                count=count,
                command=fresh["command"],
                command_line=fresh["command_line"],
                created=fresh["created"],
                versions=fresh["versions"],
            )
            meta["data"] = {
                "pieces": [
                    {
                        "path": str(piece.path),
                        "count": piece.count,
                        "sha256": piece.metadata.get("data", {}).get("sha256"),
                    }
                    for piece in loaded
                ]
            }
            write_metadata(work, meta, METADATA_FILE)
    finally:
        for piece in loaded:
            piece.close()
    log.info(f"wrote {output}: {count} vectors from {len(pieces)} pieces, {kind.name} index")
    return meta
