"""transformers' load report on stderr: left out for a masked-LM checkpoint loaded as an encoder (its MLM head
unused, BertModel's pooler new: nothing wrong), kept for anything else (sembed_cli/models/sentence_models.py)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, jsonl

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def masked_lm(tmp_path_factory) -> Path:
    """A 1-layer BertForMaskedLM (random weights, the packaged MiniLM's vocabulary) saved as transformers saves it:
    no modules.json, no pooler, an MLM head."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    from sembed_cli.models import sentence_models

    directory = tmp_path_factory.mktemp("masked-lm") / "model"
    tokenizer = BertTokenizerFast(str(sentence_models.resolve_path(sentence_models.DEFAULT_MODEL) / "vocab.txt"))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def sembed_process(*args: str, input: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    """`sembed ARGS` in its own process: transformers' log handler writes to the process's stderr."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1", **({"SEMBED_CACHE": str(cache)} if cache else {})}
    return subprocess.run(
        [sys.executable, "-m", "sembed_cli", *args],
        input=input,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
        timeout=300,
    )


LONG = (
    "warning: 1 text(s) longer than the model's 32-token window were truncated to it "
    "(--long-text window embeds them whole, error refuses them)\n"
)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize(
    "options, rows, stderr",
    [
        ((), 2, LONG),  # sembed's own message stays
        (("--backend", "onnx"), 2, LONG),  # the ONNX export loads the encoder with transformers too
        (("--words",), 3 + 60, ""),  # the word encoder: one record a word
    ],
)
def test_a_masked_lm_loads_as_an_encoder_without_the_load_report(masked_lm, tmp_path, options, rows, stderr):
    model = shutil.copytree(masked_lm, tmp_path / "model")  # the ONNX export is written beside it
    run = sembed_process(
        "embed",
        "--model",
        str(model),
        "--device",
        "cpu",
        *options,
        cache=tmp_path / "cache",
        input=jsonl({"text": "a short text"}, {"text": "a long text " * 20}),
    )
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == rows
    assert run.stderr == stderr


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_load_report_of_a_missing_encoder_weight_still_shows(masked_lm, tmp_path):
    from safetensors.torch import load_file, save_file

    broken = shutil.copytree(masked_lm, tmp_path / "broken")
    weights = load_file(str(masked_lm / "model.safetensors"))
    del weights["bert.encoder.layer.0.output.dense.bias"]
    save_file(weights, str(broken / "model.safetensors"), metadata={"format": "pt"})
    run = sembed_process("embed", "--model", str(broken), "--device", "cpu", input=jsonl({"text": "a text"}))
    assert run.returncode == 0, run.stderr
    assert "LOAD REPORT" in run.stderr and "encoder.layer.0.output.dense.bias" in run.stderr
    assert "pooler.dense.bias" in run.stderr  # the report is whole: it is transformers', not sembed's


def test_the_report_filter_is_removed_after_the_load():
    from sembed_cli.models import sentence_models

    logger = logging.getLogger("transformers.modeling_utils")
    before = list(logger.filters)
    with sentence_models.masked_lm_report_left_out():
        assert len(logger.filters) == len(before) + 1
    assert logger.filters == before
