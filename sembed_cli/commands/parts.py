"""sembed parts: the state of a parts directory, its records in input order, and running its parts on an engine."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Literal

import typer

from .. import console
from ..errors import SembedError
from ..io import STDIN, RecordSink
from ..options import Only, Quiet, Verbose, check_only, given_on_command_line

PartsDirArgument = Annotated[
    Path, typer.Argument(metavar="DIR", show_default=False, help="The directory `sembed embed --parts DIR` writes.")
]
Cat = Annotated[
    bool,
    typer.Option(
        "--cat",
        help="Write every part's records to stdout in the input's order, each with its vectors as a list "
        "(what `sembed embed INPUT` writes in one process); every part must be done.",
    ),
]


def parts_command(
    directory: PartsDirArgument, cat: Cat = False, quiet: Quiet = False, verbose: Verbose = False
) -> None:
    """The parts of a split: done, missing or stale; exit status 1 while any is not done.

    Writes one record per part on stdout: part, of, state (done, missing,
    stale), and for a done part its records, skipped, embedding_model,
    created and host; reason says why a part is missing (interrupted: the
    hidden files its writer left) or stale (its files changed, or it was
    made from another input, model or settings than the newest part). A
    summary line goes to stderr. A workflow or a cron job waits on the exit
    status; `sembed index DIR` builds one index from the parts when all are
    done.

    --cat writes the records instead, in the input's order (the shares of
    --shard I/N are round-robin: they interleave back), with their vectors
    in place of embedding_row: the one-process output of `sembed embed`.

    \b
    Example:
      for i in 1 2 3 4; do sembed embed corpus.txt --shard $i/4 --parts parts; done
      sembed parts parts && sembed index parts -o corpus-index
      sembed parts parts --cat | sembed eval sts --versus one-process.jsonl
    """
    from ..parts.files import summary, survey
    from ..parts.reassemble import PartsSource

    if cat:
        with RecordSink(STDIN, flush_every=1000) as sink:
            sink.write_all(PartsSource(directory))
        return
    states = survey(directory)
    with RecordSink(STDIN) as sink:
        sink.write_all(state.describe() for state in states)
    line = summary(states)
    for state in states:
        if state.reason:
            console.say(f"part {state.index}: {state.state}: {state.reason}")
    if any(state.state != "done" for state in states):
        console.warn(line)
        raise typer.Exit(1)
    console.say(line)


Engine = Annotated[
    Literal["local", "ray"],
    typer.Option(
        "--engine",
        metavar="local|ray",
        help="local: every part in this process, one after another; ray: the parts as tasks of a pool of Ray actors "
        "(one model load each), retried when a worker dies (pip install 'sembed[ray]').",
    ),
]
Shards = Annotated[int, typer.Option("--shards", min=1, metavar="N", help="How many parts to split the input into.")]
Address = Annotated[
    str | None,
    typer.Option(
        "--address",
        metavar="ADDR",
        envvar="RAY_ADDRESS",
        show_default=False,
        help="ray: the cluster to join ('auto' for the one `ray start --head` started here). Default: start a local "
        "one.",
    ),
]
Workers = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=1,
        metavar="W",
        show_default=False,
        help="ray: actors to start (each runs one part at a time). Default: one per CPU of the cluster.",
    ),
]
WorkerGpus = Annotated[
    float,
    typer.Option(
        "--worker-gpus", min=0, metavar="G", help="ray: GPUs each actor takes (give embed --device cuda too)."
    ),
]
Retries = Annotated[
    int,
    typer.Option(
        "--retries", min=0, metavar="R", help="ray: restarts of a worker that dies, each re-running its part."
    ),
]
REFUSED = ("--shard", "--parts", "-o", "--output", "--npy")
RAY_ONLY = tuple(
    Only(name, when=lambda values: values["engine"] == "ray", message="only with --engine ray")
    for name in ("address", "workers", "worker_gpus")
)


def run_command(
    ctx: typer.Context,
    directory: PartsDirArgument,
    shards: Shards = ...,  # type: ignore[assignment]  # typer: ... makes the option required
    engine: Engine = "local",
    address: Address = None,
    workers: Workers = None,
    worker_gpus: WorkerGpus = 0.0,
    retries: Retries = 3,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Run every part of a split that is not done: sembed parts run.

    The arguments after -- are those of `sembed embed` (INPUT first); each
    part runs as `sembed embed ARGS --shard I/N --parts DIR`, exactly what
    a Slurm array task or a shell loop runs, so parts made by any engine
    mix in one directory. A part already done (its manifest matches) is
    skipped, a missing, partial or stale one is redone. Ends as `sembed
    parts DIR` does: a summary, exit status 1 while a part is not done.

    \b
    Example:
      sembed parts run parts --shards 8 -- corpus.txt --model all-MiniLM-L6-v2
      ray start --head --num-cpus 8
      sembed parts run parts --shards 64 --engine ray --address auto -- corpus.txt
    """
    from ..parts.engines import RayOptions, run_local, run_ray
    from ..parts.files import summary, survey

    arguments = list(ctx.args)
    if not arguments:
        raise typer.BadParameter("give sembed embed's arguments after --, INPUT first", param_hint="'-- ARGS'")
    refused = [arg for arg in arguments if arg.split("=")[0] in REFUSED]
    if refused:
        raise typer.BadParameter(
            f"{refused[0]} is not for the parts' embed (sembed parts run sets --shard and "
            "--parts, and a part's files are named after it)",
            param_hint="'-- ARGS'",
        )
    check_only(ctx, RAY_ONLY)
    arguments += [flag for flag, wanted in (("-q", quiet), ("-v", verbose)) if wanted and flag not in arguments]
    run_part = functools.partial(embed_part_in_process, tuple(arguments), str(directory), shards)
    indices = list(range(1, shards + 1))
    if engine == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise SembedError("--engine ray needs Ray", "pip install 'sembed[ray]'") from None
        runs = run_ray(indices, run_part, RayOptions(address, workers, worker_gpus, retries))
    else:
        runs = run_local(indices, run_part)
    for run in runs:
        if run.status != 0:
            console.warn(f"part {run.index}: " + (f"exit status {run.status}" if run.status is not None else run.error))
    states = survey(directory) if any(run.status == 0 for run in runs) else []
    line = summary(states) if states else f"0 of {shards} parts done"
    if not states or any(state.state != "done" for state in states):
        console.warn(line)
        raise typer.Exit(1)
    console.say(line)


