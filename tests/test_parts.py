"""Resumable parts: sembed embed --shard I/N --parts DIR, sembed parts DIR, sembed index DIR (sembed_cli/parts/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import jsonl, sembed

pytest.importorskip("faiss")

SENTENCES = [
    f"sentence {n}: {word} walks past the {thing}"
    for n, (word, thing) in enumerate(
        (w, t)
        for w in ("a dog", "the cat", "my aunt", "a child", "the mayor")
        for t in ("river", "shop", "hill", "gate")
    )
]


def corpus(tmp_path: Path, lines: list[str] | None = None) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text(jsonl(*({"id": n, "text": text} for n, text in enumerate(lines or SENTENCES))))
    return path


def embed_parts(source: Path, directory: Path, count: int, model: str, *extra: str, only=None) -> list:
    runs = []
    for index in only or range(1, count + 1):
        run = sembed(
            "embed", str(source), "--shard", f"{index}/{count}", "--parts", str(directory), "-m", model, *extra
        )
        assert run.exit_code == 0, run.stderr
        runs.append(run)
    return runs


def index_contents(path: Path) -> tuple[list, np.ndarray]:
    """An index's rows (id and payload, in row order) and their vectors."""
    from sembed_cli.indexes.directory import VectorIndex

    with VectorIndex.load(path) as index:
        rows = list(index.rows())
        return [(key, payload) for _, key, payload in rows], index.vectors_of(np.array([row for row, _, _ in rows]))


def test_parts_reassemble_into_the_one_process_output_and_index(tmp_path, tiny_model, one_torch_thread):
    source = corpus(tmp_path)
    embed_parts(source, tmp_path / "parts", 3, tiny_model)
    names = sorted(p.name for p in (tmp_path / "parts").iterdir())
    assert names == [f"part-000{i}-of-0003.{ext}" for i in (1, 2, 3) for ext in ("json", "jsonl", "npy", "npy.json")]
    manifest = orjson.loads((tmp_path / "parts" / "part-0002-of-0003.json").read_bytes())
    assert manifest["count"] == manifest["rows"] == 7 and manifest["dimension"] == 32 and manifest["skipped"] == []
    assert manifest["input"]["records"] == 20 and manifest["input"]["share_records"] == 7
    assert manifest["embedding_model"] == manifest["model"] and manifest["settings"]["model"] == tiny_model

    status = sembed("parts", str(tmp_path / "parts"))
    assert status.exit_code == 0 and [r["state"] for r in status.records] == ["done"] * 3
    assert [r["records"] for r in status.records] == [7, 7, 6] and "3 of 3 parts done" in status.stderr

    one = sembed("embed", str(source), "-m", tiny_model)
    cat = sembed("parts", str(tmp_path / "parts"), "--cat")
    assert cat.exit_code == 0 and cat.stdout == one.stdout  # byte for byte: same records, same order, same vectors

    (tmp_path / "one.jsonl").write_text(one.stdout)
    assert sembed("index", str(tmp_path / "one.jsonl"), "-o", str(tmp_path / "one-index")).exit_code == 0
    built = sembed("index", str(tmp_path / "parts"), "-o", str(tmp_path / "parts-index"))
    assert built.exit_code == 0, built.stderr
    rows, vectors = index_contents(tmp_path / "parts-index")
    one_rows, one_vectors = index_contents(tmp_path / "one-index")
    assert rows == one_rows and np.array_equal(vectors, one_vectors)


