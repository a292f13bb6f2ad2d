"""sembed index and search: FAISS index directories, neighbours, reloading in a new process, refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TINY_DIM, jsonl, sembed
from sembed_cli.model_identity import of_sentence_model

pytest.importorskip("faiss")

CITIES = ["Springfield", "Riverside", "Fairview", "Franklin", "Greenville", "Bristol", "Clinton", "Salem",
          "Madison", "Georgetown", "Arlington", "Ashland", "Burlington", "Manchester", "Milton", "Newport"]


def city_records() -> str:
    return jsonl(*({"id": f"c{i}", "text": t, "country": "US"} for i, t in enumerate(CITIES)))


@pytest.fixture(scope="module")
def index_dir(tiny_model, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("index") / "cities"
    run = sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(out), input=city_records())
    assert run.exit_code == 0, run.stderr
    return out


def test_index_directory_holds_index_records_and_metadata(index_dir, tiny_model):
    assert sorted(p.name for p in index_dir.iterdir()) == ["index.faiss", "records.jsonl", "sembed.json"]
    meta = json.loads((index_dir / "sembed.json").read_text())
    assert meta["model"] == tiny_model and meta["dimension"] == TINY_DIM and meta["type"] == "flat"
    assert meta["count"] == len(CITIES) and meta["embedding_model"] == str(of_sentence_model(tiny_model))
    first = json.loads((index_dir / "records.jsonl").read_text().splitlines()[0])
    assert first == {"id": "c0", "record": {"id": "c0", "text": "Springfield", "country": "US"}}


def test_search_finds_each_name_first_with_cosine_one(index_dir):
    run = sembed("search", "-q", "--index", str(index_dir), "--device", "cpu", "--k", "3",
                 input=jsonl({"text": "Salem", "q": 1}, {"text": "Madison"}))
    assert run.exit_code == 0, run.stderr
    first = run.records[0]
    assert list(first) == ["text", "q", "neighbors"] and len(first["neighbors"]) == 3
    assert first["neighbors"][0]["id"] == "c7" and first["neighbors"][0]["text"] == "Salem"
    assert first["neighbors"][0]["score"] == pytest.approx(1.0, abs=1e-5)
    assert list(first["neighbors"][0]) == ["id", "text", "score"]
    assert run.records[1]["neighbors"][0]["id"] == "c8"


def test_search_with_payload_and_more_neighbours_than_records(index_dir):
    run = sembed("search", "-q", "--index", str(index_dir), "--device", "cpu", "--k", "50", "--payload",
                 input=jsonl({"text": "Salem"}))
    neighbors = run.records[0]["neighbors"]
    assert len(neighbors) == len(CITIES)
    assert neighbors[0]["payload"] == {"id": "c7", "text": "Salem", "country": "US"}


def test_search_takes_embeddings_and_index_takes_them_too(index_dir, tiny_model, tmp_path):
    embedded = sembed("embed", "-q", "-m", tiny_model, "--device", "cpu", input=city_records())
    run = sembed("search", "-q", "--index", str(index_dir), "--device", "cpu", "--k", "1", input=embedded.stdout)
    assert [r["neighbors"][0]["id"] for r in run.records] == [f"c{i}" for i in range(len(CITIES))]
    out = tmp_path / "from-vectors"
    assert sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(out), input=embedded.stdout).exit_code == 0
    assert json.loads((out / "sembed.json").read_text())["settings"]["source"] == "embeddings"
    assert "embedding" not in json.loads((out / "records.jsonl").read_text().splitlines()[0])["record"]


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_types(tiny_model, tmp_path, kind):
    out = tmp_path / kind
    many = jsonl(*({"text": f"{a} {b}"} for a in CITIES for b in CITIES[:5]))
    assert sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "--type", kind, "-o", str(out),
                  input=many).exit_code == 0
    assert json.loads((out / "sembed.json").read_text())["type"] == kind
    run = sembed("search", "-q", "--index", str(out), "--device", "cpu", "--k", "3", input=jsonl({"text": "Salem Franklin"}))
    hits = {n["text"]: n for n in run.records[0]["neighbors"]}  # the tiny random model puts some names very close
    assert hits["Salem Franklin"]["id"] == CITIES.index("Salem") * 5 + CITIES.index("Franklin")
    assert hits["Salem Franklin"]["score"] == pytest.approx(1.0, abs=1e-5)


def test_reloads_in_a_new_process(index_dir):
    result = subprocess.run([sys.executable, "-m", "sembed_cli", "search", "-q", "--index", str(index_dir), "--device",
                             "cpu", "--k", "1"], input=jsonl({"text": "Newport"}), capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["neighbors"][0]["id"] == "c15"


def test_refuses_queries_of_another_model(index_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    other = tmp_path / "other"
    model = SentenceTransformer(str(json.loads((index_dir / "sembed.json").read_text())["model"]), device="cpu")
    import torch

    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.1)
    model.save(str(other))
    run = sembed("search", "--index", str(index_dir), "-m", str(other), "--device", "cpu", input=jsonl({"text": "x"}))
    assert run.exit_code == 1
    assert run.stderr.startswith(f"error: the index at '{index_dir}' holds vectors of the model ")
    assert f"but the queries are embedded with '{other}@" in run.stderr and "another model" in run.stderr
    assert len(run.stderr.splitlines()) == 1


def test_refuses_embeddings_of_another_dimension(index_dir):
    run = sembed("search", "-q", "--index", str(index_dir), "--device", "cpu",
                 input=jsonl({"text": "Salem"}, {"embedding": [0.1] * 5}))
    assert run.exit_code == 1 and len(run.records) == 1
    identity = json.loads((index_dir / "sembed.json").read_text())["embedding_model"]
    assert run.stderr.splitlines() == [
        f"warning: query vectors without embedding_model: taken to be of the index's model '{identity}'",
        f"error: <stdin>:2: 'embedding' has 5 dimensions, the index {TINY_DIM}: the query was embedded with another "
        f"model than '{identity}'"]


def test_searching_in_batches_keeps_order_and_writes_every_batch_before_a_bad_record(index_dir):
    queries = [{"text": name, "n": i} for i, name in enumerate(CITIES * 2)]
    run = sembed("search", "-q", "--index", str(index_dir), "--device", "cpu", "--k", "1", "--batch-size", "3",
                 input=jsonl(*queries, {"text": ""}, {"text": "Salem"}))
    assert run.exit_code == 1 and run.stderr.startswith(f"error: <stdin>:{len(queries) + 1}: ")
    assert [r["n"] for r in run.records] == list(range(len(queries)))  # the batches before it, in order
    assert [r["neighbors"][0]["text"] for r in run.records] == CITIES * 2


def test_index_refuses_to_overwrite_without_force(index_dir, tiny_model):
    run = sembed("index", "-m", tiny_model, "--device", "cpu", "-o", str(index_dir), input=city_records())
    assert run.exit_code == 1
    assert run.stderr.strip() == f"error: {index_dir} already exists (hint: pass --force to replace it, or choose another -o)"
    again = sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(index_dir), "--force",
                   input=city_records())
    assert again.exit_code == 0


def test_missing_index_and_bad_type(tmp_path):
    run = sembed("search", "--index", str(tmp_path), input=jsonl({"text": "x"}))
    assert run.exit_code == 1
    assert run.stderr.strip() == f"error: no sembed index at '{tmp_path}' (hint: build one with sembed index -o DIR)"
    run = sembed("index", "--type", "kdtree", "-o", str(tmp_path / "i"), input=jsonl({"text": "x"}))
    assert run.exit_code == 2 and "'kdtree' is not one of auto, flat, ivf, hnsw" in run.stderr
