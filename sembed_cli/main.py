"""The root `sembed` command: registers the subcommands and turns failures into exit codes.

Exit status: 0 success (also when a downstream reader such as ``head`` closes
the pipe), 1 bad input or another failure the message explains, 2 usage error,
128 + the signal's number when interrupted: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP
(see `signals`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from . import console, distributed, signals
from .commands import (
    cluster,
    convert,
    dedup,
    embed,
    gensets,
    index,
    normalize,
    parse,
    parts,
    search,
    spo,
    taste,
    train,
)
from .commands.eval import eval_app
from .errors import SembedError
from .version import __version__


class SembedGroup(TyperGroup):
    """Runs a subcommand and reports what went wrong in one line on stderr."""

    # typer hands its own Context (a subclass) to both; the base class names the click Context typer vendors
    # privately (typer._click), which sembed does not import.
    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        """`sembed index merge ...` is the command index-merge (index's own first argument is its INPUT)."""
        if len(args) >= 2 and args[0] == "index" and args[1] == "merge":
            args = ["index-merge", *args[2:]]
        if len(args) >= 2 and args[0] == "parts" and args[1] == "run":  # `sembed parts run`: likewise parts-run
            args = ["parts-run", *args[2:]]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except SembedError as e:
            if console.state.verbose:
                console.console.print_exception()
            console.error(str(e))
            ctx.exit(1)
        except BrokenPipeError:
            _silence_stdout()
            ctx.exit(0)
        except KeyboardInterrupt as e:  # Ctrl-C, and SIGTERM or SIGHUP as signals.Interrupted
            console.error(signals.describe(e))
            ctx.exit(signals.exit_status(e))
        except (typer.Exit, typer.Abort, typer.TyperException):  # typer's own flow: help, usage errors
            raise
        except Exception as e:  # a bug: say so in one line, traceback only on request
            if console.state.verbose:
                raise
            console.error(f"internal error: {type(e).__name__}: {e} (run with -v for the traceback)")
            ctx.exit(1)


def _silence_stdout() -> None:
    """The reader has gone; point stdout at /dev/null so the final flush at exit stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sembed {__version__}")
        raise typer.Exit()


app = typer.Typer(
    cls=SembedGroup,
    name="sembed",
    epilog="Exit status: 0 success, 1 bad input or failure (one 'error:' line on stderr), 2 usage error, 130 "
    "interrupted (Ctrl-C), 143 SIGTERM, 129 SIGHUP (finished batches kept, checkpoints saved).",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Composable tools for sentence and word representations: JSONL records in, JSONL records out.

    Every subcommand reads JSONL (a file or stdin) and writes JSONL to stdout,
    passing through the fields it does not own, so commands chain in pipelines:

    \b
        sembed convert --from stsb sts-test.csv | sembed parse | sembed spo
    """
    console.start_command()
    console.state.rank = distributed.rank()  # progress and information from rank 0 only
    if ctx.invoked_subcommand != "train":  # train decides by method
        distributed.refuse(f"sembed {ctx.invoked_subcommand}")


app.command("convert")(convert.convert_command)
app.command("parse")(parse.parse_command)
app.command("spo")(spo.spo_command)
app.command("normalize")(normalize.normalize_command)
app.command("gensets")(gensets.gensets_command)
app.command("embed")(embed.embed_command)
app.command("train")(train.train_command)
app.command("taste")(taste.taste_command)
app.command("index")(index.index_command)
app.command("index-merge")(index.merge_command)
app.command("search")(search.search_command)
app.command("dedup")(dedup.dedup_command)
app.command("cluster")(cluster.cluster_command)
app.command("parts")(parts.parts_command)
app.command("parts-run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(parts.run_command)
app.add_typer(eval_app, name="eval")


def run() -> None:
    """Console-script entry point: SIGTERM and SIGHUP stop a run as Ctrl-C does."""
    signals.install()
    app()
