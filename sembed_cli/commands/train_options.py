"""The options of `sembed train`: those of every method, those built from the method registry's settings, and the
help sections the registry gives."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from copy import copy
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_type_hints

import typer

from ..options import (
    StartModel,
    finite,
)
from ..training.methods import Method
from ..training.methods.method import option_of

ModelDir = Annotated[
    Path,
    typer.Option(
        "-o",
        "--output",
        metavar="DIR",
        show_default=False,
        resolve_path=False,
        help="The model directory to write (required). Checkpoints go to DIR.checkpoints until it is written.",
    ),
]
Epochs = Annotated[
    int | None,
    typer.Option(
        "--epochs",
        min=1,
        metavar="N",
        show_default=False,
        help="Passes over the data. Default: the method's (see Defaults).",
    ),
]
TrainBatchSize = Annotated[
    int | None,
    typer.Option(
        "--batch-size",
        "-b",
        min=1,
        metavar="N",
        show_default=False,
        help="Examples per optimiser step, in the method's unit (see Defaults). Default: the method's.",
    ),
]
LearningRate = Annotated[
    float | None,
    typer.Option(
        "--lr",
        min=0.0,
        metavar="LR",
        callback=finite,
        show_default=False,
        help="Peak learning rate of the method's optimiser (ta: the encoder's, Token Attention and the heads "
        "take 3e-5; "
        "mlm adapting an encoder: the encoder's, its new head takes 25 times it). Default: the method's.",
    ),
]
Resume = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue an interrupted run from its newest checkpoint "
        "(repeat its command, with --resume; with --force too, start "
        "over when the checkpoints are of another run). A DIR already "
        "complete is left as it is, exit 0.",
    ),
]
DECLARED = {"model": StartModel}  # settings whose option several commands share (sembed_cli/options.py)
RECIPE_OPTIONS = ("epochs", "batch_size", "lr", "warmup")  # a recipe's fields, each an option


def method_options(methods: dict[str, Method], takers: dict[str, list[str]]) -> list[tuple[str, Any, Any]]:
    """Each method setting as (name, annotation, default) of the command; one option per name, in registry order."""
    options: dict[str, tuple[str, Any, Any]] = {}
    for method in methods.values():
        hints = get_type_hints(method.settings)
        for f in fields(method.settings):
            spec, default = option_of(f), f.default
            assert default is not MISSING, f"{method.name}: {f.name} has no default"
            if f.name in options:
                assert options[f.name][2] == default, f"{f.name}: one option, one default"
                continue
            prefix = "" if len(takers[f.name]) == len(methods) else f"{'|'.join(takers[f.name])}: "
            if spec is None:  # an option of several commands: its help says which methods take it here too
                kind, info = get_args(DECLARED[f.name])
                info = copy(info)
                info.help = prefix + info.help
                options[f.name] = (f.name, Annotated[kind, info], default)
                continue
            kind = Literal[spec.choices] if spec.choices else hints[f.name]
            floating = hints[f.name] in (float, float | None)
            callback = finite if floating else parse_callback(spec.parse) if spec.parse else None
            declaration = typer.Option(
                *spec.flags,
                help=prefix + spec.help,
                metavar=spec.metavar,
                min=spec.min,
                max=spec.max,
                callback=callback,
                envvar=spec.envvar,
                show_default=default is not None and kind is not bool,
            )
            options[f.name] = (f.name, Annotated[kind, declaration], default)
    return list(options.values())


def parse_callback(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A click callback of a setting's `parse`, whose ValueError is the usage error."""

    def callback(value):
        try:
            return parse(value)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None

    return callback


def help_section(title: str, entries: list[tuple[str, str]]) -> str:
    """A help section of NAME and a wrapped paragraph each, kept as it is by click (\\b)."""
    lines, width = ["\b", f"{title}:"], max(len(name) for name, _ in entries) + 1
    for name, text in entries:
        lines += textwrap.wrap(
            text, 70, initial_indent=f"  {name:<{width}}", subsequent_indent=" " * (width + 2), break_on_hyphens=False
        )
    return "\n".join(lines)


def recipe_defaults(methods: dict[str, Method]) -> list[tuple[str, str]]:
    """Each method's recipe (and those of its variants); methods with the same recipe share a line."""
    by_text: dict[str, list[str]] = {}
    for m in methods.values():
        text = m.recipe.describe() + "".join(
            f"; --{name.replace('_', '-')}: {recipe.describe()}" for name, recipe in m.recipes.items()
        )
        by_text.setdefault(text.replace("e-0", "e-"), []).append(m.name)
    return [(", ".join(names), text) for text, names in by_text.items()]
