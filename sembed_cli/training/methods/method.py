"""What a training method declares: its recipe, its settings (each an option of `sembed train`), and `run`.

A method's settings are a frozen dataclass whose fields carry their option
in the field's metadata (flag, help, bounds), the way Hugging Face's
`TrainingArguments` carries its command-line help: the default is written
once, in the field, and `sembed train` builds its options, their "only for
--method" rule and its help from them. Nothing here imports typer or torch,
so `sembed train --help` stays instant; `run` imports its trainer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from typing import Any

from ...io import counted_keys
from ...models.precision import TRAINING_PRECISIONS
from ...models.sentence_models import DEFAULT_MODEL
from ..job import Job, Recipe

__all__ = ["Job", "Method", "Option", "OptionError", "Recipe", "option", "option_of", "refuse"]


@dataclass(frozen=True)
class Option:
    """How a setting appears on the command line; the type and the default are the field's."""

    flags: tuple[str, ...]
    help: str
    metavar: str | None = None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    parse: Callable[[Any], Any] | None = None  # raises ValueError(message) for a value it refuses
    envvar: str | None = None


def option(
    default: Any,
    *flags: str,
    help: str,
    metavar: str | None = None,
    min: float | None = None,
    max: float | None = None,
    choices: tuple[str, ...] | None = None,
    parse: Callable[[Any], Any] | None = None,
    envvar: str | None = None,
) -> Any:
    """A settings field that is the option `flags` of `sembed train`; `choices` name its only values."""
    metavar = metavar or ("|".join(choices) if choices else None)
    return field(default=default, metadata={"option": Option(flags, help, metavar, min, max, choices, parse, envvar)})


def option_of(f: Field) -> Option | None:
    """The option of a settings field; None where the command declares it (see `start_model`)."""
    return f.metadata["option"]


class OptionError(ValueError):
    """A usage error of one option (named by its settings field); `sembed train` reports it with the option's flag."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


@dataclass(frozen=True)
class Method:
    """One training method of `sembed train --method NAME`.

    `summary` is its line in the --method help, `description` its paragraph
    of the Methods section; `text_fields` how many --text-key it takes (0:
    none, `text_key_error` says why); `check(settings, given)` raises
    `OptionError` for settings that do not go together (`given`: the names of
    the options on the command line); `recipes` maps a boolean setting to the
    recipe used when it is true (mlm --from-scratch).
    """

    name: str
    summary: str
    description: str
    recipe: Recipe
    settings: type
    run: Callable[[Job, Any], None]
    text_fields: int = 1
    text_key_error: str = ""
    check: Callable[[Any, frozenset[str]], None] | None = None
    recipes: dict[str, Recipe] = field(default_factory=dict)
    distributed: bool = False  # runs under torchrun / accelerate launch

    def option_names(self) -> set[str]:
        return {f.name for f in fields(self.settings)} | ({"warmup"} if self.recipe.warmup is not None else set())

    def recipe_for(self, settings) -> Recipe:
        return next((r for name, r in self.recipes.items() if getattr(settings, name)), self.recipe)

    def check_usage(self, settings, text_keys: tuple[str, ...] | None, given: frozenset[str]) -> None:
        """The method's usage errors, before anything is read or loaded."""
        if text_keys is not None and counted_keys(text_keys, ("text",) * self.text_fields) is None:
            raise OptionError(
                "text_keys",
                self.text_key_error
                or (
                    "give it twice, for the two texts of a pair"
                    if self.text_fields == 2
                    else f"{self.name} reads one text field"
                ),
            )
        if self.check is not None:
            self.check(settings, given)


def refuse(given: frozenset[str], names: tuple[str, ...], message: str) -> None:
    """An `OptionError` for the first of `names` given on the command line."""
    for name in names:
        if name in given:
            raise OptionError(name, message)


# Settings that several methods share, declared once (each call makes the field for one dataclass).


def start_model() -> Any:
    """The model training starts from: the option is the one meaning of --model that every command shares
    (`options.StartModel`), so it has no `Option` here."""
    return field(default=DEFAULT_MODEL, metadata={"option": None})


def max_steps() -> Any:
    return option(
        None,
        "--max-steps",
        metavar="N",
        min=1,
        help=("stop after N optimiser steps (a trial run; the learning-rate schedule then spans N steps)."),
    )


def checkpoint_steps() -> Any:
    return option(
        500,
        "--checkpoint-steps",
        metavar="N",
        min=0,
        help="checkpoint every N steps (0: only at the end of each epoch).",
    )


def _score_range(text: str | None) -> str | None:
    from ..scored_pairs import ScoreRange

    if text is not None:
        ScoreRange.parse(text)  # ValueError: the message says what is wrong
    return text


def score_range() -> Any:
    return option(
        None,
        "--score-range",
        metavar="LOW:HIGH",
        parse=_score_range,
        help=(
            "scale of the gold scores (ta: with --objective sts), mapped onto [0, 1]: 0:5 for STS-B (score / 5, the "
            "default), 1:5 for SICK ((score - 1) / 4); a score outside it is an error."
        ),
    )


def training_precision() -> Any:
    return option(
        "fp32",
        "--precision",
        choices=TRAINING_PRECISIONS,
        help=(
            "the forward pass's arithmetic: bf16 autocast (weights and optimiser stay fp32) is faster on a CPU "
            "with AVX512-BF16 and on recent GPUs; auto: bf16 where the device does it natively. fp32, the "
            "default, gives the same model on every machine."
        ),
    )
