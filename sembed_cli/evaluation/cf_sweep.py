"""The W_cf sweep of `eval sts --cf-grid`: one pair's CF parts kept as ten dot products, and the cosine of
basic + W * cf for every W computed from them (CF-BERT eq. 1), so the vectors are read once for the whole grid."""

from __future__ import annotations

import numpy as np

from .. import io
from ..errors import SembedError

# The ten dot products of one pair's CF parts (a, c: side A's basic and cf parts; b, d: side B's), from
# which the cosine of u = a + W c and v = b + W d follows for any W (CF-BERT eq. 1).
AA, AC, CC, BB, BD, DD, AB, AD, CB, CD = range(10)


class CfParts:
    """Reads one record's kept CF parts and keeps their ten dot products, not the vectors."""

    def __init__(
        self,
        keys_a: tuple[str, str] = ("embedding_basic_a", "embedding_cf_a"),
        keys_b: tuple[str, str] = ("embedding_basic_b", "embedding_cf_b"),
    ):
        self.keys = (*keys_a, *keys_b)
        self.dimension = io.Dimension()

    @property
    def name(self) -> str:
        basic_a, cf_a, basic_b, cf_b = self.keys
        return f"cosine({basic_a} + W * {cf_a}, {basic_b} + W * {cf_b})"

    def __call__(self, record: dict) -> np.ndarray:
        hint = "run sembed embed --keep-parts first"
        vectors = {key: io.vector(record, key, hint) for key in self.keys}
        self.dimension.check(vectors)
        for key, v in vectors.items():
            io.nonzero(key, float(np.max(np.abs(v))))
        a, c, b, d = vectors.values()
        # the cosine of a + W c and b + W d is the same with each side's parts scaled by one factor: scale them so
        # that the dot products cannot overflow
        peak_a, peak_b = max(np.max(np.abs(a)), np.max(np.abs(c))), max(np.max(np.abs(b)), np.max(np.abs(d)))
        low, high = io.SAFE_MAGNITUDES
        if not (low <= peak_a <= high and low <= peak_b <= high):
            a, c, b, d = a / peak_a, c / peak_a, b / peak_b, d / peak_b
        return np.array([a @ a, a @ c, c @ c, b @ b, b @ d, d @ d, a @ b, a @ d, c @ b, c @ d])


def cf_cosines(dots: np.ndarray, weight: float) -> np.ndarray:
    """cos(a + W c, b + W d) for every row of dots (n x 10), CF-BERT eq. 1 expanded:
    u.v = a.b + W (a.d + c.b) + W^2 c.d;  |u|^2 = a.a + 2W a.c + W^2 c.c;  |v|^2 likewise."""
    w = weight
    uv = dots[:, AB] + w * (dots[:, AD] + dots[:, CB]) + w * w * dots[:, CD]
    uu = dots[:, AA] + 2 * w * dots[:, AC] + w * w * dots[:, CC]
    vv = dots[:, BB] + 2 * w * dots[:, BD] + w * w * dots[:, DD]
    # a + W c can vanish only when the parts point in opposite directions: then the cosine is undefined
    scale = np.minimum(dots[:, AA] + w * w * dots[:, CC], dots[:, BB] + w * w * dots[:, DD])
    degenerate = np.minimum(uu, vv) <= 1e-12 * scale
    if degenerate.any():
        n = int(np.argmax(degenerate)) + 1
        raise SembedError(f"cosine undefined at W_cf = {weight:g}: basic + W * cf is a zero vector in record {n}")
    return uv / np.sqrt(uu * vv)
