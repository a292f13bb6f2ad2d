"""SIGTERM, SIGHUP and Ctrl-C sent to a real sembed process: what `timeout`, cron, systemd and a closed terminal do.

Each run is `python -m sembed_cli` in a subprocess that gets a real signal mid-run; the tests check the exit status
(128 + the signal), the one `error:` line, that the records written before the signal are all there (and the
rows of an `--npy` matrix with them), that no temporary file is left, and that training continues with --resume.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import ROOT, jsonl, same_weights, sembed

torch = pytest.importorskip("torch")

from test_poi import TINY, names_records  # noqa: E402

pytestmark = [pytest.mark.usefixtures("one_torch_thread"), pytest.mark.subprocess]  # each test signals a real process
PATIENCE = 180  # seconds a step may take on a loaded machine before a test gives up


def environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "SEMBED_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def start(*args: str, stdout=subprocess.PIPE, code: str | None = None) -> subprocess.Popen:
    """`sembed ARGS` in a new process, stdin a pipe the test feeds; `code` runs first (to slow a step down)."""
    command = [
        sys.executable,
        "-c",
        f"{code or ''}\nimport sys\nfrom sembed_cli.main import run\nsys.argv = ['sembed', *{list(args)!r}]\nrun()",
    ]
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=environment(),
        cwd=ROOT,
        preexec_fn=default_dispositions,
    )


def default_dispositions() -> None:
    """The child gets SIGHUP's and SIGINT's default dispositions even when pytest runs under `nohup` (which ignores
    SIGHUP) or as a background job of a script (`cmd &`: the shell ignores SIGINT); sembed rightly leaves an
    ignored signal ignored."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def leftovers(directory: Path) -> list[str]:
    """Temporary files and directories (hidden siblings: .NAME.tmp-PID, .NAME.lock) left in `directory`."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize(
    "signum, status, message",
    [
        (signal.SIGTERM, 143, "error: interrupted by SIGTERM"),
        (signal.SIGHUP, 129, "error: interrupted by SIGHUP"),
        (signal.SIGINT, 130, "error: interrupted"),
    ],
)
def test_embed_keeps_every_finished_batch_and_its_npy_rows(tiny_model, tmp_path, signum, status, message):
    out, matrix = tmp_path / "out.jsonl", tmp_path / "vectors.npy"
    with open(out, "wb") as sink:
        process = start("embed", "-m", tiny_model, "--device", "cpu", "-b", "1", "--npy", str(matrix), stdout=sink)
        records = [{"id": i, "text": f"sentence number {i}"} for i in range(3)]
        process.stdin.write(jsonl(*records).encode())
        process.stdin.flush()  # and the pipe stays open: the stream is still coming when the signal arrives
        wait_for(lambda: lines_in(out) == 3, "three records on stdout")
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=PATIENCE)
    assert process.returncode == status
    errors = [line for line in stderr.decode().splitlines() if line.startswith("error:")]
    assert errors == [message]
    assert f"{matrix} holds the 3 vectors of the records written before the stop" in stderr.decode()
    written = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [r["id"] for r in written] == [0, 1, 2] and [r["embedding_row"] for r in written] == [0, 1, 2]
    assert np.load(matrix).shape == (3, 32)
    assert leftovers(tmp_path) == []


SLOW_STEPS = """
import time
from pathlib import Path
from sembed_cli.training import mlm_from_scratch
real, steps = mlm_from_scratch.mlm_loss, Path({steps!r})
def slow(*args):  # each step waits, and counts itself, so the test knows training is under way
    time.sleep(0.2)
    steps.write_text(str(int(steps.read_text() or 0) + 1) if steps.exists() else "1")
    return real(*args)