def test_a_rerun_skips_done_parts_and_redoes_missing_partial_and_stale_ones(tmp_path, tiny_model, one_torch_thread):
    source, parts = corpus(tmp_path), tmp_path / "parts"
    embed_parts(source, parts, 4, tiny_model)
    manifests = {i: parts / f"part-000{i}-of-0004.json" for i in range(1, 5)}
    before = {i: path.stat().st_mtime_ns for i, path in manifests.items()}

    skipped = embed_parts(source, parts, 4, tiny_model, only=[1])[0]
    assert "part-0001-of-0004 is done (5 records" in skipped.stderr and "skipped (--force redoes it)" in skipped.stderr
    assert manifests[1].stat().st_mtime_ns == before[1]

    manifests[2].unlink()  # killed after its data, before its manifest: missing
    (parts / ".part-0003-of-0004.jsonl.partial-otherhost-99999").write_text("{}\n")  # another host's writer's
    manifests[3].unlink()
    status = sembed("parts", str(parts))
    assert status.exit_code == 1 and [r["state"] for r in status.records] == ["done", "missing", "missing", "done"]
    assert status.records[1]["reason"] == "interrupted before its manifest"
    assert status.records[2]["reason"] == "interrupted: .part-0003-of-0004.jsonl.partial-otherhost-99999"
    assert "2 of 4 parts done; missing: 2, 3" in status.stderr

    refused = sembed("index", str(parts), "-o", str(tmp_path / "index"))
    assert refused.exit_code == 1 and not (tmp_path / "index").exists()
    assert refused.stderr.count("\n") == 1 and "2 of 4 parts done; missing: 2, 3" in refused.stderr

    embed_parts(source, parts, 4, tiny_model)
    assert sembed("parts", str(parts)).exit_code == 0
    assert manifests[1].stat().st_mtime_ns == before[1] and manifests[4].stat().st_mtime_ns == before[4]

    forced = embed_parts(source, parts, 4, tiny_model, "--force", only=[4])[0]
    assert "is done" not in forced.stderr and manifests[4].stat().st_mtime_ns != before[4]

    # another batch size is another request: the part is redone, and it is stale beside the others till then
    embed_parts(source, parts, 4, tiny_model, "--batch-size", "3", only=[1])
    status = sembed("parts", str(parts))
    assert status.exit_code == 1 and [r["state"] for r in status.records] == ["done", "stale", "stale", "stale"]
    assert status.records[1]["reason"] == "made with other settings (batch_size)"

    (parts / "part-0001-of-0004.npy").write_bytes(b"")
    reason = sembed("parts", str(parts)).records[0]["reason"]
    assert reason == "part-0001-of-0004.npy has 0 bytes, its manifest says 768"


def test_a_part_written_by_an_earlier_sembed_is_still_done(tmp_path, tiny_model, one_torch_thread):
    """Manifests written before the settings came from `PartSettings` named embed's command-line parameters (its
    other modes' too, --plain beside --explain): a part of the same settings is still done, not redone or stale."""
    source, parts = corpus(tmp_path), tmp_path / "parts"
    embed_parts(source, parts, 2, tiny_model, "--batch-size", "7")
    path = parts / "part-0001-of-0002.json"
    manifest = orjson.loads(path.read_bytes())
    assert manifest["settings"] == {
        "model": tiny_model,
        "cf_weight": None,
        "keep_parts": False,
        "explain": False,
        "long_text": "truncate",
        "batch_size": 7,
        "encode_batch_size": None,
        "precision": "auto",
        "backend": "torch",
        "quantize": "none",
        "text_keys": [],
        "lines": None,  # neither --lines nor --jsonl: the file's name decides
        "skip_errors": False,
    }
    manifest["settings"] = {  # as sembed wrote it before (issue 39)
        "text_keys": [],
        "batch_size": 7,
        "long_text": "truncate",
        "skip_errors": False,
        "lines": False,
        "model": tiny_model,
        "method": "model",
        "vectors": None,
        "salience": None,
        "sif_component": "corpus",
        "cf_weight": None,
        "keep_parts": False,
        "explain": False,
        "plain": False,
        "words": False,
        "syntax_map": None,
        "encode_batch_size": None,
        "precision": "auto",
        "backend": "torch",
        "quantize": "none",
    }
    path.write_bytes(orjson.dumps(manifest))
    status = sembed("parts", str(parts))
    assert status.exit_code == 0 and [r["state"] for r in status.records] == ["done", "done"]
    again = embed_parts(source, parts, 2, tiny_model, "--batch-size", "7", only=[1])[0]
    assert "part-0001-of-0002 is done" in again.stderr and "skipped (--force redoes it)" in again.stderr
    embed_parts(source, parts, 2, tiny_model, only=[2])  # another batch size: the earlier part is stale beside it
    assert sembed("parts", str(parts)).records[0]["reason"] == "made with other settings (batch_size)"


