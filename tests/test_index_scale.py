"""sembed index at corpus scale: compressed types re-ranked to exact, updates without rebuilding, merges, the
SQLite store, indexes of sembed 0.1, and a nightly job mirroring a folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, jsonl, lists_of, sembed, without_checksums

from sembed_cli.indexes import kinds
from sembed_cli.indexes.directory import VectorIndex

pytest.importorskip("faiss")

MODEL = "synthetic@0123456789ab"  # vectors labelled with a model identity, so no model is loaded
OTHER = "another@ba9876543210"


def clustered(count: int, dim: int = 32, seed: int = 0, centres: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    middle = np.random.default_rng(99).standard_normal((centres, dim))
    vectors = middle[rng.integers(0, centres, count)] + 0.6 * rng.standard_normal((count, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def records(vectors: np.ndarray, first_id: int = 0, model: str = MODEL) -> list[dict]:
    return [
        {
            "id": first_id + n,
            "text": f"sentence {first_id + n}",
            "embedding": [round(float(x), 6) for x in v],
            "embedding_model": model,
        }
        for n, v in enumerate(vectors)
    ]


def build(path: Path, rows: list[dict], *args: str) -> None:
    run = sembed("index", "-q", "-o", str(path), *args, input=jsonl(*rows))
    assert run.exit_code == 0, run.stderr


def answers(index: Path, queries: np.ndarray, k: int = 10) -> list[list[tuple]]:
    with VectorIndex.load(index) as loaded:
        scores, rows = loaded.search(queries, k)
        found = loaded.records(rows.ravel())
    return [[(found[r][0], round(float(s), 5)) for s, r in zip(qs, qr) if r >= 0] for qs, qr in zip(scores, rows)]


def exact(vectors: np.ndarray, queries: np.ndarray, k: int = 10) -> np.ndarray:
    return np.argsort(-(queries @ vectors.T), axis=1, kind="stable")[:, :k]


# --- choosing the type --------------------------------------------------------------------------------------


def test_auto_chooses_exact_then_a_graph_then_pq_codes_by_count():
    assert kinds.choose("auto", 100_000, 384).factory == "IDMap2,Flat"
    assert kinds.choose("auto", 999_999, 384).factory == "HNSW32"
    assert kinds.choose("auto", 1_000_000, 384).factory == "IVF4096_HNSW32,PQ96"
    big = kinds.choose("auto", 10_000_000, 384)
    assert (big.name, big.factory, big.nprobe, big.lossy) == ("ivfpq", "IVF16384_HNSW32,PQ96", 256, True)
    assert kinds.choose("auto", 2_000_000, 384).factory == "IVF4096_HNSW32,PQ96"  # 4 sqrt(n) = 5,657
    assert kinds.choose("IVF256,SQ8", 5000, 384).lossy and not kinds.choose("ivf", 5000, 384).lossy
    assert kinds.bytes_per_vector(big, 384, 768) == 96 + 8 + 768
    assert kinds.training_size(kinds.create(big, 384), 10_000_000) == 39 * 16384


def test_a_factory_string_faiss_cannot_build_is_a_clear_error(tmp_path):
    run = sembed("index", "--type", "IVF16,PQ5", "-o", str(tmp_path / "i"), input=jsonl(*records(clustered(50))))
    assert run.exit_code == 1
    assert run.stderr.startswith("error: --type 'IVF16,PQ5' is not an index FAISS can build for 32-d vectors: ")
    run = sembed("index", "--type", "kdtree", "-o", str(tmp_path / "i"), input=jsonl(*records(clustered(5))))
    assert run.exit_code == 2


# --- compressed codes, re-ranked ------------------------------------------------------------------------------


def test_pq_codes_are_reranked_to_exact_cosines_from_the_kept_vectors(tmp_path):
    vectors, queries = clustered(3000), clustered(50, seed=7)
    build(tmp_path / "pq", records(vectors), "--type", "ivfpq")
    build(tmp_path / "codes", records(vectors), "--type", "ivfpq", "--rerank", "none")
    assert sorted(p.name for p in (tmp_path / "pq").iterdir()) == [
        "index.faiss",
        "records.sqlite",
        "sembed.json",
        "vectors.f16",
    ]
    assert "vectors.f16" not in {p.name for p in (tmp_path / "codes").iterdir()}
    meta = json.loads((tmp_path / "pq" / "sembed.json").read_text())
    assert meta["type"] == "ivfpq" and meta["settings"]["factory"] == "IVF76,PQ8"
    truth = exact(vectors, queries)
    with VectorIndex.load(tmp_path / "pq") as index:
        scores, rows = index.search(queries, 10)
    recall = np.mean([len(set(r) & set(t)) / 10 for r, t in zip(rows.tolist(), truth.tolist())])
    assert recall >= 0.95
    assert np.abs(scores - np.take_along_axis(queries @ vectors.T, rows, 1)).max() < 2e-3  # exact, in float16
    with VectorIndex.load(tmp_path / "codes") as index:
        coded = index.search(queries, 10)[1]
    assert np.mean([len(set(r) & set(t)) / 10 for r, t in zip(coded.tolist(), truth.tolist())]) < recall


def test_an_ivfpq_update_adds_and_replaces_rows_and_answers_as_a_build_with_its_quantiser(tmp_path):
    vectors = clustered(3000)
    first = records(vectors[:2500])
    build(tmp_path / "idx", first, "--type", "ivfpq")
    shutil.copytree(tmp_path / "idx", tmp_path / "trained")  # the quantiser as built
    changed = records(clustered(100, seed=3))  # ids 0-99, other vectors
    new = records(vectors[2500:], 2500)
    run = sembed("index", "--update", str(tmp_path / "idx"), input=jsonl(*changed, *new))
    assert run.exit_code == 0, run.stderr
    assert "500 new, 100 changed, 0 unchanged record(s); 3000 in all" in run.stderr
    names = sorted(p.name for p in (tmp_path / "idx").iterdir())
    assert names == ["index.1.faiss", "index.faiss", "records.sqlite", "sembed.json", "vectors.f16"]  # one before
    everything = changed + first[100:] + new
    build(tmp_path / "fresh", everything, "--trained", str(tmp_path / "trained"))
    queries = clustered(40, seed=11)
    assert answers(tmp_path / "idx", queries) == answers(tmp_path / "fresh", queries)
    with VectorIndex.load(tmp_path / "idx") as index:
        assert (index.count, index.row_count) == (3000, 3100)  # the replaced rows are gone, not reused


def test_update_sync_removes_what_the_input_no_longer_holds_and_a_graph_skips_them(tmp_path):
    vectors = clustered(400)
    build(tmp_path / "g", records(vectors), "--type", "hnsw")
    kept = records(vectors[:300])
    run = sembed("index", "--update", str(tmp_path / "g"), "--sync", input=jsonl(*kept))
    assert run.exit_code == 0, run.stderr
    assert "0 new, 0 changed, 300 unchanged record(s), 100 removed (not in the input); 300 in all" in run.stderr
    build(tmp_path / "fresh", kept, "--type", "hnsw")
    queries = vectors[250:350]  # half of them were removed: never answered
    updated = answers(tmp_path / "g", queries, 5)
    assert all(record_id < 300 for found in updated for record_id, _ in found)
    assert [f[0] for f in updated] == [f[0] for f in answers(tmp_path / "fresh", queries, 5)]
    assert sembed("index", "--sync", "-o", str(tmp_path / "x"), input=jsonl(*kept)).exit_code == 2


def test_a_sentence_two_documents_share_is_an_entry_of_each_and_keeps_its_id_when_lines_move(tmp_path):
    """Records with a doc_id (as convert writes them) keep one entry per document and sentence: the search for it
    finds every document; an unchanged sentence keeps its id when lines move; records without one are keyed by
    their content alone, as before."""
    speech = "Mr. Speaker, Mr. President, Members of the Congress:"

    def record(doc: str, text: str, vector: list[float]) -> dict:
        return {"doc_id": doc, "text": text, "embedding": vector, "embedding_model": MODEL}

    first = [
        record("1945-Truman.txt", speech, [1.0, 0.0]),
        record("1945-Truman.txt", "The war is over.", [0.0, 1.0]),
        record("1946-Truman.txt", speech, [1.0, 0.0]),
        record("1946-Truman.txt", speech, [1.0, 0.0]),  # twice in one document: one entry
    ]
    run = sembed("index", "-o", str(tmp_path / "a"), input=jsonl(*first))
    assert run.exit_code == 0, run.stderr
    assert "1 repeated record(s) indexed once" in run.stderr
    meta = json.loads((tmp_path / "a" / "sembed.json").read_text())
    assert meta["count"] == 3 and meta["settings"]["ids"] == "document and content hash"
    found = sembed(
        "search",
        "--index",
        str(tmp_path / "a"),
        "-k",
        "3",
        "--payload",
        input=jsonl({"embedding": [1.0, 0.0], "embedding_model": MODEL}),
    )
    assert found.exit_code == 0, found.stderr
    docs = sorted(n["payload"]["doc_id"] for n in found.records[0]["neighbors"] if n["score"] > 0.99)
    assert docs == ["1945-Truman.txt", "1946-Truman.txt"]  # which documents say it: both
    with VectorIndex.load(tmp_path / "a") as index:
        before = {payload["doc_id"] + payload["text"]: record_id for _, record_id, payload in index.rows()}
    moved = [first[1], first[0], first[2]]  # lines moved within the first document, the repeat gone
    run = sembed("index", "--update", str(tmp_path / "a"), "--sync", input=jsonl(*moved))
    assert run.exit_code == 0, run.stderr
    assert "0 new, 0 changed, 3 unchanged record(s), 0 removed (not in the input); 3 in all" in run.stderr
    with VectorIndex.load(tmp_path / "a") as index:
        assert {payload["doc_id"] + payload["text"]: record_id for _, record_id, payload in index.rows()} == before
    gone = [first[0], first[1]]  # the 1946 speech deleted: its entry goes, the 1945 one stays
    run = sembed("index", "--update", str(tmp_path / "a"), "--sync", input=jsonl(*gone))
    assert run.exit_code == 0 and "1 removed (not in the input); 2 in all" in run.stderr, run.stderr


def test_an_index_keyed_by_content_alone_keeps_its_ids_on_update_and_says_how_to_rebuild(tmp_path):
    rows = [{"doc_id": d, "text": "Alpha", "embedding": [1.0, 0.0], "embedding_model": MODEL} for d in ("a", "b")]
    plain = [{k: v for k, v in row.items() if k != "doc_id"} for row in rows]
    assert sembed("index", "-o", str(tmp_path / "old"), input=jsonl(*plain[:1])).exit_code == 0
    meta_path = tmp_path / "old" / "sembed.json"  # made to say what an index written before documents counted says
    meta = json.loads(meta_path.read_text())
    meta["settings"]["ids"] = "content hash"
    del meta["settings"]["doc_key"]
    meta_path.write_text(json.dumps(meta))
    without_checksums(tmp_path / "old")  # as such an index was written: before checksums too
    run = sembed("index", "--update", str(tmp_path / "old"), input=jsonl(*rows))
    assert run.exit_code == 0, run.stderr
    assert "0 new, 0 changed, 1 unchanged record(s), 1 repeated (indexed once); 1 in all" in run.stderr
    assert "note: 2 record(s) name their document (doc_id), but " in run.stderr
    assert "rebuild it with `sembed index ... -o " in run.stderr


def test_ids_are_content_hashes_by_default_and_an_id_twice_with_other_content_is_refused(tmp_path):
    rows = [
        {"text": "Alpha", "embedding": [1.0, 0.0], "embedding_model": MODEL},
        {"text": "Beta", "embedding": [0.0, 1.0], "embedding_model": MODEL},
        {"text": "Alpha", "embedding": [1.0, 0.0], "embedding_model": MODEL},
    ]
    run = sembed("index", "-o", str(tmp_path / "a"), input=jsonl(*rows))
    assert run.exit_code == 0, run.stderr
    assert "1 repeated record(s) indexed once" in run.stderr
    with VectorIndex.load(tmp_path / "a") as index:
        assert index.count == 2
    clash = [
        {"id": 1, "text": "Alpha", "embedding": [1.0, 0.0], "embedding_model": MODEL},
        {"id": 1, "text": "Gamma", "embedding": [0.5, 0.5], "embedding_model": MODEL},
    ]
    run = sembed("index", "-o", str(tmp_path / "b"), input=jsonl(*clash))
    assert run.exit_code == 1 and not (tmp_path / "b").exists()
    assert run.stderr == (
        "error: <stdin>:2: id 1 again, with other content than an earlier record of that id (hint: "
        "give each record its own id, or none (the id is then a hash of the text))\n"
    )


@pytest.mark.parametrize("batch", ["1", "256"])
def test_an_id_given_again_in_a_later_batch_of_a_build_is_found_as_in_the_same_batch(tmp_path, batch):
    """A build inserts each batch's new ids without looking them up (the store is new); an id an earlier batch
    stored is still a repeat (the same content) or a refused record (other content), with its own line."""
    rows = [
        {"id": 1, "text": "Alpha", "embedding": [1.0, 0.0], "embedding_model": MODEL},
        {"id": 2, "text": "Beta", "embedding": [0.0, 1.0], "embedding_model": MODEL},
        {"id": 1, "text": "Alpha", "embedding": [1.0, 0.0], "embedding_model": MODEL},
        {"id": 2, "text": "Gamma", "embedding": [0.5, 0.5], "embedding_model": MODEL},
        {"id": 3, "text": "Delta", "embedding": [0.6, 0.8], "embedding_model": MODEL},
    ]
    args = ("index", "-b", batch, "--skip-errors", "--type", "flat")
    run = sembed(*args, "-o", str(tmp_path / "a"), input=jsonl(*rows))
    assert run.exit_code == 0, run.stderr
    assert "skipped 1 bad record(s) in <stdin>: line 4; first: id 2 again, with other content" in run.stderr
    assert "1 repeated record(s) indexed once" in run.stderr
    with VectorIndex.load(tmp_path / "a") as index:
        assert index.count == 3
        assert sorted(key for _, key, _, _ in index.store.rows()) == ["1", "2", "3"]
        assert [payload for *_, payload in index.store.rows()][1] == b'{"id":2,"text":"Beta"}'


def vectors_the_norm_changes() -> tuple[np.ndarray, np.ndarray]:
    """40 vectors as records carry them (six decimals), 20 of which the float32 dot product's norm (BLAS_NORM, on
    this machine's BLAS) makes other float16 bytes than the exact norm, and the mask of those 20."""
    from sembed_cli.indexes.entries import BLAS_NORM, EXACT_NORM, units

    matrix = np.round(np.random.default_rng(3).standard_normal((20_000, 64)), 6).astype(np.float32)
    differ = (units(matrix, EXACT_NORM).astype(np.float16) != units(matrix, BLAS_NORM).astype(np.float16)).any(axis=1)
    if differ.sum() < 20:  # 31-32 on OpenBLAS's AMD, AVX2 and AVX-512 kernels
        pytest.skip(f"this BLAS's dot products differ from the exact norm in {differ.sum()} of 20,000 rows")
    chosen = np.concatenate([np.flatnonzero(differ)[:20], np.flatnonzero(~differ)[:20]])
    return matrix[chosen], differ[chosen]


