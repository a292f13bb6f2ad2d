"""k-means clusters of a collection's vectors: `sembed cluster` as functions.

Spherical k-means (Dhillon and Modha 2001: centroids renormalised to unit length after each step, so a record
belongs to the centroid of highest cosine) by FAISS's `Kmeans`, seeded, trained on a seeded sample of at most
256 records a cluster (FAISS's own cap; more changes the centroids little and costs time in proportion), then
every record assigned, a block at a time, to its nearest centroid: `cluster` and `cluster_score` (the cosine to
it). The summary names each cluster by its most central records' texts (highest cosine to the centroid).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import console
from ..errors import SembedError
from .collection import BLOCK, Collection

log = logging.getLogger(__name__)

DEFAULT_CLUSTERS = 10
DEFAULT_ITERATIONS = 20  # FAISS's default
DEFAULT_CENTRAL = 3
POINTS_PER_CLUSTER = 256  # FAISS's max_points_per_centroid: the training sample's size per cluster
LABEL_CHARACTERS = 60  # of a central text on the stderr table and the plot


@dataclass(frozen=True)
class ClusterSettings:
    """`sembed cluster`'s choices: clusters, k-means iterations, the seed, texts named per cluster, text field."""

    clusters: int = DEFAULT_CLUSTERS
    iterations: int = DEFAULT_ITERATIONS
    seed: int = 42
    central: int = DEFAULT_CENTRAL
    text_key: str = "text"


@dataclass
class Clusters:
    """The centroids (unit rows) and, per position, the cluster and the cosine to its centroid."""

    centroids: np.ndarray
    cluster: np.ndarray
    score: np.ndarray

    def central(self, count: int) -> list[np.ndarray]:
        """Each cluster's `count` most central positions, best first."""
        order = np.lexsort((-self.score, self.cluster))  # by cluster, then by score, highest first
        starts = np.searchsorted(self.cluster[order], np.arange(len(self.centroids)))
        ends = np.append(starts[1:], len(order))
        return [order[start : min(end, start + count)] for start, end in zip(starts, ends)]


def kmeans(collection: Collection, settings: ClusterSettings) -> Clusters:
    """Spherical k-means over the collection's vectors, then every vector's cluster and cosine to its centroid."""
    import faiss

    count, k = collection.count, settings.clusters
    if k > count:
        raise SembedError(
            f"{k} clusters asked of {count} record(s) in {collection.name}", f"ask for at most {count} (-k)"
        )
    size = min(count, k * POINTS_PER_CLUSTER)
    sample = np.sort(np.random.default_rng(settings.seed).choice(count, size=size, replace=False))
    model = faiss.Kmeans(
        collection.dimension,
        k,
        niter=settings.iterations,
        seed=settings.seed,
        spherical=True,
        max_points_per_centroid=POINTS_PER_CLUSTER,
        min_points_per_centroid=1,
    )
    log.info(f"k-means: {k} clusters trained on {size} of {count} vectors, {settings.iterations} iterations")
    model.train(collection.rows(sample))
    centroids = np.asarray(model.centroids, dtype=np.float32)
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    nearest = faiss.IndexFlatIP(collection.dimension)
    nearest.add(centroids)
    cluster = np.empty(count, dtype=np.int64)
    score = np.empty(count, dtype=np.float32)
    for start in console.progress(range(0, count, BLOCK), "assigning", unit="blocks"):
        scores, found = nearest.search(collection.block(start, start + BLOCK), 1)
        cluster[start : start + len(found)] = found[:, 0]
        score[start : start + len(found)] = np.clip(scores[:, 0], -1.0, 1.0)
        collection.release()
    return Clusters(centroids, cluster, score)


def cluster_records(
    collection: Collection, clusters: Clusters, texts: dict[int, str | None], text_key: str
) -> Iterator[dict]:
    """The collection's records, in order, each with `cluster` and `cluster_score`; the texts of the positions
    named in `texts` are filled in as they pass (the summary's central texts)."""
    for position, record, _ in collection.records():
        if position in texts:
            value = record.get(text_key)
            texts[position] = value if isinstance(value, str) else None
        record["cluster"] = int(clusters.cluster[position])
        record["cluster_score"] = round(float(clusters.score[position]), 6)
        yield record


class ClusterRun:
    """`sembed cluster` over a read collection: called with it, the records with their clusters (a generator);
    once they are all out, `report` holds the summary (and the plot is drawn, when asked for)."""

    def __init__(self, settings: ClusterSettings, plot: Path | None = None, force: bool = False):
        self.settings, self.plot, self.force = settings, plot, force
        self.report: dict | None = None

    def __call__(self, collection: Collection) -> Iterator[dict]:
        settings = self.settings
        found = kmeans(collection, settings)
        most_central = found.central(settings.central)
        texts: dict[int, str | None] = {int(p): None for positions in most_central for p in positions}
        yield from cluster_records(collection, found, texts, getattr(collection, "text_key", settings.text_key))
        report = summary(collection, found, most_central, texts, settings)
        if self.plot is not None:
            from .cluster_map import draw_map

            labels = [texts.get(int(positions[0])) if len(positions) else None for positions in most_central]
            how = draw_map(self.plot, collection, found.cluster, labels, settings.seed, self.force)
            report["plot"] = {"file": str(self.plot), "projection": how}
        self.report = report


def summary(
    collection: Collection,
    clusters: Clusters,
    central: list[np.ndarray],
    texts: dict[int, str | None],
    settings: ClusterSettings,
) -> dict:
    """The report: per cluster its size, mean cosine to its centroid and most central texts (with their scores)."""
    sizes = np.bincount(clusters.cluster, minlength=len(clusters.centroids))
    sums = np.bincount(clusters.cluster, weights=clusters.score.astype(np.float64), minlength=len(sizes))
    described = []
    for number, positions in enumerate(central):
        described.append(
            {
                "cluster": number,
                "size": int(sizes[number]),
                "mean_score": round(float(sums[number] / sizes[number]), 6) if sizes[number] else None,
                "central": [
                    {"text": texts.get(int(p)), "score": round(float(clusters.score[p]), 6)} for p in positions
                ],
            }
        )
    return {
        "input": collection.name,
        "count": collection.count,
        "clusters": len(sizes),
        "model": str(collection.identity) if collection.identity is not None else None,
        "mean_score": round(float(clusters.score.astype(np.float64).mean()), 6),
        "seed": settings.seed,
        "iterations": settings.iterations,
        "method": "spherical k-means (faiss.Kmeans)",
        "by_cluster": described,
    }


def shorten(text: str | None, limit: int = LABEL_CHARACTERS) -> str:
    if text is None:
        return "(no text)"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
