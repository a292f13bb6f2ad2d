"""search --where: the grammar, its parameterised SQL, and filtered search on every index type at selectivities of
50%, 1% and 0.01%, through the exact path and through FAISS's IDSelector, so k results come back when k match."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import TINY_DIM, jsonl, sembed

from sembed_cli.errors import SembedError
from sembed_cli.indexes import filters
from sembed_cli.indexes.directory import VectorIndex

pytest.importorskip("faiss")

COUNT = 10_000
KINDS = ["flat", "hnsw", "ivf", "ivfpq"]
SELECTIVITY = {"50%": "half = 1", "1%": "p = 'yes'", "0.01%": "rare = true"}


def vectors() -> np.ndarray:
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((COUNT, TINY_DIM)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def record(i: int, vector: np.ndarray) -> dict:
    found = {"id": f"r{i}", "text": f"text {i}", "embedding": [round(float(x), 6) for x in vector]}
    found.update(half=i % 2, p="yes" if i % 100 == 0 else "no", year=1900 + i % 200, doc_id=f"d{i % 50}.txt")
    if i == 4321:
        found["rare"] = True
    return found


def allowed(i: int, share: str) -> bool:
    return {"50%": i % 2 == 1, "1%": i % 100 == 0, "0.01%": i == 4321}[share]


@pytest.fixture(scope="module")
def indexes(tiny_model, tmp_path_factory) -> dict[str, Path]:
    matrix = vectors()
    source = tmp_path_factory.mktemp("filters") / "records.jsonl"
    source.write_text(jsonl(*(record(i, v) for i, v in enumerate(matrix))))
    built = {}
    for kind in KINDS:
        out = source.parent / kind
        run = sembed("index", "-q", str(source), "-m", tiny_model, "--type", kind, "-o", str(out))
        assert run.exit_code == 0, run.stderr
        built[kind] = out
    return built


def queries(n: int = 20) -> np.ndarray:
    rng = np.random.default_rng(11)
    matrix = rng.standard_normal((n, TINY_DIM)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def exact(share: str, query: np.ndarray, k: int = 10) -> list[str]:
    matrix = vectors()
    rows = [i for i in range(COUNT) if allowed(i, share)]
    scores = matrix[rows] @ query
    return [f"r{rows[i]}" for i in np.argsort(-scores, kind="stable")[:k]]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("share", list(SELECTIVITY))
def test_where_returns_k_whenever_k_match_on_every_type(indexes, kind, share):
    query_records = [{"embedding": q.tolist()} for q in queries()]
    run = sembed(
        "search", "-q", "--index", str(indexes[kind]), "--where", SELECTIVITY[share], input=jsonl(*query_records)
    )
    assert run.exit_code == 0, run.stderr
    matching = sum(allowed(i, share) for i in range(COUNT))
    recalls = []
    for q, answer in zip(queries(), run.records):
        ids = [n["id"] for n in answer["neighbors"]]
        assert len(ids) == min(10, matching)
        assert all(allowed(int(i[1:]), share) for i in ids)
        truth = exact(share, q)
        recalls.append(len(set(ids) & set(truth)) / len(truth))
    assert np.mean(recalls) == 1.0  # up to 20,000 allowed rows are searched exactly, whatever the type


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("share", ["50%", "1%"])
def test_the_faiss_selector_path_also_returns_k(indexes, kind, share, monkeypatch):
    monkeypatch.setattr(filters, "EXACT_LIMIT", 0)  # every selection through FAISS's SearchParameters(sel=...)
    with VectorIndex.load(indexes[kind]) as index:
        selection = filters.Selection.of(index, SELECTIVITY[share])
        assert not selection.exact
        scores, rows = selection.search(queries(), 10)
        found = index.records(rows.ravel())
    recalls = []
    for q, row_list, score_list in zip(queries(), rows.tolist(), scores.tolist()):
        assert all(row >= 0 for row in row_list) and score_list == sorted(score_list, reverse=True)
        ids = [found[row][0] for row in row_list]
        assert all(allowed(int(i[1:]), share) for i in ids)
        truth = exact(share, q)
        recalls.append(len(set(ids) & set(truth)) / len(truth))
    # the filter costs no recall beyond the index's own (IVF over isotropic random vectors is poor at 16 probes)
    with VectorIndex.load(indexes[kind]) as index:
        _, plain = index.search(queries(), 10)
    truth = np.argsort(-(queries() @ vectors().T), axis=1, kind="stable")[:, :10]
    own = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(plain.tolist(), truth.tolist())])
    assert np.mean(recalls) >= (1.0 if kind == "flat" else min(0.9, own - 0.1)), (recalls, own)


def test_a_graph_index_leaves_out_removed_rows_under_a_filter(indexes, tmp_path):
    import shutil

    copy = tmp_path / "hnsw"
    shutil.copytree(indexes["hnsw"], copy)
    changed = record(0, -vectors()[0])  # r0 (half = 0) edited: its old row is removed, a new row added
    changed["half"] = 1
    assert sembed("index", "-q", "--update", str(copy), input=jsonl(changed)).exit_code == 0
    with VectorIndex.load(copy) as index:
        selection = filters.Selection.of(index, "id = 'r0'")
        assert selection.rows.tolist() == [COUNT]  # the new row only
        _, rows = selection.search(queries(1), 10)
    assert rows.tolist()[0][:1] == [COUNT]


def test_the_grammar_becomes_parameterised_sql():
    where = filters.parse("doc_id = '1945-Truman.txt' and (year >= 2000 or not meta.kind in ('a', 'b''c'))")
    assert where.sql == (
        "(json_extract(CAST(payload AS TEXT), ?) = ? AND (json_extract(CAST(payload AS TEXT), ?) >= ? OR "
        "(NOT json_extract(CAST(payload AS TEXT), ?) IN (?, ?))))"
    )
    assert where.parameters == ['$."doc_id"', "1945-Truman.txt", '$."year"', 2000, '$."meta"."kind"', "a", "b'c"]
    like = filters.parse("\"odd name\" not like 'x%' or flag is not null or flag = false or n != -1.5e3")
    assert like.parameters == ['$."odd name"', "x%", '$."flag"', '$."flag"', 0, '$."n"', -1500.0]
    assert "NOT LIKE ?" in like.sql and "IS NOT NULL" in like.sql and "!= ?" in like.sql


@pytest.mark.parametrize(
    "expression",
    [
        "doc_id = 'x'; DROP TABLE rows",
        "doc_id = x",
        "year >=",
        "(year > 1",
        "year = null",
        "",
        "and",
        "year 2000",
    ],
)
def test_what_the_grammar_refuses_is_one_line(expression):
    with pytest.raises(SembedError) as caught:
        filters.parse(expression)
    assert caught.value.message.startswith(f"cannot parse --where {expression!r}: ")


def test_values_never_reach_the_sql(indexes):
    with VectorIndex.load(indexes["flat"]) as index:
        sneaky = filters.Selection.of(index, "doc_id = 'x'' OR 1=1 --'")
        assert len(sneaky) == 0
        assert len(filters.Selection.of(index, "doc_id = 'd7.txt' and year < 1950")) == sum(
            1 for i in range(COUNT) if i % 50 == 7 and 1900 + i % 200 < 1950
        )
    db = sqlite3.connect(indexes["flat"] / "records.sqlite")
    assert db.execute("SELECT COUNT(*) FROM rows").fetchone()[0] == COUNT


def test_a_field_no_record_has_is_an_error_naming_it(indexes):
    run = sembed("search", "-q", "--index", str(indexes["flat"]), "--where", "colour = 'red'", "--query", "x")
    assert run.exit_code == 1
    assert run.stderr.startswith("error: --where names the field 'colour', which no indexed record has")
    assert len(run.stderr.strip().splitlines()) == 1
    run = sembed("search", "-q", "--index", str(indexes["flat"]), "--where", "year >", "--query", "x")
    assert run.exit_code == 1 and run.stderr.startswith("error: cannot parse --where 'year >': expected a value")
    matching_none = sembed(
        "search",
        "-q",
        "--index",
        str(indexes["flat"]),
        "--where",
        "year > 5000",
        input=jsonl({"embedding": queries(1)[0].tolist()}),
    )
    assert matching_none.exit_code == 0 and matching_none.records[0]["neighbors"] == []


def test_where_with_keyword_search(indexes):
    run = sembed(
        "search",
        "-q",
        "--index",
        str(indexes["flat"]),
        "--keyword",
        "--where",
        "p = 'yes'",
        "-k",
        "3",
        "--query",
        "text",
    )
    assert run.exit_code == 0, run.stderr
    ids = [n["id"] for n in run.records[0]["neighbors"]]
    assert len(ids) == 3 and all(int(i[1:]) % 100 == 0 for i in ids)


def test_where_with_hybrid_search(indexes):
    query = {"text": "text 5", "embedding": queries(1)[0].tolist()}
    run = sembed("search", "-q", "--index", str(indexes["hnsw"]), "--hybrid", "--where", "p = 'yes'", "-k", "5",
                 input=jsonl(query))  # fmt: skip
    assert run.exit_code == 0, run.stderr
    ids = [n["id"] for n in run.records[0]["neighbors"]]
    assert len(ids) == 5 and all(int(i[1:]) % 100 == 0 for i in ids)
