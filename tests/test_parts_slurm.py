"""examples/parts_slurm.sh: Slurm is not here, so each array task runs as its own process with the variables Slurm
sets, all at once, then the dependent index job; the index equals the one-process build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, sembed
from test_parts import corpus, index_contents

pytest.importorskip("faiss")

SCRIPT = ROOT / "examples" / "parts_slurm.sh"
TASKS = 3


def environment(**slurm: str) -> dict:
    """A task's environment: the venv's sembed first on PATH, this tree importable, and Slurm's variables."""
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "SLURM_JOB_ID": "4242",
        "SLURM_CPUS_PER_TASK": "1",
        **slurm,
    }


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_array_tasks_and_the_index_job_build_the_one_process_index(tmp_path, tiny_model, one_torch_thread):
    source, parts, index = corpus(tmp_path), tmp_path / "parts", tmp_path / "index"
    tasks = [
        subprocess.Popen(
            ["bash", str(SCRIPT), "part", str(source), str(parts), "-m", tiny_model],
            env=environment(
                SLURM_ARRAY_JOB_ID="4242",
                SLURM_ARRAY_TASK_ID=str(task),
                SLURM_ARRAY_TASK_MIN="0",
                SLURM_ARRAY_TASK_MAX=str(TASKS - 1),
                SLURM_ARRAY_TASK_COUNT=str(TASKS),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for task in range(TASKS)
    ]  # an array 0-2: shares 1/3, 2/3, 3/3
    for task in tasks:
        _, stderr = task.communicate(timeout=300)
        assert task.returncode == 0, stderr
    job = subprocess.run(
        ["bash", str(SCRIPT), "index", str(parts), str(index)],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert job.returncode == 0, job.stderr
    assert "3 of 3 parts done" in job.stderr
    assert (tmp_path / "parts.status.jsonl").read_text().count('"state":"done"') == TASKS

    (tmp_path / "one.jsonl").write_text(sembed("embed", str(source), "-m", tiny_model).stdout)
    assert sembed("index", str(tmp_path / "one.jsonl"), "-o", str(tmp_path / "one-index")).exit_code == 0
    rows, vectors = index_contents(index)
    one_rows, one_vectors = index_contents(tmp_path / "one-index")
    assert rows == one_rows and np.array_equal(vectors, one_vectors)


@pytest.mark.subprocess
def test_the_index_job_fails_naming_the_missing_part(tmp_path, tiny_model, one_torch_thread):
    source, parts = corpus(tmp_path), tmp_path / "parts"
    assert sembed("embed", str(source), "--shard", "1/2", "--parts", str(parts), "-m", tiny_model).exit_code == 0
    job = subprocess.run(
        ["bash", str(SCRIPT), "index", str(parts), str(tmp_path / "index")],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert job.returncode == 1 and "1 of 2 parts done; missing: 2" in job.stderr
    assert not (tmp_path / "index").exists()


def test_submit_makes_the_array_and_the_job_that_waits_for_it(tmp_path):
    calls = tmp_path / "sbatch.calls"
    fake = tmp_path / "bin" / "sbatch"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\necho $((1000 + $(wc -l < {calls})))\n')
    fake.chmod(0o755)
    run = subprocess.run(
        ["bash", str(SCRIPT), "submit", "corpus.txt", "parts", "corpus-index", "64", "-m", "M"],
        env={**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert calls.read_text().splitlines() == [
        f"--parsable --array=1-64 {SCRIPT} part corpus.txt parts -m M",
        f"--parsable --dependency=afterany:1001 {SCRIPT} index parts corpus-index",
    ]
    assert "submitted the array 1001 (64 parts) and the index job 1002 (after it)" in run.stderr