def stored_hashes(index: Path) -> dict[str, str]:
    with VectorIndex.load(index) as loaded:
        return {key: digest for _, key, digest, _ in loaded.store.rows()}


def test_vectors_are_hashed_alike_on_every_machine_and_an_older_index_keeps_its_hashes(tmp_path, monkeypatch):
    """A record's hash is of its unit vector, whose norm sembed sums exactly (entries.EXACT_NORM: settings.vector_hash);
    an index built before hashed after BLAS's float32 dot product, and an update of it hashes so too: the same
    records are unchanged, not replaced (with ids) or added again beside their rows (without)."""
    import functools

    from sembed_cli.indexes import build as build_module
    from sembed_cli.indexes.entries import BLAS_NORM, EntryReader

    vectors, differ = vectors_the_norm_changes()
    rows = records(vectors)
    bare = [{key: value for key, value in row.items() if key != "id"} for row in rows]  # ids: hashes of content
    build(tmp_path / "new", rows)
    assert json.loads((tmp_path / "new" / "sembed.json").read_text())["settings"]["vector_hash"] == "float64 norm"
    with monkeypatch.context() as patch:  # as sembed built indexes from vectors before 2026-11-29
        patch.setattr(build_module, "EntryReader", functools.partial(EntryReader, vector_hash=BLAS_NORM))
        build(tmp_path / "old", rows)
        build(tmp_path / "old-bare", bare)
    for name in ("old", "old-bare"):
        meta_path = tmp_path / name / "sembed.json"
        meta = json.loads(meta_path.read_text())
        del meta["settings"]["vector_hash"]
        meta_path.write_text(json.dumps(meta))
        without_checksums(tmp_path / name)
    new, old = stored_hashes(tmp_path / "new"), stored_hashes(tmp_path / "old")
    assert [new[str(n)] != old[str(n)] for n in range(len(rows))] == differ.tolist()
    for name, given in (("new", rows), ("old", rows), ("old-bare", bare)):
        run = sembed("index", "--update", str(tmp_path / name), input=jsonl(*given))
        assert run.exit_code == 0, run.stderr
        assert "0 new, 0 changed, 40 unchanged record(s); 40 in all" in run.stderr, name
    run = sembed("index", "merge", str(tmp_path / "new"), str(tmp_path / "old-bare"), "-o", str(tmp_path / "m"))
    assert run.exit_code == 1 and not (tmp_path / "m").exists()
    assert run.stderr == (
        f"error: cannot merge: '{tmp_path / 'new'}' hashes its vectors after a float64 norm, but "
        f"'{tmp_path / 'old-bare'}' after a float32 dot (hint: build every piece with one sembed version (a piece "
        "built before 2026-11-29 hashes after a float32 dot): build the older ones again from their records)\n"
    )