mlm_from_scratch.mlm_loss = slow
"""


def test_training_stopped_by_sigterm_saves_a_checkpoint_that_resume_continues(tmp_path):
    args = (
        "train",
        "--method",
        "mlm",
        "--from-scratch",
        *TINY,
        "--samples",
        "4",
        "--epochs",
        "3",
        "--checkpoint-steps",
        "0",
    )
    whole = sembed(*args, "-o", str(tmp_path / "whole"), input=names_records())
    assert whole.exit_code == 0, whole.stderr
    model, steps = tmp_path / "resumed", tmp_path / "steps"
    shown = [arg for arg in args if arg != "-q"]  # the checkpoint's warning shows without -q (errors only)
    process = start(*shown, "-o", str(model), stdout=subprocess.DEVNULL, code=SLOW_STEPS.format(steps=str(steps)))
    process.stdin.write(names_records().encode())
    process.stdin.close()
    wait_for(lambda: steps.exists() and int(steps.read_text() or 0) >= 3, "three training steps")

    second = sembed(*args, "-o", str(model), input=names_records())  # the same DIR while the first run writes it
    assert second.exit_code == 1
    assert second.stderr == (
        f"error: {model} is being written by another run (process {process.pid}) (hint: wait "
        f"for it to end, or choose another output; the lock is {tmp_path / '.resumed.lock'})\n"
    )

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=PATIENCE) == 143
    stderr = process.stderr.read()
    lines = stderr.decode().splitlines()
    assert lines[-1] == "error: interrupted by SIGTERM"
    stopped = next(line for line in lines if "stopped at step" in line)
    step = int(stopped.split("stopped at step ")[1].split("/")[0])
    assert step >= 3 and (tmp_path / "resumed.checkpoints" / f"checkpoint-{step}" / "state.pt").exists()
    assert not model.exists() and leftovers(tmp_path) == []

    resumed = sembed(*args, "-o", str(model), "--resume", input=names_records())
    assert resumed.exit_code == 0, resumed.stderr
    assert same_weights(model, tmp_path / "whole")
    assert not (tmp_path / "resumed.checkpoints").exists() and leftovers(tmp_path) == []


SLOW_TRAINER_STEPS = """
import time
from pathlib import Path
from sembed_cli.training import sentence_loop
steps = Path({steps!r})
def slow(self, *args, **kwargs):  # each step counts itself as it begins, then waits: the signal comes in the step
    steps.write_text(str(int(steps.read_text() or 0) + 1) if steps.exists() else "1")
    time.sleep(1.0)
sentence_loop.ConsoleProgress.on_step_begin = slow
"""


@pytest.mark.slow
def test_sentence_encoder_training_stopped_by_sigterm_checkpoints_the_step_and_resumes(tiny_model, tmp_path):
    from test_train import max_difference, pairs, weights

    from sembed_cli.training.checkpoints import latest, step_of

    data = tmp_path / "pairs.jsonl"
    data.write_text(jsonl(*pairs()))
    args = (
        "train",
        str(data),
        "--method",
        "cf",
        "-m",
        tiny_model,
        "--lr",
        "1e-3",
        "--epochs",
        "3",
        "--checkpoint-steps",
        "0",
    )
    assert sembed(*args, "-o", str(tmp_path / "whole")).exit_code == 0
    model, steps = tmp_path / "resumed", tmp_path / "steps"
    process = start(
        *args, "-o", str(model), stdout=subprocess.DEVNULL, code=SLOW_TRAINER_STEPS.format(steps=str(steps))
    )
    process.stdin.close()
    wait_for(lambda: steps.exists() and int(steps.read_text() or 0) >= 1, "a training step")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=PATIENCE) == 143
    stderr = process.stderr.read().decode()
    assert stderr.splitlines()[-1] == "error: interrupted by SIGTERM"
    checkpoint = latest(tmp_path / "resumed.checkpoints")
    assert checkpoint is not None and step_of(checkpoint) == 1  # the step the signal came in; epochs end at 3, 6, 9
    assert not model.exists()

    resumed = sembed(*args, "-o", str(model), "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert f"resuming from {checkpoint}" in resumed.stderr
    assert max_difference(weights(tmp_path / "whole"), weights(model)) < 1e-6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.jsonl", "resumed", "steps", "whole"]
