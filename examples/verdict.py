"""Multi-seed verdicts, shared by examples/cf_bert_report.py and examples/ta_sbert_report.py.

A reproduction script trains every row once per seed (same seed: same initialisation and the same data
order for every row), writes each model's metrics to WORK/metrics/ROW.SEED.SET.json and the start model's
zero-shot figures to WORK/metrics/zeroshot.none.SET.json. `collect` turns them into one start's entry of the
results JSON (the per-seed figures of every row, aligned with `seeds`), `merge` adds it to the results file
beside the other start's, and `render` builds the markdown from that file alone, so the table can be
recomputed from the JSON.

The interval of a mean, and of a mean paired difference (row minus baseline, seed by seed), is the 95%
Student t interval over seeds: mean +- t(0.975, k - 1) * sd / sqrt(k), k seeds. A claim's verdict compares
the interval of our paired difference with the sign of the paper's difference (RULE).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path

from sembed_cli.evaluation.statistics import T_INTERVAL as INTERVAL
from sembed_cli.evaluation.statistics import t_interval  # the one t interval, shared with `eval sts` over seeds

RULE = (
    "reproduces: the 95% interval of our paired difference lies entirely on the side of 0 the paper's "
    "difference is on; does not reproduce: entirely on the other side; inconclusive at this power: it "
    'contains 0 (or fewer than 2 seeds); "smaller than the paper\'s" is added where the interval also lies '
    "entirely short of the paper's difference."
)
REPRODUCES, DOES_NOT, INCONCLUSIVE = "reproduces", "does not reproduce", "inconclusive at this power"
SMALLER = "smaller than the paper's"


def paired(row: Sequence[float | None], baseline: Sequence[float | None]) -> list[float]:
    """Row minus baseline, seed by seed, over the seeds where both have a figure."""
    return [a - b for a, b in zip(row, baseline) if a is not None and b is not None]


def verdict(paper_difference: float, interval: tuple[float, float] | None) -> str:
    """RULE: our paired difference's interval against the sign of the paper's difference, and against its size
    (an interval wholly short of the paper's difference, on its side or around 0: an effect smaller than the
    paper's, if any)."""
    if interval is None or paper_difference == 0:
        return INCONCLUSIVE
    low, high = interval if paper_difference > 0 else (-interval[1], -interval[0])
    if high < 0:
        return DOES_NOT
    word = REPRODUCES if low > 0 else INCONCLUSIVE
    return f"{word}, {SMALLER}" if high < abs(paper_difference) else word


def mean_cell(xs: Sequence[float | None], signed: bool = False) -> str:
    """'mean ± half-width' of the t interval; the one value for one seed; '-' for none."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    interval, mean = t_interval(xs), statistics.mean(xs)
    number = f"{mean:+.2f}" if signed else f"{mean:.2f}"
    return number if interval is None else f"{number} ± {(interval[1] - interval[0]) / 2:.2f}"


def duration(seconds: float) -> str:
    """Hours to one decimal, or whole minutes under an hour."""
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


# --- from the runs to the results file ---------------------------------------------------------------------


def collect(work: Path, rows: Sequence[str], measures: Sequence[tuple[str, str, str]], seeds: Sequence[str]) -> dict:
    """One start's figures from WORK/metrics: {"seeds", "rows": {row: {label: [per seed]}}, "zero_shot"}.

    `measures`: (set, metric, label), e.g. ("stsb", "pearson", "STS-B r"); a missing figure is null."""

    def figure(row: str, seed: str, name: str, metric: str) -> float | None:
        path = work / "metrics" / f"{row}.{seed}.{name}.json"
        return json.loads(path.read_text())[metric] if path.exists() else None

    return {
        "seeds": [int(seed) for seed in seeds],
        "rows": {
            row: {label: [figure(row, seed, name, metric) for seed in seeds] for name, metric, label in measures}
            for row in rows
        },
        "zero_shot": {label: figure("zeroshot", "none", name, metric) for name, metric, label in measures},
    }


def machine() -> str:
    """The machine a run's figures come from, for the results file."""
    import datetime
    import os
    import platform

    return (
        f"{os.cpu_count()} CPU cores ({platform.processor() or platform.machine()}), no GPU, torch threads "
        f"{os.environ.get('OMP_NUM_THREADS', 'default')}, {datetime.date.today().isoformat()}"
    )


def stage_seconds(work: Path) -> dict:
    """Wall and CPU seconds of every stage run so far (examples/stages.sh's STAGE_CPU_LOG), summed over sittings."""
    path = work / "cpu.tsv"
    wall = cpu = 0.0
    stages: dict[str, list[float]] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        name, w, c = line.split("\t")
        wall, cpu = wall + float(w), cpu + float(c)
        stages.setdefault(name, [0.0, 0.0])
        stages[name][0] += float(w)
        stages[name][1] += float(c)
    return {
        "wall_seconds": round(wall),
        "cpu_seconds": round(cpu),
        "stages": {name: {"wall_seconds": round(w), "cpu_seconds": round(c)} for name, (w, c) in stages.items()},
    }


def merge(path: Path, start: str, entry: dict, common: dict) -> dict:
    """The results file with this start's entry added or replaced (a file of the older single-seed form is
    replaced); `common`: what both starts share (the interval's definition, the rule...)."""
    results = json.loads(path.read_text()) if path.exists() else {}
    if "starts" not in results:
        results = {"starts": {}}
    results.update(common)
    results["starts"][start] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return results


# --- from the results file to the markdown -----------------------------------------------------------------


def difference_lines(
    entry: dict,
    claims: Sequence[tuple[str, str]],
    baseline: str,
    labels: Sequence[str],
    paper: dict[str, dict[str, float]],
    start_label: str,
) -> tuple[list[str], list[str]]:
    """Per claim (row, its label): a table row of our mean paired difference row - baseline with its interval and
    verdict per measure; and one line per claim summing up its verdicts."""
    out, summaries = [], []
    for row, label in claims:
        cells, found = [], []
        for measure in labels:
            differences = paired(entry["rows"][row][measure], entry["rows"][baseline][measure])
            if not differences:
                cells.append("-")
                continue
            interval = t_interval(differences)
            word = verdict(paper[row][measure], interval)
            found.append((measure, word))
            span = "" if interval is None else f" [{interval[0]:+.2f}, {interval[1]:+.2f}]"
            cells.append(f"{statistics.mean(differences):+.2f}{span} {word}")
        out.append(f"| **ours ({start_label}): {label}** | " + " | ".join(cells) + " |")
        if found:
            summaries.append(f"- {start_label}, {label}: " + "; ".join(f"{m} {w}" for m, w in found) + ".")
    return out, summaries


def render(
    results: dict,
    *,
    title: str,
    labels: Sequence[str],
    paper_rows: Sequence[tuple[str, dict[str, float]]],
    rows: Sequence[tuple[str, str]],
    baseline: str,
    claims: Sequence[tuple[str, str]],
    paper_differences: dict[str, dict[str, float]],
    start_labels: dict[str, str],
    notes: Sequence[str],
) -> str:
    """The markdown of a results file: the paper's rows, ours per start (mean ± half-width of the interval), the
    zero-shot figures of each start, the paired differences with their verdicts, the rule and the time."""
    starts = results["starts"]
    labels = [
        m
        for m in labels
        if any(x is not None for entry in starts.values() for row in entry["rows"].values() for x in row[m])
    ]  # measures not run: out
    head = "| model | " + " | ".join(labels) + " |"
    rule = "|---|" + "---:|" * len(labels)
    out = [f"## {title}", "", head, rule]
    out += [
        f"| paper: {name} | " + " | ".join(f"{values[m]:.2f}" for m in labels) + " |" for name, values in paper_rows
    ]
    for start, entry in starts.items():
        zero = entry["zero_shot"]
        out.append(
            f"| ours: {start_labels.get(start, start)}, zero-shot | "
            + " | ".join("-" if zero.get(m) is None else f"{zero[m]:.2f}" for m in labels)
            + " |"
        )
        for row, label in rows:
            out.append(
                f"| **ours: {start_labels.get(start, start)} {label}** | "
                + " | ".join(mean_cell(entry["rows"][row][m]) for m in labels)
                + " |"
            )
    out += [
        "",
        f"Ours: mean ± half-width of the {INTERVAL}.",
        "",
        "### Paired differences and verdicts",
        "",
        head.replace("| model |", "| difference |"),
        rule,
    ]
    out += [
        f"| paper: {label} | " + " | ".join(f"{paper_differences[row][m]:+.2f}" for m in labels) + " |"
        for row, label in claims
    ]
    summaries = []
    for start, entry in starts.items():
        lines, found = difference_lines(
            entry, claims, baseline, labels, paper_differences, start_labels.get(start, start)
        )
        out += lines
        summaries += found
    out += ["", f"Verdicts. Rule: {RULE}", "", *summaries, "", "### Runs", ""]
    for start, entry in starts.items():
        time = entry.get("time", {})
        seeds = ", ".join(str(s) for s in entry["seeds"])
        out.append(
            f"- {start_labels.get(start, start)}: seeds {seeds}; {duration(time.get('cpu_seconds', 0))} of "
            f"CPU time ({duration(time.get('wall_seconds', 0))} wall) over all sittings"
            + (f"; {entry['machine']}" if entry.get("machine") else "")
            + "."
        )
    out += [f"- {note}" for note in notes]
    return "\n".join(out) + "\n"
