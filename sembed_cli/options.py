"""Arguments and options shared by several commands, declared once.

Each is an ``Annotated`` type to put in a command's signature, so a flag
means the same thing, with the same help and environment variable, everywhere.
Precedence: the flag, then the ``SEMBED_*`` variable, then the default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import typer

from . import console, threads
from .io import Shard, counted_keys
from .models.precision import PRECISIONS, TRAINING_PRECISIONS
from .models.sentence_models import DEFAULT_MODEL

INPUT_HELP = (
    "JSONL input file; '-' (the default) reads stdin; .gz is read transparently; a .txt file (or "
    "--lines) is plain text, a record a line."
)

Input = Annotated[str, typer.Argument(help=INPUT_HELP, show_default=False, metavar="INPUT")]
Output = Annotated[
    str,
    typer.Option(
        "-o",
        "--output",
        metavar="FILE",
        help="Write JSONL here instead of stdout (gzip for FILE.gz). An existing FILE needs --force, and FILE is never "
        "the input; it is written under a temporary name and renamed at the end, also after an error or Ctrl-C, "
        "so every finished batch is kept.",
    ),
]
# One flag pair: unset, INPUT's name decides (a .txt is plain text, anything else JSONL).
Lines = Annotated[
    bool | None,
    typer.Option(
        "--lines/--jsonl",
        help='--lines: the input is plain text, each non-blank line a record {"text": LINE} (as for a .txt INPUT); '
        "--jsonl: the input is JSONL whatever its name. Default: by INPUT's name.",
        show_default=False,
    ),
]
TextKeys = Annotated[
    list[str] | None,
    typer.Option(
        "--text-key",
        "-k",
        help="Text field to read (repeatable). Default: whichever of text, text_a, text_b the record has.",
        show_default=False,
        metavar="KEY",
    ),
]


def counted_text_keys(given: list[str] | None, default: tuple[str, ...], why: str) -> tuple[str, ...]:
    """The text fields of a command that reads exactly len(`default`) of them (none, one, a pair): --text-key
    given that many times, or `default` when it is not given. Given another number of times, it is a usage
    error (exit 2) saying `why`, in which "{given}" stands for the number of --text-key options given:

        (text_key,) = counted_text_keys(text_keys, ("text",), "nws reads one text field")
        key_a, key_b = counted_text_keys(text_keys, ("text_a", "text_b"), "a pair needs two, got {given}")
    """
    keys = counted_keys(given, default)
    if keys is None:
        raise typer.BadParameter(why.format(given=len(given or ())), param_hint="'--text-key'")
    return keys


def given_on_command_line(ctx: typer.Context) -> frozenset[str]:
    """The names of the command's parameters the user typed (not their defaults, not the environment's)."""
    sources = {name: ctx.get_parameter_source(name) for name in ctx.params}
    # typer carries its own click: compare the source by name
    return frozenset(name for name, source in sources.items() if source is not None and source.name == "COMMANDLINE")


def flag(ctx: typer.Context, name: str) -> str:
    """A parameter's longest flag, quoted as click's usage errors quote it: '--text-key'."""
    return f"'{max(next(p.opts for p in ctx.command.params if p.name == name), key=len)}'"


def _set(value: Any) -> bool:
    """Whether an option holds a value: not its None, False or empty default."""
    return value is not None and value is not False and value != [] and value != ()


@dataclass(frozen=True)
class Only:
    """A rule of the form "option X only with option Y / only in mode Z", the one way commands say it.

    `option`, when the user typed it, must find `with_` set, `without` unset and `when(values)` true (each that
    is given); otherwise it is a usage error (exit 2) with `message`, naming `option`'s flag (or `hint`'s). An
    option left at its default or set from the environment is never refused, so a SEMBED_* variable meant for
    one mode does not break another. `values` are the command's parameters by name, as click parsed them:

        Only("sync", with_="update", message="only with --update DIR")
        Only("wrapped", when=lambda v: v["fmt"] == "prose", message="only for --from prose")
    """

    option: str
    message: str
    with_: str | None = None
    without: str | None = None
    when: Callable[[Mapping[str, Any]], bool] | None = None
    hint: str | None = None

    def allows(self, values: Mapping[str, Any]) -> bool:
        return (
            (self.with_ is None or _set(values[self.with_]))
            and (self.without is None or not _set(values[self.without]))
            and (self.when is None or self.when(values))
        )


@dataclass(frozen=True)
class Mode:
    """One of a command's ways of working and the options it takes (`mode_rules` makes its `Only` rules)."""

    chosen: str  # how the user chooses it, as a refusal names it: "for --method model", "with --words"
    options: frozenset[str]
    refusal: str | None = None  # why this mode refuses the options of others; None: "only" and where they belong
    refusals: Mapping[str, str] = field(default_factory=dict)  # a reason of its own for some options


