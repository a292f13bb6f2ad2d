"""--threads and SEMBED_THREADS, and the default that fits a busy machine (sembed_cli/threads.py)."""

from __future__ import annotations

import pytest
import typer
from conftest import sembed

from sembed_cli import threads
from sembed_cli.main import app

COMPUTING = [
    "convert",
    "parse",
    "spo",
    "normalize",
    "gensets",
    "embed",
    "train",
    "taste",
    "index",
    "search",
    "eval sts",
    "eval entailment",
    "eval classify",
    "eval salience",
    "eval poi",
    "eval structure",
]


@pytest.fixture
def machine(monkeypatch):
    """A machine of `cores` usable cores with `load` other work on them."""

    def make(cores: int, load: float):
        monkeypatch.setattr(threads, "usable_cores", lambda: cores)
        monkeypatch.setattr(threads, "other_work", lambda: load)

    return make


@pytest.mark.parametrize(
    "cores, load, expected",
    [
        (2, 0.0, 2),
        (2, 0.4, 2),
        (2, 0.6, 1),
        (2, 1.0, 1),
        (2, 9.0, 1),
        (16, 3.6, 12),
        (16, 0.0, 16),
        (1, 0.0, 1),
    ],
)
def test_the_default_is_the_cores_other_work_leaves(machine, cores, load, expected):
    machine(cores, load)
    assert threads.default_threads() == expected


def test_without_proc_stat_other_work_is_the_larger_of_the_load_average_and_the_processes_running_now(
    monkeypatch, tmp_path
):
    loadavg = tmp_path / "loadavg"
    monkeypatch.setattr(threads, "LOADAVG", loadavg)
    monkeypatch.setattr(threads, "PROC_STAT", tmp_path / "no-stat")
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (0.5, 0.4, 0.3))
    loadavg.write_text("0.50 0.40 0.30 3/100 1234\n")  # this process and two others
    assert threads.other_work() == 2.0
    loadavg.write_text("0.50 0.40 0.30 1/100 1234\n")  # this process alone: the load average says more
    assert threads.other_work() == 0.5


def test_other_work_is_the_busy_time_measured_now(monkeypatch, tmp_path):
    """A lingering load average (a finished job's) does not count: what /proc/stat shows busy while we wait does."""
    stat = tmp_path / "stat"
    samples = iter(["cpu  100 0 50 800 50 0 0 0 0 0\n", "cpu  130 0 60 850 50 0 0 0 0 0\n"])  # 40 busy of 90
    monkeypatch.setattr(threads, "PROC_STAT", stat)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.9, 1.5, 1.0))

    def sleep(seconds):
        stat.write_text(next(samples))

    import time

    stat.write_text(next(samples))
    monkeypatch.setattr(time, "sleep", sleep)
    assert threads.other_work() == pytest.approx(2 * 40 / 90)


def test_a_cgroup_quota_bounds_the_usable_cores(monkeypatch, tmp_path):
    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(threads, "CGROUP_CPU_MAX", quota)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(8)))
    quota.write_text("150000 100000\n")
    assert threads.usable_cores() == 2
    quota.write_text("max 100000\n")
    assert threads.usable_cores() == 8


def test_precedence_flag_then_omp_num_threads_then_the_machine(machine, monkeypatch):
    machine(4, 1.0)
    assert threads.choose(2) == (2, "--threads")
    monkeypatch.setattr(threads, "USER_OMP_THREADS", "3")
    assert threads.choose(None) == (3, "OMP_NUM_THREADS")
    monkeypatch.setattr(threads, "USER_OMP_THREADS", "")
    assert threads.choose(None) == (3, "default")


@pytest.fixture
def restored(monkeypatch):
    """The thread settings the test changes are put back afterwards."""
    import torch

    for name in threads.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    before = torch.get_num_threads()
    yield torch
    torch.set_num_threads(before)


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_the_command_line_sets_torch_faiss_and_the_variables(restored, monkeypatch, tmp_path, how):
    import faiss

    args = ["--threads", "2"] if how == "flag" else []
    monkeypatch.setenv("SEMBED_THREADS", "2")
    if how == "flag":
        monkeypatch.setenv("SEMBED_THREADS", "1")  # the flag wins
    restored.set_num_threads(1)
    run = sembed("eval", "sts", *args, str(tmp_path / "missing.jsonl"))
    assert run.exit_code == 1  # the work fails; the threads were set before it began
    assert restored.get_num_threads() == 2 and faiss.omp_get_max_threads() == 2
    assert all(threads.os.environ[name] == "2" for name in threads.THREAD_VARIABLES)


def test_zero_threads_is_a_usage_error():
    run = sembed("embed", "--threads", "0")
    assert run.exit_code == 2 and "Invalid value for '--threads'" in run.stderr


@pytest.mark.parametrize("command", COMPUTING)
def test_every_computing_command_takes_threads(command):
    click_command = typer.main.get_command(app)
    for name in command.split():
        click_command = click_command.commands[name]
    assert any("--threads" in param.opts for param in click_command.params)


@pytest.mark.parametrize("value", ["tpu", "CUDA", "cuda:x", "gpu"])
def test_an_unknown_device_is_a_usage_error(value):
    run = sembed("embed", "--device", value, input="")
    assert run.exit_code == 2
    assert (
        f"Invalid value for '--device' (env var: 'SEMBED_DEVICE'): '{value}' is not one of auto, cpu, cuda, "
        "cuda:N" in run.stderr
    )


def test_cuda_without_a_gpu_is_one_error_line(monkeypatch, restored):
    monkeypatch.setattr(restored.cuda, "is_available", lambda: False)
    run = sembed("embed", "--device", "cuda", input='{"text": "a"}\n')
    assert (run.exit_code, run.stderr) == (
        1,
        "error: --device cuda asked for, but no CUDA device is available (hint: use --device auto or cpu)\n",
    )
