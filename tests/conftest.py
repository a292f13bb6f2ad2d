"""Shared test fixtures: running the CLI in-process, and where the shared data lives."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from sembed_cli.main import app

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SEMBED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _no_user_environment(monkeypatch):
    """Tests never see the user's SEMBED_* settings or reach a model hub."""
    for key in list(os.environ):
        if key.startswith("SEMBED_") and key != "SEMBED_DATA":
            monkeypatch.delenv(key)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


class Run:
    def __init__(self, result):
        self.result = result
        self.exit_code = result.exit_code
        self.stdout = result.stdout
        self.stderr = result.stderr

    @property
    def records(self) -> list[dict]:
        """Every stdout line, each of which must be one JSON object."""
        lines = self.stdout.splitlines()
        records = [orjson.loads(line) for line in lines]
        assert all(isinstance(r, dict) for r in records)
        return records


def sembed(*args: str, input: str | bytes | None = None) -> Run:
    """Run `sembed ARGS` in-process with the given stdin."""
    return Run(CliRunner().invoke(app, list(args), input=input, catch_exceptions=False))


def jsonl(*records: dict) -> str:
    return "".join(orjson.dumps(r).decode() + "\n" for r in records)


@pytest.fixture
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA} (set SEMBED_DATA)")
    return DATA