def mode_rules(modes: tuple[Mode, ...], mode_of: Callable[[Mapping[str, Any]], Mode]) -> tuple[Only, ...]:
    """The `Only` rules of a command with modes (`mode_of` tells which one its values choose): an option that
    only other modes take is refused, with the chosen mode's reason, else "only" and the modes that take it."""

    def not_in(mode: Mode) -> Callable[[Mapping[str, Any]], bool]:
        return lambda values: mode_of(values) is not mode

    rules = []
    for mode in modes:
        for name in sorted(frozenset[str]().union(*(other.options for other in modes)) - mode.options):
            homes = [other.chosen for other in modes if name in other.options]
            message = mode.refusals.get(name) or mode.refusal or "only " + " or ".join(homes)
            rules.append(Only(name, when=not_in(mode), message=message))
    return tuple(rules)


def check_only(ctx: typer.Context, rules: Iterable[Only]) -> None:
    """The usage error of the first rule broken, taking the options in the command's order (then the rules')."""
    given = given_on_command_line(ctx)
    order = {name: i for i, name in enumerate(ctx.params)}
    for rule in sorted((rule for rule in rules if rule.option in given), key=lambda rule: order[rule.option]):
        if not rule.allows(ctx.params):
            raise typer.BadParameter(rule.message, param_hint=flag(ctx, rule.hint or rule.option))


BatchSize = Annotated[
    int,
    typer.Option(
        "--batch-size",
        "-b",
        min=1,
        metavar="N",
        envvar="SEMBED_BATCH_SIZE",
        help="Records per batch; output is flushed after each batch.",
    ),
]
SkipErrors = Annotated[
    bool, typer.Option("--skip-errors", help="Skip bad records, report how many (and where) on stderr.")
]
Force = Annotated[bool, typer.Option("--force", help="Replace an existing output (-o FILE, or the artifact written).")]
Seed = Annotated[int, typer.Option("--seed", envvar="SEMBED_SEED", metavar="N", help="Seed for every random choice.")]
DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")


def _device(value: str) -> str:
    if not DEVICE.fullmatch(value):
        raise typer.BadParameter(f"'{value}' is not one of auto, cpu, cuda, cuda:N")
    return value


Device = Annotated[
    str,
    typer.Option(
        "--device",
        envvar="SEMBED_DEVICE",
        metavar="DEVICE",
        callback=_device,
        help="auto (CUDA when present), cpu, cuda or cuda:N.",
    ),
]


def _thread_count(text: str) -> int:
    try:
        return threads.count(text)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


def _threads(value: int | None) -> int | None:
    threads.configure(value)
    return value


Threads = Annotated[
    int | None,
    typer.Option(
        "--threads",
        metavar="N",
        envvar=threads.VARIABLE,
        parser=_thread_count,
        callback=_threads,
        show_default=False,
        help="CPU threads to compute with (torch, BLAS, FAISS; also OMP_NUM_THREADS). Default: the usable cores less "
        "those other processes keep busy now (measured over 0.2 s), at least 1, so a busy machine does not slow it "
        "down many times over; give each of N jobs on one machine cores/N.",
    ),
]