def test_records_with_their_own_vectors_and_npy_rows_in_one_batch_hash_as_when_all_bring_theirs(tmp_path):
    """A batch's vectors are made unit and hashed together (EntryReader.fill), the records' own and the --npy rows
    apart: mixed in one batch, each record gets the hash and derived id it gets when every record brings its own."""
    inline = [{key: value for key, value in row.items() if key != "id"} for row in records(clustered(40))]
    np.save(tmp_path / "v.npy", np.array([row["embedding"] for row in inline], dtype=np.float32))  # as read
    named = [
        {**row, "embedding_row": n} if n % 3 else row
        for n, row in enumerate({key: value for key, value in row.items() if key != "embedding"} for row in inline)
    ]
    for n in range(0, 40, 3):
        named[n]["embedding"] = inline[n]["embedding"]
    build(tmp_path / "inline", inline)
    build(tmp_path / "mixed", named, "--npy", str(tmp_path / "v.npy"))
    assert stored_hashes(tmp_path / "mixed") == stored_hashes(tmp_path / "inline")
    assert len(stored_hashes(tmp_path / "inline")) == 40


# --- merge -----------------------------------------------------------------------------------------------------


def test_a_merge_of_flat_pieces_equals_one_build(tmp_path):
    vectors = clustered(120)
    build(tmp_path / "a", records(vectors[:60]))
    build(tmp_path / "b", records(vectors[60:], 60))
    build(tmp_path / "one", records(vectors))
    run = sembed("index", "merge", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "merged"))
    assert run.exit_code == 0, run.stderr
    queries = clustered(20, seed=5)
    assert answers(tmp_path / "merged", queries) == answers(tmp_path / "one", queries)
    assert json.loads((tmp_path / "merged" / "sembed.json").read_text())["count"] == 120


