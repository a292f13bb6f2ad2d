"""The human-readable side of a report: each task's table is built from its report dict and shown on stderr.

A task's `evaluate` returns the dict (what `sembed eval` writes to stdout);
its `print_report` shows it as a rich table through the stderr console, which
-q silences, as spaCy's `evaluate()` keeps the scores apart from their
printing.
"""

from __future__ import annotations

from .. import console


def show(table) -> None:
    """The human-readable table, on stderr unless -q."""
    if not console.state.quiet:
        console.console.print(table)


def number(value: float | None, digits: int = 2) -> str:
    """A metric with `digits` decimals; '-' where it is undefined (null)."""
    return "-" if value is None else f"{value:.{digits}f}"


def interval(ci: list[float] | None) -> str:
    """A confidence interval as [low, high]; '-' where it is undefined (null)."""
    return "-" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def correlation_cells(metrics: dict) -> list[str]:
    """A correlation's row: n, Pearson, its interval, Spearman, its interval."""
    return [str(metrics["n"]), number(metrics["pearson"]), interval(metrics["pearson_ci"]), number(metrics["spearman"]),
            interval(metrics["spearman_ci"])]
