"""A part's process killed (SIGKILL) at random points of its work: only that part is redone, no half-written file
ever carries a final name, and the index equals an uninterrupted run's."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import ROOT, jsonl, sembed
from test_parts import index_contents

pytest.importorskip("faiss")

PARTS = 3
KILLED = 2


def big_corpus(tmp_path: Path, count: int = 3000) -> Path:
    """Enough records that part 2's writing spans many flushes (batch size 8), so a kill lands inside it."""
    words = ("river", "shop", "hill", "gate", "dog", "cat", "aunt", "child", "mayor", "train", "bell", "field")
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        jsonl(*({"text": f"{n} {words[n % 12]} {words[n * 7 % 11]} {words[n * 5 % 12]}"} for n in range(count)))
    )
    return path


def part_command(source: Path, parts: Path, model: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "sembed_cli",
        "embed",
        str(source),
        "--shard",
        f"{KILLED}/{PARTS}",
        "--parts",
        str(parts),
        "-m",
        model,
        "--batch-size",
        "8",
        "-q",
    ]


def environment() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SEMBED_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def hidden_files(parts: Path) -> list[Path]:
    return [path for path in parts.iterdir() if path.name.startswith(".")] if parts.exists() else []


def kill_at_random(command: list[str], parts: Path, rng: random.Random, while_writing: bool) -> bool:
    """Start the part's process and SIGKILL it: at a random moment of its start-up, or a random moment after its
    hidden files appear. Returns whether it was killed while its hidden files were there."""
    process = subprocess.Popen(command, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if while_writing:
            deadline = time.monotonic() + 120
            while not hidden_files(parts) and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 1.0))
        else:
            time.sleep(rng.uniform(0.2, 2.0))
        writing = bool(hidden_files(parts))
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    return writing and process.returncode == -signal.SIGKILL


def check_no_partial_file_under_a_final_name(parts: Path) -> None:
    """Every final name holds a whole file: a .npy that loads with the rows its sidecar gives, a .jsonl whose
    records name rows of it; a manifest only beside whole files it describes."""
    for npy in parts.glob("part-*.npy"):
        sidecar = npy.with_name(npy.name + ".json")
        assert sidecar.exists(), f"{npy.name} without its sidecar"
        rows = np.load(npy).shape[0]
        assert rows == orjson.loads(sidecar.read_bytes())["rows"]
    for records in parts.glob("part-*.jsonl"):
        lines = records.read_bytes().splitlines()
        assert all(orjson.loads(line)["embedding_row"] == n for n, line in enumerate(lines))
        assert records.with_suffix(".npy").exists()
    for manifest_path in parts.glob("part-*-of-*.json"):
        if manifest_path.name.endswith(".npy.json"):
            continue
        manifest = orjson.loads(manifest_path.read_bytes())
        stem = manifest_path.name[: -len(".json")]
        assert len((parts / f"{stem}.jsonl").read_bytes().splitlines()) == manifest["count"]


@pytest.mark.reliability
@pytest.mark.slow
@pytest.mark.subprocess
def test_a_part_killed_at_random_points_is_redone_alone_and_the_index_is_unchanged(
    tmp_path, tiny_model, one_torch_thread
):
    source = big_corpus(tmp_path)
    reference, parts = tmp_path / "reference", tmp_path / "parts"
    for index in range(1, PARTS + 1):
        assert (
            sembed(
                "embed", str(source), "--shard", f"{index}/{PARTS}", "--parts", str(reference), "-m", tiny_model
            ).exit_code
            == 0
        )
    for index in (1, 3):
        assert (
            sembed(
                "embed", str(source), "--shard", f"{index}/{PARTS}", "--parts", str(parts), "-m", tiny_model
            ).exit_code
            == 0
        )
    others = {path.name: path.stat().st_mtime_ns for path in parts.iterdir()}

    rng = random.Random(28)
    killed_while_writing = 0
    for while_writing in (False, True, True, True):
        killed_while_writing += kill_at_random(part_command(source, parts, tiny_model), parts, rng, while_writing)
        check_no_partial_file_under_a_final_name(parts)
        status = sembed("parts", str(parts))
        assert status.exit_code == 1 and [r["state"] for r in status.records] == ["done", "missing", "done"]
        assert {path.name: path.stat().st_mtime_ns for path in parts.iterdir() if path.name in others} == others
    assert killed_while_writing >= 1  # at least one kill landed inside the part's writing

    for index in range(1, PARTS + 1):  # the same loop again: 1 and 3 are skipped, 2 is redone
        run = sembed("embed", str(source), "--shard", f"{index}/{PARTS}", "--parts", str(parts), "-m", tiny_model)
        assert run.exit_code == 0 and ("is done" in run.stderr) == (index != KILLED), run.stderr
    assert {path.name: path.stat().st_mtime_ns for path in parts.iterdir() if path.name in others} == others
    assert hidden_files(parts) == []  # the killed writers' leftovers went with the commit
    assert sembed("parts", str(parts)).exit_code == 0

    for directory in (reference, parts):
        assert sembed("index", str(directory), "-o", str(directory) + "-index").exit_code == 0
    rows, vectors = index_contents(Path(str(parts) + "-index"))
    expected_rows, expected_vectors = index_contents(Path(str(reference) + "-index"))
    assert rows == expected_rows and np.array_equal(vectors, expected_vectors)
