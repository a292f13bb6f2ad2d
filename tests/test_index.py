"""sembed index and search: FAISS index directories, neighbours, reloading in a new process, refusals."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from conftest import ROOT, TINY_DIM, jsonl, sembed, without_checksums

from sembed_cli.errors import SembedError
from sembed_cli.indexes.directory import VectorIndex
from sembed_cli.indexes.entries import BLAS_NORM, EXACT_NORM, content_digest, units
from sembed_cli.models.model_identity import of_sentence_model

pytest.importorskip("faiss")

CITIES = [
    "Springfield",
    "Riverside",
    "Fairview",
    "Franklin",
    "Greenville",
    "Bristol",
    "Clinton",
    "Salem",
    "Madison",
    "Georgetown",
    "Arlington",
    "Ashland",
    "Burlington",
    "Manchester",
    "Milton",
    "Newport",
]


def city_records() -> str:
    return jsonl(*({"id": f"c{i}", "text": t, "country": "US"} for i, t in enumerate(CITIES)))


@pytest.fixture(scope="module")
def index_dir(tiny_model, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("index") / "cities"
    run = sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(out), input=city_records())
    assert run.exit_code == 0, run.stderr
    return out


def test_index_directory_holds_index_records_and_metadata(index_dir, tiny_model):
    assert sorted(p.name for p in index_dir.iterdir()) == ["index.faiss", "records.sqlite", "sembed.json"]
    meta = json.loads((index_dir / "sembed.json").read_text())
    assert meta["model"] == tiny_model and meta["dimension"] == TINY_DIM and meta["type"] == "flat"
    assert meta["count"] == len(CITIES) and meta["embedding_model"] == str(of_sentence_model(tiny_model))
    assert meta["settings"]["factory"] == "IDMap2,Flat" and meta["settings"]["ids"] == "given"
    with VectorIndex.load(index_dir) as index:
        assert index.records([0, 15]) == {
            0: ("c0", {"id": "c0", "text": "Springfield", "country": "US"}),
            15: ("c15", {"id": "c15", "text": "Newport", "country": "US"}),
        }


def test_rows_beyond_ascii_read_back_exactly_and_a_changed_byte_of_one_is_caught(tiny_model, tmp_path):
    """A search reads each row's id and hash as SQLite's bytes, through a memory map, and compares them with the
    check written from Python's strings: the same CRC for ids and texts beyond ASCII, and a changed byte in one is
    still an error naming the row."""
    named = ["Zürich", "東京", "São Paulo 🚉", "Kraków"]
    out = tmp_path / "idx"
    given = [{"id": name, "text": f"{name} · centre", "note": "ü"} for name in named]
    run = sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(out), input=jsonl(*given))
    assert run.exit_code == 0, run.stderr
    assert sembed("index", "--check", str(out)).exit_code == 0
    with VectorIndex.load(out) as index:
        assert index.store.db.execute("PRAGMA mmap_size").fetchone()[0] > 0
        assert index.records(range(len(named))) == {row: (record["id"], record) for row, record in enumerate(given)}
    data = bytearray((out / "records.sqlite").read_bytes())
    data[data.index("東京 · centre".encode()) + 1] ^= 0x01  # still valid UTF-8 and JSON: only the check can tell
    (out / "records.sqlite").write_bytes(bytes(data))
    with VectorIndex.load(out) as index, pytest.raises(SembedError, match="row 1 does not match its check"):
        index.records([1])


def test_lookups_of_more_rows_or_ids_than_one_statement_asks_for_find_them_all(index_dir):
    """The store asks for up to LOOKUP rows (or ids) a statement, fewer where SQLite allows fewer host parameters:
    a lookup over several statements finds each row once, in any order, duplicates and -1 left out."""
    from sembed_cli.indexes import store

    with VectorIndex.load(index_dir) as index:
        records = cast(store.RecordStore, index.store)
        assert records.chunk == min(store.LOOKUP, records.db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
        asked = [15, -1, 3, 3, 0, 7, 15, 11, 2, 9, 1]
        whole = index.records(asked)
        ids = [f'"c{n}"' for n in (4, 8, 99, 1, 12)]
        found = records.find(ids)
        records.chunk = 3
        assert index.records(asked) == whole and records.find(ids) == found
    assert sorted(whole) == [0, 1, 2, 3, 7, 9, 11, 15] and whole[9] == (
        "c9",
        {"id": "c9", "text": CITIES[9], "country": "US"},
    )
    assert sorted(row for row, _, _ in found.values()) == [1, 4, 8, 12]


def test_search_finds_each_name_first_with_cosine_one(index_dir):
    run = sembed(
        "search",
        "-q",
        "--index",
        str(index_dir),
        "--device",
        "cpu",
        "--k",
        "3",
        input=jsonl({"text": "Salem", "q": 1}, {"text": "Madison"}),
    )
    assert run.exit_code == 0, run.stderr
    first = run.records[0]
    assert list(first) == ["text", "q", "neighbors"] and len(first["neighbors"]) == 3
    assert first["neighbors"][0]["id"] == "c7" and first["neighbors"][0]["text"] == "Salem"
    assert first["neighbors"][0]["score"] == pytest.approx(1.0, abs=1e-5)
    assert list(first["neighbors"][0]) == ["id", "text", "score"]
    assert run.records[1]["neighbors"][0]["id"] == "c8"


def test_search_with_payload_and_more_neighbours_than_records(index_dir):
    run = sembed(
        "search",
        "-q",
        "--index",
        str(index_dir),
        "--device",
        "cpu",
        "--k",
        "50",
        "--payload",
        input=jsonl({"text": "Salem"}),
    )
    neighbors = run.records[0]["neighbors"]
    assert len(neighbors) == len(CITIES)
    assert neighbors[0]["payload"] == {"id": "c7", "text": "Salem", "country": "US"}


def test_search_takes_embeddings_and_index_takes_them_too(index_dir, tiny_model, tmp_path):
    embedded = sembed("embed", "-q", "-m", tiny_model, "--device", "cpu", input=city_records())
    run = sembed("search", "-q", "--index", str(index_dir), "--device", "cpu", "--k", "1", input=embedded.stdout)
    assert [r["neighbors"][0]["id"] for r in run.records] == [f"c{i}" for i in range(len(CITIES))]
    out = tmp_path / "from-vectors"
    indexed = sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(out), input=embedded.stdout)
    assert indexed.exit_code == 0
    assert json.loads((out / "sembed.json").read_text())["settings"]["source"] == "embeddings"
    with VectorIndex.load(out) as index:
        assert "embedding" not in index.records([0])[0][1] and "embedding_model" not in index.records([0])[0][1]


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_types(tiny_model, tmp_path, kind):
    out = tmp_path / kind
    many = jsonl(*({"text": f"{a} {b}"} for a in CITIES for b in CITIES[:5]))
    assert (
        sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "--type", kind, "-o", str(out), input=many).exit_code
        == 0
    )
    assert json.loads((out / "sembed.json").read_text())["type"] == kind
    run = sembed(
        "search", "-q", "--index", str(out), "--device", "cpu", "--k", "3", input=jsonl({"text": "Salem Franklin"})
    )
    hits = {n["text"]: n for n in run.records[0]["neighbors"]}  # the tiny random model puts some names very close
    assert hits["Salem Franklin"]["id"] == content_digest("Salem Franklin", None)  # no id given: a hash of the text
    assert hits["Salem Franklin"]["score"] == pytest.approx(1.0, abs=1e-5)


def test_a_wider_hnsw_search_finds_what_the_index_own_breadth_misses():
    """VectorIndex.search(ef_search=E) searches an HNSW graph E wide for that call only (the POI vote's 128), never
    narrower than the index's own breadth."""
    import numpy as np

    from sembed_cli.indexes import kinds
    from sembed_cli.indexes.directory import LegacyRecords
    from sembed_cli.indexes.entries import unit_rows

    vectors = unit_rows(np.random.default_rng(0).standard_normal((3000, 32)))
    graph = kinds.create(kinds.choose("hnsw", 3000, 32), 32)
    graph.add(vectors)
    graph.hnsw.efSearch = 1
    index = VectorIndex(
        Path("graph"), graph, LegacyRecords(list(range(3000)), [{}] * 3000), {"type": "hnsw", "dimension": 32}
    )
    queries = vectors[:200] + 0.5 * unit_rows(np.random.default_rng(1).standard_normal((200, 32)))
    exact = np.argsort(-(unit_rows(queries) @ vectors.T), axis=1)[:, :10]

    def recall(rows):
        return np.mean([len(set(found) & set(true)) / 10 for found, true in zip(rows, exact)])

    narrow, wide = index.search(queries, 10)[1], index.search(queries, 10, ef_search=256)[1]
    assert recall(narrow) < 0.9 < recall(wide)
    assert graph.hnsw.efSearch == 1  # the wider breadth was for that call only
    graph.hnsw.efSearch = 256
    assert (index.search(queries, 10, ef_search=1)[1] == wide).all()  # a narrower one is ignored


@pytest.mark.slow
@pytest.mark.subprocess
def test_reloads_in_a_new_process(index_dir):
    result = subprocess.run(
        [sys.executable, "-m", "sembed_cli", "search", "-q", "--index", str(index_dir), "--device", "cpu", "--k", "1"],
        input=jsonl({"text": "Newport"}),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
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
    queries = jsonl({"text": "Salem"}, {"embedding": [0.1] * 5})
    quiet = sembed("search", "-q", "--index", str(index_dir), "--device", "cpu", input=queries)
    run = sembed("search", "--index", str(index_dir), "--device", "cpu", input=queries)
    assert run.exit_code == quiet.exit_code == 1 and len(run.records) == 1 and quiet.records == run.records
    identity = json.loads((index_dir / "sembed.json").read_text())["embedding_model"]
    assert run.stderr.splitlines() == [
        f"searching 16 vectors (flat) of {identity}",
        f"warning: query vectors without embedding_model: taken to be of the index's model '{identity}'",
        f"error: <stdin>:2: 'embedding' has 5 dimensions, the index {TINY_DIM}: the query was embedded with another "
        f"model than '{identity}'",
    ]
    assert quiet.stderr.splitlines() == run.stderr.splitlines()[2:]  # -q: the error only


def test_searching_in_batches_keeps_order_and_writes_every_batch_before_a_bad_record(index_dir):
    queries = [{"text": name, "n": i} for i, name in enumerate(CITIES * 2)]
    run = sembed(
        "search",
        "-q",
        "--index",
        str(index_dir),
        "--device",
        "cpu",
        "--k",
        "1",
        "--batch-size",
        "3",
        input=jsonl(*queries, {"text": ""}, {"text": "Salem"}),
    )
    assert run.exit_code == 1 and run.stderr.startswith(f"error: <stdin>:{len(queries) + 1}: ")
    assert [r["n"] for r in run.records] == list(range(len(queries)))  # the batches before it, in order
    assert [r["neighbors"][0]["text"] for r in run.records] == CITIES * 2


def test_index_refuses_to_overwrite_without_force(index_dir, tiny_model):
    run = sembed("index", "-m", tiny_model, "--device", "cpu", "-o", str(index_dir), input=city_records())
    assert run.exit_code == 1
    assert run.stderr.strip() == (
        f"error: {index_dir} already exists (hint: pass --force to replace it, or choose another -o)"
    )
    again = sembed(
        "index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(index_dir), "--force", input=city_records()
    )
    assert again.exit_code == 0


def test_missing_index_and_bad_type(tmp_path):
    run = sembed("search", "--index", str(tmp_path), input=jsonl({"text": "x"}))
    assert run.exit_code == 1
    assert run.stderr.strip() == f"error: no sembed index at '{tmp_path}' (hint: build one with sembed index -o DIR)"
    run = sembed("index", "--type", "kdtree", "-o", str(tmp_path / "i"), input=jsonl({"text": "x"}))
    assert run.exit_code == 2
    assert "'kdtree' is not one of auto, flat, hnsw, ivf, ivfpq, nor a FAISS factory string" in run.stderr


# --- index --update: a nightly re-index embeds only what is new, and equals a full rebuild ---------------------


def rows(names: list[str], start: int = 0) -> list[dict]:
    return [{"id": f"c{start + i}", "text": t, "n": start + i} for i, t in enumerate(names)]


def neighbours(index: Path, queries: list[str], k: int = 5) -> list[list[tuple]]:
    run = sembed(
        "search",
        "-q",
        "--index",
        str(index),
        "--device",
        "cpu",
        "--k",
        str(k),
        input=jsonl(*({"text": q} for q in queries)),
    )
    assert run.exit_code == 0, run.stderr
    return [[(n["id"], n["text"], n["score"]) for n in r["neighbors"]] for r in run.records]


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_update_adds_new_replaces_changed_skips_unchanged_and_equals_a_rebuild(tiny_model, tmp_path, kind):
    """For every type the update adds the new and changed rows and removes the replaced ones, without rebuilding:
    it answers as a fresh build over the same records does (the same neighbours, also for HNSW and IVF)."""
    names = [f"{a} {b}" for a in CITIES for b in CITIES[:5]]  # 80: enough for IVF's cells
    first, later = rows(names[:60]), rows(names[40:], 40)  # 20 indexed again, 20 new
    later[3]["text"] = "Springfield changed"  # c43: a changed text
    index = tmp_path / "updated"
    assert (
        sembed(
            "index", "-q", "-m", tiny_model, "--device", "cpu", "--type", kind, "-o", str(index), input=jsonl(*first)
        ).exit_code
        == 0
    )
    run = sembed("index", "--update", str(index), "--device", "cpu", input=jsonl(*later))
    assert run.exit_code == 0, run.stderr
    assert "20 new, 1 changed, 19 unchanged record(s); 80 in all" in run.stderr
    assert "embedded 21 texts" in run.stderr  # only the new and the changed
    meta = json.loads((index / "sembed.json").read_text())
    assert meta["count"] == 80 and meta["type"] == kind
    assert (meta["data"]["records"], meta["data"]["skipped"], meta["data"]["repeated"]) == (40, 0, 0)  # this input's
    assert meta["data"]["update"] == {
        "previous_count": 60,
        "added": 20,
        "replaced": 1,
        "unchanged": 19,
        "repeated": 0,
        "removed_missing": 0,
        "folded": 21,  # more than 2% of the rows: the new rows went into FAISS at once (indexes/fresh.py)
        "previous_sha256": meta["data"]["update"]["previous_sha256"],
    }
    rebuilt = tmp_path / "rebuilt"
    everything = first[:40] + later  # in the update's order: the indexed rows, then the new ones
    assert (
        sembed(
            "index",
            "-q",
            "-m",
            tiny_model,
            "--device",
            "cpu",
            "--type",
            kind,
            "-o",
            str(rebuilt),
            input=jsonl(*everything),
        ).exit_code
        == 0
    )
    with VectorIndex.load(index) as updated, VectorIndex.load(rebuilt) as fresh:
        assert sorted(map(repr, updated.records(range(updated.row_count)).values())) == sorted(
            map(repr, fresh.records(range(fresh.row_count)).values())
        )
        assert updated.row_count == 81 and updated.count == 80  # c43's old row is gone, its new one at the end
    queries = ["Salem Franklin", "Springfield changed", "Bristol Clinton", "Ashland", "Milton Fairview"]
    for updated, fresh in zip(neighbours(index, queries), neighbours(rebuilt, queries)):
        assert [n[:2] for n in updated] == [n[:2] for n in fresh]
        assert [n[2] for n in updated] == pytest.approx([n[2] for n in fresh], abs=1e-5)


@pytest.mark.parametrize("norm", [EXACT_NORM, BLAS_NORM])
def test_a_batch_of_vectors_is_made_unit_bit_for_bit_as_one_at_a_time(norm):
    """A build makes a batch's vectors unit together (entries.units); an entry's hash is of the unit vector's
    float16 bytes, so a record must come out the same in a batch of one (`-b 1`, the last records of an input) as
    among thousands, or its hash and derived id would depend on where it stood."""
    import numpy as np

    rng = np.random.default_rng(8)
    for scale, width in ((1e-20, 37), (1e-3, 256), (1.0, 384), (1e15, 1024), (1.0, 5000)):  # 5000: past a pairwise
        matrix = (rng.standard_normal((300, width)) * scale).astype(np.float32)  # sum's blocks of 128 and 8192
        assert units(matrix, norm).tobytes() == np.concatenate([units(row[None], norm) for row in matrix]).tobytes()


@pytest.mark.subprocess
def test_the_hashed_unit_vector_is_the_same_whatever_blas_and_simd_the_machine_has(tmp_path):
    """The norm of a hashed vector (EXACT_NORM) is summed by numpy in float64, not by BLAS: a child process forced
    onto another OpenBLAS kernel (Sandybridge: AVX, which every x86-64 machine sembed runs on has) and onto numpy's
    baseline SIMD makes the same bytes. The float32 dot product of indexes built before (BLAS_NORM) does not, which
    shows the child's kernel is another."""
    import numpy as np

    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__  # type: ignore[no-redef]
    matrix = (np.random.default_rng(4).standard_normal((2_000, 256)) * 0.05).astype(np.float32)
    np.save(tmp_path / "matrix.npy", matrix)
    child = (
        "import sys, numpy as np\n"
        "from sembed_cli.indexes.entries import units, EXACT_NORM, BLAS_NORM\n"
        "m = np.load(sys.argv[1])\n"
        "np.save(sys.argv[2], np.stack([units(m, EXACT_NORM), units(m, BLAS_NORM)]))\n"
    )
    env = {
        **os.environ,
        "OPENBLAS_CORETYPE": "Sandybridge",
        "NPY_DISABLE_CPU_FEATURES": " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f)),
    }
    run = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path / "matrix.npy"), str(tmp_path / "out.npy")],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    exact, blas = np.load(tmp_path / "out.npy")
    assert exact.tobytes() == units(matrix, EXACT_NORM).tobytes()
    if blas.tobytes() == units(matrix, BLAS_NORM).tobytes():
        pytest.skip("this numpy's BLAS is not an OpenBLAS that OPENBLAS_CORETYPE moves to another kernel")


