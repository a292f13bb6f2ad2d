"""The index directory's old home: sembed_cli.indexes holds it now (re-exported here for code that imports this
path), and the model fingerprint that indexes written before model identities were checked by."""

from __future__ import annotations

import hashlib

import numpy as np

from ..indexes.directory import INDEX_FILE, METADATA_FILE, VectorIndex, metadata_problem  # noqa: F401
from ..indexes.entries import unit_rows  # noqa: F401
from ..indexes.kinds import HNSW_EF_SEARCH  # noqa: F401

PROBE_TEXT = "sembed index probe: Springfield, Illinois"


def model_fingerprint(encoder) -> str:
    """A short hash of the model's (rounded) vector for PROBE_TEXT: the same model gives the same fingerprint."""
    vector = np.asarray(encoder.encode([PROBE_TEXT], show_progress_bar=False)[0], dtype=np.float32)
    return hashlib.sha256(np.round(vector, 3).tobytes() + str(vector.shape).encode()).hexdigest()[:16]
