"""sembed parts: the state of a parts directory, its records in input order, and running its parts on an engine."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, cast

import typer

from .. import console
from ..errors import SembedError
from ..io import STDIN, RecordSink, Shard
from ..options import Only, Quiet, Verbose, check_only

if TYPE_CHECKING:
    from ..parts.embed_part import PartSettings

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

CheckParts = Annotated[
    bool,
    typer.Option(
        "--check",
        help="Also verify every done part's files against the checksums its manifest recorded (reading them "
        "whole) and that each line is a JSON object: a damaged part is stale, named with its file.",
    ),
]


def parts_command(
    directory: PartsDirArgument,
    cat: Cat = False,
    check: CheckParts = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
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

    --check also reads every done part whole: its files against the
    checksums its manifest recorded, each line a JSON object; a damaged one
    is an error naming the file (a part's bytes are checked as an index
    reads them, too).

    --cat writes the records instead, in the input's order (the shares of
    --shard I/N are round-robin: they interleave back), with their vectors
    in place of embedding_row: the one-process output of `sembed embed`.

    \b
    Example:
      for i in 1 2 3 4; do sembed embed corpus.txt --shard $i/4 --parts parts; done
      sembed parts parts && sembed index parts -o corpus-index
      sembed parts parts --cat | sembed eval sts --versus one-process.jsonl
    """
    from ..parts.files import PartFiles, PartState, summary, survey, verify
    from ..parts.reassemble import PartsSource

    if cat:
        with RecordSink(STDIN, flush_every=1000) as sink:
            sink.write_all(PartsSource(directory))
        return
    states = survey(directory)
    damaged = []
    if check:
        for n, state in enumerate(states):
            if state.state == "done" and state.manifest is not None:
                problem = verify(PartFiles(directory, state.index, state.count), state.manifest)
                if problem is not None:
                    states[n] = PartState(state.index, state.count, "stale", f"damaged: {problem}", state.manifest)
                    damaged.append(problem)
    with RecordSink(STDIN) as sink:
        sink.write_all(state.describe() for state in states)
    if damaged:
        raise SembedError(
            f"damaged part: {Path(directory) / damaged[0]}"
            + (f" (and {len(damaged) - 1} more part(s))" if len(damaged) > 1 else ""),
            "run the damaged parts again with --force (`sembed parts DIR` lists them as stale)",
        )
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
    run_part = functools.partial(embed_part_here, parse_embed_arguments(arguments, directory, shards))
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


@dataclass(frozen=True)
class PartsJob:
    """What `parts run` hands each part: its settings (embed's arguments, parsed once here), the directory and the
    split, --force, --plain's display, and the process's -q, -v and --threads (a Ray actor is a process of its
    own: it sets them before its part)."""

    settings: PartSettings
    directory: str
    count: int
    force: bool = False
    plain: bool = False
    quiet: bool = False
    verbose: bool = False
    threads: int | None = None


def parse_embed_arguments(arguments: list[str], directory: Path, count: int) -> PartsJob:
    """`sembed embed ARGS --parts DIR` parsed and checked as the command checks it, without running it: a usage
    error is one, here, before any part runs."""
    from .embed import embed_command, part_settings
    from .embed_options import ONLY

    alone = typer.Typer(
        rich_markup_mode=None, add_completion=False, context_settings={"help_option_names": ["-h", "--help"]}
    )
    alone.command("embed")(embed_command)
    command = typer.main.get_command(alone)
    # typer's commands make typer Contexts; the stubs name the click Context typer vendors (typer._click)
    ctx = cast(typer.Context, command.make_context("sembed embed", [*arguments, "--parts", str(directory)]))
    with ctx:
        try:
            check_only(ctx, ONLY)
            settings = part_settings(ctx)
        except typer.BadParameter as e:  # shown with embed's usage line, as `sembed embed` shows it
            e.ctx = e.ctx or ctx
            raise
        params = ctx.params
        return PartsJob(
            settings,
            str(directory),
            count,
            params["force"],
            params["plain"],
            params["quiet"],
            params["verbose"],
            params["threads"],
        )


def embed_part_here(job: PartsJob, index: int) -> int:
    """Part `index` of the job in this process (a Ray worker's, or this run's): 0 when it is done (written now, or
    before), 1 after a failure, shown on stderr in one line as `sembed embed` shows it."""
    from .. import threads
    from ..parts.embed_part import embed_part

    console.set_quiet(job.quiet)
    console.set_verbose(job.verbose)
    threads.configure(job.threads)
    try:
        embed_part(
            job.settings,
            job.directory,
            Shard(index, job.count),
            job.force,
            console.weighted_words if job.plain else None,
        )
    except SembedError as e:
        if console.state.verbose:
            console.console.print_exception()
        console.error(str(e))
        return 1
    except Exception as e:  # a bug: one line, as the root command says it, and the other parts go on
        if console.state.verbose:
            raise
        console.error(f"internal error: {type(e).__name__}: {e} (run with -v for the traceback)")
        return 1
    return 0