def test_update_with_vectors_and_nothing_new(tiny_model, tmp_path):
    embedded = sembed("embed", "-q", "-m", tiny_model, "--device", "cpu", input=city_records()).stdout
    index = tmp_path / "idx"
    assert sembed("index", "-q", "-o", str(index), input=embedded).exit_code == 0
    before = (index / "index.faiss").read_bytes()
    run = sembed("index", "--update", str(index), input=embedded)
    assert run.exit_code == 0, run.stderr
    assert f"0 new, 0 changed, {len(CITIES)} unchanged record(s)" in run.stderr
    assert (index / "index.faiss").read_bytes() == before


def test_a_failed_update_leaves_the_index_intact(tiny_model, tmp_path):
    from sembed_cli.models.model_identity import FIELD

    index = tmp_path / "idx"
    assert (
        sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(index), input=city_records()).exit_code
        == 0
    )
    files = {p.name: p.read_bytes() for p in index.iterdir()}
    bad = sembed(
        "index",
        "--update",
        str(index),
        "--device",
        "cpu",
        input=jsonl({"id": "x", "text": "Paris"}, {"id": "y", "text": ""}),
    )
    assert bad.exit_code == 1 and bad.stderr == "error: <stdin>:2: empty text in 'text'\n"
    other = sembed(
        "index",
        "--update",
        str(index),
        input=jsonl({"id": "z", "embedding": [0.5] * TINY_DIM, FIELD: "other@0123456789ab"}),
    )
    assert other.exit_code == 1
    assert other.stderr == (
        f"error: the records' vectors are of 'other@0123456789ab', but the index at '{index}' "
        f"holds vectors of '{of_sentence_model(tiny_model)}' (hint: embed them with the index's "
        "model, or build a new index)\n"
    )
    no_id = sembed("index", "--update", str(index), input=jsonl({"text": "Paris"}))
    assert no_id.exit_code == 1
    assert no_id.stderr == "error: <stdin>:1: missing key 'id' (the index finds its records by the id they bring)\n"
    assert {p.name: p.read_bytes() for p in index.iterdir()} == files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # no temporary directory left