def test_pieces_built_with_one_trained_quantiser_merge_to_one_build_with_it(tmp_path):
    vectors = clustered(3000)
    build(tmp_path / "trained", records(vectors), "--type", "ivfpq")
    build(tmp_path / "a", records(vectors[:1500]), "--trained", str(tmp_path / "trained"))
    build(tmp_path / "b", records(vectors[1500:], 1500), "--trained", str(tmp_path / "trained"))
    run = sembed("index", "merge", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "merged"))
    assert run.exit_code == 0, run.stderr
    queries = clustered(30, seed=9)
    assert answers(tmp_path / "merged", queries) == answers(tmp_path / "trained", queries)


@pytest.mark.parametrize("factory", ["IVF64_HNSW32,PQ16", "IVF32,Flat"])
def test_a_piece_built_with_trained_dir_merges_with_dir_itself(tmp_path, monkeypatch, factory):
    from sembed_cli.indexes import build as building

    vectors = clustered(3000)
    build(tmp_path / "trained", records(vectors[:1500]), "--type", factory)
    build(tmp_path / "piece", records(vectors[1500:], 1500), "--trained", str(tmp_path / "trained"))
    build(tmp_path / "whole", records(vectors), "--trained", str(tmp_path / "trained"))
    digests = {json.loads((tmp_path / p / "sembed.json").read_text())["settings"]["trained_sha256"]
               for p in ("trained", "piece", "whole")}  # fmt: skip
    assert len(digests) == 1  # the search breadth DIR was loaded with is not hashed
    run = sembed("index", "merge", str(tmp_path / "trained"), str(tmp_path / "piece"), "-o", str(tmp_path / "merged"))
    assert run.exit_code == 0, run.stderr
    queries = clustered(30, seed=9)
    assert answers(tmp_path / "merged", queries) == answers(tmp_path / "whole", queries)

    def as_before(index) -> str:  # sembed before 2026-11-29 hashed the breadth DIR was loaded with (nprobe 7 here)
        import hashlib

        import faiss

        empty = faiss.clone_index(index)
        empty.reset()
        kinds.set_search_breadth(empty, 7, None)
        return hashlib.sha256(faiss.serialize_index(empty).tobytes()).hexdigest()

    with monkeypatch.context() as patched:
        patched.setattr(building, "trained_digest", as_before)
        build(tmp_path / "older", records(vectors[1500:], 1500), "--trained", str(tmp_path / "trained"))
    older = json.loads((tmp_path / "older" / "sembed.json").read_text())["settings"]["trained_sha256"]
    assert older not in digests  # such a piece is recognised by its FAISS index, made again at merge
    run = sembed("index", "merge", str(tmp_path / "trained"), str(tmp_path / "older"), "-o", str(tmp_path / "m2"))
    assert run.exit_code == 0, run.stderr
    assert answers(tmp_path / "m2", queries) == answers(tmp_path / "merged", queries)


