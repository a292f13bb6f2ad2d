"""How far a nearest-neighbour vote can go on the gazetteer's names, beside the baseline's regression (issue 15).

    python examples/poi_vote_ceiling.py WORK > ceiling.json      (WORK: a KEEP=1 run of poi_reproduction.sh)

On the run's labelled train records and dev / test records, test F0.5 at the dev-tuned threshold of:
- `vote_over_baseline_features`: `taste --neighbours`' vote (weight = cosine^p over the k nearest) over the
  baseline's own features, the exact cosine of sparse TF-IDF vectors of every character 1-4-gram, with k and p
  chosen on the dev records only (threshold tuned on one half, F0.5 read on the other, both ways);
- `baseline`: the baseline's logistic regression (examples/poi_baseline.py; accents kept, scikit-learn's default),
  and `baseline_accents_stripped`, the same with accented letters stripped (as sembed's lookup n-grams do);
- `sembed_vote` and `sembed_score`: sembed's poi_vote and poi_score (the vote mixed with its own n-gram
  regression, `taste --neighbours`) in WORK/stage2.tasted.jsonl;
- `shared_errors`: the test records both sembed's vote and the baseline get wrong, by source and gold label.
About 10 minutes (the sparse k-NN of 48,946 records over 350,205). The regression's fit, and so the baseline's
figures, differ slightly with the thread count (0.8965 at 1 thread, 0.8984 at 2 on the session-9 run).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from poi_baseline import classifier, nearest, read, vectorizer

from sembed_cli.evaluation.poi import best_threshold, metrics
from sembed_cli.indexes.neighbour_vote import weighted_share

GRID_K, GRID_P = (5, 10, 20, 30, 50, 100), (1, 4, 8, 16)


def tuned_f05(scores: np.ndarray, gold: np.ndarray, dev: np.ndarray, test: np.ndarray) -> float:
    return metrics(scores[test], gold[test], best_threshold(scores[dev], gold[dev]))["f0_5"]


def main(work: Path) -> None:
    train, rows = read(str(work / "labelled.jsonl")), read(str(work / "stage2.tasted.jsonl"))
    gold = np.array([r["is_poi_gold"] for r in rows])
    split = np.array([r["split"] for r in rows])
    dev, test = np.flatnonzero(split == "dev"), split == "test"
    halves = np.array_split(np.random.default_rng(0).permutation(dev), 2)

    tfidf = vectorizer().fit([r["text"] for r in train])
    top, order = nearest(
        tfidf.transform([r["text"] for r in rows]), tfidf.transform([r["text"] for r in train]), max(GRID_K), batch=1000
    )
    labels = np.array([r["is_poi"] for r in train], dtype=float)
    grid = {}
    for k in GRID_K:
        for p in GRID_P:
            scores = weighted_share(top[:, :k], order[:, :k], labels, p)
            cv = np.mean(
                [
                    metrics(scores[b], gold[b], best_threshold(scores[a], gold[a]))["f0_5"]
                    for a, b in (halves, halves[::-1])
                ]
            )
            grid[(k, p)] = (cv, tuned_f05(scores, gold, dev, test))
    k, p = max(grid, key=lambda kp: grid[kp][0])

    texts = [r["text"] for r in rows]
    baseline, stripped = classifier(train)(texts), classifier(train, strip_accents="unicode")(texts)
    poi_vote = np.array([r["poi_vote"] for r in rows])
    wrong_vote = (poi_vote >= best_threshold(poi_vote[dev], gold[dev])) != gold
    wrong_baseline = (baseline >= best_threshold(baseline[dev], gold[dev])) != gold
    shared = Counter(
        f"{rows[i]['source']} ({'POI' if gold[i] else 'not POI'})"
        for i in np.flatnonzero(test & wrong_vote & wrong_baseline)
    )
    print(
        json.dumps(
            {
                "vote_over_baseline_features": {
                    "k": k,
                    "p": p,
                    "dev_cv_f0_5": round(grid[(k, p)][0], 4),
                    "test_f0_5": round(grid[(k, p)][1], 4),
                    "test_f0_5_range": [
                        round(min(v[1] for v in grid.values()), 4),
                        round(max(v[1] for v in grid.values()), 4),
                    ],
                },
                "baseline": round(tuned_f05(baseline, gold, dev, test), 4),
                "baseline_accents_stripped": round(tuned_f05(stripped, gold, dev, test), 4),
                "sembed_vote": round(tuned_f05(poi_vote, gold, dev, test), 4),
                "sembed_score": round(tuned_f05(np.array([r["poi_score"] for r in rows]), gold, dev, test), 4),
                "shared_errors": dict(shared.most_common()),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
