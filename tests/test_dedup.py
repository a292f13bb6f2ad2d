"""sembed dedup: near-duplicate groups over a record stream or an index (issue 38, item 4)."""

from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from conftest import jsonl, sembed

from sembed_cli import api

TOY = "toy@0123456789ab"  # vectors of a made-up model


def unit(vector) -> list[float]:
    v = np.asarray(vector, dtype=np.float64)
    return (v / np.linalg.norm(v)).tolist()


def near(base: list[float], cosine: float, other_axis: int) -> list[float]:
    """A unit vector at exactly `cosine` to the unit vector `base`, turned towards axis `other_axis`."""
    b = np.asarray(base)
    axis = np.zeros(len(b))
    axis[other_axis] = 1.0
    axis -= axis.dot(b) * b
    axis /= np.linalg.norm(axis)
    return (cosine * b + math.sqrt(1 - cosine**2) * axis).tolist()


def records() -> list[dict]:
    """a ~ b (0.95), b ~ c (0.92) but a, c under 0.9; d alone; e ~ f (0.93); g alone."""
    a = unit([1, 0, 0, 0, 0, 0, 0, 0])
    b = near(a, 0.95, 1)
    c = near(b, 0.92, 2)
    d = unit([0, 0, 0, 1, 0, 0, 0, 0])
    e = unit([0, 0, 0, 0, 1, 0, 0, 0])
    f = near(e, 0.93, 5)
    g = unit([0, 0, 0, 0, 0, 0, 1, 1])
    names = "abcdefg"
    return [
        {"id": name, "text": f"text {name}", "embedding": vector, "embedding_model": TOY, "extra": {"keep": [1, 2]}}
        for name, vector in zip(names, [a, b, c, d, e, f, g])
    ]


def fields(out: list[dict]) -> list[tuple]:
    return [(r["id"], r["group"], r["representative"]) for r in out]


def test_groups_join_chains_and_name_their_first_record():
    run = sembed("dedup", "-q", input=jsonl(*records()))
    assert run.exit_code == 0, run.stderr
    out = run.records
    assert fields(out) == [
        ("a", 0, "a"),
        ("b", 0, "a"),
        ("c", 0, "a"),  # joined through b, though a-c is under the threshold
        ("d", None, None),
        ("e", 1, "e"),
        ("f", 1, "e"),
        ("g", None, None),
    ]
    scores = {r["id"]: r["score"] for r in out}
    assert scores["a"] == 1.0 and scores["d"] is None
    assert scores["b"] == pytest.approx(0.95, abs=2e-3)
    assert scores["c"] < 0.9  # its cosine to the representative, below the threshold: the chain is visible
    assert scores["f"] == pytest.approx(0.93, abs=2e-3)
    for given, written in zip(records(), out):  # pass-through fields untouched, in order
        assert {k: v for k, v in written.items() if k not in ("group", "representative", "score")} == given | {
            "embedding": written["embedding"]
        }


def test_threshold_and_keep():
    strict = sembed("dedup", "-q", "--threshold", "0.94", input=jsonl(*records())).records
    assert fields(strict)[:3] == [("a", 0, "a"), ("b", 0, "a"), ("c", None, None)]
    first = sembed("dedup", "-q", "--keep", "first", input=jsonl(*records())).records
    assert [r["id"] for r in first] == ["a", "d", "e", "g"]
    duplicates = sembed("dedup", "-q", "--keep", "duplicates", input=jsonl(*records())).records
    assert [r["id"] for r in duplicates] == ["a", "b", "c", "e", "f"]


