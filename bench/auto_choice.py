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
from pathlib import Path
from typing import cast

import numpy as np
from ann_real import MAPPED_FROM, REAL, arguments, load_corpus
from common import log, save

from sembed_cli.indexes import auto
from sembed_cli.indexes.staging import IndexSettings
from sembed_cli.indexes.vector_file import VectorFile


class MappedRows:
    """NAME.npy's unit vectors read where they are, as a build's float32 file is read (auto.choose reads `dim`,
    `rows` and `path`): the 10M sets are mapped and already unit length (load_corpus checks), and a float32 copy
    would take 11.6 GB of disk."""

    def __init__(self, name: str, work: Path):
        self.matrix = load_corpus(name)
        self.dim = int(self.matrix.shape[1])
        self.path = work / f"{name}.npy"  # auto.choose measures in a folder beside it

    def rows_on_disk(self) -> int:
        return len(self.matrix)

    def rows(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.matrix[rows], dtype=np.float32)


def raw_vectors(name: str, work: Path) -> VectorFile | MappedRows:
    """NAME.npy's unit vectors as the float32 file a build measures from (made once under --work; read in place
    where the corpus is mapped)."""
    if np.load(REAL / f"{name}.npy", mmap_mode="r").nbytes > MAPPED_FROM:
        return MappedRows(name, work)
    path = work / f"{name}.unit.f32"
    if not path.exists():
        load_corpus(name).tofile(path.with_suffix(".tmp"))
        path.with_suffix(".tmp").rename(path)
    return VectorFile(path, int(np.load(REAL / f"{name}.npy", mmap_mode="r").shape[1]), "float32")


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
        kind = auto.choose(cast(VectorFile, raw), count, IndexSettings(recall=target, seed=args.seed))
        choices[str(target)] = {"type": kind.name, "factory": kind.factory, **(kind.auto or {})}
        save(
            f"auto_choice_{args.name}",
            {"how": __doc__.split("\n\n")[0], "rows": count, "threads": args.threads, "choices": choices},
        )


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    sys.exit(main())
