"""The vectors kept beside a lossy index (indexes/vector_file.py): read back exactly, mapped or row by row."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("faiss")

from sembed_cli.indexes.vector_file import VectorFile, as_float32


def test_float16_rows_decode_exactly_as_numpys_cast():
    """Every float16 value (subnormals, infinities, signed zeros) becomes the float32 numpy's cast gives, on the
    instruction set of the machine running the test (FAISS picks its SIMD path at load)."""
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    every = every[~np.isnan(every)]
    rows = every[: len(every) // 64 * 64].reshape(-1, 64)
    decoded = as_float32(rows)
    assert decoded.dtype == np.float32 and decoded.shape == rows.shape
    assert np.array_equal(decoded.view(np.uint32), rows.astype(np.float32).view(np.uint32))  # -0.0 kept too
    assert np.isnan(as_float32(np.full((1, 8), np.nan, dtype=np.float16))).all()


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_rows_come_back_in_the_order_asked_mapped_or_not(tmp_path, dtype):
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((500, 24)).astype(dtype)
    kept = VectorFile.named(tmp_path, 24, dtype)
    kept.append(matrix[:300], at_row=0)
    kept.append(matrix[300:], at_row=300)
    asked = np.array([499, 3, 3, 250, 0, 120], dtype=np.int64)
    expected = matrix[asked].astype(np.float32)
    assert np.array_equal(kept.read(asked, 500), expected)
    assert np.array_equal(kept.unmapped().read(asked, 500), expected)
    assert np.array_equal(np.concatenate([block for _, block in kept.chunks(500, size=128)]), matrix.astype(np.float32))
