"""search --rerank-model: the first stage's candidates re-ranked by a second model's cosine of the query text and the
candidates' stored texts."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TINY_DIM, jsonl, sembed

pytest.importorskip("faiss")

TEXTS = [
    "A dog runs in the park",
    "The economy grew in the spring",
    "A puppy plays on the grass",
    "Stocks fell sharply on Monday",
    "Cats sleep most of the day",
    "The parliament passed the budget",
]


@pytest.fixture
def shuffled_index(tiny_model, tmp_path):
    """An index whose vectors are random (labelled as the tiny model's): its own ranking says nothing, so the
    order that comes back is the second model's alone."""
    rng = np.random.default_rng(3)
    records = [
        {"id": f"t{i}", "text": text, "embedding": rng.standard_normal(TINY_DIM).round(5).tolist()}
        for i, text in enumerate(TEXTS)
    ]
    out = tmp_path / "index"
    run = sembed("index", "-q", "-m", tiny_model, "-o", str(out), input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    return out


def cosines(model: str, query: str) -> list[tuple[str, float]]:
    from sembed_cli import api

    embedder = api.load_model(model)
    vectors = api.embed([query, *TEXTS], embedder)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = vectors[1:] @ vectors[0]
    return sorted(((f"t{i}", float(s)) for i, s in enumerate(scores)), key=lambda item: -item[1])


def test_rerank_orders_the_candidates_by_the_second_models_cosine(shuffled_index, tiny_model):
    query = "a dog playing on grass"
    run = sembed(
        "search", "-q", "--index", str(shuffled_index), "--device", "cpu", "--query", query,
        "--rerank-model", tiny_model, "--rerank-depth", "6", "-k", "3",
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    found = [(n["id"], n["score"]) for n in run.records[0]["neighbors"]]
    expected = cosines(tiny_model, query)[:3]
    assert [i for i, _ in found] == [i for i, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected], abs=1e-5)


def test_rerank_keeps_to_the_first_stages_candidates(shuffled_index, tiny_model):
    query = "a dog playing on grass"
    first = sembed("search", "-q", "--index", str(shuffled_index), "--device", "cpu", "--query", query, "-k", "2")
    candidates = {n["id"] for n in first.records[0]["neighbors"]}
    run = sembed(
        "search", "-q", "--index", str(shuffled_index), "--device", "cpu", "--query", query,
        "--rerank-model", tiny_model, "--rerank-depth", "2", "-k", "2",
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    assert {n["id"] for n in run.records[0]["neighbors"]} == candidates
    keyword = sembed(
        "search", "-q", "--index", str(shuffled_index), "--keyword", "--query", "dog OR puppy OR cats", "-k", "5",
        "--rerank-model", tiny_model, "--device", "cpu",
    )  # fmt: skip
    assert keyword.exit_code == 0, keyword.stderr
    ids = [n["id"] for n in keyword.records[0]["neighbors"]]
    assert set(ids) == {"t0", "t2", "t4"}  # the texts holding the words, in the second model's order
    order = [i for i, _ in cosines(tiny_model, "dog OR puppy OR cats") if i in {"t0", "t2", "t4"}]
    assert ids == order


def test_rerank_needs_the_query_text_and_a_model_that_opens(shuffled_index, tiny_model, tmp_path):
    vector = np.ones(TINY_DIM).tolist()
    run = sembed(
        "search", "-q", "--index", str(shuffled_index), "--rerank-model", tiny_model, "--device", "cpu",
        input=jsonl({"embedding": vector}),
    )  # fmt: skip
    assert run.exit_code == 1
    assert "--rerank-model needs the query's text" in run.stderr
    missing = tmp_path / "no-model"
    run = sembed("search", "-q", "--index", str(shuffled_index), "--rerank-model", str(missing), "--query", "x")
    assert run.exit_code == 1 and run.stderr.startswith("error: ") and len(run.stderr.strip().splitlines()) == 1