def test_an_update_holds_the_index_from_reading_it_to_replacing_it(tiny_model, tmp_path):
    """Two nightly updates at once: the second refuses before reading the index, so neither loses the other's
    records (an update merges into the index it read)."""
    import fcntl

    index = tmp_path / "idx"
    assert (
        sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(index), input=city_records()).exit_code
        == 0
    )
    files = {p.name: p.read_bytes() for p in index.iterdir()}
    with open(tmp_path / ".idx.lock", "w") as held:  # another update is running
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("4242\n")
        held.flush()
        run = sembed("index", "--update", str(index), input=jsonl({"id": "x", "text": "Paris"}))
    assert run.exit_code == 1
    assert run.stderr.startswith(f"error: {index} is being written by another run (process 4242)")
    assert {p.name: p.read_bytes() for p in index.iterdir()} == files
    run = sembed("index", "-q", "--update", str(index), input=jsonl({"id": "x", "text": "Paris"}))
    assert run.exit_code == 0, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # the lock goes with the run that held it


def test_update_and_output_usage(tmp_path):
    run = sembed("index", input=jsonl({"text": "x"}))
    assert run.exit_code == 2 and "give the index directory: -o DIR for a new index, or --update DIR" in run.stderr
    run = sembed("index", "--update", str(tmp_path), input=jsonl({"text": "x"}))
    assert run.exit_code == 1
    assert run.stderr == f"error: no sembed index at '{tmp_path}' (hint: build one with sembed index -o DIR)\n"


