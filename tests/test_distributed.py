"""Runs under torchrun: the commands that cannot share their work refuse, sbert runs on 2 CPU processes (gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, jsonl, sembed

REFUSED = (
    "cannot run distributed (WORLD_SIZE=2): every rank would do all of it and write the same output "
    "(hint: run it as one process, without torchrun; `train --method sbert|cf|ta` can run distributed)"
)


def pairs(count: int = 16) -> str:
    return jsonl(
        *(
            {"text_a": f"a man plays the guitar {i}", "text_b": f"someone makes music {i % 5}", "score": (i % 6) * 0.8}
            for i in range(count)
        )
    )


@pytest.mark.parametrize(
    "args, what",
    [
        (("embed",), "sembed embed"),
        (("parse",), "sembed parse"),
        (("eval", "sts"), "sembed eval"),
        (("train", "--method", "nws", "-o", "m"), "train --method nws"),
        (("train", "--method", "mlm", "-o", "m"), "train --method mlm"),
        (("train", "--method", "poi", "-o", "m"), "train --method poi"),
        (("train", "--method", "syntax", "-o", "m"), "train --method syntax"),
    ],
)
def test_commands_that_cannot_share_their_work_refuse_on_every_rank(monkeypatch, tmp_path, args, what):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    run = sembed(*args, input='{"text": "a"}\n')
    assert (run.exit_code, run.stderr, run.stdout) == (1, f"error: {what} {REFUSED}\n", "")
    monkeypatch.setenv("RANK", "1")
    run = sembed(*args, input='{"text": "a"}\n')
    assert (run.exit_code, run.stderr, run.stdout) == (1, "", "")  # one line from rank 0 is enough
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.e2e
def test_sbert_on_two_cpu_processes_writes_a_model_that_loads(tiny_model, tmp_path):
    from sentence_transformers import SentenceTransformer

    data, out = tmp_path / "pairs.jsonl", tmp_path / "model"
    data.write_text(pairs())
    torchrun = Path(sys.executable).with_name("torchrun")
    run = subprocess.run(
        [
            str(torchrun),
            "--nproc-per-node",
            "2",
            "-m",
            "sembed_cli",
            "train",
            "--method",
            "sbert",
            "-m",
            tiny_model,
            "-o",
            str(out),
            "--epochs",
            "1",
            "--batch-size",
            "4",
            "--device",
            "cpu",
            str(data),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert sum(line.startswith("training sbert on 16 pairs") for line in lines) == 1  # rank 0 alone logs
    assert sum(line.startswith("wrote ") for line in lines) == 1
    assert "FutureWarning" not in run.stderr
    assert "in each of 2 processes (global batch 8)" in run.stderr
    training = json.loads((out / "sembed.json").read_text())["training"]
    assert (training["world_size"], training["global_batch_size"], training["steps"]) == (2, 8, 2)
    vectors = SentenceTransformer(str(out), device="cpu").encode(["a man plays the guitar"])
    assert vectors.shape == (1, 32)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "pairs.jsonl"]  # no checkpoints, lock or tmp
