"""sembed index: a FAISS index over records' sentence vectors, stored as a directory search reads."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import console, sentence_models
from ..errors import BadRecord, SembedError
from ..io import RecordSource, check_text
from ..options import (Backend, BatchSize, Device, Force, Input, Quantize, Quiet, Seed, SkipErrors, Verbose,
                       check_backend)

IndexDir = Annotated[Path, typer.Option("-o", "--output", metavar="DIR", show_default=False,
                                        help="The index directory to write (required).")]
IndexModel = Annotated[str, typer.Option(
    "--model", "-m", envvar="SEMBED_MODEL", metavar="MODEL",
    help="sentence-transformers model that embeds the texts (or made the given embeddings): a directory or "
         "all-MiniLM-L6-v2, the packaged default. Its name and fingerprint go into the metadata.")]
IndexType = Annotated[str, typer.Option("--type", metavar="auto|flat|ivf|hnsw",
                                        help="flat: exact; hnsw: graph (M 32, efSearch 64); ivf: 4 sqrt(n) k-means "
                                             "cells, 16 probed; auto: flat up to 100,000 vectors, hnsw above.")]
TextKey = Annotated[str, typer.Option("--text-key", "-k", metavar="KEY", help="The text field (embedded when the "
                                                                              "record has no --embedding-key).")]
EmbeddingKey = Annotated[str, typer.Option("--embedding-key", metavar="KEY",
                                           help="A field with the record's vector (from sembed embed), used instead "
                                                "of embedding the text.")]
IdKey = Annotated[str, typer.Option("--id-key", metavar="KEY", help="The record's id (else its position from 0).")]


def index_command(
    input: Input = "-",
    output: IndexDir = ...,
    model: IndexModel = sentence_models.DEFAULT_MODEL,
    index_type: IndexType = "auto",
    text_key: TextKey = "text",
    embedding_key: EmbeddingKey = "embedding",
    id_key: IdKey = "id",
    batch_size: BatchSize = 256,
    force: Force = False,
    seed: Seed = 42,
    device: Device = "auto",
    backend: Backend = "torch",
    quantize: Quantize = "none",
    skip_errors: SkipErrors = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Build a FAISS index over records' vectors, for sembed search.

    Reads every record (an index needs them all): its vector from
    embedding (--embedding-key, as `sembed embed` writes it) when the first
    record has one, else its text (--text-key) embedded with --model, in
    batches of --batch-size. Vectors are normalised to unit length, so the
    inner product the index ranks by is the cosine. Writes nothing to
    stdout: DIR holds index.faiss, records.jsonl (each row's id, from
    --id-key or the position, and the record without its vectors: the
    payload search returns) and sembed.json (the model's name and
    fingerprint, dimension, type, count, data hash, settings with the
    --backend and --quantize that embedded the texts, versions).
    DIR appears complete or not at all; an existing DIR needs --force.

    \b
    Example:
      sembed convert --from gazetteer | grep '"is_poi":true' \\
        | sembed index -m poi-model -o poi-index
      sembed embed names.jsonl | sembed index -o names-index
    """
    import numpy as np

    from ..artifacts import ContentHash, building, describe, refuse_existing, write_metadata
    from ..evaluation.fields import vector
    from ..vector_index import (HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, HNSW_M, INDEX_FILE, METADATA_FILE, RECORDS_FILE,
                                build_faiss, choose_type, model_fingerprint, unit_rows)

    if index_type not in ("auto", "flat", "hnsw", "ivf"):
        raise typer.BadParameter(f"'{index_type}' is not one of auto, flat, ivf, hnsw", param_hint="'--type'")
    check_backend(backend, quantize, device)
    refuse_existing(output, force)
    encoder, resolved = sentence_models.load_encoder(model, device, backend=backend, quantize=quantize)
    dimension = (getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension)()
    fingerprint = model_fingerprint(encoder)
    rows: list[tuple] = []
    texts: list[str] = []
    given: list = []
    digest = ContentHash()
    mode: dict[str, bool] = {}

    def keep(record: dict) -> None:
        uses_vectors = mode.setdefault("vectors", embedding_key in record)
        if uses_vectors:
            value = vector(record, embedding_key)
            if len(value) != dimension:
                raise BadRecord(f"'{embedding_key}' has {len(value)} dimensions, but the model '{model}' makes "
                                f"{dimension}: it was embedded with another model")
            given.append(value)
            item = value
        else:
            if text_key not in record:
                raise BadRecord(f"missing key '{text_key}' (or '{embedding_key}')")
            item = check_text(record, text_key)
            texts.append(item)
        record_id = record.get(id_key, len(rows))
        payload = {k: v for k, v in record.items() if not k.startswith("embedding")}
        rows.append((record_id, payload))
        digest.add(payload)

    source = RecordSource(input, skip_errors=skip_errors)
    for _ in console.progress(source.checked(keep), "reading records"):
        pass
    summary = source.summary()
    if summary:
        console.warn(summary)
    if not rows:
        raise SembedError(f"no records to index in {source.rejects.name}")
    if given:
        vectors = np.asarray(given, dtype=np.float32)
    else:
        console.say(f"embedding {len(texts)} texts with {model} on {resolved}")
        vectors = np.concatenate([encoder.encode(texts[i:i + batch_size], batch_size=min(batch_size, 256),
                                                 show_progress_bar=False, convert_to_numpy=True)
                                  for i in console.progress(range(0, len(texts), batch_size), "embedding",
                                                            -(-len(texts) // batch_size), "batches")])
    kind = choose_type(index_type, len(rows))
    index = build_faiss(unit_rows(vectors), kind, seed)
    import orjson

    settings = {"type": kind, "requested_type": index_type, "metric": "inner product of unit vectors (cosine)",
                "text_key": text_key, "embedding_key": embedding_key, "id_key": id_key,
                "source": "embeddings" if given else "texts", **sentence_models.backend_identity(encoder)}
    if kind == "hnsw":
        settings.update({"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION, "ef_search": HNSW_EF_SEARCH})
    elif kind == "ivf":
        settings.update({"cells": int(index.nlist), "nprobe": int(index.nprobe)})
    metadata = describe("sembed index", {"input": source.rejects.name, "records": len(rows),
                                         "skipped": len(source.rejects.skipped), "sha256": digest.hexdigest()},
                        settings, model=model, model_path=str(sentence_models.resolve_path(model).resolve()),
                        model_fingerprint=fingerprint, dimension=dimension, type=kind, count=len(rows), seed=seed)
    import faiss

    with building(output, force) as work:
        faiss.write_index(index, str(work / INDEX_FILE))
        with open(work / RECORDS_FILE, "wb") as f:
            for record_id, payload in rows:
                f.write(orjson.dumps({"id": record_id, "record": payload}, option=orjson.OPT_APPEND_NEWLINE))
        write_metadata(work, metadata, METADATA_FILE)
    console.say(f"wrote {output}: {len(rows)} vectors of {dimension} dimensions, {kind} index")
