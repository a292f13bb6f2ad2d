"""search --keyword and --hybrid: the FTS5 table in records.sqlite, kept in step by build, update, sync and merge;
BM25 ranking, reciprocal-rank fusion, FTS5's syntax and its errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import jsonl, sembed

from sembed_cli.indexes import keyword

pytest.importorskip("faiss")

TEXTS = [
    "President Truman spoke to the Congress about the union",
    "The speeches of the union were long",
    "Eisenhower talked about the highway system",
    "A dog runs in the park",
    "Truman and Eisenhower never met in the park",
    "The economy grew in the spring",
]


def vector(i: int, dim: int = 8) -> list[float]:
    rng = np.random.default_rng(i)
    return [round(float(x), 5) for x in rng.standard_normal(dim)]


def records(texts=TEXTS, start: int = 0) -> list[dict]:
    return [{"id": f"r{start + i}", "text": t, "year": 1945 + start + i} for i, t in enumerate(texts)]


def build(model: str, out: Path, rows: list[dict], *args: str) -> None:
    run = sembed("index", "-q", "-m", model, "--device", "cpu", *args, "-o", str(out), input=jsonl(*rows))
    assert run.exit_code == 0, run.stderr


@pytest.fixture
def built(tiny_model, tmp_path) -> Path:
    out = tmp_path / "index"
    run = sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(out), input=jsonl(*records()))
    assert run.exit_code == 0, run.stderr
    return out


def search(index: Path, *args: str, input: str | None = None) -> list[list[tuple[str, float]]]:
    run = sembed("search", "-q", "--index", str(index), "--device", "cpu", *args, input=input)
    assert run.exit_code == 0, run.stderr
    return [[(n["id"], n["score"]) for n in r["neighbors"]] for r in run.records]


def ids(found: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in found]


def test_keyword_ranks_by_bm25_with_fts5_syntax(built):
    [truman] = search(built, "--keyword", "--query", "truman")
    assert set(ids(truman)) == {"r0", "r4"} and all(score > 0 for _, score in truman)
    [stemmed] = search(built, "--keyword", "--query", "speech")  # Porter: 'speeches' is found by 'speech'
    assert ids(stemmed) == ["r1"]
    [phrase] = search(built, "--keyword", "--query", '"the park"')
    assert set(ids(phrase)) == {"r3", "r4"}
    [prefix] = search(built, "--keyword", "--query", "eisen*")
    assert set(ids(prefix)) == {"r2", "r4"}
    [both] = search(built, "--keyword", "--query", "truman AND park")
    assert ids(both) == ["r4"]
    [either] = search(built, "--keyword", "-k", "1", "--query", "highway OR dog")
    assert len(either) == 1


def test_keyword_scores_are_fts5_bm25_negated(built):
    db = sqlite3.connect(built / "records.sqlite")
    expected = db.execute(
        "SELECT rowid, -bm25(keyword) FROM keyword WHERE keyword MATCH 'union' ORDER BY rank"
    ).fetchall()
    [found] = search(built, "--keyword", "--query", "union")
    assert [(f"r{row}", round(score, 6)) for row, score in expected] == [(i, pytest.approx(s)) for i, s in found]


def test_a_query_fts5_cannot_parse_is_one_line(built):
    run = sembed("search", "-q", "--index", str(built), "--keyword", "--query", "union.")
    assert run.exit_code == 1
    assert run.stderr.startswith("error: --query:1: cannot parse keyword query 'union.': syntax error near")
    assert len(run.stderr.strip().splitlines()) == 1
    [plain] = search(built, "--keyword", "--any-word", "--query", "the union.")  # plain words, any of them
    assert {"r0", "r1"} <= set(ids(plain))


def test_keyword_needs_no_model_and_no_vectors(built):
    found = search(built, "--keyword", input=jsonl({"text": "highway"}))
    assert ids(found[0]) == ["r2"]
    run = sembed("search", "-q", "--index", str(built), "--keyword", input=jsonl({"embedding": vector(0)}))
    assert run.exit_code == 1 and "keyword search needs the query's text" in run.stderr


def test_hybrid_fuses_the_two_rankings_by_reciprocal_rank(built):
    query = {"text": "truman"}
    [dense] = search(built, "-k", "6", input=jsonl(query))
    [words] = search(built, "--keyword", "-k", "6", input=jsonl(query))
    [fused] = search(built, "--hybrid", "-k", "6", input=jsonl(query))
    expected: dict[str, float] = {}
    for ranking in (dense, words):
        for rank, (i, _) in enumerate(ranking, 1):
            expected[i] = expected.get(i, 0.0) + 0.5 / (60 + rank)
    assert ids(fused)[:3] == sorted(expected, key=lambda i: -expected[i])[:3]
    assert [s for _, s in fused] == pytest.approx(sorted(expected.values(), reverse=True)[: len(fused)], abs=1e-6)
    [vectors_only] = search(built, "--hybrid", "--hybrid-weight", "0", "-k", "6", input=jsonl(query))
    assert ids(vectors_only) == ids(dense)
    [words_only] = search(built, "--hybrid", "--hybrid-weight", "1", "-k", "2", input=jsonl(query))
    assert ids(words_only) == ids(words)[:2]


def test_fts_follows_update_sync_and_merge(built, tiny_model, tmp_path):
    changed = records()
    changed[0]["text"] = "Roosevelt spoke to the Congress"  # r0 edited
    update = jsonl(*changed[:5], *records(["Truman again"], 10))
    run = sembed("index", "-q", "--update", str(built), "--sync", "--device", "cpu", input=update)
    assert run.exit_code == 0, run.stderr
    [truman] = search(built, "--keyword", "--query", "truman")
    assert set(ids(truman)) == {"r4", "r10"}  # r0 no longer says it, r10 new
    assert search(built, "--keyword", "--query", "economy") == [[]]  # r5 removed by --sync
    assert ids(search(built, "--keyword", "--query", "roosevelt")[0]) == ["r0"]
    other = tmp_path / "other"
    build(tiny_model, other, records(["Truman in Potsdam"], 20))
    merged = tmp_path / "merged"
    run = sembed("index", "merge", "-q", str(built), str(other), "-o", str(merged))
    assert run.exit_code == 0, run.stderr
    assert set(ids(search(merged, "--keyword", "--query", "truman")[0])) == {"r4", "r10", "r20"}
    db = sqlite3.connect(merged / "records.sqlite")
    db.execute("INSERT INTO keyword (keyword) VALUES ('integrity-check')")  # FTS5 checks itself against the rows


def test_an_index_built_before_keyword_search(built):
    db = sqlite3.connect(built / "records.sqlite", isolation_level=None)
    for name in ("keyword_insert", "keyword_delete", "keyword_update"):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE keyword")
    db.execute("DROP VIEW keyword_texts")
    db.close()
    run = sembed("search", "-q", "--index", str(built), "--keyword", "--query", "truman")
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: the index at '{built}' was built before keyword search: it has no keyword index "
        "(hint: add it with sembed index --update DIR --keywords < /dev/null)\n"
    )
    assert sembed("index", "-q", "--update", str(built), "--device", "cpu", input="").exit_code == 0
    assert set(ids(search(built, "--keyword", "--query", "truman")[0])) == {"r0", "r4"}


def tables(index: Path) -> set[str]:
    db = sqlite3.connect(index / "records.sqlite")
    try:
        return {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'keyword%'")}
    finally:
        db.close()


def kept_setting(index: Path) -> bool:
    import json

    return json.loads((index / "sembed.json").read_text())["settings"]["keywords"]


def test_no_keywords_is_kept_until_asked_for_and_answers_as_a_build(tiny_model, tmp_path):
    index, whole = tmp_path / "index", tmp_path / "whole"
    build(tiny_model, index, records(), "--no-keywords")
    assert tables(index) == set() and kept_setting(index) is False
    run = sembed("search", "-q", "--index", str(index), "--keyword", "--query", "truman")
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: the index at '{index}' keeps none (--no-keywords): it has no keyword index "
        "(hint: add it with sembed index --update DIR --keywords < /dev/null)\n"
    )
    assert search(index, "--query", "truman")  # vector search as ever
    more = jsonl(*records(["Truman again"], 10))
    assert sembed("index", "-q", "--update", str(index), "--device", "cpu", input=more).exit_code == 0
    assert tables(index) == set() and kept_setting(index) is False  # an update keeps the choice
    assert sembed("index", "-q", "--update", str(index), "--keywords", input="").exit_code == 0
    assert kept_setting(index) is True and "keyword" in tables(index)
    build(tiny_model, whole, [*records(), *records(["Truman again"], 10)])
    for query in ("truman", "union OR park", '"the union"'):
        assert search(index, "--keyword", "--query", query) == search(whole, "--keyword", "--query", query)
    assert sembed("index", "--check", str(index)).exit_code == 0
    assert sembed("index", "-q", "--update", str(index), "--no-keywords", input="").exit_code == 0
    assert tables(index) == set() and kept_setting(index) is False
    assert sembed("index", "-q", "--update", str(index), "--retrain", input="").exit_code == 0
    assert tables(index) == set() and kept_setting(index) is False  # a rebuild keeps the choice
    assert sembed("index", "--check", str(index)).exit_code == 0


def test_a_merge_keeps_keywords_unless_every_piece_declined(tiny_model, tmp_path):
    pieces = [tmp_path / f"piece{n}" for n in range(3)]
    for n, (piece, flag) in enumerate(zip(pieces, ("--no-keywords", "--no-keywords", "--keywords"))):
        build(tiny_model, piece, records(TEXTS[2 * n : 2 * n + 2], 2 * n), flag)
    for chosen, expected in ((pieces[:2], False), (pieces, True)):
        merged = tmp_path / f"merged{len(chosen)}"
        run = sembed("index", "merge", "-q", *map(str, chosen), "-o", str(merged))
        assert run.exit_code == 0, run.stderr
        assert kept_setting(merged) is expected and ("keyword" in tables(merged)) is expected
    assert set(ids(search(merged, "--keyword", "--query", "park")[0])) == {"r3", "r4"}


def test_the_python_api_declines_and_adds_as_the_command_does(tiny_model, tmp_path):
    from sembed_cli import api

    index = tmp_path / "index"
    api.build_index(records(), index, model=tiny_model, device="cpu", keywords=False)
    assert tables(index) == set() and kept_setting(index) is False
    api.update_index([], index, device="cpu")
    assert tables(index) == set()
    api.update_index([], index, keywords=True, device="cpu")
    assert set(ids(search(index, "--keyword", "--query", "truman")[0])) == {"r0", "r4"}


def test_usage_errors(built):
    run = sembed("search", "--index", str(built), "--keyword", "--hybrid", "--query", "x")
    assert run.exit_code == 2 and "not both" in run.stderr
    run = sembed("search", "--index", str(built), "--any-word", "--query", "x")
    assert run.exit_code == 2 and "--any-word" in run.stderr


def test_any_word_reads_plain_words_and_leaves_out_the_commonest(built, monkeypatch):
    db = sqlite3.connect(built / "records.sqlite")
    words = keyword.KeywordIndex(db)
    assert words.words_query('Truman\'s "speech", never!') == '"truman" OR "speech" OR "never"'  # no text holds 's'
    monkeypatch.setattr(keyword, "COMMON_FLOOR", 1)  # as at a million texts: a word in 2 of 6 is common
    monkeypatch.setattr(keyword, "COMMON_SHARE", 0.2)
    assert words.words_query("the park highway") == '"highway"'  # 'the' in 5 texts and 'park' in 2 left out
    assert words.words_query("the park") == '"park"'  # all common: the rarest kept
    assert words.words_query("zebra") == ""


def test_fuse_units():
    dense = (np.zeros((1, 3), np.float32), np.array([[1, 2, 3]]))
    words = (np.zeros((1, 3), np.float32), np.array([[3, 4, -1]]))
    scores, rows = keyword.fuse(dense, words, 4)
    assert rows.tolist() == [[3, 1, 2, 4]]  # 3: ranked by both
    assert scores[0, 0] == pytest.approx(0.5 / 63 + 0.5 / 61)
