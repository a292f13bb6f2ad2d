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
            table.add_row(
                *lead,
                *([name] if name is not None else []),
                *tables.correlation_cells(m),
                end_section=len(rows) > 1 and (position == len(rows) - 2 or (grid is not None and name == "all")),
            )
    return table


def versus_table(result: dict):
    """a, b and a - b, one row each; with groups, those three rows per group, then over all pairs."""
    from rich.table import Table

    difference = result["difference"]
    grouped_rows = "groups" in result
    table = Table(
        title=f"STS: two models vs {result['gold']} (x100; a, b: Fisher 95% CI; a - b: "
        f"{difference['interval']}, {difference['resamples']} resamples)",
        title_justify="left",
    )
    table.add_column("", no_wrap=True)
    if grouped_rows:
        tables.add_name_column(table, "group")
    tables.add_name_column(table, "model")
    for column in ("n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="right", no_wrap=True)
    blocks = [*result.get("groups", {}).items(), ("all", result)] if grouped_rows else [(None, result)]
    for name, entry in blocks:
        group = [name] if grouped_rows else []
        if "undefined" in entry:
            table.add_row("", *group, entry["undefined"], str(entry["n"]), "-", "-", "-", "-", end_section=True)
            continue
        for position, side in enumerate(("a", "b")):
            m = entry[side]
            table.add_row(
                side,
                *(group if position == 0 else [""] * len(group)),
                m.get("embedding_model") or m["similarity"],
                *tables.correlation_cells(m),
            )
        change = entry["difference"]
        table.add_row(
            "a - b",
            *[""] * len(group),
            "",
            str(change["n"]),
            f"{change['pearson']:+.2f}",
            tables.interval(change["pearson_ci"]),
            f"{change['spearman']:+.2f}",
            tables.interval(change["spearman_ci"]),
            end_section=grouped_rows,
        )
    return table


def seeds_table(result: dict):
    """Each seed's a - b, then their mean with the t interval over seeds."""
    from rich.table import Table

    combined = result["over_seeds"]
    table = Table(
        title=f"STS: a - b over {combined['seeds']} seeds vs {result['gold']} (x100; each seed: its bootstrap "
        f"interval; mean: {combined['interval']})",
        title_justify="left",
    )
    table.add_column("seed", no_wrap=True)
    tables.add_name_column(table, "input")
    for column in ("n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="right", no_wrap=True)
    for number, report in enumerate(result["seeds"], 1):
        change = report["difference"]
        table.add_row(
            str(number),
            report["input"],
            str(change["n"]),
            f"{change['pearson']:+.2f}",
            tables.interval(change["pearson_ci"]),
            f"{change['spearman']:+.2f}",
            tables.interval(change["spearman_ci"]),
            end_section=number == len(result["seeds"]),
        )
    table.add_row(
        "mean",
        f"{combined['seeds']} seeds",
        str(result["seeds"][0]["difference"]["n"]),
        f"{combined['pearson']:+.2f}",
        tables.interval(combined["pearson_ci"]),
        f"{combined['spearman']:+.2f}",
        tables.interval(combined["spearman_ci"]),
    )
    return table
