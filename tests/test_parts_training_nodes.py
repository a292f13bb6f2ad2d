"""Training past one machine: `train --method sbert|cf|ta` as two torchrun "nodes" of two processes each, meeting at a
local c10d rendezvous (what two Slurm nodes do through the first node's address; docs/past-one-machine.md)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, jsonl


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


WORDS = ("man", "guitar", "music", "dog", "park", "runs", "plays", "woman", "onion", "cuts")


def training_pairs(method: str) -> list[dict]:
    """32 pairs a method trains on: scored pairs (sbert; cf with its S_cf given, so no parser runs), NLI pairs (ta)."""
    pairs = []
    for i in range(32):
        a = [WORDS[(i + k) % 10] for k in range(5)]
        b = [WORDS[(3 * i + k) % 10] for k in range(4)]
        record = {"text_a": " ".join(a), "text_b": " ".join(b)}
        if method == "ta":
            record["label"] = ("entailment", "neutral", "contradiction")[i % 3]
        else:
            record["score"] = (i % 6) * 0.8
        if method == "cf":
            record["s_cf_a"], record["s_cf_b"] = " ".join(a[:3]), " ".join(b[:3])
        pairs.append(record)
    return pairs


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.e2e
@pytest.mark.parametrize("method", ["sbert", "cf", "ta"])
def test_two_nodes_of_two_processes_train_one_model(method, tiny_model, tmp_path):
    from sentence_transformers import SentenceTransformer

    data, out = tmp_path / "pairs.jsonl", tmp_path / "model"
    data.write_text(jsonl(*training_pairs(method)))
    torchrun = Path(sys.executable).with_name("torchrun")
    endpoint = f"127.0.0.1:{free_port()}"
    nodes = [
        subprocess.Popen(
            [
                str(torchrun),
                "--nnodes",
                "2",
                "--nproc-per-node",
                "2",
                "--rdzv-backend",
                "c10d",
                "--rdzv-endpoint",
                endpoint,
                "--rdzv-id",
                f"sembed-{method}",
                "--node-rank",
                str(node),
                "-m",
                "sembed_cli",
                "train",
                "--method",
                method,
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
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
        )
        for node in (0, 1)
    ]
    outputs = [node.communicate(timeout=900) for node in nodes]
    for node, (stdout, stderr) in zip(nodes, outputs):
        assert node.returncode == 0, stderr
        assert stdout == ""
    logs = "\n".join(stderr for _, stderr in outputs).splitlines()
    assert sum(line.startswith(f"training {method} on 32 pairs") for line in logs) == 1  # global rank 0 alone logs
    assert sum(line.startswith("wrote ") for line in logs) == 1
    assert any("in each of 4 processes (global batch 16)" in line for line in logs)
    training = json.loads((out / "sembed.json").read_text())["training"]
    assert (training["world_size"], training["global_batch_size"], training["steps"]) == (4, 16, 2)
    model = SentenceTransformer(str(out), device="cpu", trust_remote_code=True)
    assert model.encode(["a man plays the guitar"]).shape[0] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "pairs.jsonl"]
