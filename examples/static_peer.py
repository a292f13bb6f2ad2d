"""The peer of examples/static_reproduction.sh: model2vec's own `distill` of the same teacher, and its own `encode`.

Runs in an environment with model2vec[distill,quantization] (its pins may clash with sembed's, so the reproduction takes
its Python from M2V_PYTHON). Two commands:

    python examples/static_peer.py distill TEACHER_DIR OUT_DIR [--dim 256]
    python examples/static_peer.py embed MODEL_DIR < pairs.jsonl > embedded.jsonl

`embed` reads sentence-pair records (text_a, text_b) and writes them back with embedding_a and embedding_b from
model2vec's `StaticModel.encode`, for `sembed eval sts` (no embedding_model: vectors from elsewhere).
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("distill", "embed"))
    parser.add_argument("model")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args()
    if args.command == "distill":
        from model2vec.distill import distill

        started = time.perf_counter()
        distill(model_name=args.model, pca_dims=args.dim).save_pretrained(args.out)
        print(f"model2vec distill: {time.perf_counter() - started:.0f} s", file=sys.stderr)
        return
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(args.model)
    records = [json.loads(line) for line in sys.stdin if line.strip()]
    for key in ("a", "b"):
        vectors = model.encode([r[f"text_{key}"] for r in records])
        for record, vector in zip(records, vectors):
            record[f"embedding_{key}"] = [float(x) for x in vector]
    for record in records:
        print(json.dumps(record))


if __name__ == "__main__":
    main()
