"""The designator bonus of `search --spelling` (sembed_cli/models/poi_lookup.py, DESIGNATOR_BONUS), chosen and then
measured (issue 36, item 6): recall@10 by kind of perturbed POI names over the 1x and 10x indexes that
bench/poi_scale.py built (its --work), at each bonus of --bonuses.

The bonus is chosen on a second draw of queries (examples/poi_report.py perturb with --dev-seed, the queries
whose name the evaluation's also perturbs left out) and reported on the evaluation's own (poi_scale's queries,
seed 42), each bonus against none paired over the same queries (gained, lost, bootstrap 95% interval of the
difference in recall@10).

    python bench/poi_designators.py [--work runs/poi_scale] [--bonuses 0,0.05,0.1,0.2] [--dev-seed 7] [--threads 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from common import ROOT, log, paired, save
from poi_scale import hits_by_kind, read_jsonl, shares


def against(with_bonus: list[bool], without: list[bool]) -> dict:
    """recall@10 with the bonus minus without it over the same queries (common.paired, 2,000 resamples), and how
    many queries each side alone found."""
    difference = np.array(with_bonus, float) - np.array(without, float)
    interval = paired(with_bonus, without, resamples=2000)
    return {
        "difference": interval["difference"],
        "interval_95": interval["ci95"],
        "gained": int((difference > 0).sum()),
        "lost": int((difference < 0).sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "poi_scale")
    parser.add_argument("--bonuses", default="0,0.05,0.1,0.2")
    parser.add_argument("--dev-seed", type=int, default=7)
    parser.add_argument("--sizes", default="1x,10x")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    from sembed_cli import threads as thread_pools
    from sembed_cli.indexes.directory import VectorIndex
    from sembed_cli.indexes.query_encoder import QueryEmbedder
    from sembed_cli.indexes.search import search_records
    from sembed_cli.models import poi_lookup

    test = read_jsonl(args.work / "queries.jsonl")
    dev_file = args.work / f"queries-dev{args.dev_seed}.jsonl"
    if not dev_file.is_file():
        with open(args.work / "poi-names.jsonl") as names, open(dev_file, "w") as out:
            perturb = [sys.executable, str(ROOT / "examples" / "poi_report.py"), "perturb", "2000", str(args.dev_seed)]
            subprocess.run(perturb, stdin=names, stdout=out, check=True)
    targets = {q["target"] for q in test}
    dev = [q for q in read_jsonl(dev_file) if q["target"] not in targets]
    bonuses = [float(b) for b in args.bonuses.split(",")]
    result: dict = {"dev_queries": len(dev), "test_queries": len(test), "bonuses": bonuses, "sizes": {}}
    thread_pools.apply(args.threads)
    for size in args.sizes.split(","):
        index = VectorIndex.load(args.work / f"index-{size}")
        encoder = QueryEmbedder(index, device="cpu")
        encoder.open()
        thread_pools.apply(args.threads)
        figures: dict = {}
        for name, queries in (("dev", dev), ("test", test)):
            hits = {}
            for bonus in bonuses:
                poi_lookup.DESIGNATOR_BONUS = bonus
                records = iter([{"text": q["text"]} for q in queries])
                found = list(search_records(records, index, encoder, 10, "text", "embedding", 1000, spelling=True))
                hits[bonus] = {kind: v for kind, v in hits_by_kind(found, queries).items() if v}
                log(f"{size} {name} bonus {bonus}: all {np.mean(hits[bonus]['all']):.4f}")
            figures[name] = {
                str(bonus): {
                    "recall_at_10": shares(hits[bonus]),
                    "against_none": {kind: against(v, hits[bonuses[0]][kind]) for kind, v in hits[bonus].items()},
                }
                for bonus in bonuses
            }
        result["sizes"][size] = figures
        index.close()
    log(f"written {save('poi_designators', result)}")


if __name__ == "__main__":
    main()
