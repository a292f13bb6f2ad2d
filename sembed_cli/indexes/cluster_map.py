"""`sembed cluster --plot FILE.png`: a 2-D map of the records coloured by cluster, each cluster labelled with its
most central text.

The map is drawn from a seeded sample (at most SAMPLE points: a scatter of millions says no more and takes
minutes), projected by UMAP (McInnes et al. 2018) where the umap-learn package is installed, else by PCA: the two
leading principal axes of the centred sample, by numpy's SVD. A cluster's label sits at the median of its sampled
points: its number and its most central text, or its number alone past WORDED_LABELS clusters. matplotlib comes
with the plots extra.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np

from ..errors import SembedError
from ..io import atomic_path
from .collection import Collection

log = logging.getLogger(__name__)

SAMPLE = 20_000
LABEL_CHARACTERS = 40
WORDED_LABELS = 20  # clusters whose labels carry their text; more overlap, and carry only their number (the
# summary names them)


def projection_name() -> str:
    return "umap" if importlib.util.find_spec("umap") is not None else "pca"


def pca(sample: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """The sample and `others` on the sample's two leading principal axes."""
    mean = sample.mean(axis=0)
    _, _, axes = np.linalg.svd(sample - mean, full_matrices=False)
    return [(points - mean) @ axes[:2].T for points in (sample, *others)]


def draw_map(
    path: Path,
    collection: Collection,
    cluster_of: np.ndarray,
    labels: list[str | None],
    seed: int,
    force: bool,
) -> str:
    """Write the map to `path` (PNG, written whole or not at all); returns the projection used (umap or pca)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SembedError(
            "--plot needs matplotlib, which is not installed", "pip install 'sembed[plots]', or leave out --plot"
        ) from None
    if path.exists() and not force:
        raise SembedError(f"{path} already exists", "pass --force to replace it, or choose another --plot")
    count = collection.count
    size = min(count, SAMPLE)
    positions = np.sort(np.random.default_rng(seed).choice(count, size=size, replace=False))
    points = collection.rows(positions)
    cluster = cluster_of[positions]
    how = projection_name()
    if how == "umap" and size > 2:
        import umap  # type: ignore[import-not-found]  # optional: umap-learn

        flat = umap.UMAP(n_components=2, metric="cosine", random_state=seed).fit_transform(points)
    else:
        how = "pca"
        (flat,) = pca(points)
    centres = np.full((len(labels), 2), np.nan)  # a label sits amid its cluster's points (a unit centroid projects
    for c in np.unique(cluster):  # further out than its members, which lie inside the sphere)
        centres[c] = np.median(flat[cluster == c], axis=0)
    figure, axes = plt.subplots(figsize=(11, 8), dpi=110)
    colours = plt.get_cmap("tab20" if len(labels) > 10 else "tab10")
    axes.scatter(flat[:, 0], flat[:, 1], c=[colours(c % colours.N) for c in cluster], s=3, alpha=0.5, linewidths=0)
    for number, (label, (x, y)) in enumerate(zip(labels, centres)):
        if not np.isfinite(x):
            continue
        axes.annotate(
            f"{number}: {shorten(label)}" if len(labels) <= WORDED_LABELS else str(number),
            (x, y),
            fontsize=8,
            ha="center",
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": colours(number % colours.N), "alpha": 0.85},
        )
    axes.set_title(
        f"{collection.name}: {len(labels)} clusters of {count:,} records ({how.upper()}, {size:,} shown)", fontsize=10
    )
    axes.set_xticks([])
    axes.set_yticks([])
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        figure.savefig(temporary, format="png")
    plt.close(figure)
    log.info(f"wrote {path} ({how.upper()} of {size} records)")
    return how


def shorten(text: str | None) -> str:
    if text is None:
        return "(no text)"
    text = " ".join(text.split())
    return text if len(text) <= LABEL_CHARACTERS else text[: LABEL_CHARACTERS - 1] + "\u2026"
