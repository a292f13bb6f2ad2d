"""Start-up of `sembed --help` (aim: under 1 s), against the interpreter and typer alone, in the same run.

`sembed --help` imports the command tree and nothing heavy (torch, transformers, spaCy, FAISS load only when
a command runs; tests/test_docs.py checks that); what it costs beyond `python -c pass` and beyond importing
typer is sembed's own. Each contender runs --repeats times, interleaved, so a load that comes and goes falls
on all of them; reported: the minimum and median wall seconds of each and the load average.

    python bench/startup.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from common import ROOT, log, save

CONTENDERS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import typer'": [sys.executable, "-c", "import typer"],
    "sembed --help": [sys.executable, "-m", "sembed_cli", "--help"],
}
AIM_S = 1.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for _ in range(args.repeats):
        for name, command in CONTENDERS.items():
            started = time.perf_counter()
            subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
            seconds[name].append(time.perf_counter() - started)
    rows = {
        name: {"min_s": round(min(s), 3), "median_s": round(statistics.median(s), 3)} for name, s in seconds.items()
    }
    for name, row in rows.items():
        log(f"{name:28s} min {row['min_s']:.3f} s, median {row['median_s']:.3f} s")
    help_s = rows["sembed --help"]["median_s"]
    log(f"sembed --help: median {help_s:.3f} s ({'within' if help_s < AIM_S else 'over'} the {AIM_S} s aim)")
    log(f"written {save('startup', {'repeats': args.repeats, 'aim_s': AIM_S, 'contenders': rows})}")


if __name__ == "__main__":
    main()