# --- damaged indexes and command-line queries -------------------------------------------------------------------


@pytest.mark.parametrize(
    "metadata, problem",
    [
        ("[1, 2]", "sembed.json is not a JSON object"),
        ("{}", f"sembed.json gives dimension None, but the index holds {TINY_DIM}-d vectors"),
        (
            '{"dimension": 7, "model": "m", "type": "flat"}',
            f"sembed.json gives dimension 7, but the index holds {TINY_DIM}-d vectors",
        ),
        (f'{{"dimension": {TINY_DIM}, "type": "flat"}}', "sembed.json has no 'model' string"),
        (
            f'{{"dimension": {TINY_DIM}, "model": "m", "type": "flat", "embedding_model": "x"}}',
            "sembed.json has an 'embedding_model' that is not NAME@DIGEST: 'x'",
        ),
    ],
)
def test_damaged_index_metadata_is_a_clear_error(index_dir, tmp_path, metadata, problem):
    """sembed.json's content checked, in an index written before checksums (which would find any change first:
    tests/test_reliability.py)."""
    damaged = tmp_path / "damaged"
    shutil.copytree(index_dir, damaged)
    without_checksums(damaged)
    (damaged / "sembed.json").write_text(metadata)
    run = sembed("search", "--index", str(damaged), "--query", "Salem")
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: damaged index at '{damaged}': {problem} (hint: rebuild it with sembed index -o DIR --force)\n"
    )