def test_rows_an_update_or_a_merge_adds_go_to_the_cells_a_build_puts_them_in(tmp_path, monkeypatch):
    """An inverted-list index over a graph of its cells files rows by searching the graph at its add breadth
    (kinds.QUANTIZER_ADD_EF_SEARCH, as a build does), not at the search breadth a loaded index carries (2 x nprobe
    or more); the add breadth is made 1 here, so that the two disagree on many rows."""
    monkeypatch.setattr(kinds, "QUANTIZER_ADD_EF_SEARCH", 1)
    vectors = clustered(3000, centres=400)
    build(tmp_path / "trained", records(vectors[:1500]), "--type", "IVF256_HNSW32,Flat")
    shutil.copytree(tmp_path / "trained", tmp_path / "updated")
    run = sembed("index", "-q", "--update", str(tmp_path / "updated"), input=jsonl(*records(vectors[1500:], 1500)))
    assert run.exit_code == 0, run.stderr
    build(tmp_path / "piece", records(vectors[1500:], 1500), "--trained", str(tmp_path / "trained"))
    run = sembed("index", "merge", str(tmp_path / "trained"), str(tmp_path / "piece"), "-o", str(tmp_path / "merged"))
    assert run.exit_code == 0, run.stderr
    build(tmp_path / "whole", records(vectors), "--trained", str(tmp_path / "trained"))

    def cells(name: str) -> np.ndarray:
        with VectorIndex.load(tmp_path / name) as index:
            assert index.count == 3000 and not index.fresh  # every row in FAISS
            return lists_of(kinds.ivf_of(index.index))

    whole = cells("whole")
    with VectorIndex.load(tmp_path / "trained") as index:
        assert kinds.graph_quantizer(index.index).hnsw.efSearch >= 16  # the breadth it searches at, kept in its file
        searched = kinds.graph_quantizer(index.index).search(vectors[1500:], 1)[1].ravel()
    assert (searched != whole[1500:]).sum() >= 50  # what an update filed them by before
    np.testing.assert_array_equal(cells("updated"), whole)
    np.testing.assert_array_equal(cells("merged"), whole)


