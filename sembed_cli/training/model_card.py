"""The README.md model card of a trained model directory: how it was trained, in words a reader of the hub knows.

A directory trained from a base model would otherwise keep the base's card
(sentence-transformers and transformers copy or regenerate it), which
describes a model this one is not. Every method writes its card through
`write_model_card`, from the `Job`, the method's settings and the metadata
it also writes as `sembed.json`, so the card and the metadata never disagree.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from .job import Job

CARD_FILE = "README.md"
BASE_MODEL_KEYS = ("base_model", "teacher", "encoder", "vectors")  # what each method starts from, in its metadata


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _base_model(metadata: dict) -> str | None:
    for key in BASE_MODEL_KEYS:
        value = metadata.get(key)
        if isinstance(value, dict):  # word vectors (nws) and the frozen encoder (syntax) describe themselves as a dict
            value = value.get("vectors") or value.get("model_name") or value.get("model")
        if value:
            return str(value)
    return None


def model_card(job: Job, settings: Any, metadata: dict, library: str | None = "sentence-transformers") -> str:
    """The card's Markdown: YAML front matter (the library that loads the directory, tags, base model), then method,
    base model, data, recipe, settings, the sembed version and the date."""
    method = metadata.get("method", "?")
    base = _base_model(metadata)
    recipe = job.recipe
    data = metadata.get("data") or {}
    training = metadata.get("training") or {}
    is_instance = dataclasses.is_dataclass(settings) and not isinstance(settings, type)
    own = dataclasses.asdict(settings) if is_instance else dict(settings or {})
    own.pop("model", None)  # the start model is the card's first line, from the metadata; --from-scratch has none
    max_steps = own.get("max_steps")
    steps = training.get("steps")
    lines = ["---", *([f"library_name: {library}"] if library else []), "tags:", "- sembed", f"- sembed-{method}"]
    if base:
        lines.append(f"base_model: {json.dumps(base)}")
    lines += [
        "---",
        "",
        f"# {job.output.name}",
        "",
        f"Trained with `sembed train --method {method}`"
        + (f" from `{base}`" if base else "")
        + f" on `{data.get('input', job.source.rejects.name)}`.",
        "",
        "## Data",
        "",
    ]
    lines += [f"- {key}: {_value(value)}" for key, value in data.items()]
    lines += [
        "",
        "## Recipe",
        "",
        f"- epochs: {recipe.epochs}" + (f" (stopped after --max-steps {max_steps})" if max_steps else ""),
        *([f"- optimiser steps: {steps}"] if steps is not None else []),
        f"- batch size: {recipe.batch_size} {recipe.unit}",
        f"- learning rate: {recipe.lr:g} ({recipe.optimizer})",
        *([f"- warm-up: {recipe.warmup:.0%} of the steps"] if recipe.warmup is not None else []),
        f"- seed: {job.seed}",
        "",
        "## Settings",
        "",
    ]
    lines += [f"- {key}: {_value(value)}" for key, value in own.items()] or ["- (none)"]
    versions = metadata.get("versions") or {}
    lines += [
        "",
        "## Provenance",
        "",
        f"- sembed {versions.get('sembed', '?')}, {metadata.get('created', '?')}",
        *([f"- command line: `{' '.join(metadata['command_line'])}`"] if metadata.get("command_line") else []),
        "- the full record is `sembed.json` beside this card",
        "",
    ]
    return "\n".join(lines)


def write_model_card(
    directory: Path, job: Job, settings: Any, metadata: dict, library: str | None = "sentence-transformers"
) -> Path:
    """Write `directory`/README.md for the model trained by `job` with `settings`, replacing any base model's card;
    `library` loads the directory (None: only sembed does)."""
    path = directory / CARD_FILE
    path.write_text(model_card(job, settings, metadata, library), encoding="utf-8")
    return path