def test_truncated_index_files_are_a_clear_error(index_dir, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(index_dir, damaged)
    without_checksums(damaged)
    (damaged / "sembed.json").write_text('{"model": ')
    run = sembed("search", "--index", str(damaged), "--query", "Salem")
    assert run.exit_code == 1 and run.stderr.startswith(f"error: damaged index at '{damaged}': sembed.json is not JSON")
    shutil.copy(index_dir / "sembed.json", damaged / "sembed.json")
    (damaged / "records.sqlite").write_bytes(b"not a database" * 100)
    run = sembed("search", "--index", str(damaged), "--query", "Salem")
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: unreadable index at '{damaged}': records.sqlite: file is not a database "
        "(hint: rebuild it with sembed index -o DIR --force)\n"
    )


def test_query_texts_on_the_command_line(index_dir):
    run = sembed(
        "search",
        "-q",
        "--index",
        str(index_dir),
        "--device",
        "cpu",
        "--k",
        "1",
        "--query",
        "Salem",
        "--query",
        "Newport",
    )
    assert run.exit_code == 0, run.stderr
    assert [(r["text"], r["neighbors"][0]["id"]) for r in run.records] == [("Salem", "c7"), ("Newport", "c15")]
    run = sembed("search", "--index", str(index_dir), "--device", "cpu", "--query", "Salem", "--query", " ")
    assert run.exit_code == 1 and len(run.records) == 1
    assert run.stderr.splitlines()[-1] == "error: --query:2: empty text in 'text'"
    run = sembed("search", "--index", str(index_dir), "--query", "Salem", "queries.jsonl")
    assert run.exit_code == 2
    assert "Invalid value for '--query': either query records (INPUT) or --query texts, not both" in run.stderr