def test_merge_refuses_pieces_that_do_not_belong_together(tmp_path):
    vectors = clustered(3000)
    build(tmp_path / "a", records(vectors[:60]))
    build(tmp_path / "other-model", records(vectors[60:120], 60, OTHER))
    build(tmp_path / "overlap", records(vectors[30:90], 30))
    build(tmp_path / "wide", records(np.hstack([vectors[:60], vectors[:60]]) / np.sqrt(2), 500))
    build(tmp_path / "pq1", records(vectors[:1500]), "--type", "ivfpq")
    build(tmp_path / "pq2", records(vectors[1500:], 1500), "--type", "ivfpq")

    def refusal(*pieces: str) -> str:
        run = sembed("index", "merge", *(str(tmp_path / p) for p in pieces), "-o", str(tmp_path / "m"))
        assert run.exit_code == 1 and not (tmp_path / "m").exists()
        return run.stderr

    assert refusal("a", "other-model") == (
        f"error: cannot merge: '{tmp_path / 'a'}' holds vectors of {MODEL}, but '{tmp_path / 'other-model'}' {OTHER} "
        "(hint: merge pieces built with one model and one trained quantiser (sembed index --trained DIR))\n"
    )
    assert "has dimension 32, but" in refusal("a", "wide") and f"'{tmp_path / 'wide'}' 64" in refusal("a", "wide")
    assert "was trained as quantiser" in refusal("pq1", "pq2")
    assert refusal("a", "overlap").startswith(
        f"error: cannot merge: '{tmp_path / 'overlap'}' holds the id 30, which '{tmp_path / 'a'}' holds too"
    )


