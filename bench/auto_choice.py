"""What `sembed index --type auto` measures on real vectors: each candidate type built over the same seeded sample of
50,000 rows that a build draws, tuned to --recall and timed, and the type it would build (sembed_cli/indexes/auto.py,
issue 36). It runs auto's own choice on NAME.npy's unit vectors (bench/ann_real.py's, made once under --work) at
--threads threads, for each --recall.

    python bench/auto_choice.py [--name minilm] [--recall 0.95,0.99] [--threads 2] [--work runs/ann_real]
Result: bench/results/auto_choice_NAME.json.
"""

from __future__ import annotations

import logging
import os
import sys

from ann_real import arguments
from common import log, save
from recall_calibration import raw_vectors

from sembed_cli.indexes import auto
from sembed_cli.indexes.staging import IndexSettings


def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--recall", default="0.95,0.99")
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    raw = raw_vectors(args.name, args.work)
    count = raw.rows_on_disk()
    choices = {}
    for target in (float(r) for r in args.recall.split(",")):
        log(f"--type auto --recall {target} over {count:,} rows ...")
        kind = auto.choose(raw, count, IndexSettings(recall=target, seed=args.seed))
        choices[str(target)] = {"type": kind.name, "factory": kind.factory, **(kind.auto or {})}
        save(
            f"auto_choice_{args.name}",
            {"how": __doc__.split("\n\n")[0], "rows": count, "threads": args.threads, "choices": choices},
        )


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    sys.exit(main())
