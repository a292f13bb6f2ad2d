"""Indexes written by sembed 0.1 (records.jsonl beside index.faiss), converted to today's format.

Such an index still loads and answers searches (`directory.VectorIndex.load` reads its records.jsonl whole: they
are small); `sembed index --update DIR` converts it first, in place, to the SQLite store (`convert_legacy`), and
`index merge` refuses one until then. Its rows kept no content hash: `build.legacy_digest` makes the one a record
of today would have.
"""

from __future__ import annotations

import logging

from ..artifacts import building
from .build import build_from_index
from .directory import VectorIndex, seal
from .staging import IndexSettings

log = logging.getLogger(__name__)


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
        built = build_from_index(work, old, settings)
        meta = dict(old.metadata)
        meta["settings"] = {
            **meta.get("settings", {}),
            **built.kind.describe(),
            "rerank": "none",
            "trained_sha256": built.trained_sha256,
        }
        meta.update(count=built.count, type=built.kind.name)
        meta["data"] = {**meta.get("data", {}), "converted_from": "sembed 0.1"}
        seal(work, meta)
    old.close()
    return VectorIndex.load(directory, writable=True)
