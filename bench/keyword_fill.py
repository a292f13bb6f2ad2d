"""What an index's keyword index costs at build, measured directly (issue 36, item 4; `sembed index --no-keywords`).

For each index directory given, the FTS5 fill a build does (`keyword.install` over the stored rows, in the build's
in-memory journal) is run inside a transaction, its table's pages counted (SQLite's dbstat), and rolled back: the
index is left as it was (one that has a keyword index has it dropped inside the same transaction first). This is
what `--no-keywords` takes off a build; whole builds with and without it (bench/build_cost.py --no-keywords) show
it too, but less sharply: this VM's CPU time drifts by 5-10% between runs, more than the fill itself.

    python bench/keyword_fill.py runs/build_cost/sembed.11308664 runs/keyword_fill/static1m [--rounds 2]
(the 11,308,664 static windows of build_cost.py --name static10m; the first 953,433, static1m, built with
`sembed index runs/ann_real/static1m.records.jsonl --npy runs/real/static1m.npy --type IVF4096_HNSW32,PQ128x4fs`)

Results: bench/results/keyword_fill.json (CPU-seconds user + system of this process, wall, the keyword index's
bytes and the rest of the store's).
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import log, save
from sembed_cli.indexes import keyword


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def fill(directory: Path) -> dict:
    settings = json.loads((directory / "sembed.json").read_text())["settings"]
    db = sqlite3.connect(directory / "records.sqlite", isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=MEMORY")  # as a build fills a new store
        rows = db.execute("SELECT COUNT(*) FROM rows").fetchone()[0]
        db.execute("BEGIN")
        keyword.drop(db)
        started, wall = cpu(), time.perf_counter()
        keyword.install(db, settings.get("text_key", "text"), announce=False)
        seconds, cpu_seconds = time.perf_counter() - wall, cpu() - started
        size = db.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'keyword%'").fetchone()[0]
        rest = db.execute("SELECT SUM(pgsize) FROM dbstat WHERE name NOT LIKE 'keyword%'").fetchone()[0]
        db.execute("ROLLBACK")
    finally:
        db.close()
    return {
        "index": str(directory),
        "rows": rows,
        "cpu_seconds": round(cpu_seconds, 2),
        "seconds": round(seconds, 2),
        "us_per_row": round(1e6 * cpu_seconds / rows, 2),
        "fts_bytes": size,
        "other_bytes": rest,  # the rows, their id index and the state: the store without a keyword index
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("indexes", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results = []
    for directory in args.indexes:
        for _ in range(args.rounds):
            results.append(fill(directory))
            log(f"  {results[-1]}")
    save("keyword_fill", {"how": __doc__.split("\n\n")[1], "results": results})


if __name__ == "__main__":
    main()