ROOT_COMMAND = "sembed_cli.main"  # the module of the `sembed` console script, whose `app` is the root command


def embed_part_in_process(arguments: tuple[str, ...], directory: str, count: int, index: int) -> int:
    """`sembed embed ARGS --shard I/N --parts DIR` in this process (a Ray worker's, or this run's); its exit status
    (errors are on stderr). The root command is found by its module's name, as the console script finds it: this
    module is one of the commands that module registers, so it does not import it (no import circle)."""
    import importlib

    root = typer.main.get_command(importlib.import_module(ROOT_COMMAND).app)
    try:
        status = root.main(
            ["embed", *arguments, "--shard", f"{index}/{count}", "--parts", directory],
            prog_name="sembed",
            standalone_mode=False,
        )
    except SystemExit as e:
        return int(e.code or 0)
    except typer.Exit as e:
        return e.exit_code
    except Exception as e:  # a usage error: shown as click shows it
        import click

        if isinstance(e, click.ClickException):
            e.show()
            return e.exit_code
        raise
    return int(status or 0)


def embed_part(ctx: typer.Context, embed, directory: str) -> None:
    """`sembed embed INPUT --shard I/N --parts DIR`: skip the part when its manifest matches (unless --force), else
    run `embed` with the part's hidden file names as -o and --npy, and commit them with the manifest."""
    from ..parts.files import Part

    params = dict(ctx.params)
    given = given_on_command_line(ctx)
    if params["input"] == STDIN:
        raise typer.BadParameter(
            "a part reads INPUT twice (to know whether it is done): give a file, not stdin", param_hint="'--parts'"
        )
    for name in ("output", "npy"):
        if name in given:
            raise typer.BadParameter(
                "not with --parts (the part's files are named after it)",
                param_hint=f"'--{name}'" if name == "npy" else "'-o'",
            )
    part = Part.plan(directory, params["input"], params["shard"], params["model"], params)
    done = part.done()
    if done and not params["force"]:
        console.say(f"{done}: skipped (--force redoes it)")
        return
    with part.writing() as (records, vectors):
        embed(ctx, **{**params, "output": records, "npy": vectors, "force": True, "parts": None})
