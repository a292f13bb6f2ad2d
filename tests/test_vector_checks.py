"""One check for every vector sembed reads (io.float32_vector / io.vector): each command that reads vectors, fed
each kind of bad vector on its second record, answers with the same one-line `error: FILE:LINE:` and loses
nothing before it."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import jsonl, sembed

pytest.importorskip("faiss")

MODEL = "synthetic@0123456789ab"
GOOD = [0.5, 0.25, -0.5, 1.0]

BAD = {  # (the vector, the message after "'KEY' ")
    "a string": (["0.5", 0.25, -0.5, 1.0], "must be a list of numbers, found a string"),
    "a boolean": ([True, 0.25, -0.5, 1.0], "must be a list of numbers, found a boolean"),
    "null": ([0.5, None, -0.5, 1.0], "must be a list of numbers, found null"),
    "past float32": ([0.5, 0.25, 1e39, 1.0], "has a value at index 2 past float32's range (about 3.4e38)"),
    "not a list": ({"x": 1}, "must be a list of numbers, got an object"),
    "empty": ([], "is an empty list"),
    "all zeros": ([0.0, 0.0, 0.0, 0.0], "is a zero vector (cosine undefined)"),
    "another dimension": ([0.5, 0.25, -0.5], None),
}

DIMENSION = {  # each reader's words for a vector of another size than the records before it
    "index": "'embedding' has 3 dimensions, expected 4",
    "search": f"'embedding' has 3 dimensions, the index 4: the query was embedded with another model than '{MODEL}'",
    "eval sts": "'embedding_b' has 4 dimensions, 'embedding_a' has 3",  # a pair's two sides first
    "eval entailment": "'embedding_b' has 4 dimensions, 'embedding_a' has 3",
    "eval classify": "'embedding' has 3 dimensions, earlier records 4",
}
COSINE = {"index", "search", "eval sts"}  # the readers that take a cosine of the vector


def single(vector, n: int) -> dict:
    return {"id": n, "text": f"t{n}", "embedding": vector, "embedding_model": MODEL, "label": "ab"[n % 2]}


def pair(vector, n: int) -> dict:
    return {
        "id": n,
        "embedding_a": vector,
        "embedding_b": GOOD,
        "embedding_model": MODEL,
        "score": n % 5,
        "label": "ab"[n % 2],
    }


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("vectors") / "index"
    rows = [single(np.random.default_rng(n).standard_normal(4).tolist(), n) for n in range(20)]
    assert sembed("index", "-q", "-o", str(path), input=jsonl(*rows)).exit_code == 0
    return path


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("command", list(DIMENSION))
def test_every_command_that_reads_vectors_refuses_each_bad_vector_alike(command, case, index_dir, tmp_path):
    vector, message = BAD[case]
    if case == "all zeros" and command not in COSINE:
        pytest.skip("a zero vector is a fine feature vector where no cosine is taken")
    key = "embedding_a" if command in ("eval sts", "eval entailment") else "embedding"
    make = pair if key == "embedding_a" else single
    records = [make(GOOD, 1), make(vector, 2), make(GOOD, 3)]
    args = {
        "index": ["index", "-o", str(tmp_path / "i")],
        "search": ["search", "--index", str(index_dir)],
        "eval sts": ["eval", "sts"],
        "eval entailment": ["eval", "entailment"],
        "eval classify": ["eval", "classify"],
    }[command]
    run = sembed(*args, "-q", input=jsonl(*records))
    expected = DIMENSION[command] if message is None else f"'{key}' {message}"
    assert run.exit_code == 1
    assert run.stderr == f"error: <stdin>:2: {expected}\n"
    if command == "search":
        assert [r["id"] for r in run.records] == [1]  # the query before it is answered and written
    if command == "index":
        assert not (tmp_path / "i").exists()


@pytest.mark.parametrize(
    "row, message",
    [
        ([np.nan, 0.2, 0.3, 0.4], "'embedding' has a NaN or infinite value at index 0"),
        ([0.0, 0.0, 0.0, 0.0], "'embedding' is a zero vector (cosine undefined)"),
    ],
)
def test_a_bad_row_of_an_npy_matrix_is_refused_with_the_record_that_names_it(row, message, tmp_path):
    import json

    matrix = np.array([GOOD, row, GOOD], dtype=np.float32)
    np.save(tmp_path / "v.npy", matrix)
    (tmp_path / "v.npy.json").write_text(json.dumps({"embedding_model": MODEL}))
    records = [{"id": n, "text": f"t{n}", "embedding_row": n, "embedding_model": MODEL} for n in range(3)]
    run = sembed("index", "-q", "--npy", str(tmp_path / "v.npy"), "-o", str(tmp_path / "i"), input=jsonl(*records))
    assert (run.exit_code, run.stderr) == (1, f"error: <stdin>:2: {message}\n")


def test_rows_read_through_the_map_are_the_same_after_its_pages_are_let_go(tmp_path, monkeypatch):
    """An index build reads a matrix larger than memory through a map: every RELEASE_EVERY bytes its pages are
    let go (so the process does not count the whole file), and what it reads after is still the file's rows."""
    from sembed_cli import vector_rows

    matrix = np.random.default_rng(0).standard_normal((1000, 8)).astype(np.float16)
    np.save(tmp_path / "v.npy", matrix)
    monkeypatch.setattr(vector_rows, "RELEASE_EVERY", 3 * 1024)  # every 192 rows of 16 bytes
    released = []
    rows = vector_rows.RowVectors(tmp_path / "v.npy")
    real = rows.matrix._mmap.madvise
    monkeypatch.setattr(
        rows.matrix, "_mmap", type("Map", (), {"madvise": lambda self, *a: released.append(a) or real(*a)})()
    )
    for start in range(0, 1000, 100):
        wanted = np.arange(start, min(start + 100, 1000))[::-1]
        np.testing.assert_array_equal(rows.read(wanted), matrix[wanted].astype(np.float32))
    assert len(released) == 5
