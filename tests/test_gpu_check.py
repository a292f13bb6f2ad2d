"""bench/gpu_check.sh on a machine without a CUDA GPU (this one, and CI's): it says so and exits 0, touching nothing."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from conftest import ROOT

SCRIPT = ROOT / "bench" / "gpu_check.sh"
RESULT = ROOT / "bench" / "results" / "gpu_check.json"


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine may have a GPU: the check would run")
def test_gpu_check_says_there_is_no_gpu_and_exits_0():
    before = RESULT.stat().st_mtime_ns if RESULT.exists() else None
    environment = {key: value for key, value in os.environ.items() if key != "GPU_CHECK_DRY"}
    run = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=environment, timeout=30)
    assert run.returncode == 0
    assert run.stdout == ""
    assert run.stderr == "gpu_check: no CUDA GPU on this machine (nvidia-smi lists none): nothing checked\n"
    assert (RESULT.stat().st_mtime_ns if RESULT.exists() else None) == before
