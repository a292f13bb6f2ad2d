"""sembed train: fine-tune a model with one of the papers' methods and write it as a model directory.

The methods, their options, defaults and help come from the registry in
`sembed_cli/training/methods/`; this module only turns it into a command.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from enum import Enum
from typing import Annotated, Any

import typer

from .. import console, distributed
from ..io import RecordSource
from ..options import (
    Device,
    Force,
    Input,
    Only,
    Quiet,
    Seed,
    SkipErrors,
    TextKeys,
    Threads,
    Verbose,
    check_only,
    finite,
    flag,
    given_on_command_line,
)
from ..training.methods import METHODS, Method, OptionError, train
from .train_options import (
    RECIPE_OPTIONS,
    Epochs,
    LearningRate,
    ModelDir,
    Resume,
    TrainBatchSize,
    help_section,
    method_options,
    recipe_defaults,
)


def command_for(methods: dict[str, Method]) -> Callable[..., None]:
    """The `sembed train` command of `methods`: its options, their "only for --method" rules (options.Only), dispatch
    and help."""
    takers = {
        name: [m.name for m in methods.values() if name in m.option_names()]
        for name in {name for m in methods.values() for name in m.option_names()}
    }
    from_settings = method_options(methods, takers)

    def method_in(names: list[str]) -> Callable[[Mapping[str, Any]], bool]:
        return lambda values: values["method"].value in names

    only = tuple(
        Only(name, when=method_in(names), message=f"only for --method {'|'.join(names)}")
        for name, names in takers.items()
    )

    def train_command(ctx: typer.Context, **values: Any) -> None:
        check_only(ctx, only)
        method = methods[values.pop("method").value]
        given = given_on_command_line(ctx)
        if not method.distributed:
            distributed.refuse(f"train --method {method.name}")
        settings = method.settings(**{f.name: values[f.name] for f in fields(method.settings)})
        text_keys = tuple(values["text_keys"]) if values["text_keys"] is not None else None
        try:
            method.check_usage(settings, text_keys, given)
        except OptionError as e:
            raise typer.BadParameter(str(e), param_hint=flag(ctx, e.name)) from None
        recipe = replace(
            method.recipe_for(settings), **{name: values[name] for name in RECIPE_OPTIONS if values[name] is not None}
        )
        _train(ctx, method, settings, recipe, text_keys, values)

    warmup = "|".join(m.name for m in methods.values() if m.recipe.warmup is not None)
    common = [
        ("input", Input, "-"),
        (
            "method",
            Annotated[
                Enum("MethodName", {name: name for name in methods}, type=str),
                typer.Option(
                    "--method",
                    case_sensitive=False,
                    metavar="|".join(methods),
                    show_default=False,
                    help="; ".join(f"{m.name}: {m.summary}" for m in methods.values()) + ".",
                ),
            ],
            ...,
        ),
        ("output", ModelDir, ...),
        ("epochs", Epochs, None),
        ("batch_size", TrainBatchSize, None),
        ("lr", LearningRate, None),
        (
            "warmup",
            Annotated[
                float | None,
                typer.Option(
                    "--warmup",
                    min=0.0,
                    max=1.0,
                    metavar="SHARE",
                    callback=finite,
                    show_default=False,
                    help=f"{warmup}: share of the steps warming the learning rate up, linearly. Default: the method's.",
                ),
            ],
            None,
        ),
    ]
    rest = [
        ("text_keys", TextKeys, None),
        ("resume", Resume, False),
        ("force", Force, False),
        ("seed", Seed, 42),
        ("device", Device, "auto"),
        ("skip_errors", SkipErrors, False),
        ("threads", Threads, None),
        ("quiet", Quiet, False),
        ("verbose", Verbose, False),
    ]
    parameters = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
        for name, annotation, default in common + from_settings + rest
    ]
    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    train_command.__signature__ = inspect.Signature([context, *parameters], return_annotation=None)  # type: ignore[attr-defined]  # typer reads it
    train_command.__doc__ = HELP.format(
        methods=help_section("Methods", [(m.name, m.description) for m in methods.values()]),
        defaults=help_section("Defaults (--epochs, --batch-size, --lr, --warmup)", recipe_defaults(methods)),
        distributed=", ".join(m.name for m in methods.values() if m.distributed),
    )
    return train_command


def _train(ctx: typer.Context, method: Method, settings, recipe, text_keys, values: dict) -> None:
    """Train `method` as the command's options say (training.methods.train)."""
    if not distributed.is_main_process():
        console.set_quiet(True)
        warnings.simplefilter("ignore")  # the libraries' notices too: rank 0 shows them once
    source = RecordSource(values["input"], skip_errors=values["skip_errors"])
    output = values["output"]
    if not train(
        method,
        settings,
        source,
        output,
        recipe,
        text_keys=text_keys,
        seed=values["seed"],
        device=values["device"],
        resume=values["resume"],
        force=values["force"],
    ):
        console.say(f"{output} is complete: nothing to resume (--force trains it again)")


HELP = """Train a model with one of the papers' methods and write it as a model directory.

Reads records (what each method needs is below) and writes nothing to
stdout: the model goes to DIR with sembed.json: the method, base model,
the data (input, record count, SHA-256), every setting, the seed and
package versions. Training sees the whole input before the first step,
so all of it is read into memory first.

{methods}

{defaults}
AdamW has weight decay 0.01 and gradients clipped at norm 1; the
learning rate decays linearly to 0 after the warm-up; data is shuffled
each epoch by --seed. On a CPU, fewer epochs or --max-steps give a
quick model.

Progress and one line per epoch go to stderr. Checkpoints go to
DIR.checkpoints every --checkpoint-steps steps (nws: every epoch) and
at each epoch's end; after an interruption the same command with
--resume continues from the newest one and ends with the weights an
uninterrupted run would have (same data and settings required;
--device and --precision may change). An existing DIR, or checkpoints
of an unfinished run, are replaced only with --force. DIR appears
complete or not at all; a second run writing it meanwhile refuses;
--resume on a complete DIR leaves it as it is. SIGTERM and SIGHUP stop
a run as Ctrl-C does, with a checkpoint.
{distributed} run under torchrun / accelerate launch for several
GPUs (--batch-size per process); the other methods refuse to. An option
of another method is a usage error.

Bad input stops with 'error: FILE:LINE: what is wrong' (missing or empty
text, missing, non-numeric or out-of-range score, unknown label), exit
1; --skip-errors trains on the rest and reports what it skipped.

\b
Example:
  sembed convert --from stsb sts-train.csv | sembed parse | sembed spo \\
    | sembed train --method cf -o stsb-cf --epochs 4
  sembed convert --from sick SICK_train.txt | sembed normalize \\
      -k text_a -k text_b | sembed train --method ta -o sick-ta
  sembed convert --from prose --doc-break blank corpora/abc \\
    | sembed train --method nws -o abc-nws
  sembed convert --from prose --doc-break blank corpora/abc \\
    | sembed train --method mlm --max-steps 2000 -o abc-mlm
"""


train_command = command_for(METHODS)
