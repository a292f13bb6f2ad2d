"""The tables of `eval sts` reports on stderr: one model's correlations (per group, per W_cf), or two models and
their paired difference."""

from __future__ import annotations

from . import tables


def correlation_table(result: dict):
    """One row per group (and 'all'), one block of rows per W_cf of a sweep."""
    from rich.table import Table

    grid = result.get("cf_grid")
    table = Table(title=f"STS: {result['similarity']} vs {result['gold']} (x100, Fisher 95% CI)", title_justify="left")
    if grid is not None:
        table.add_column("W_cf", justify="right")
    if "groups" in (grid[0] if grid else result):
        table.add_column("group")
    for column in ("n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="right")
    for entry in grid or [result]:
        lead = [f"{entry['cf_weight']:g}"] if grid is not None else []
        rows = [*entry.get("groups", {}).items(), ("all", entry)] if "groups" in entry else [(None, entry)]
        for position, (name, m) in enumerate(rows):
            # a rule above each 'all' row, and below it when several W_cf blocks follow
            table.add_row(*lead, *([name] if name is not None else []), *tables.correlation_cells(m),
                          end_section=len(rows) > 1 and (position == len(rows) - 2 or (grid is not None and name == "all")))
    return table


def versus_table(result: dict):
    """a, b and a - b, one row each."""
    from rich.table import Table

    difference = result["difference"]
    table = Table(title=f"STS: two models vs {result['gold']} (x100; a, b: Fisher 95% CI; a - b: "
                        f"{difference['interval']}, {difference['resamples']} resamples)", title_justify="left")
    for column in ("", "model", "n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="left" if column in ("", "model") else "right")
    for side in ("a", "b"):
        m = result[side]
        table.add_row(side, m.get("embedding_model") or m["similarity"], *tables.correlation_cells(m))
    table.add_row("a - b", "", str(difference["n"]), f"{difference['pearson']:+.2f}",
                  tables.interval(difference["pearson_ci"]), f"{difference['spearman']:+.2f}",
                  tables.interval(difference["spearman_ci"]))
    return table