def test_a_part_from_the_library_is_the_part_the_command_writes(tmp_path, tiny_model, one_torch_thread):
    """`parts.embed_part` (what `parts run` calls, no command line) and `sembed embed --parts` make one part."""
    from sembed_cli.io import Shard
    from sembed_cli.models.embed_stream import SentenceVectorSettings
    from sembed_cli.parts.embed_part import PartSettings, embed_part

    source, parts = corpus(tmp_path), tmp_path / "parts"
    settings = PartSettings(str(source), SentenceVectorSettings(tiny_model, device="cpu"))
    assert embed_part(settings, parts, Shard(1, 2)) is True
    assert embed_part(settings, parts, Shard(1, 2)) is False  # done
    run = embed_parts(source, parts, 2, tiny_model, only=[1])[0]
    assert "part-0001-of-0002 is done" in run.stderr
    cat = embed_parts(source, parts, 2, tiny_model, only=[2]) and sembed("parts", str(parts), "--cat")
    assert cat.exit_code == 0 and cat.stdout == sembed("embed", str(source), "-m", tiny_model).stdout


def test_a_changed_input_makes_its_parts_stale(tmp_path, tiny_model, one_torch_thread):
    source, parts = corpus(tmp_path), tmp_path / "parts"
    embed_parts(source, parts, 2, tiny_model)
    corpus(tmp_path, SENTENCES[:-1] + ["a new last line"])
    run = embed_parts(source, parts, 2, tiny_model, only=[2])[0]
    assert "is done" not in run.stderr
    status = sembed("parts", str(parts))
    assert [r["state"] for r in status.records] == ["stale", "done"]
    assert status.records[0]["reason"] == f"made from another input ({source}, 20 records)"


def test_skipped_bad_records_keep_the_input_order(tmp_path, tiny_model, one_torch_thread):
    records = [orjson.dumps({"text": text}).decode() for text in SENTENCES[:9]]
    records[4] = '{"text": 5}'  # not a text: skipped
    records[7] = "not json"
    source = tmp_path / "bad.jsonl"
    source.write_text("\n".join(records) + "\n\n")
    embed_parts(source, tmp_path / "parts", 2, tiny_model, "--skip-errors")
    assert orjson.loads((tmp_path / "parts" / "part-0001-of-0002.json").read_bytes())["skipped"] == [2]
    assert orjson.loads((tmp_path / "parts" / "part-0002-of-0002.json").read_bytes())["skipped"] == [3]
    cat = sembed("parts", str(tmp_path / "parts"), "--cat")
    one = sembed("embed", str(source), "-m", tiny_model, "--skip-errors")
    assert cat.stdout == one.stdout and len(cat.records) == 7


def test_eval_sts_versus_reads_reassembled_parts(tmp_path, tiny_model, one_torch_thread):
    """The issue's case: round-robin shards of STS pairs `cat` together put pair 2 against another pair."""
    pairs = [{"text_a": SENTENCES[n], "text_b": SENTENCES[(3 * n + 1) % 20], "score": (n * 7) % 5} for n in range(12)]
    source = tmp_path / "pairs.jsonl"
    source.write_text(jsonl(*pairs))
    embed_parts(source, tmp_path / "parts", 3, tiny_model)
    (tmp_path / "cat.jsonl").write_text(sembed("parts", str(tmp_path / "parts"), "--cat").stdout)
    one = sembed("embed", str(source), "-m", tiny_model).stdout
    run = sembed("eval", "sts", "--versus", str(tmp_path / "cat.jsonl"), "--resamples", "20", input=one)
    assert run.exit_code == 0, run.stderr
    report = run.records[0]
    assert report["difference"]["pearson"] == 0 and report["a"]["pearson"] == report["b"]["pearson"]