def test_merge_refuses_a_piece_without_the_vectors_the_first_keeps(tmp_path):
    vectors = clustered(3000)
    build(tmp_path / "trained", records(vectors[:1500]), "--type", "ivfpq")
    build(tmp_path / "kept", records(vectors[:1500]), "--trained", str(tmp_path / "trained"))
    build(tmp_path / "bare", records(vectors[1500:], 1500), "--trained", str(tmp_path / "trained"), "--rerank", "none")
    run = sembed("index", "merge", str(tmp_path / "kept"), str(tmp_path / "bare"), "-o", str(tmp_path / "m"))
    assert run.exit_code == 1 and not (tmp_path / "m").exists()
    assert run.stderr == (
        f"error: cannot merge: '{tmp_path / 'kept'}' keeps vectors to re-rank with, but "
        f"'{tmp_path / 'bare'}' has none (hint: build every piece with the same --rerank)\n"
    )


# --- the store and older indexes -----------------------------------------------------------------------------


def test_search_reads_only_the_neighbours_payloads_from_the_store(tmp_path):
    vectors = clustered(500)
    build(tmp_path / "i", records(vectors))
    with VectorIndex.load(tmp_path / "i") as index:
        statements = []
        index.store.db.set_trace_callback(statements.append)
        _, rows = index.search(vectors[:3], 5)
        found = index.records(rows.ravel())
    assert len(found) <= 15 and [s for s in statements if "FROM rows" in s] == [
        s for s in statements if "WHERE row IN" in s
    ]


def legacy_index(path: Path, vectors: np.ndarray) -> None:
    """An index as sembed 0.1 wrote it: index.faiss (flat), records.jsonl, sembed.json."""
    import faiss

    path.mkdir()
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    faiss.write_index(flat, str(path / "index.faiss"))
    with open(path / "records.jsonl", "w") as f:
        for n in range(len(vectors)):
            f.write(json.dumps({"id": f"c{n}", "record": {"id": f"c{n}", "text": f"name {n}"}}) + "\n")
    (path / "sembed.json").write_text(
        json.dumps(
            {
                "embedding_model": MODEL,
                "model": "synthetic",
                "dimension": vectors.shape[1],
                "type": "flat",
                "count": len(vectors),
                "settings": {
                    "type": "flat",
                    "requested_type": "auto",
                    "text_key": "text",
                    "embedding_key": "embedding",
                    "id_key": "id",
                    "source": "embeddings",
                },
                "data": {"sha256": "0" * 64},
            }
        )
    )


def test_an_index_of_sembed_0_1_still_answers_and_an_update_converts_it(tmp_path):
    vectors = clustered(50)
    legacy_index(tmp_path / "old", vectors)
    query = {"embedding": vectors[7].tolist(), "embedding_model": MODEL}
    run = sembed("search", "-q", "--index", str(tmp_path / "old"), "--k", "1", input=jsonl(query))
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["neighbors"][0]["id"] == "c7"
    new = {"id": "c50", "text": "name 50", "embedding": clustered(1, seed=4)[0].tolist(), "embedding_model": MODEL}
    run = sembed("index", "--update", str(tmp_path / "old"), input=jsonl(new))
    assert run.exit_code == 0, run.stderr
    assert "converting" in run.stderr and "1 new, 0 changed, 0 unchanged record(s); 51 in all" in run.stderr
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == [
        "fresh.50.f32",  # the new row, searched exactly beside the converted FAISS file (fresh.py)
        "index.faiss",
        "records.sqlite",
        "sembed.json",
    ]
    run = sembed("search", "-q", "--index", str(tmp_path / "old"), "--k", "1", input=jsonl(query))
    assert run.records[0]["neighbors"][0] == {"id": "c7", "text": "name 7", "score": 1.0}
    new_query = {"embedding": new["embedding"], "embedding_model": MODEL}
    run = sembed("search", "-q", "--index", str(tmp_path / "old"), "--k", "1", input=jsonl(new_query))
    assert run.records[0]["neighbors"][0]["id"] == "c50"


# --- a nightly job mirroring a folder ---------------------------------------------------------------------------

NIGHTLY = ROOT / "examples" / "nightly_index.sh"


