"""sembed eval: metrics over a whole record stream: one JSON object on stdout, a table on stderr.

One module per subcommand, each a thin typer function that checks its options
and calls its task's `evaluate` (the report dict) and `print_report` (the
table) in `sembed_cli.evaluation`; what they share is in `options`.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from . import classify, entailment, poi, salience, structure, sts
from .options import EVAL_EPILOG, VECTORS_EPILOG


class EvalGroup(TyperGroup):
    """`sembed eval sts A1 A2 A3 --versus B1 B2 B3`: the seeds of each model, as `sts.spread_versus` reads them."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        command = self.get_command(ctx, "sts") if args and args[0] == "sts" else None
        if command is not None:
            args = ["sts", *sts.spread_versus(command.params, args[1:])]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(
    cls=EvalGroup,
    help="Evaluate: STS correlation, entailment and transfer classification of embeddings; POI taste decisions; "
    "salience tables against word ratings; structure in word vectors.\n\n"
    "Each command reads every record (a metric needs them all, so nothing streams out) but keeps only what "
    "it needs, and writes one JSON object of metrics to stdout and a table to stderr (-q: no table).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

eval_app.command("sts", epilog=VECTORS_EPILOG)(sts.sts_command)
eval_app.command("entailment", epilog=VECTORS_EPILOG)(entailment.entailment_command)
eval_app.command("classify", epilog=VECTORS_EPILOG)(classify.classify_command)
eval_app.command("salience", epilog=EVAL_EPILOG)(salience.salience_command)
eval_app.command("poi", epilog=EVAL_EPILOG)(poi.poi_command)
eval_app.command("structure", epilog=VECTORS_EPILOG)(structure.structure_command)