def finite(value: float | None) -> float | None:
    """The callback of a float option that must be a number: click lets nan and inf through, also past min/max."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter("must be a finite number")
    return value


# One alias per meaning of --model, each with its own environment variable: setting the model one command embeds
# with must not change the pipeline another parses with, the masked-LM a third tastes with, or what training starts
# from. gensets takes two models at once, so its flags say which: --spacy-model (SEMBED_SPACY_MODEL) and --mlm
# (SEMBED_MLM: an English masked-LM, not taste's POI one). search's --model is the index's own model at another path:
# it takes no variable, so that SEMBED_MODEL set for embedding cannot make it refuse an index of another model.
SpacyModel = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        envvar="SEMBED_SPACY_MODEL",
        metavar="NAME",
        help="spaCy pipeline: an installed package name or a path.",
    ),
]
SentenceModel = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        envvar="SEMBED_MODEL",
        metavar="MODEL",
        help=f"sentence-transformers model: a directory (one `sembed train` wrote included) or {DEFAULT_MODEL}, the "
        "packaged default. Never downloaded. Records that already hold vectors name their model (embedding_model); "
        "another is refused.",
    ),
]
MaskedLM = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        envvar="SEMBED_TASTE_MODEL",
        metavar="DIR",
        show_default=False,
        help="Masked-LM directory: one `sembed train --method mlm --from-scratch` or `--method poi` wrote, or any "
        "Hugging Face masked-LM directory (required). Never downloaded.",
    ),
]
StartModel = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        envvar="SEMBED_START_MODEL",
        metavar="MODEL",
        help=f"the model training starts from: a sentence-transformers directory or {DEFAULT_MODEL}, the packaged "
        "default (mlm: the BERT encoder to adapt, a sentence-transformers or Hugging Face directory, or a masked-LM "
        "it wrote, which goes on training with its head; poi: the stage-1 directory; syntax: the word encoder). "
        "Never downloaded.",
    ),
]


BACKEND_HELP = (
    "torch: sentence-transformers, any device (the default). onnx: the model's transformer exported to ONNX "
    "once (MODEL/onnx/, else under SEMBED_CACHE, default ~/.cache/sembed) and run by ONNX Runtime on the CPU, "
    "with the model's own pooling in numpy: the same vectors, a start without torch, less memory. Needs the "
    "onnx extra: pip install 'sembed[onnx]'."
)
QUANTIZE_HELP = (
    "With --backend onnx: int8 is ONNX Runtime's dynamic quantisation in the config of this CPU's instruction "
    "set (AVX2, AVX-512, VNNI): faster, other vectors (their quality: the docs)."
)
BackendName = Literal["torch", "onnx"]
Quantization = Literal["none", "int8"]
Backend = Annotated[
    BackendName, typer.Option("--backend", envvar="SEMBED_BACKEND", metavar="torch|onnx", help=BACKEND_HELP)
]
Quantize = Annotated[
    Quantization, typer.Option("--quantize", envvar="SEMBED_QUANTIZE", metavar="none|int8", help=QUANTIZE_HELP)
]


def check_backend(backend: str, quantize: str, device: str, precision: str = "auto") -> None:
    """Usage errors of --backend and --quantize: int8 is ONNX's, and ONNX runs in fp32 (or int8) on the CPU."""
    if quantize != "none" and backend != "onnx":
        raise typer.BadParameter("only with --backend onnx", param_hint="'--quantize'")
    if backend == "onnx" and device not in ("auto", "cpu"):
        raise typer.BadParameter("--backend onnx runs on the CPU: use --device cpu (or auto)", param_hint="'--device'")
    if backend == "onnx" and precision not in ("auto", "fp32"):
        raise typer.BadParameter(
            "--backend onnx computes in fp32 (or int8 with --quantize int8)", param_hint="'--precision'"
        )


def _shard(value: str) -> Shard:
    try:
        return Shard.parse(value)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


ShardOption = Annotated[
    Shard | None,
    typer.Option(
        "--shard",
        envvar="SEMBED_SHARD",
        metavar="I/N",
        parser=_shard,
        show_default=False,
        help="Process only share I of N (1 <= I <= N) of the input: its records number k = 0, 1, ... (blank lines "
        "not counted) and share I takes those with k mod N = I - 1, so N jobs with 1/N ... N/N cover the "
        "input exactly once, each writing its own output.",
    ),
]
ModelPrecision = Literal[PRECISIONS]  # type: ignore[valid-type]  # choices from models/precision.py
TrainingPrecision = Literal[TRAINING_PRECISIONS]  # type: ignore[valid-type]
Precision = Annotated[
    ModelPrecision,
    typer.Option(
        "--precision",
        metavar="|".join(PRECISIONS),
        help="Model precision: auto is fp16 on CUDA and fp32 on the CPU (the only one allowed there).",
    ),
]
MaskedLMPrecision = Annotated[
    ModelPrecision,
    typer.Option(
        "--precision",
        metavar="|".join(PRECISIONS),
        help="The masked-LM's precision: auto is fp16 on CUDA, and on the CPU bf16 where the CPU does bf16 natively "
        "(AVX512-BF16, AMX), which is faster there, else fp32. "
        "Fix it for output that matches across machines.",
    ),
]
LongText = Annotated[
    Literal["truncate", "window", "error"],
    typer.Option(
        "--long-text",
        metavar="truncate|window|error",
        envvar="SEMBED_LONG_TEXT",
        help="A text longer than the model's window (its max_seq_length, in tokens): truncate keeps the window's worth "
        "(the model's own behaviour), window embeds it whole as the token-weighted mean of consecutive windows cut "
        "between words, error makes it bad input. Such texts are counted on stderr in any case.",
    ),
]
NProcess = Annotated[int, typer.Option("--n-process", min=1, metavar="N", help="spaCy worker processes.")]


def _quiet(value: bool) -> bool:
    console.set_quiet(value)
    return value


def _verbose(value: bool) -> bool:
    console.set_verbose(value)
    return value


# Eager: the console is set before any other option's callback logs (--threads reports its choice under -v).
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        callback=_quiet,
        is_eager=True,
        help="Errors only on stderr: no progress, information or warnings (an artifact's metadata records them).",
    ),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        callback=_verbose,
        is_eager=True,
        help="Debug logging, and Python tracebacks on errors (also SEMBED_DEBUG=1).",
    ),
]