def night(docs: Path, index: Path, model: str, *flags: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
        "MODEL": model,
        "FORMAT": "lines",
        "SEMBED_DEVICE": "cpu",
        "SEMBED_THREADS": "1",
    }
    return subprocess.run(
        ["bash", str(NIGHTLY), str(docs), str(index), *flags],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )


def contents(index: Path) -> list[tuple]:
    with VectorIndex.load(index) as loaded:
        return sorted((str(record_id), payload["text"]) for _, record_id, payload in loaded.rows())


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize(
    "flags, backend, quantized",
    [((), "torch", False), (("--backend", "onnx", "--quantize", "int8"), "onnx", True), ((), "static", False)],
    ids=["torch", "onnx-int8", "static"],
)
def test_the_nightly_script_mirrors_a_folder_that_gains_edits_and_loses_files(
    tiny_model, tmp_path, flags, backend, quantized
):
    if flags:  # an ONNX export goes beside the model: into a copy, not the session's tiny model other tests copy
        tiny_model = str(shutil.copytree(tiny_model, tmp_path / "model"))
    if backend == "static":  # -m STATIC_DIR: a static model distilled from the tiny one
        towns = ("Springfield", "Riverside", "Fairview", "Franklin", "Greenville", "Bristol", "Clinton", "Salem")
        places = ("river", "bridge", "market", "council")
        corpus = jsonl(*({"text": f"The people of {a} met by the {b} today."} for a in towns for b in places))
        args = ("train", "-q", "--method", "static", "-m", tiny_model, "--dim", "16", "--device", "cpu")
        trained = sembed(*args, "-o", str(tmp_path / "static"), input=corpus)
        assert trained.exit_code == 0, trained.stderr
        tiny_model = str(tmp_path / "static")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The river rose overnight.\nFarmers moved their cattle.\nRain is forecast.\n")
    (docs / "b.txt").write_text("Wheat prices fell again.\nExporters blamed the drought.\n")
    (docs / "c.txt").write_text("A new bridge opened.\nTraffic eased at once.\n")
    index = tmp_path / "index"

    def check(night_number: int) -> None:
        run = night(docs, index, tiny_model, *flags)
        assert (run.returncode, run.stderr) == (0, ""), f"night {night_number}: {run.stderr}"  # cron mails nothing
        settings = json.loads((index / "sembed.json").read_text())["settings"]  # every night embeds as the first
        assert settings.get("backend", "torch") == backend, f"night {night_number}"
        assert str(settings.get("quantization")).startswith("qint8") == quantized, f"night {night_number}: {settings}"
        fresh = tmp_path / f"fresh-{night_number}"
        converted = sembed("convert", "-q", "--from", "lines", "--doc-break", "file", str(docs))  # in-process
        assert converted.exit_code == 0, converted.stderr
        built = sembed(
            "index", "-q", *flags, "-m", tiny_model, "--device", "cpu", "-o", str(fresh), input=converted.stdout
        )  # fmt: skip
        assert built.exit_code == 0, built.stderr
        assert contents(index) == contents(fresh)
        dimension = json.loads((index / "sembed.json").read_text())["dimension"]  # 32, or the static model's 16
        queries = np.random.default_rng(night_number).standard_normal((5, dimension)).astype(np.float32)
        nightly, built_fresh = answers(index, queries, 3), answers(fresh, queries, 3)
        if not quantized:
            assert nightly == built_fresh
        else:  # int8 activations are quantised per batch (dynamic), and a night embeds only its new lines: every
            # entry's score agrees within 1e-3 (near ties may swap), the whole index searched
            every = len(contents(index))
            nightly, built_fresh = answers(index, queries, every), answers(fresh, queries, every)
            for mine, theirs in zip(nightly, built_fresh, strict=True):
                assert dict(mine).keys() == dict(theirs).keys()
                assert [dict(mine)[i] for i in dict(theirs)] == pytest.approx(list(dict(theirs).values()), abs=1e-3)

    check(1)
    (docs / "a.txt").write_text(
        "Flood warnings were issued.\nThe river rose overnight.\nFarmers moved their cattle."
        "\nRain is forecast for Sunday.\n"
    )  # a line at the top, one edited
    check(2)
    (docs / "b.txt").unlink()
    (docs / "d.txt").write_text("A new bridge opened.\nThe council met on Monday.\n")  # one sentence c.txt has too
    check(3)
    assert [text for _, text in contents(index)].count("A new bridge opened.") == 2  # an entry in each file