def test_bad_uses_of_parts_are_one_line_errors(tmp_path, tiny_model):
    source = corpus(tmp_path)
    for args, message in (
        (["-"], "a part reads INPUT twice"),
        ([str(source), "-o", str(tmp_path / "x.jsonl")], "not with --parts"),
        ([str(source), "--npy", str(tmp_path / "x.npy")], "not with --parts"),
        ([str(source), "--words"], "not with --words (parts hold sentence vectors of --method model)"),
        ([str(source), "--method", "avg"], "only for --method model"),
    ):
        run = sembed("embed", *args, "--parts", str(tmp_path / "parts"), "-m", tiny_model, input="")
        assert run.exit_code == 2 and message in run.stderr, run.stderr
    (tmp_path / "file").write_text("")
    run = sembed("embed", str(source), "--parts", str(tmp_path / "file"), "-m", tiny_model)
    assert run.exit_code == 1 and "--parts" in run.stderr and "is a file" in run.stderr
    for directory, message in ((tmp_path / "none", "is not a directory"), (tmp_path, "no parts in")):
        run = sembed("parts", str(directory))
        assert run.exit_code == 1 and message in run.stderr and run.stderr.count("\n") == 1
    (tmp_path / "mixed").mkdir()
    for name in ("part-0001-of-0002.json", "part-0001-of-0003.jsonl"):
        (tmp_path / "mixed" / name).write_text("")
    run = sembed("parts", str(tmp_path / "mixed"))
    assert run.exit_code == 1 and "holds parts of 2 and 3 shares" in run.stderr


def test_parts_of_two_models_are_refused_by_index(tmp_path, tiny_model, one_torch_thread):
    source, parts = corpus(tmp_path), tmp_path / "parts"
    embed_parts(source, parts, 2, tiny_model)
    manifest_path = parts / "part-0002-of-0002.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    manifest["embedding_model"] = "other@123456789abc"
    manifest_path.write_bytes(orjson.dumps(manifest))
    run = sembed("index", str(parts), "-o", str(tmp_path / "index"))
    assert run.exit_code == 1 and "parts of 2 models" in run.stderr


def test_parts_run_runs_every_part_in_one_process(tmp_path, tiny_model, one_torch_thread):
    source, parts = corpus(tmp_path), tmp_path / "parts"
    run = sembed("parts", "run", str(parts), "--shards", "3", "--", str(source), "-m", tiny_model)
    assert run.exit_code == 0, run.stderr
    assert "3 of 3 parts done" in run.stderr
    assert sembed("parts", str(parts), "--cat").stdout == sembed("embed", str(source), "-m", tiny_model).stdout
    again = sembed("parts", "run", str(parts), "--shards", "3", "--", str(source), "-m", tiny_model)
    assert again.exit_code == 0 and again.stderr.count("skipped (--force redoes it)") == 3
    refused = sembed("parts", "run", str(parts), "--shards", "3", "--", str(source), "--shard", "1/2")
    assert refused.exit_code == 2 and "--shard is not for the parts' embed" in refused.stderr
    refused = sembed("parts", "run", str(parts), "--shards", "3", "--workers", "2", "--", str(source))
    assert refused.exit_code == 2 and "only with --engine ray" in refused.stderr


