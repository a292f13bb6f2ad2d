"""Fresh rows (indexes/fresh.py): an update whose new rows stay few leaves the FAISS file as it is, searches score
the new rows exactly beside it, and the update that would keep too many folds them in; every step answers as a
fresh build over the same records does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import jsonl, sembed
from test_index import CITIES, neighbours, rows

from sembed_cli.indexes import fresh
from sembed_cli.indexes.directory import VectorIndex

NAMES = [f"{a} {b}" for a in CITIES for b in CITIES[:5]]  # 80: enough for IVF's cells
QUERIES = ["Salem Franklin", "Springfield changed", "Bristol Clinton", "Ashland", "Milton Fairview", "Gotham"]


def build(model: str, directory: Path, records: list[dict], kind: str, *options: str) -> None:
    run = sembed(
        "index",
        "-q",
        "-m",
        model,
        "--device",
        "cpu",
        "--type",
        kind,
        "-o",
        str(directory),
        *options,
        input=jsonl(*records),
    )
    assert run.exit_code == 0, run.stderr


def update(directory: Path, records: list[dict], *options: str) -> None:
    run = sembed("index", "-q", "--update", str(directory), "--device", "cpu", *options, input=jsonl(*records))
    assert run.exit_code == 0, run.stderr


def same_answers(model: str, index: Path, records: list[dict], kind: str, tmp_path: Path) -> None:
    """`index` answers QUERIES as an index of `kind` built afresh over `records` does."""
    rebuilt = tmp_path / f"rebuilt{len(list(tmp_path.iterdir()))}"
    build(model, rebuilt, records, kind)
    for updated, built in zip(neighbours(index, QUERIES), neighbours(rebuilt, QUERIES)):
        assert [n[:2] for n in updated] == [n[:2] for n in built]
        assert [n[2] for n in updated] == pytest.approx([n[2] for n in built], abs=1e-3)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf", "HNSW16,SQ8"])
def test_a_small_update_stays_fresh_beside_faiss_and_a_larger_one_folds_it_in(tiny_model, tmp_path, kind, monkeypatch):
    index = tmp_path / "index"
    first = rows(NAMES[:60])
    build(tiny_model, index, first, kind)
    faiss_before = (index / "index.faiss").read_bytes()
    monkeypatch.setattr(fresh, "SHARE", 1.0)  # every update of this small index may stay fresh

    later = rows(NAMES[40:], 40)  # 20 indexed again, 20 new
    later[3]["text"] = "Springfield changed"  # c43 replaced: its old row removed
    update(index, later)  # c43's old row stays in FAISS, skipped at search
    with VectorIndex.load(index) as loaded:
        assert (loaded.fresh_start, loaded.row_count, loaded.count) == (60, 81, 80)
        lossy = loaded.vectors is not None
        assert loaded.index.ntotal == 60 and (loaded.fresh is None) == lossy  # a lossy index's kept vectors serve
        assert sorted(p.name for p in index.glob("index*.faiss")) == ["index.faiss"]
    assert (index / "index.faiss").read_bytes() == faiss_before
    assert (index / "fresh.60.f32").exists() != lossy
    everything = first[:40] + later
    same_answers(tiny_model, index, everything, kind, tmp_path)

    gone = [r for r in everything if r["id"] not in ("c2", "c70")]  # a row FAISS holds and a fresh one
    gone.append({"id": "c90", "text": "Gotham Metropolis", "n": 90})
    update(index, gone, "--sync")
    with VectorIndex.load(index) as loaded:  # every type skips removed rows at search until FAISS is rewritten
        removed = loaded.removed.tolist()  # c2 and c43's old row (FAISS holds them), c70 (a fresh row)
        assert loaded.count == 79 and loaded.fresh_start == 60 and removed[:2] == [2, 43] and removed[2] >= 60
        assert loaded.index.ntotal == 60
    same_answers(tiny_model, index, gone, kind, tmp_path)

    monkeypatch.setattr(fresh, "SHARE", 0.0)  # the next update folds
    last = gone + rows(["Springfield newest"], 95)
    update(index, last)
    with VectorIndex.load(index) as loaded:
        assert loaded.fresh_start == loaded.row_count == 83 and loaded.fresh is None
        graph = kind != "flat" and kind != "ivf"  # a graph keeps its removed rows (compaction.py), the rest drop them
        assert loaded.index.ntotal == (83 if graph else 80) and len(loaded.removed) == (3 if graph else 0)
        assert not list(index.glob("fresh.*.f32"))
        meta = json.loads((index / "sembed.json").read_text())
        assert meta["count"] == loaded.count == 80
    same_answers(tiny_model, index, last, kind, tmp_path)
    check = sembed("index", "--check", str(index))
    assert check.exit_code == 0, check.stderr


def test_fresh_rows_are_checked_merged_and_refused_when_damaged(tiny_model, tmp_path, monkeypatch):
    """The fresh rows' file carries a checksum (a changed byte is an error, never an answer), `index --check` and
    `index merge` read it, and a merge holds every fresh row in FAISS."""
    index, other = tmp_path / "index", tmp_path / "other"
    build(tiny_model, index, rows(NAMES[:60]), "hnsw")
    build(tiny_model, other, rows(["Gotham Metropolis"], 500), "hnsw")
    monkeypatch.setattr(fresh, "SHARE", 1.0)
    update(index, rows(NAMES[:60]) + rows(["Springfield newest", "Riverdale Sunnydale"], 60))
    run = sembed("index", "--check", str(index))
    assert run.exit_code == 0 and "fresh.60.f32" in run.stdout + run.stderr, run.stderr

    merged = tmp_path / "merged"
    run = sembed("index", "merge", str(index), str(other), "-o", str(merged))
    assert run.exit_code == 0, run.stderr
    with VectorIndex.load(merged) as loaded:
        assert loaded.index.ntotal == loaded.count == 63 and loaded.fresh_start == loaded.row_count
    assert [n[0] for n in neighbours(merged, ["Riverdale Sunnydale"], 1)[0]] == ["c61"]
    assert [n[0] for n in neighbours(merged, ["Gotham Metropolis"], 1)[0]] == ["c500"]

    damaged = index / "fresh.60.f32"
    data = bytearray(damaged.read_bytes())
    data[5] ^= 0xFF
    damaged.write_bytes(bytes(data))
    run = sembed("search", "-q", "--index", str(index), "--device", "cpu", input=jsonl({"text": "Springfield"}))
    assert run.exit_code == 1
    assert f"error: damaged index at '{index}': fresh.60.f32" in run.stderr


def test_the_exact_scan_merges_with_faiss_and_leaves_out_what_it_must():
    """fresh.nearest: exact cosines of the rows given, -1 fills; fresh.merged: the best of both answers, FAISS's -1
    rows last."""
    vectors = np.eye(4, dtype=np.float32)[[0, 1, 3]]  # rows 100, 101 and 103 (102 removed)
    rows = np.array([100, 101, 103], dtype=np.int64)
    queries = np.array([[1, 0, 0, 0], [0, 0.6, 0.8, 0]], dtype=np.float32)
    scores, found = fresh.nearest(queries, vectors, rows, 2)
    assert found[0].tolist() == [100, 101] or found[0].tolist() == [100, 103]  # a tie at 0
    assert found[1, 0] == 101
    assert scores[1].tolist() == pytest.approx([0.6, 0.0])
    scores, found = fresh.nearest(queries, vectors[:1], rows[:1], 3)
    assert found.tolist() == [[100], [100]] and scores.ravel().tolist() == pytest.approx([1.0, 0.0])
    scores, found = fresh.nearest(queries, vectors[:0], rows[:0], 3)
    assert found.tolist() == [[-1], [-1]] and np.isneginf(scores).all()
    faiss_scores = np.array([[0.5, 0.4, -3.4e38], [0.9, 0.1, 0.05]], dtype=np.float32)
    faiss_rows = np.array([[7, 8, -1], [9, 10, 11]], dtype=np.int64)
    scores, found = fresh.merged(faiss_scores, faiss_rows, np.array([[1.0], [0.2]]), np.array([[100], [101]]), 3)
    assert found.tolist() == [[100, 7, 8], [9, 101, 10]]
    scores, found = fresh.merged(faiss_scores[:1], faiss_rows[:1], np.full((1, 1), -np.inf), np.array([[-1]]), 4)
    assert found.tolist() == [[7, 8, -1, -1]]
    assert fresh.keeps(20, 1000) and not fresh.keeps(21, 1000) and not fresh.keeps(fresh.MAX_ROWS + 1, 10**9)


def test_a_loaded_index_keeps_what_its_searches_build_from_all_rows_while_they_stay(tiny_model, tmp_path, monkeypatch):
    """search --spelling reads every name and indexes their words at its first query: a loaded index keeps them for
    its later searches (a process searching many batches, the benchmark), made again once its rows change."""
    from sembed_cli.indexes.query_encoder import QueryEmbedder
    from sembed_cli.indexes.search import search_records
    from sembed_cli.models import poi_lookup

    index = tmp_path / "index"
    build(tiny_model, index, rows(NAMES), "flat")
    made = []
    real_init = poi_lookup.NameWords.__init__

    def counted(self, keys):
        made.append(len(keys))
        real_init(self, keys)

    monkeypatch.setattr(poi_lookup.NameWords, "__init__", counted)
    with VectorIndex.load(index) as loaded:
        encoder = QueryEmbedder(loaded, device="cpu")
        encoder.open()

        def first(query: str) -> str:
            (record,) = search_records(
                iter([{"text": query}]), loaded, encoder, 3, "text", "embedding", 10, spelling=True
            )
            return record["neighbors"][0]["text"]

        assert first(NAMES[3]) == NAMES[3]
        assert first(NAMES[17]) == NAMES[17]
        assert made == [len(NAMES)]  # one index of words for both searches
        loaded.removed = np.array([0], dtype=np.int64)  # its rows changed (as a reload after an update finds them)
        assert first(NAMES[3]) == NAMES[3]
        assert made == [len(NAMES), len(NAMES)]


def test_the_re_rank_gives_the_same_bits_a_block_of_queries_at_a_time_over_threads(tiny_model, tmp_path, monkeypatch):
    from sembed_cli.indexes import directory

    index = tmp_path / "index"
    build(tiny_model, index, rows(NAMES), "HNSW16,SQ8")
    with VectorIndex.load(index) as loaded:
        assert loaded.vectors is not None
        queries = loaded.vectors_of(np.arange(0, len(NAMES), 3))
        candidates = np.random.default_rng(0).integers(-1, len(NAMES), (len(queries), 12))
        monkeypatch.setattr(directory, "RERANK_BLOCK", 10**9)
        whole = loaded.rerank(queries, candidates, 5)
        monkeypatch.setattr(directory, "RERANK_BLOCK", 4)
        monkeypatch.setattr(directory, "configured_count", lambda: 2)
        blocks = loaded.rerank(queries, candidates, 5)
    assert np.array_equal(whole[0], blocks[0]) and np.array_equal(whole[1], blocks[1])
    assert whole[1].shape == (len(queries), 5) and (whole[1][:, 0] >= 0).all()


@pytest.mark.parametrize(
    "kind, kept", [("IVF4,SQ8", "float16"), ("IVF4,PQ8x4fs", "float32"), ("HNSW16,SQ8", "float16")]
)
def test_a_search_re_ranks_from_the_map_in_faiss_as_numpy_does_from_rows_read_one_by_one(
    tiny_model, tmp_path, kind, kept, monkeypatch
):
    """A search re-ranks its candidates in FAISS (IndexRefine over a view of the mapped kept vectors,
    VectorFile.exact_index), a recall measurement reading rows one by one in numpy (VectorIndex.rerank): the same
    rows and cosines, with removed rows skipped and, on inverted lists an update shrank, rows numbered past FAISS's
    count."""
    import dataclasses

    index = tmp_path / "index"
    build(tiny_model, index, rows(NAMES), kind, "--rerank", kept)
    monkeypatch.setattr(fresh, "SHARE", 0.0)  # folded into FAISS: no fresh rows
    kept_rows = [r for r in rows(NAMES) if r["id"] not in ("c1", "c7", "c30")]
    update(index, [*kept_rows, {"id": "c90", "text": "Gotham Metropolis", "n": 90}], "--sync")  # a row: a fold
    with VectorIndex.load(index) as loaded:
        assert loaded.vectors is not None and loaded.vectors.dtype == np.dtype(kept)
        graph = kind.startswith("HNSW")  # a graph keeps its removed rows, skipped at search; inverted lists drop them
        assert loaded.row_count == 81 and (loaded.index.ntotal, len(loaded.removed)) == ((81, 3) if graph else (78, 0))
        assert loaded.vectors.exact_index(loaded.row_count) is not None
        read_one_by_one = dataclasses.replace(loaded, vectors=loaded.vectors.unmapped())
        assert read_one_by_one.vectors.exact_index(loaded.row_count) is None
        queries = loaded.vectors_of(np.arange(0, len(NAMES), 4)) + 0.05
        in_faiss, in_numpy = loaded.search(queries, 6), read_one_by_one.search(queries, 6)
    assert np.array_equal(in_faiss[1], in_numpy[1])
    assert in_faiss[0] == pytest.approx(in_numpy[0], abs=1e-6)
    assert not np.isin(in_faiss[1], [1, 7, 30]).any() and (in_faiss[1] >= 0).all()


@pytest.mark.parametrize("kind", ["flat", "HNSW16,SQ8"])
def test_a_load_keeps_the_vectors_it_checked_when_a_commit_removes_their_name(tiny_model, tmp_path, kind, monkeypatch):
    """A search reads the store's state, opens the vector file it names (the fresh rows' file, or a lossy index's
    kept vectors) and maps it; an update that folds the fresh rows in removes that file's name in between (CI
    caught it once: `internal error: FileNotFoundError: .../fresh.114.f32` beside 50 updates). The load maps the
    file it opened, and answers as before."""
    from sembed_cli.indexes.vector_file import VectorFile

    index = tmp_path / "index"
    build(tiny_model, index, rows(NAMES[:60]), kind)
    monkeypatch.setattr(fresh, "SHARE", 1.0)
    update(index, rows(["Springfield newest", "Riverdale Sunnydale"], 60))
    before = neighbours(index, QUERIES)
    name = "fresh.60.f32" if kind == "flat" else "vectors.f16"
    assert (index / name).exists()
    held = VectorFile.rows_held

    def removed_after_open(self, descriptor: int) -> int:  # the commit lands between the open and the map
        if self.path.name == name:
            self.path.unlink(missing_ok=True)
        return held(self, descriptor)

    monkeypatch.setattr(VectorFile, "rows_held", removed_after_open)
    assert neighbours(index, QUERIES) == before
    assert not (index / name).exists()
