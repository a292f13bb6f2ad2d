"""The README.md model card every `sembed train` method writes (training/model_card.py), without torch: the card
says the method, the base model, the data, the recipe, the settings, the sembed version and the date."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sembed_cli.io import RecordSource
from sembed_cli.training.job import Job
from sembed_cli.training.methods import mlm, nws, syntax
from sembed_cli.training.model_card import model_card, write_model_card


def job_of(tmp_path: Path, recipe, seed: int = 42) -> Job:
    return Job(
        RecordSource(str(tmp_path / "corpus.jsonl")),
        tmp_path / "model",
        recipe,
        None,
        seed,
        "cpu",
        resume=False,
        force=False,
    )


METADATA = {
    "method": "mlm",
    "base_model": "all-MiniLM-L6-v2",
    "created": "2026-11-25T05:00:00+00:00",
    "data": {"input": "prose.jsonl", "records": 1200, "sha256": "ab12"},
    "training": {"steps": 38},
    "versions": {"sembed": "0.1.0"},
    "command_line": ["sembed", "train", "--method", "mlm", "prose.jsonl"],
}


def test_the_card_says_how_the_model_was_trained(tmp_path):
    recipe = dataclasses.replace(mlm.ADAPTING, epochs=2)
    card = model_card(job_of(tmp_path, recipe, seed=7), mlm.Settings(max_steps=38), METADATA)
    head, body = card.split("\n---\n", 1)
    assert head.splitlines() == [
        "---",
        "library_name: sentence-transformers",
        "tags:",
        "- sembed",
        "- sembed-mlm",
        'base_model: "all-MiniLM-L6-v2"',
    ]
    assert "# model\n" in body
    assert "Trained with `sembed train --method mlm` from `all-MiniLM-L6-v2` on `prose.jsonl`." in body
    for line in (
        "- input: prose.jsonl",
        "- records: 1200",
        "- sha256: ab12",
        "- epochs: 2 (stopped after --max-steps 38)",
        "- optimiser steps: 38",
        "- batch size: 32 sentences",
        "- learning rate: 0.0002 (AdamW)",
        "- warm-up: 5% of the steps",
        "- seed: 7",
        "- holdout: 0.02",
        "- from_scratch: false",
        "- sembed 0.1.0, 2026-11-25T05:00:00+00:00",
        "- command line: `sembed train --method mlm prose.jsonl`",
    ):
        assert f"\n{line}\n" in body, line
    assert "\n- model: " not in body  # the start model is said once, in the first line


def test_a_method_without_a_base_model_or_a_library_says_so(tmp_path):
    metadata = {
        "method": "nws",
        "vectors": {"vectors": "glove-6b-50d", "dim": 50},
        "data": {"sentences": 9},
        "created": "2026-11-25",
        "versions": {"sembed": "0.1.0"},
    }
    card = model_card(job_of(tmp_path, nws.RECIPE), nws.Settings(), metadata, library=None)
    assert card.startswith('---\ntags:\n- sembed\n- sembed-nws\nbase_model: "glove-6b-50d"\n---\n')
    assert "on `" + str(tmp_path / "corpus.jsonl") + "`." in card  # the data file, where the metadata names none
    assert "\n- batch size: 128 pairs\n" in card and "warm-up" not in card  # nws has no schedule to warm up
    assert "\n- init: isf\n" in card and "\n- vectors: glove-6b-50d\n" in card


def test_syntax_names_the_frozen_encoder_it_read(tmp_path):
    metadata = {"method": "syntax", "encoder": {"model": "/models/all-MiniLM-L6-v2", "model_name": "all-MiniLM-L6-v2"}}
    card = model_card(job_of(tmp_path, syntax.RECIPE), syntax.Settings(), metadata, library=None)
    assert "Trained with `sembed train --method syntax` from `all-MiniLM-L6-v2` on `" in card


def test_write_model_card_replaces_the_base_models_card(tmp_path):
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "README.md").write_text("# all-MiniLM-L6-v2\n\nThe base model's card.\n")
    path = write_model_card(directory, job_of(tmp_path, mlm.ADAPTING), mlm.Settings(), METADATA)
    assert path == directory / "README.md"
    assert "base model's card" not in path.read_text() and "sembed train --method mlm" in path.read_text()