# --- search as a library function (indexes/search.py), without the CLI ----------------------------------------


def test_search_stream_answers_query_texts_from_the_command_line_without_the_cli(index_dir, tmp_path):
    from sembed_cli.indexes.search import SearchSettings, search_stream
    from sembed_cli.io import StreamOptions

    out = tmp_path / "found.jsonl"
    with VectorIndex.load(index_dir) as index:
        count = search_stream(
            StreamOptions(output=str(out)), index, SearchSettings(k=2, device="cpu"), ["Salem", "Madison"]
        )
    found = [json.loads(line) for line in out.read_text().splitlines()]
    assert count == 2 and [record["text"] for record in found] == ["Salem", "Madison"]
    assert [len(record["neighbors"]) for record in found] == [2, 2] and found[0]["neighbors"][0]["id"] == "c7"


def test_command_line_queries_are_a_record_reader_with_the_skip_errors_policy():
    from sembed_cli.errors import BadRecord, SembedError
    from sembed_cli.indexes.search import CommandLineQueries
    from sembed_cli.io import RecordReader

    def check(record: dict) -> None:
        if not record["q"].strip():
            raise BadRecord("empty text in 'q'")

    queries: RecordReader = CommandLineQueries(["a", " ", "b"], "q", skip_errors=True)
    assert list(queries.checked(check)) == [{"q": "a"}, {"q": "b"}] and queries.path is None
    assert "1" in (queries.summary() or "")
    with pytest.raises(SembedError, match="empty text"):
        list(CommandLineQueries(["a", " "], "q").checked(check))


def test_query_vectors_refuse_another_dimension_and_keep_the_checked_array(index_dir):
    from sembed_cli.errors import BadRecord
    from sembed_cli.indexes.search import QueryVectors

    with VectorIndex.load(index_dir) as index:
        vectors = QueryVectors("embedding", index.dimension, "tiny", index.identity)
    record = {"embedding": [1.0] * TINY_DIM, "embedding_model": str(index.identity)}
    vectors.check(record)
    assert vectors.take(record).dtype.name == "float32" and len(vectors.take(record)) == TINY_DIM
    with pytest.raises(BadRecord, match=f"'embedding' has 2 dimensions, the index {TINY_DIM}"):
        vectors.check({"embedding": [1.0, 2.0]})


def test_search_k_is_the_neighbour_count_and_a_field_name_after_it_is_refused(index_dir):
    run = sembed(
        "search", "-q", "--index", str(index_dir), "--device", "cpu", "-k", "3", input=jsonl({"text": "Salem"})
    )
    assert run.exit_code == 0, run.stderr
    assert len(run.records[0]["neighbors"]) == 3 and "3" not in run.records[0]
    run = sembed(
        "search",
        "-q",
        "--index",
        str(index_dir),
        "--device",
        "cpu",
        "--text-key",
        "q",
        "-k",
        "2",
        input=jsonl({"q": "Salem"}),
    )
    assert run.exit_code == 0, run.stderr
    assert [n["id"] for n in run.records[0]["neighbors"]][:1] == ["c7"] and len(run.records[0]["neighbors"]) == 2
    run = sembed("search", "-q", "--index", str(index_dir), "-k", "q", input=jsonl({"q": "Salem"}))
    assert run.exit_code == 2 and run.stdout == ""
    assert (
        "'q' is not a count: in search -k is the number of neighbours; the query's text field is --text-key"
        in " ".join(run.stderr.split())
    )


# --- an index on a read-only volume (issue 37.1) ------------------------------------------------------------------

READ_ONLY_QUERIES = [{"text": "Springfield"}, {"text": "Riverside park"}]