@pytest.mark.e2e
def test_parts_of_the_packaged_model_index_as_one_process(tmp_path):
    """A transformer's vector may differ in its last bits with the batch around it (padding): equal to 1e-6."""
    source = corpus(tmp_path)
    embed_parts(source, tmp_path / "parts", 2, "all-MiniLM-L6-v2")
    one = sembed("embed", str(source))
    cat = sembed("parts", str(tmp_path / "parts"), "--cat")
    strip = [{k: v for k, v in record.items() if k != "embedding"} for record in one.records]
    assert [{k: v for k, v in record.items() if k != "embedding"} for record in cat.records] == strip
    assert np.allclose([r["embedding"] for r in cat.records], [r["embedding"] for r in one.records], atol=1e-6)
    (tmp_path / "one.jsonl").write_text(one.stdout)
    sembed("index", str(tmp_path / "one.jsonl"), "-o", str(tmp_path / "one-index"))
    sembed("index", str(tmp_path / "parts"), "-o", str(tmp_path / "parts-index"))
    rows, vectors = index_contents(tmp_path / "parts-index")
    one_rows, one_vectors = index_contents(tmp_path / "one-index")
    assert rows == one_rows and np.allclose(vectors, one_vectors, atol=1e-6)
    hits = sembed("search", "-i", str(tmp_path / "parts-index"), "--k", "3", "--query", "a dog walks by the river")
    assert hits.exit_code == 0 and hits.records[0]["neighbors"][0]["id"] == 0, hits.stderr


def test_per_part_indexes_join_with_index_merge(tmp_path, tiny_model, one_torch_thread):
    source, parts = corpus(tmp_path), tmp_path / "parts"
    embed_parts(source, parts, 2, tiny_model)
    for index in (1, 2):
        name = f"part-000{index}-of-0002"
        run = sembed(
            "index",
            str(parts / f"{name}.jsonl"),
            "--npy",
            str(parts / f"{name}.npy"),
            "-o",
            str(tmp_path / f"piece-{index}"),
        )
        assert run.exit_code == 0, run.stderr
    merged = sembed(
        "index", "merge", str(tmp_path / "piece-1"), str(tmp_path / "piece-2"), "-o", str(tmp_path / "merged")
    )
    assert merged.exit_code == 0, merged.stderr
    assert sembed("index", str(parts), "-o", str(tmp_path / "whole")).exit_code == 0
    rows, vectors = index_contents(tmp_path / "merged")
    whole_rows, whole_vectors = index_contents(tmp_path / "whole")
    order = {key: n for n, (key, _) in enumerate(whole_rows)}  # the pieces' order: part 1's records, then part 2's
    assert sorted(rows) == sorted(whole_rows)
    assert np.array_equal(vectors, whole_vectors[[order[key] for key, _ in rows]])


@pytest.mark.subprocess
def test_a_second_writer_of_one_part_refuses_in_one_line(tmp_path, tiny_model):
    """Two writers of one part cannot interleave (issue 37.5): while another process holds the part's lock, a run
    writing the same part exits 1 with one line naming the holder, and writes nothing."""
    import subprocess
    import sys

    from conftest import ROOT

    source, parts = corpus(tmp_path), tmp_path / "parts"
    parts.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom pathlib import Path\nfrom sembed_cli.artifacts import exclusive\n"
            "with exclusive(Path(sys.argv[1])):\n    print('held', flush=True)\n    time.sleep(120)\n",
            str(parts / "part-0001-of-0002"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        run = sembed("embed", str(source), "--shard", "1/2", "--parts", str(parts), "-m", tiny_model)
        assert run.exit_code == 1
        assert run.stderr == (
            f"error: {parts / 'part-0001-of-0002'} is being written by another run (process {holder.pid}) "
            f"(hint: wait for it to end, or choose another output; the lock is {parts / '.part-0001-of-0002.lock'})\n"
        )
        assert not list(parts.glob("part-0001-*"))
    finally:
        holder.kill()
        holder.wait()
    embed_parts(source, parts, 2, tiny_model, only=[1])  # the lock gone with its holder: the part is written
    assert (parts / "part-0001-of-0002.json").exists()
