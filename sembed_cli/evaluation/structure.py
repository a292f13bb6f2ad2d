"""Structure in word vectors: the nearest-neighbour tests and k-means purity of the syntax-distillation paper.

Section 4.2 (Table 1): random query words, not function words; each query's
nearest neighbour by cosine among the other words; the share of (query,
neighbour) pairs with the same dependency edge, the same head's dependency
edge, the same word (lexical match), and the Pearson correlation of their
depths in the tree. "Difficult" repeats the test on the POS tags whose
dependency labels are the most varied (highest entropy). Section 4.1: k-means
on the vectors, purity = the relative proportion of the most common
dependency label in each cluster, averaged over the clusters, at K = 10, 20,
40, 80.

Choices where the paper is silent, also in `sembed eval structure --help`:
- function words are those whose universal POS is in FUNCTION_POS; they are
  neither queries nor neighbours ("we exclude function words from the
  evaluation");
- a query's neighbours are the content words of the other sentences (within
  its own sentence the nearest words are its neighbours in the text, which
  says nothing about structure);
- difficult tags: the `difficult` fine tags (`tag`) with the highest entropy
  of their dependency labels among tags with at least `min_tag_count`
  content words; their queries are drawn on their own (up to `queries`);
- k-means (scikit-learn, k-means++, seeded) runs on the all-words queries'
  L2-normalised vectors (cosine geometry, as the neighbour test), purity is
  the unweighted mean over clusters (the paper's) and also reported
  weighted by cluster size (the usual purity).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import io
from ..errors import BadRecord, SembedError
from ..io import RecordSource, json_type
from ..models.model_identity import OneModel
from . import tables
from .records import read_all

log = logging.getLogger(__name__)

# Universal POS tags of function words (closed classes, numbers, punctuation, symbols, whitespace, other).
FUNCTION_POS = frozenset({"DET", "ADP", "PRON", "AUX", "CCONJ", "SCONJ", "PART", "PUNCT", "SYM", "NUM", "SPACE", "X"})
CLUSTER_COUNTS = (10, 20, 40, 80)
QUERY_CHUNK = 512  # queries per similarity matrix: 512 x 20k float32 is 40 MB
DIGITS = 4


@dataclass
class StructureWords:
    """What `eval structure` keeps of every word record; `__call__` checks and keeps one record."""

    embedding_key: str = "embedding"
    sentence_key: str = "sentence_index"
    vectors: list = field(default_factory=list)
    words: list = field(default_factory=list)
    pos: list = field(default_factory=list)
    tags: list = field(default_factory=list)
    deps: list = field(default_factory=list)
    head_deps: list = field(default_factory=list)
    depths: list = field(default_factory=list)
    sentences: list = field(default_factory=list)
    dimension: io.Dimension = field(default_factory=io.Dimension)
    _sentence_codes: dict = field(default_factory=dict)

    def __call__(self, record: dict) -> None:
        vector = io.vector(record, self.embedding_key, "run sembed embed --words first, or give its matrix with --npy")
        self.dimension.check({self.embedding_key: vector})
        word = _string(record, "word")
        pos, tag, dep, head_dep = (_string(record, key) for key in ("pos", "tag", "dep", "head_dep"))
        depth = record.get("depth")
        if "depth" not in record:
            raise BadRecord("missing key 'depth' (run sembed embed --words first)")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise BadRecord(f"'depth' must be a non-negative integer, got {json_type(depth)} {depth!r}")
        if self.sentence_key not in record:
            raise BadRecord(f"missing key '{self.sentence_key}' (which sentence the word is in; --sentence-key)")
        sentence = record[self.sentence_key]
        if isinstance(sentence, (dict, list)) or sentence is None:
            raise BadRecord(f"'{self.sentence_key}' must be a string or a number, got {json_type(sentence)}")
        self.vectors.append(vector.astype(np.float32))
        self.words.append(word.lower())
        self.pos.append(pos)
        self.tags.append(tag)
        self.deps.append(dep)
        self.head_deps.append(head_dep)
        self.depths.append(depth)
        self.sentences.append(self._sentence_codes.setdefault(_hashable(sentence), len(self._sentence_codes)))

    def __len__(self) -> int:
        return len(self.vectors)


def _hashable(value: object) -> object:
    return (type(value).__name__, value) if isinstance(value, bool) else value


def _string(record: dict, key: str) -> str:
    if key not in record:
        raise BadRecord(f"missing key '{key}' (run sembed embed --words first)")
    value = record[key]
    if not isinstance(value, str):
        raise BadRecord(f"'{key}' must be a string, got {json_type(value)}")
    return value


def normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)  # a zero vector stays zero: cosine 0 with everything


def nearest_neighbours(vectors: np.ndarray, queries: np.ndarray, sentences: np.ndarray) -> np.ndarray:
    """For each query (an index into the normalised `vectors`), the index of the most cosine-similar vector of
    another sentence; ties go to the lowest index."""
    out = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), QUERY_CHUNK):
        chunk = queries[start : start + QUERY_CHUNK]
        similarity = vectors[chunk] @ vectors.T
        similarity[sentences[chunk][:, None] == sentences[None, :]] = -np.inf
        out[start : start + QUERY_CHUNK] = similarity.argmax(axis=1)
    return out


def pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    """Pearson r, or None when undefined (fewer than two pairs, or a constant column)."""
    if len(x) < 2 or np.std(x) == 0 or np.std(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def neighbour_metrics(queries: np.ndarray, neighbours: np.ndarray, labels: dict[str, np.ndarray]) -> dict:
    """Shares of (query, neighbour) pairs agreeing on each property, and the depth correlation (section 4.2)."""
    if not len(queries):
        return {"n": 0, "dep_edge": None, "head_dep_edge": None, "depth_r": None, "lexical_match": None}
    share = {
        name: float(np.mean(labels[key][queries] == labels[key][neighbours]))
        for name, key in (("dep_edge", "dep"), ("head_dep_edge", "head_dep"), ("lexical_match", "word"))
    }
    depth = labels["depth"]
    return {
        "n": len(queries),
        "dep_edge": _round(share["dep_edge"]),
        "head_dep_edge": _round(share["head_dep_edge"]),
        "depth_r": _round(pearson(depth[queries].astype(float), depth[neighbours].astype(float))),
        "lexical_match": _round(share["lexical_match"]),
    }


def entropy(counts: Counter) -> float:
    """Shannon entropy (bits) of a label distribution."""
    total = sum(counts.values())
    return -sum(c / total * math.log2(c / total) for c in counts.values() if c)


def difficult_tags(tags: np.ndarray, deps: np.ndarray, count: int, min_count: int) -> list[dict]:
    """The `count` tags with the highest entropy of dependency labels among tags with >= `min_count` words
    (ties: the more frequent tag, then the name), with their entropy and word count."""
    by_tag: dict[str, Counter] = {}
    for tag, dep in zip(tags.tolist(), deps.tolist()):
        by_tag.setdefault(tag, Counter())[dep] += 1
    ranked = [(entropy(c), sum(c.values()), tag) for tag, c in by_tag.items() if sum(c.values()) >= min_count]
    ranked.sort(key=lambda r: (-r[0], -r[1], r[2]))
    return [{"tag": tag, "entropy": round(h, DIGITS), "n": n} for h, n, tag in ranked[:count]]


def purity(labels: np.ndarray, clusters: np.ndarray) -> tuple[float, float]:
    """(mean over clusters of the most common label's share, the same weighted by cluster size)."""
    shares, majority = [], 0
    for cluster in np.unique(clusters):
        members = labels[clusters == cluster]
        top = Counter(members.tolist()).most_common(1)[0][1]
        shares.append(top / len(members))
        majority += top
    return float(np.mean(shares)), majority / len(labels)


def cluster_purity(vectors: np.ndarray, labels: np.ndarray, ks: tuple[int, ...], seed: int) -> dict:
    """K-means purity of the (normalised) `vectors` against `labels` for each K; None where K >= len(vectors)."""
    from sklearn.cluster import KMeans

    out: dict[str, dict[str, float] | None] = {}
    for k in ks:
        if k >= len(vectors):
            out[str(k)] = None
            continue
        # float64: on float32 input scikit-learn's k-means++ distances go through a slow chunked upcast
        clusters = KMeans(n_clusters=k, n_init=1, random_state=seed).fit_predict(vectors.astype(np.float64))
        mean, weighted = purity(labels, clusters)
        out[str(k)] = {"mean": round(mean, DIGITS), "weighted": round(weighted, DIGITS)}
    return out


def structure_report(
    kept: StructureWords,
    queries: int = 2000,
    seed: int = 0,
    difficult: int = 5,
    min_tag_count: int = 50,
    ks: tuple[int, ...] = CLUSTER_COUNTS,
) -> dict:
    """The whole evaluation over every kept word record (see the module's docstring)."""
    pos = np.array(kept.pos, dtype=object)
    content = np.flatnonzero(~np.isin(pos, list(FUNCTION_POS)))
    sentences = np.array(kept.sentences, dtype=np.int64)[content]
    if len(content) < 2 or len(np.unique(sentences)) < 2:
        raise SembedError(
            f"{len(content)} content word(s) in {len(np.unique(sentences))} sentence(s): the test needs "
            "content words of at least two sentences",
            "feed `sembed embed --words` output of several sentences",
        )
    vectors = normalised(np.stack(kept.vectors)[content])
    labels = {
        "dep": np.array(kept.deps, dtype=object)[content],
        "head_dep": np.array(kept.head_deps, dtype=object)[content],
        "word": np.array(kept.words, dtype=object)[content],
        "depth": np.array(kept.depths, dtype=np.int64)[content],
    }
    tags = np.array(kept.tags, dtype=object)[content]
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(content), size=min(queries, len(content)), replace=False))
    report = {
        "words": len(kept),
        "sentences": len(kept._sentence_codes),
        "content_words": len(content),
        "dimension": kept.dimension.size,
        "seed": seed,
        "all": neighbour_metrics(chosen, nearest_neighbours(vectors, chosen, sentences), labels),
    }
    hard = difficult_tags(tags, labels["dep"], difficult, min_tag_count)
    pool = np.flatnonzero(np.isin(tags, [t["tag"] for t in hard]))
    hard_chosen = np.sort(rng.choice(pool, size=min(queries, len(pool)), replace=False)) if len(pool) else pool
    report["difficult"] = {
        "tags": hard,
        **neighbour_metrics(hard_chosen, nearest_neighbours(vectors, hard_chosen, sentences), labels),
    }
    report["purity"] = cluster_purity(vectors[chosen], labels["dep"][chosen], ks, seed)
    return report