def read_only_index(tiny_model, tmp_path) -> tuple[Path, str]:
    index = tmp_path / "ro" / "idx"
    built = sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(index), input=jsonl(*rows(CITIES)))
    assert built.exit_code == 0, built.stderr
    searched = sembed(
        "search", "-q", "--index", str(index), "-k", "3", "--device", "cpu", input=jsonl(*READ_ONLY_QUERIES)
    )
    assert searched.exit_code == 0, searched.stderr
    return index, searched.stdout


def listing(directory: Path) -> list[tuple[str, int]]:
    return sorted((p.name, p.stat().st_mtime_ns) for p in directory.iterdir())


@pytest.mark.subprocess
def test_search_and_merge_read_an_index_on_a_read_only_mount(tiny_model, tmp_path):
    """A read-only bind mount (in a mount namespace of its own: nothing outside sees it): search answers as on a
    writable disk and index merge reads indexes there as its pieces, with no file written there."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare to make a read-only mount with")
    index, expected = read_only_index(tiny_model, tmp_path)
    other = index.parent / "other"
    more = [{"id": f"m{n}", "text": f"{city} harbour"} for n, city in enumerate(CITIES[:5])]
    assert (
        sembed("index", "-q", "-m", tiny_model, "--device", "cpu", "-o", str(other), input=jsonl(*more)).exit_code == 0
    )
    volume = index.parent
    before = {path.name: listing(path) for path in (index, other)}
    (tmp_path / "queries.jsonl").write_text(jsonl(*READ_ONLY_QUERIES))
    sembed_bin = f"{sys.executable} -m sembed_cli"
    script = (
        f"mount --bind {volume} {volume} && mount -o remount,ro,bind {volume} || exit 99\n"
        f"touch {volume}/probe 2>/dev/null && exit 98\n"  # the mount must refuse a write
        f"{sembed_bin} search -q --index {index} -k 3 --device cpu {tmp_path}/queries.jsonl > {tmp_path}/found.jsonl\n"
        f"{sembed_bin} index merge -q {index} {other} -o {tmp_path}/merged\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SEMBED_THREADS": "1"}
    run = subprocess.run(["unshare", "-rm", "sh", "-ec", script], capture_output=True, text=True, env=env)
    if run.returncode in (98, 99) or "unshare: " in run.stderr:
        pytest.skip(f"no read-only mount can be made here: {run.stderr.strip()[:200]}")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "found.jsonl").read_text() == expected
    assert {path.name: listing(path) for path in (index, other)} == before  # no -wal, no -shm, nothing touched
    with VectorIndex.load(tmp_path / "merged") as merged:
        assert merged.count == len(CITIES) + len(more)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a directory without write permission")
def test_search_reads_an_index_in_a_directory_the_user_may_not_write(tiny_model, tmp_path):
    index, expected = read_only_index(tiny_model, tmp_path)
    before = listing(index)
    for path in (index, *index.iterdir()):
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        found = sembed(
            "search", "-q", "--index", str(index), "-k", "3", "--device", "cpu", input=jsonl(*READ_ONLY_QUERIES)
        )
        assert found.exit_code == 0, found.stderr
        assert found.stdout == expected and listing(index) == before
    finally:
        for path in (index, *index.iterdir()):
            path.chmod(path.stat().st_mode | 0o200)


@pytest.mark.subprocess
def test_a_build_removes_the_folders_of_killed_runs_and_keeps_a_live_one(tiny_model, tmp_path):
    """Issue 37.5: `.DIR.tmp-PID` folders that killed builds left are removed by the next build or merge of DIR
    (their process gone from this host, or older than a day); one of a live process stays."""
    import time

    from sembed_cli.artifacts import STALE_AGE_S

    index = tmp_path / "idx"
    live = subprocess.Popen(["sleep", "60"])
    try:
        dead = tmp_path / ".idx.tmp-4194999"  # past any pid this host gives
        stale = tmp_path / f".idx.old-{live.pid}"  # live pid, but two days old: another host's, long dead
        running = tmp_path / f".idx.tmp-{live.pid}"
        for folder in (dead, stale, running):
            folder.mkdir()
            (folder / "index.faiss").write_bytes(b"half")
        past = time.time() - 2 * STALE_AGE_S
        os.utime(stale, (past, past))
        built = sembed("index", "-m", tiny_model, "--device", "cpu", "-o", str(index), input=jsonl(*rows(CITIES[:4])))
        assert built.exit_code == 0, built.stderr
        assert f"removing {dead}, left by a run that was killed" in built.stderr
        assert not dead.exists() and not stale.exists() and running.exists()
    finally:
        live.kill()
        live.wait()


def graph(model: str, directory: Path, records: list[dict]) -> None:
    """An HNSW index of `records` at `directory`."""
    run = sembed(
        "index", "-q", "-m", model, "--device", "cpu", "--type", "hnsw", "-o", str(directory), input=jsonl(*records)
    )
    assert run.exit_code == 0, run.stderr


def test_a_graph_compacts_its_removed_rows_in_the_update_that_crosses_the_share(tiny_model, tmp_path):
    """HNSW cannot remove a vertex: an update skips removed rows at search until they reach COMPACT_SHARE of the
    graph, then rebuilds it from the live rows in the same commit (rows keep their numbers); it answers as a fresh
    build over the same records, and later updates add and remove by id."""
    from sembed_cli.indexes import compaction

    names = [f"{a} {b}" for a in CITIES for b in CITIES[:5]]  # 80
    index = tmp_path / "graph"
    graph(tiny_model, index, rows(names))
    few = rows(names)[2:]  # 2 of 80 removed: under the share, filtered at search
    assert sembed("index", "-q", "--update", str(index), "--sync", input=jsonl(*few)).exit_code == 0
    with VectorIndex.load(index) as loaded:
        assert list(loaded.removed) == [0, 1] and loaded.index.ntotal == 80
    kept = rows(names)[12:] + rows(["Springfield new"], 80)  # 10 more removed: 12 of 81 >= 10%
    run = sembed("index", "--update", str(index), "--sync", "--device", "cpu", input=jsonl(*kept))
    assert run.exit_code == 0, run.stderr
    assert "compacted the graph: 12 removed rows purged, 69 rebuilt" in run.stderr
    assert json.loads((index / "sembed.json").read_text())["data"]["update"]["compacted"] == 12
    assert compaction.due(12, 81) and not compaction.due(2, 80)
    with VectorIndex.load(index) as loaded:
        assert len(loaded.removed) == 0 and loaded.index.ntotal == 69 and loaded.row_count == 81
        assert sorted(loaded.records(range(81))) == list(range(12, 81))  # rows keep their numbers
    fresh = tmp_path / "fresh"
    graph(tiny_model, fresh, kept)
    queries = ["Salem Franklin", "Springfield new", "Bristol Clinton", "Milton Fairview"]
    for updated, built in zip(neighbours(index, queries), neighbours(fresh, queries)):
        assert [n[:2] for n in updated] == [n[:2] for n in built]
    later = kept[1:] + rows(["Springfield newer"], 81)  # after compaction: removed by id, added by id
    assert (
        sembed("index", "-q", "--update", str(index), "--sync", "--device", "cpu", input=jsonl(*later)).exit_code == 0
    )
    with VectorIndex.load(index) as loaded:
        assert list(loaded.removed) == [12] and loaded.count == 69
        assert loaded.index.ntotal == 69 and loaded.fresh_start == 81  # the new row is fresh: FAISS was not rewritten
    assert [n[0] for n in neighbours(index, ["Springfield newer"], 1)[0]] == ["c81"]
    assert sembed("index", "--check", str(index)).exit_code == 0
    other = tmp_path / "other"
    graph(tiny_model, other, rows(["Gotham Metropolis"], 500))
    merged = tmp_path / "merged"
    run = sembed("index", "merge", str(index), str(other), "-o", str(merged))
    assert run.exit_code == 0, run.stderr
    with VectorIndex.load(merged) as loaded:
        assert loaded.count == 70 and list(loaded.removed) == [12] and loaded.index.ntotal == 71
    assert [n[0] for n in neighbours(merged, ["Gotham Metropolis", "Springfield newer"], 1)[0]] == ["c500"]
    assert [n[0] for n in neighbours(merged, ["Springfield newer"], 1)[0]] == ["c81"]


def test_texts_by_row_number_with_none_for_gaps_and_other_values(tiny_model, tmp_path, monkeypatch):
    from sembed_cli.indexes import directory

    monkeypatch.setattr(directory, "ROWS_CHUNK", 2)  # the payloads read over several chunks
    first = [{"id": 1, "text": "Lake Geneva", "name": "Geneva"}, {"id": 2, "text": "Mount Fuji", "name": 5}]
    first += [{"id": 3, "text": "Springfield"}, {"id": 4, "text": "Fuji", "name": "Fuji"}]
    built = sembed("index", "-m", tiny_model, "-o", str(tmp_path / "idx"), "-q", input=jsonl(*first))
    assert built.exit_code == 0, built.stderr
    later = [first[0], first[2], first[3], {"id": 5, "text": "Bern", "name": "Bern"}]  # id 2 gone: a gap
    updated = sembed("index", "--update", str(tmp_path / "idx"), "--sync", "-q", input=jsonl(*later))
    assert updated.exit_code == 0, updated.stderr
    with VectorIndex.load(tmp_path / "idx") as index:
        assert index.texts("name") == ["Geneva", None, None, "Fuji", "Bern"]
        assert index.texts("text") == ["Lake Geneva", None, "Springfield", "Fuji", "Bern"]