def test_file_stdin_and_output_file_agree(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(jsonl(*records()))
    by_file = sembed("dedup", str(path), "-q")
    by_stdin = sembed("dedup", "-q", input=path.read_text())
    out = tmp_path / "out.jsonl"
    written = sembed("dedup", str(path), "-q", "-o", str(out))
    assert by_file.exit_code == by_stdin.exit_code == written.exit_code == 0
    assert by_file.stdout == by_stdin.stdout == out.read_text()
    again = sembed("dedup", str(path), "-q", "-o", str(out))
    assert again.exit_code == 1
    assert "already exists" in again.stderr and "--force" in again.stderr
    assert sembed("dedup", str(path), "-q", "-o", str(out), "--force").exit_code == 0
    same = sembed("dedup", str(path), "-q", "-o", str(path), "--force")
    assert same.exit_code == 1 and "is the input" in same.stderr


def test_records_without_ids_are_named_by_position():
    plain = [{k: v for k, v in r.items() if k != "id"} for r in records()]
    out = sembed("dedup", "-q", input=jsonl(*plain)).records
    assert [r["representative"] for r in out] == [0, 0, 0, None, 4, 4, None]


def test_bad_input_keeps_what_was_read_before_it():
    lines = jsonl(*records()[:3]) + '{"id": "x", "embedding": [1, "a"]}\n' + jsonl(*records()[3:])
    run = sembed("dedup", input=lines)
    assert run.exit_code == 1
    assert "<stdin>:4:" in run.stderr and "embedding" in run.stderr
    assert fields(run.records) == [("a", 0, "a"), ("b", 0, "a"), ("c", 0, "a")]
    skipped = sembed("dedup", "--skip-errors", input=lines)
    assert skipped.exit_code == 0
    assert [r["id"] for r in skipped.records] == list("abcdefg")
    assert "skipped 1 bad record(s) in <stdin>: line 4" in skipped.stderr


def test_vectors_of_two_models_or_dimensions_are_refused():
    two = records()[:2]
    two[0]["embedding_model"] = "m1@000000000001"
    two[1]["embedding_model"] = "m2@000000000002"
    run = sembed("dedup", input=jsonl(*two))
    assert run.exit_code == 1 and "<stdin>:2:" in run.stderr and "two models" in run.stderr
    short = records()[:2]
    short[1]["embedding"] = [1.0, 0.0]
    run = sembed("dedup", input=jsonl(*short))
    assert run.exit_code == 1 and "<stdin>:2:" in run.stderr and "dimensions" in run.stderr


def test_usage_errors():
    assert sembed("dedup", "--threshold", "1.5", input="").exit_code == 2
    assert sembed("dedup", "--keep", "some", input="").exit_code == 2
    both = sembed("dedup", "x.jsonl", "--index", "somewhere")
    assert both.exit_code == 2 and "not both" in both.stderr
    model = sembed("dedup", "--index", "somewhere", "--id-key", "name")
    assert model.exit_code == 2 and "not with --index" in model.stderr
    empty = sembed("dedup", input="")
    assert empty.exit_code == 1 and "no records in <stdin>" in empty.stderr


def random_corpus(count: int, planted: int, seed: int = 0) -> tuple[list[dict], np.ndarray]:
    """`count` random unit vectors in 16-d, then `planted` near-copies (cosine >= 0.97) of the first ones."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, 16))
    copies = vectors[:planted] + rng.normal(scale=0.1, size=(planted, 16))
    all_vectors = np.concatenate([vectors, copies])
    all_vectors /= np.linalg.norm(all_vectors, axis=1, keepdims=True)
    return [{"id": n, "embedding": v} for n, v in enumerate(all_vectors.round(6).tolist())], all_vectors


def test_inverted_lists_find_the_groups_exact_search_finds():
    corpus, vectors = random_corpus(4000, 200)
    exact = sembed("dedup", "-q", "--exact", input=jsonl(*corpus)).records
    approximate = sembed("dedup", "-q", "--approximate", input=jsonl(*corpus)).records
    assert [r["group"] for r in exact] == [r["group"] for r in approximate]
    pairs = {(r["representative"], r["id"]) for r in exact if r["group"] is not None and r["representative"] != r["id"]}
    assert {(n, 4000 + n) for n in range(200)} <= pairs  # every planted copy (and some pairs of 16-d noise)
    unit_vectors = vectors.astype(np.float32)
    for representative, member in pairs:
        assert unit_vectors[representative] @ unit_vectors[member] >= 0.9 - 2e-3


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_an_index_groups_as_its_records_do(tmp_path, kind):
    corpus = records()
    built = sembed("index", "-q", "--type", kind, "-o", str(tmp_path / "idx"), input=jsonl(*corpus))
    assert built.exit_code == 0, built.stderr
    from_index = sembed("dedup", "-q", "--index", str(tmp_path / "idx")).records
    assert fields(from_index) == fields(sembed("dedup", "-q", input=jsonl(*corpus)).records)
    assert "embedding" not in from_index[0] and from_index[0]["extra"] == {"keep": [1, 2]}  # records as stored


def test_an_index_without_ids_names_records_by_its_own_ids(tmp_path):
    plain = [{k: v for k, v in r.items() if k != "id"} for r in records()]
    assert sembed("index", "-q", "-o", str(tmp_path / "idx"), input=jsonl(*plain)).exit_code == 0
    out = sembed("dedup", "-q", "--index", str(tmp_path / "idx")).records
    assert out[1]["representative"] == out[0]["id"] and isinstance(out[0]["id"], str)  # the index's content hash


def test_api_gives_what_the_command_writes(tmp_path):
    corpus = records()
    command = sembed("dedup", "-q", "--keep", "first", input=jsonl(*corpus)).records
    assert api.dedup(corpus, keep="first") == command
    path = tmp_path / "in.jsonl"
    path.write_text(jsonl(*corpus))
    assert api.dedup(path, keep="first") == command
    assert corpus == records()  # the records given are left as they were
    with pytest.raises(Exception, match="one of the two"):
        api.dedup()


def test_texts_are_embedded_with_the_model(tiny_model, one_torch_thread):
    texts = [
        {"text": "A man is playing a guitar on the stage tonight."},
        {"text": "A man is playing a guitar on the stage tonight!"},
        {"text": "Interest rates rose again in the spring, economists said."},
    ]
    run = sembed("dedup", "-q", "-m", tiny_model, "--threshold", "0.97", input=jsonl(*texts))
    assert run.exit_code == 0, run.stderr
    out = run.records
    assert [r["group"] for r in out] == [0, 0, None]
    assert "embedding" not in out[0]  # the vectors are not written
    assert orjson.dumps(out[2]["text"]) == orjson.dumps(texts[2]["text"])


def test_a_text_past_the_window_is_bad_input_with_long_text_error(tiny_model, one_torch_thread):
    texts = [{"text": "A short sentence."}, {"text": " ".join(["word"] * 200)}, {"text": "Another one."}]
    run = sembed("dedup", "-m", tiny_model, "--long-text", "error", input=jsonl(*texts))
    assert run.exit_code == 1 and "<stdin>:2:" in run.stderr
    assert [r["text"] for r in run.records] == ["A short sentence."]  # what was read before it still comes out
