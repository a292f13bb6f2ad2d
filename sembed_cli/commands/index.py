"""sembed index: a FAISS index over records' sentence vectors, stored as a directory search reads."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import console
from ..models import sentence_models
from ..errors import SembedError
from ..options import (Backend, BatchSize, Device, Force, Input, Lines, LongText, Quantize, Quiet, Seed, SentenceModel,
                       SkipErrors, Threads, Verbose, check_backend, given_on_command_line)

IndexDir = Annotated[Optional[Path], typer.Option("-o", "--output", metavar="DIR", show_default=False,
                                                  help="The index directory to write (this or --update).")]
UpdateDir = Annotated[Optional[Path], typer.Option(
    "--update", metavar="DIR", show_default=False,
    help="Add the records to the index in DIR instead: new ids are added, a changed text replaces its id's entry, "
         "an unchanged id and text is skipped (not embedded again).")]
IndexType = Annotated[str, typer.Option("--type", metavar="auto|flat|ivf|hnsw",
                                        help="flat: exact; hnsw: graph (M 32, efSearch 64); ivf: 4 sqrt(n) k-means "
                                             "cells, 16 probed; auto: flat up to 100,000 vectors, hnsw above. "
                                             "--update: the index's own unless given.")]
TextKey = Annotated[str, typer.Option("--text-key", "-k", metavar="KEY", help="The text field (embedded when the "
                                                                              "record has no --embedding-key).")]
EmbeddingKey = Annotated[str, typer.Option("--embedding-key", metavar="KEY",
                                           help="A field with the record's vector (from sembed embed), used instead "
                                                "of embedding the text.")]
IdKey = Annotated[str, typer.Option("--id-key", metavar="KEY", help="The record's id (else its position from 0; "
                                                                    "--update needs ids).")]
NpyVectors = Annotated[Optional[Path], typer.Option(
    "--npy", metavar="FILE", show_default=False,
    help="Read the vectors from this matrix, which `sembed embed --npy FILE` wrote: each record names its row "
         "(embedding_row), and FILE.json the model. The matrix is read with the records: give a finished one "
         "(`embed --npy FILE -o rows.jsonl` first), not a pipe from the embed still writing it.")]


def index_command(
    ctx: typer.Context,
    input: Input = "-",
    output: IndexDir = None,
    update: UpdateDir = None,
    model: SentenceModel = sentence_models.DEFAULT_MODEL,
    index_type: IndexType = "auto",
    text_key: TextKey = "text",
    embedding_key: EmbeddingKey = "embedding",
    id_key: IdKey = "id",
    npy: NpyVectors = None,
    lines: Lines = False,
    long_text: LongText = "truncate",
    batch_size: BatchSize = 256,
    force: Force = False,
    seed: Seed = 42,
    device: Device = "auto",
    backend: Backend = "torch",
    quantize: Quantize = "none",
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Build a FAISS index over records' vectors, for sembed search.

    Reads every record (an index needs them all): its vector from
    embedding (--embedding-key, as `sembed embed` writes it; --npy FILE:
    the row embedding_row of the matrix `sembed embed --npy FILE` wrote)
    when the first record has one, else its text (--text-key) embedded
    with --model, in batches of --batch-size. Vectors are normalised to
    unit length, so the inner product the index ranks by is the cosine.
    Writes nothing to stdout: DIR holds index.faiss, records.jsonl (each
    row's id, from --id-key or the position, and the record without its
    vectors: the payload search returns) and sembed.json (embedding_model:
    the identity of the model that made the vectors, the model's name,
    dimension, type, count, data hash, settings, versions). sembed.json's settings
    also name the --backend and --quantize that embedded the texts. DIR
    appears complete or not at all; an existing DIR needs --force. Where
    every record carries is_poi, true for some and false for others (the
    labelled names `sembed taste --neighbours` votes with), DIR also holds
    ngram-classifier.npz: the logistic regression over their character
    n-grams that taste mixes with the vote (about 30 s for 350,000 names).

    The model: records with vectors carry embedding_model (`sembed embed`
    writes it), and the index takes it from them; records of two models,
    or with and without the field, are refused. Vectors without it (older
    files, vectors from elsewhere) are taken to be --model's, with a
    warning; --model given with labelled vectors must name their model.

    --update DIR (instead of -o) adds the records to an existing index:
    a record whose id is new is added; one whose id is indexed with the
    same text is skipped (not embedded; its payload is refreshed); one
    with a changed text replaces its entry (an id twice in the input: the
    later wins). Indexed records the input lacks stay. The index is then
    rebuilt from the kept and new vectors, exactly as `-o` builds one from
    all of them (the same rows in the same order, the same type, seed and
    settings), and replaces DIR atomically: a failed update leaves the old
    index intact. New records must be of the index's model. For a nightly
    cron job on a growing corpus only the new and changed texts are
    embedded.

    \b
    Example:
      sembed convert --from gazetteer | grep '"is_poi":true' \\
        | sembed index -m poi-model -o poi-index
      sembed embed names.jsonl | sembed index -o names-index
      sembed embed names.jsonl --npy names.npy -o names.rows.jsonl
      sembed index names.rows.jsonl --npy names.npy -o names-index
      sembed convert --from lines corpus.txt | sembed index --id-key text -o corpus-index
      sembed convert --from lines more.txt | sembed index --update corpus-index
    """
    import numpy as np

    from ..models import model_identity, ngram_classifier
    from ..artifacts import ContentHash, building, describe, exclusive, refuse_existing, write_metadata
    from ..io import dumps
    from ..models.sentence_embedding import LongTexts
    from ..models.vector_index import (HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, HNSW_M, INDEX_FILE, METADATA_FILE,
                                       RECORDS_FILE, VectorIndex, build_faiss, choose_type)

    if (output is None) == (update is None):
        raise typer.BadParameter("give the index directory: -o DIR for a new index, or --update DIR",
                                 param_hint="'-o' / '--update'")
    if index_type not in ("auto", "flat", "hnsw", "ivf"):
        raise typer.BadParameter(f"'{index_type}' is not one of auto, flat, ivf, hnsw", param_hint="'--type'")
    # what the command line says overrides what the records or the index to update say (SEMBED_MODEL does not)
    given = given_on_command_line(ctx)
    target = output if output is not None else update
    ctx.with_resource(exclusive(target))  # one run at a time: an update must not lose another's records
    old = None
    if update is not None:
        old = VectorIndex.load(update)
        settings = old.metadata.get("settings", {})
        text_key = text_key if "text_key" in given else settings.get("text_key", text_key)
        embedding_key = embedding_key if "embedding_key" in given else settings.get("embedding_key", embedding_key)
        id_key = id_key if "id_key" in given else settings.get("id_key", id_key)
        index_type = index_type if "index_type" in given else settings.get("requested_type", index_type)
        if "backend" not in given and "quantize" not in given:  # embedded as the index was
            backend = settings.get("backend", backend)
            quantize = "int8" if settings.get("quantization") else quantize
    else:
        refuse_existing(output, force)
    check_backend(backend, quantize, device)

    records = IndexRecords(text_key, embedding_key, id_key, needs_ids=old is not None, npy=npy)
    records.read(input, skip_errors, lines)
    identity, model = records.identity_and_model(model, "model" in given, old, device)
    if old is not None:
        merged = records.merge_into(old)
        console.say(f"{merged.added} new, {merged.replaced} changed, {merged.unchanged} unchanged record(s); "
                    f"{len(merged.ids)} in all")
    else:
        merged = records.as_rows()
    todo = merged.to_embed
    if todo:
        texts = [merged.texts[n] for n in todo]
        encoder, resolved = sentence_models.load_encoder(model, device, backend=backend, quantize=quantize)
        long_texts = LongTexts(encoder, long_text)
        records.check_long_texts(long_texts, todo, merged)
        console.say(f"embedding {len(texts)} texts with {identity} on {resolved}")
        embedded = np.concatenate(
            [long_texts.encode(texts[i:i + batch_size], batch_size=min(batch_size, 256))
             for i in console.progress(range(0, len(texts), batch_size), "embedding", -(-len(texts) // batch_size),
                                       "batches")])
        long_texts.report()
        for n, vector in zip(todo, embedded):
            merged.put(n, vector)
    backend = sentence_models.backend_identity(encoder) if todo else \
        {k: v for k, v in (old.metadata.get("settings", {}) if old is not None else {}).items()
         if k in ("backend", "quantization")}  # what embedded the texts, when texts were embedded
    vectors = merged.matrix()
    count, dimension = vectors.shape
    kind = choose_type(index_type, count)
    index = build_faiss(vectors, kind, seed)
    digest = ContentHash()
    for payload in merged.payloads:
        digest.add(payload)
    settings = {"type": kind, "requested_type": index_type, "metric": "inner product of unit vectors (cosine)",
                "text_key": text_key, "embedding_key": embedding_key, "id_key": id_key,
                "source": records.source, **backend}
    if kind == "hnsw":
        settings.update({"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION, "ef_search": HNSW_EF_SEARCH})
    elif kind == "ivf":
        settings.update({"cells": int(index.nlist), "nprobe": int(index.nprobe)})
    data = {"input": records.name, "records": records.count, "skipped": records.skipped, "sha256": digest.hexdigest()}
    if old is not None:
        data["update"] = {"previous_count": len(old.ids), "added": merged.added, "replaced": merged.replaced,
                          "unchanged": merged.unchanged, "previous_sha256": old.metadata.get("data", {}).get("sha256")}
    metadata = describe("sembed index", data, settings, **{model_identity.FIELD: str(identity)}, model=identity.name,
                        model_path=model_path(identity.name), dimension=dimension, type=kind, count=count, seed=seed)
    regression = None
    found = ngram_classifier.labelled(merged.payloads, text_key)
    if found is not None:  # names labelled is_poi, both kinds: what taste --neighbours votes with
        console.say(f"fitting the n-gram regression of taste --neighbours on {len(found[0])} labelled names")
        regression = ngram_classifier.NgramClassifier.fit(*found, digest.hexdigest())
    with building(target, force=force or old is not None) as work:
        faiss_write(index, work / INDEX_FILE)
        if regression is not None:
            regression.save(work)
        with open(work / RECORDS_FILE, "wb") as f:
            for record_id, payload in zip(merged.ids, merged.payloads):
                f.write(dumps({"id": record_id, "record": payload}))  # big integers digit for digit
        write_metadata(work, metadata, METADATA_FILE)
    console.say(f"wrote {target}: {count} vectors of {dimension} dimensions, {kind} index")


def faiss_write(index, path: Path) -> None:
    import faiss

    faiss.write_index(index, str(path))


def model_path(name: str) -> str | None:
    """The resolved directory of a sentence-transformers model name, when it is one here (None otherwise)."""
    try:
        return str(sentence_models.resolve_path(name).resolve())
    except SembedError:
        return None


class Rows:
    """The index's rows in order: ids, payloads, unit vectors (None where a text is still to embed), and those texts.

    `merge` adds records to them as `index --update` does (see the command's help)."""

    def __init__(self, ids: list | None = None, payloads: list[dict] | None = None, vectors: list | None = None):
        self.ids, self.payloads = ids or [], payloads or []
        self.vectors: list = vectors or []
        self.texts: dict[int, str] = {}
        self.added = self.replaced = self.unchanged = 0

    @property
    def to_embed(self) -> list[int]:
        return sorted(self.texts)

    def append(self, record_id, payload: dict, item) -> None:
        self.ids.append(record_id)
        self.payloads.append(payload)
        self.vectors.append(None)
        self.put(len(self.ids) - 1, item)

    def put(self, n: int, item) -> None:
        """Row n's vector is `item` (a vector), or the embedding of `item` (a text)."""
        from ..models.vector_index import unit_rows

        if isinstance(item, str):
            self.texts[n], self.vectors[n] = item, None
        else:
            self.texts.pop(n, None)
            self.vectors[n] = unit_rows(item[None, :])[0]

    def merge(self, ids: list, payloads: list[dict], items: list, text_key: str) -> None:
        """Add records to the rows by id: new ids at the end, in input order; a changed text (or a changed given
        vector) replaces its id's row where it is; the same text (and vector) only refreshes the payload."""
        import numpy as np

        from ..io import dumps

        position = {dumps(record_id): n for n, record_id in enumerate(self.ids)}
        for record_id, payload, item in zip(ids, payloads, items):
            key = dumps(record_id)
            n = position.get(key)
            if n is None:
                position[key] = len(self.ids)
                self.append(record_id, payload, item)
                self.added += 1
                continue
            same = self.payloads[n].get(text_key) == payload.get(text_key) and n not in self.texts and (
                isinstance(item, str) or np.allclose(self.vectors[n], item / max(np.linalg.norm(item), 1e-12),
                                                     atol=1e-6))
            self.payloads[n] = payload
            if same:
                self.unchanged += 1
            else:
                self.put(n, item)
                self.replaced += 1

    def matrix(self):
        import numpy as np

        return np.stack(self.vectors).astype(np.float32)


class IndexRecords:
    """Every input record's id, payload and vector (or text to embed), with the model checks of `index`."""

    def __init__(self, text_key: str, embedding_key: str, id_key: str, needs_ids: bool = False,
                 npy: Path | None = None):
        from ..io import Dimension
        from ..models.model_identity import OneModel
        from ..vector_rows import RowVectors

        self.text_key, self.embedding_key, self.id_key, self.needs_ids = text_key, embedding_key, id_key, needs_ids
        self.rows = RowVectors(npy) if npy is not None else None
        self.models = OneModel()
        self.dimension = Dimension()
        self.ids: list = []
        self.payloads: list[dict] = []
        self.items: list = []  # a vector (float32) or a text per record
        self.uses_vectors: bool | None = None
        self.name, self.count, self.skipped = "", 0, 0

    @property
    def source(self) -> str:
        return "embeddings" if self.uses_vectors else "texts"

    def keep(self, record: dict) -> None:
        import numpy as np

        from ..errors import BadRecord
        from ..io import vector
        from ..io import check_text

        if self.rows is not None:
            self.rows.attach(record)
        if self.uses_vectors is None:
            self.uses_vectors = self.embedding_key in record
        if self.uses_vectors:
            self.models(record)
            if self.rows is not None:
                self.models.agree(self.rows.identity, f"{self.rows.path}.json names vectors")
            value = vector(record, self.embedding_key)
            self.dimension.check({self.embedding_key: value})
            item = value.astype(np.float32)
        else:
            if self.text_key not in record:
                raise BadRecord(f"missing key '{self.text_key}' (or '{self.embedding_key}')")
            item = check_text(record, self.text_key)
        if self.needs_ids and self.id_key not in record:
            raise BadRecord(f"missing key '{self.id_key}' (--update finds indexed records by their id)")
        self.ids.append(record.get(self.id_key, len(self.ids)))
        self.payloads.append({k: v for k, v in record.items() if not k.startswith("embedding")})
        self.items.append(item)

    def read(self, path: str, skip_errors: bool, lines: bool = False) -> None:
        from ..io import RecordSource

        source = RecordSource(path, skip_errors=skip_errors, lines=lines)
        for _ in console.progress(source.checked(self.keep), "reading records"):
            pass
        summary = source.summary()
        if summary:
            console.warn(summary)
        self.name, self.count, self.skipped = source.rejects.name, len(self.ids), len(source.rejects.skipped)
        if not self.ids:
            raise SembedError(f"no records to index in {self.name}")

    def check_long_texts(self, long_texts, todo: list[int], rows: Rows) -> None:
        """--long-text error: refuse the first text to embed that is longer than the model's window, naming its id
        (the texts are checked once the model is known, after reading)."""
        from ..errors import BadRecord

        if long_texts.policy != "error":
            return
        for n in todo:
            try:
                long_texts.check({self.text_key: rows.texts[n]}, self.text_key)
            except BadRecord as e:
                raise SembedError(f"{self.name}: the record with {self.id_key} {rows.ids[n]!r}: {e.message}",
                                  e.hint) from None

    def identity_and_model(self, model: str, model_given: bool, old, device: str):
        """The identity of the index's vectors, and the model that embeds its texts (None with labelled vectors)."""
        from ..models import model_identity

        labelled = self.models.identity if self.uses_vectors else None
        if old is not None:
            wanted = old.identity
            if labelled is not None and wanted is not None and not labelled.same(wanted):
                raise SembedError(f"the records' vectors are of '{labelled}', but the index at '{old.path}' holds "
                                  f"vectors of '{wanted}'", "embed them with the index's model, or build a new index")
            if not model_given:
                model = old.metadata.get("model_path") or old.metadata["model"]
                if wanted is not None and model_path(wanted.name) is not None:
                    model = wanted.name
        if labelled is not None:
            if model_given and not labelled.same(model_identity.of_sentence_model(model)):
                raise SembedError(f"the records' vectors are of '{labelled}', not of --model '{model}'",
                                  "leave out --model: the index takes the records' model")
            return labelled, None
        identity = model_identity.of_sentence_model(model)
        if old is not None and old.identity is not None and not identity.same(old.identity):
            raise SembedError(f"the index at '{old.path}' holds vectors of '{old.identity}', but '{model}' is "
                              f"'{identity}', another model", "update with the index's model (leave out --model)")
        if self.uses_vectors:
            console.warn(f"the records' vectors carry no embedding_model: taken to be of --model '{identity}'")
            dimension = old.dimension if old is not None else \
                model_dimension(sentence_models.load(model, sentence_models.resolve_device(device)))
            if self.dimension.size != dimension:
                raise SembedError(f"'{self.embedding_key}' has {self.dimension.size} dimensions, but the model "
                                  f"'{model}' makes {dimension}: it was embedded with another model")
        return identity, model

    def as_rows(self) -> Rows:
        """The rows of a new index, in input order (an id twice is indexed twice)."""
        rows = Rows()
        for record_id, payload, item in zip(self.ids, self.payloads, self.items):
            rows.append(record_id, payload, item)
        return rows

    def merge_into(self, old) -> Rows:
        """The rows of the index `old`, updated with these records (`Rows.merge`)."""
        rows = Rows(list(old.ids), list(old.payloads), list(old.vectors()))
        rows.merge(self.ids, self.payloads, self.items, self.text_key)
        return rows


def model_dimension(encoder) -> int:
    return (getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension)()
