"""The human-readable side of a report: each task's table is built from its report dict and shown on stderr.

A task's `evaluate` returns the dict (what `sembed eval` writes to stdout);
its `print_report` shows it as a rich table through the stderr console, which
-q silences, as spaCy's `evaluate()` keeps the scores apart from their
printing.

At a terminal a table fits its width, and a column of names folds a long name onto more lines rather than cut it;
elsewhere (a log file, a pipe) the table is as wide as its cells need, so that no name is ever cut and two rows
never look alike.
"""

from __future__ import annotations

from .. import console

WIDEST = 10_000  # columns a table may take off a terminal: its cells' own width decides


def show(table) -> None:
    """The human-readable table, on stderr unless -q."""
    if console.state.quiet:
        return
    screen = console.console
    wider = natural_width(table)
    if screen.is_terminal or wider <= screen.width:
        screen.print(table)
        return
    width = screen.width
    screen.width = wider  # off a terminal nothing is cut: the table takes the columns its cells need
    try:
        screen.print(table)
    finally:
        screen.width = width


def natural_width(table) -> int:
    """The columns `table` takes when no cell is wrapped."""
    from rich.measure import Measurement

    screen = console.console
    return Measurement.get(screen, screen.options.update_width(WIDEST), table).maximum


def add_name_column(table, header: str) -> None:
    """A column of names (models, groups) that folds a name too long for the terminal instead of cutting it."""
    table.add_column(header, overflow="fold")


def number(value: float | None, digits: int = 2) -> str:
    """A metric with `digits` decimals; '-' where it is undefined (null)."""
    return "-" if value is None else f"{value:.{digits}f}"


def interval(ci: list[float] | None) -> str:
    """A confidence interval as [low, high]; '-' where it is undefined (null)."""
    return "-" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def correlation_cells(metrics: dict) -> list[str]:
    """A correlation's row: n, Pearson, its interval, Spearman, its interval."""
    return [
        str(metrics["n"]),
        number(metrics["pearson"]),
        interval(metrics["pearson_ci"]),
        number(metrics["spearman"]),
        interval(metrics["spearman_ci"]),
    ]
