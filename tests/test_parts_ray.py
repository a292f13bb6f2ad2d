"""sembed parts run --engine ray on a real local Ray cluster (2 CPUs): the parts as actor tasks, a worker killed
mid-part restarted by Ray and its part redone, the result equal to one process's."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import orjson
import pytest
from conftest import ROOT, sembed
from test_parts import corpus
from test_parts_faults import big_corpus

ray = pytest.importorskip("ray")


@pytest.fixture
def local_cluster():
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def manifests(parts) -> list[dict]:
    return [
        orjson.loads(path.read_bytes())
        for path in sorted(parts.glob("part-*-of-*.json"))
        if not path.name.endswith(".npy.json")
    ]


@pytest.mark.slow
@pytest.mark.subprocess
def test_parts_run_on_ray_equals_one_process(tmp_path, tiny_model, local_cluster, one_torch_thread):
    source, parts = corpus(tmp_path), tmp_path / "parts"
    run = sembed(
        "parts",
        "run",
        str(parts),
        "--shards",
        "3",
        "--engine",
        "ray",
        "--workers",
        "2",
        "--",
        str(source),
        "-m",
        tiny_model,
    )
    assert run.exit_code == 0, run.stderr
    assert "3 of 3 parts done" in run.stderr
    assert len({manifest["pid"] for manifest in manifests(parts)}) == 2  # 2 workers: one of them ran two parts
    assert all(manifest["pid"] != os.getpid() for manifest in manifests(parts))
    assert sembed("parts", str(parts), "--cat").stdout == sembed("embed", str(source), "-m", tiny_model).stdout
    before = [path.stat().st_mtime_ns for path in sorted(parts.iterdir())]
    again = sembed("parts", "run", str(parts), "--shards", "3", "--engine", "ray", "--", str(source), "-m", tiny_model)
    assert again.exit_code == 0 and [path.stat().st_mtime_ns for path in sorted(parts.iterdir())] == before


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_ray_worker_killed_mid_part_is_restarted_and_its_part_redone(tmp_path, tiny_model, one_torch_thread):
    # parts of 4,000 records at batch size 8: a worker writes one for seconds, however quiet the machine
    source, parts = big_corpus(tmp_path, 12_000), tmp_path / "parts"
    command = [
        sys.executable,
        "-m",
        "sembed_cli",
        "parts",
        "run",
        str(parts),
        "--shards",
        "3",
        "--engine",
        "ray",
        "--workers",
        "2",
        "--retries",
        "2",
        "--",
        str(source),
        "-m",
        tiny_model,
        "--batch-size",
        "8",
    ]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SEMBED_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = part = None
    deadline = time.monotonic() + 240
    while killed is None and process.poll() is None and time.monotonic() < deadline:
        for path in parts.iterdir() if parts.exists() else []:
            found = re.search(r"part-(\d+)-of-\d+\.(?:jsonl|npy)\.partial-.+?-(\d+)(?=\.|$)", path.name)
            if found:  # a worker writing a part's data: the part takes seconds more
                part, killed = int(found.group(1)), int(found.group(2))
                os.kill(killed, signal.SIGKILL)  # at once: the part is surely not committed yet
                break
        time.sleep(0.01)
    _, stderr = process.communicate(timeout=300)
    assert killed is not None, stderr
    assert process.returncode == 0, stderr
    assert "3 of 3 parts done" in stderr
    assert manifests(parts)[part - 1]["pid"] != killed  # its part was redone by the restarted worker
    assert not [path for path in parts.iterdir() if path.name.startswith(".")]
    reference = tmp_path / "reference"
    for index in (1, 2, 3):
        sembed(
            "embed",
            str(source),
            "--shard",
            f"{index}/3",
            "--parts",
            str(reference),
            "-m",
            tiny_model,
            "--batch-size",
            "8",
        )
    assert sembed("parts", str(parts), "--cat").stdout == sembed("parts", str(reference), "--cat").stdout
