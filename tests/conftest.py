"""Shared test fixtures: running the CLI in-process, and where the shared data lives."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
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
    monkeypatch.setenv("SEMBED_THREADS", "1")  # tiny models gain nothing from threads (test_threads tests the default)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _console_as_a_fresh_run():
    """Each test starts with the console a plain run of sembed has (not -q, not -v, the log handler installed), so
    a test calling library code sees its warnings whichever test ran before (a -q run leaves quiet set)."""
    from sembed_cli import console

    console.set_verbose(False)
    console.set_quiet(False)


# the package, or a word `sembed` (a command, a script at .../sembed), not a folder named sembed holding the checkout
SEMBED_PROCESS = re.compile(r"sembed_cli|(?<![\w.-])sembed(?![\w/.-])")


@pytest.fixture(autouse=True)
def _sembed_processes_are_marked(request, monkeypatch):
    """A test that starts a process whose command line names sembed (python -m sembed_cli, -c code importing it, a
    shell pipeline) carries the `subprocess` marker, so `-m "not subprocess"` leaves out every process start-up."""
    started: list[str] = []
    real = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def noting(self, args, *rest, **kwargs):
        if SEMBED_PROCESS.search(str(args)):
            started.append(str(args)[:200])
        return real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", noting)
    yield
    if started and request.node.get_closest_marker("subprocess") is None:
        pytest.fail(f"starts a sembed process ({started[0]}) without @pytest.mark.subprocess")


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


def without_checksums(index: Path) -> None:
    """Make `index` as sembed wrote indexes before checksums: no checksums, nor sembed.json, in its state."""
    import sqlite3

    with sqlite3.connect(index / "records.sqlite") as db:
        db.execute("DELETE FROM state WHERE key LIKE 'sum:%' OR key LIKE 'previous_sum:%' OR key = 'metadata'")
    db.close()


def with_older_checks(index: Path, layout: str | None) -> None:
    """Make the store of `index` as sembed wrote stores before 2026-11-28 (layout "table": each row's check in a
    `checks` table of its own) or before checks (None: none at all)."""
    import sqlite3

    if sqlite3.sqlite_version_info < (3, 35):
        pytest.skip("SQLite before 3.35 cannot drop a column")
    with sqlite3.connect(index / "records.sqlite") as db:
        if layout == "table":
            db.execute("CREATE TABLE checks (row INTEGER PRIMARY KEY, crc INTEGER NOT NULL)")
            db.execute("INSERT INTO checks (row, crc) SELECT row, crc FROM rows")
        db.execute("ALTER TABLE rows DROP COLUMN crc")
    db.close()


def jsonl(*records: dict) -> str:
    return "".join(orjson.dumps(r).decode() + "\n" for r in records)


def lists_of(index) -> np.ndarray:
    """The inverted list each row (by its id) of the inverted-list index `index` is in."""
    import faiss

    invlists = index.invlists
    where = np.empty(index.ntotal, dtype=np.int64)
    for cell in range(index.nlist):
        size = invlists.list_size(cell)
        if size:  # an empty list's ids are no array
            where[faiss.rev_swig_ptr(invlists.get_ids(cell), size).copy()] = cell
    return where


def same_weights(a: Path, b: Path, atol: float = 1e-6) -> bool:
    """The model.safetensors of two model directories are equal up to float rounding (the order of CPU reductions
    may differ between runs)."""
    import torch
    from safetensors.torch import load_file

    left, right = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    return left.keys() == right.keys() and all(torch.allclose(left[k], right[k], atol=atol) for k in left)


def interrupt_at_call(monkeypatch, owner, name: str, call: int):
    """Patch `owner.name` to raise KeyboardInterrupt (Ctrl-C, a killed job) at its `call`-th call; returns the real
    function, to put back with monkeypatch.setattr(owner, name, real)."""
    real = getattr(owner, name)
    calls = {"n": 0}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == call:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, interrupted)
    return real


TINY_DIM = 32


@pytest.fixture
def one_torch_thread():
    """Tiny models gain nothing from threads, and they crawl when another job holds a core of a small machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """A 2-layer BERT (hidden size 32, random weights, the packaged MiniLM's vocabulary) with mean pooling and
    normalisation, saved as a sentence-transformers directory: fast, and it makes no two texts alike."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from sembed_cli.models import sentence_models

    root = tmp_path_factory.mktemp("tiny")
    vocab = sentence_models.resolve_path(sentence_models.DEFAULT_MODEL) / "vocab.txt"
    tokenizer = BertTokenizerFast(str(vocab))  # positional: transformers 5 ignores a vocab_file= keyword here
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=TINY_DIM,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(root / "bert")
    tokenizer.save_pretrained(root / "bert")
    modules = [Transformer(str(root / "bert"), max_seq_length=64), Pooling(TINY_DIM, "mean"), Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(str(root / "model"))
    return str(root / "model")


@pytest.fixture
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA} (set SEMBED_DATA)")
    return DATA


def api_gives_what_embed_writes(records: list[dict], embedder, *embed_args: str) -> list[dict]:
    """`sembed_cli.api.embed_records(records, embedder)` gives what `sembed embed EMBED_ARGS` writes for the same
    records: the same fields, the same embedding_model, every vector within 1e-6 (issue: the API carries the
    model's recipe). Returns the command's records."""
    import numpy as np

    from sembed_cli import api

    ours = list(api.embed_records(records, embedder))
    run = sembed("embed", "-q", *embed_args, input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    for mine, theirs in zip(ours, run.records, strict=True):
        assert mine.keys() == theirs.keys()
        assert mine["embedding_model"] == theirs["embedding_model"]
        for key, value in theirs.items():
            if isinstance(value, list) and key.startswith("embedding"):
                assert np.allclose(np.asarray(mine[key], dtype=np.float64), value, rtol=0, atol=1e-6), key
    return run.records