def evaluate(
    input: str,
    queries: int = 2000,
    seed: int = 0,
    difficult: int = 5,
    min_tag_count: int = 50,
    ks: tuple[int, ...] = CLUSTER_COUNTS,
    embedding_key: str = "embedding",
    sentence_key: str = "sentence_index",
    npy: Path | None = None,
    skip_errors: bool = False,
) -> dict:
    """The report of `sembed eval structure` on the word records of `input` (`structure_report`)."""
    kept = StructureWords(embedding_key, sentence_key)
    read_all(RecordSource(input, skip_errors=skip_errors), kept, OneModel(), npy)
    return structure_report(kept, queries, seed, difficult, min_tag_count, ks)


def print_report(report: dict) -> None:
    """The neighbour tests and the purity as two tables on stderr (none with -q), and a warning for each K
    without a purity."""
    from rich.table import Table

    table = Table(
        title=f"nearest neighbour by cosine: {report['words']} words, {report['sentences']} sentences, "
        f"{report['dimension']}-d",
        title_justify="left",
        caption="difficult tags: " + (", ".join(t["tag"] for t in report["difficult"]["tags"]) or "none"),
        caption_justify="left",
    )
    for column in ("queries", "n", "dep edge", "head's dep edge", "depth r", "lexical match"):
        table.add_column(column, justify="right")
    for name in ("all", "difficult"):
        m = report[name]
        table.add_row(
            name,
            str(m["n"]),
            *(tables.number(m[key], 3) for key in ("dep_edge", "head_dep_edge", "depth_r", "lexical_match")),
        )
    tables.show(table)
    purity_table = Table(title="k-means purity of dep labels (all queries)", title_justify="left")
    for column in ("K", "mean", "weighted"):
        purity_table.add_column(column, justify="right")
    for k, m in report["purity"].items():
        purity_table.add_row(k, tables.number(m and m["mean"], 3), tables.number(m and m["weighted"], 3))
    tables.show(purity_table)
    for k, m in report["purity"].items():
        if m is None:
            log.warning(f"no purity at K = {k}: only {report['all']['n']} queries")
