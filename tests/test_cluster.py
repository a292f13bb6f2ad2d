"""sembed cluster: spherical k-means over a record stream's or an index's vectors (issue 38, item 5)."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from conftest import jsonl, sembed

from sembed_cli import api

TOY = "toy@0123456789ab"


def blobs(per: int = 40, seed: int = 0) -> list[dict]:
    """Three tight groups of 16-d unit vectors around three orthogonal directions, shuffled; label = the group."""
    rng = np.random.default_rng(seed)
    records = []
    for label in range(3):
        centre = np.zeros(16)
        centre[label * 5] = 1.0
        vectors = centre + rng.normal(scale=0.15, size=(per, 16))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for n, vector in enumerate(vectors.round(6).tolist()):
            records.append(
                {"id": f"{label}-{n}", "text": f"group {label} item {n}", "label": label, "embedding": vector}
            )
    order = rng.permutation(len(records))
    return [{**records[i], "embedding_model": TOY} for i in order]


def purity(clusters: list[int], labels: list) -> float:
    """The share of records whose label is their cluster's most common one."""
    by_cluster: dict[int, Counter] = {}
    for cluster, label in zip(clusters, labels):
        by_cluster.setdefault(cluster, Counter())[label] += 1
    return sum(counts.most_common(1)[0][1] for counts in by_cluster.values()) / len(labels)


def test_clusters_follow_the_groups_and_each_record_gets_its_cluster(tmp_path):
    corpus = blobs()
    summary = tmp_path / "summary.json"
    run = sembed("cluster", "-k", "3", "--summary", str(summary), input=jsonl(*corpus))
    assert run.exit_code == 0, run.stderr
    out = run.records
    assert [r["id"] for r in out] == [r["id"] for r in corpus]  # input order, every record
    assert purity([r["cluster"] for r in out], [r["label"] for r in out]) == 1.0
    assert all(0.5 < r["cluster_score"] <= 1.0 for r in out)
    for given, written in zip(corpus, out):
        assert {k: v for k, v in written.items() if k not in ("cluster", "cluster_score")} == given | {
            "embedding": written["embedding"]
        }
    report = json.loads(summary.read_text())
    assert report["count"] == 120 and report["clusters"] == 3 and report["model"] == TOY
    assert sorted(c["size"] for c in report["by_cluster"]) == [40, 40, 40]
    for cluster in report["by_cluster"]:
        members = [r for r in out if r["cluster"] == cluster["cluster"]]
        best = sorted(members, key=lambda r: -r["cluster_score"])[:3]
        assert [c["text"] for c in cluster["central"]] == [r["text"] for r in best]  # the most central, best first
    assert "3 clusters of 120 records" in run.stderr
    assert report["by_cluster"][0]["central"][0]["text"] in run.stderr


def test_the_seed_decides_and_reruns_agree():
    corpus = blobs()
    one = sembed("cluster", "-q", "-k", "5", "--seed", "1", input=jsonl(*corpus)).records
    again = sembed("cluster", "-q", "-k", "5", "--seed", "1", input=jsonl(*corpus)).records
    assert one == again


def test_plot_draws_a_png(tmp_path):
    plot = tmp_path / "map.png"
    run = sembed("cluster", "-k", "3", "--plot", str(plot), "-o", str(tmp_path / "out.jsonl"), input=jsonl(*blobs()))
    assert run.exit_code == 0, run.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    refused = sembed("cluster", "-k", "3", "--plot", str(plot), input=jsonl(*blobs()))
    assert refused.exit_code == 1 and "already exists" in refused.stderr


def test_more_clusters_than_records_is_an_error():
    run = sembed("cluster", "-k", "200", input=jsonl(*blobs()))
    assert run.exit_code == 1
    assert "200 clusters asked of 120 record(s)" in run.stderr


def test_bad_input_keeps_what_was_read_before_it():
    corpus = blobs()
    lines = jsonl(*corpus[:50]) + "{not json\n" + jsonl(*corpus[50:])
    run = sembed("cluster", "-k", "3", input=lines)
    assert run.exit_code == 1 and "<stdin>:51: invalid JSON" in run.stderr
    assert [r["id"] for r in run.records] == [r["id"] for r in corpus[:50]]


def test_an_index_clusters_as_its_records_do(tmp_path):
    corpus = blobs()
    assert sembed("index", "-q", "-o", str(tmp_path / "idx"), input=jsonl(*corpus)).exit_code == 0
    from_index = sembed("cluster", "-q", "-k", "3", "--index", str(tmp_path / "idx")).records
    from_stream = sembed("cluster", "-q", "-k", "3", input=jsonl(*corpus)).records
    assert [r["cluster"] for r in from_index] == [r["cluster"] for r in from_stream]
    assert "embedding" not in from_index[0]


def test_api_gives_what_the_command_writes(tmp_path):
    corpus = blobs()
    summary = tmp_path / "summary.json"
    command = sembed("cluster", "-q", "-k", "3", "--summary", str(summary), input=jsonl(*corpus)).records
    records, report = api.cluster(corpus, clusters=3)
    assert records == command
    written = json.loads(summary.read_text())
    assert report["by_cluster"] == written["by_cluster"]


@pytest.mark.e2e
def test_senteval_subjectivity_clusters_against_labels(data_dir):
    """SUBJ (plot summaries against review quotes; 500 sentences of each) embedded with the packaged MiniLM:
    two clusters, purity against the labels pinned (0.5 is chance)."""
    from sembed_cli.readers.senteval import read_subj

    records = []
    for record in read_subj(data_dir / "senteval" / "subjectivity"):
        records.append(record)
    by_label: dict = {}
    for record in records:
        by_label.setdefault(record["label"], []).append(record)
    chosen = [r for label in sorted(by_label) for r in by_label[label][:500]]
    embedder = api.load_model(backend="onnx", quantize="int8")
    embedded = list(api.embed_records(chosen, embedder))
    clustered, report = api.cluster(embedded, clusters=2, seed=0)
    found = purity([r["cluster"] for r in clustered], [r["label"] for r in clustered])
    assert found == pytest.approx(0.75, abs=0.08), found
    assert len(report["by_cluster"]) == 2
