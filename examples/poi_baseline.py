"""The character n-gram TF-IDF baseline of examples/poi_reproduction.sh (issue 15), on the same splits and queries.

    python examples/poi_baseline.py classify LABELLED EVAL [SCORED] > baseline.poi.json
    python examples/poi_baseline.py lookup POI_NAMES QUERIES > baseline.searched.jsonl

classify: TF-IDF of character 1- to 4-grams within words (scikit-learn's char_wb; lower case, accents kept: its
defaults), a logistic regression on the LABELLED train records (those sembed's k-NN vote uses), the threshold of
its POI probability tuned for F0.5 on the dev records of EVAL, then F0.5 on its test records: the same JSON as
`sembed eval poi --tune-split dev --test-split test`; SCORED, when given, gets EVAL's records with the
probability as baseline_score (poi_report.py compares them with sembed's record by record). lookup: the same
TF-IDF fitted on every POI name, each query's 10 nearest names by cosine (exact), written as `sembed search`
writes them, for `poi_report.py recall`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sembed_cli.evaluation import poi


def vectorizer():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4), lowercase=True, sublinear_tf=True, dtype=np.float32)


def read(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def classifier(train: list[dict], **settings):
    """The baseline's POI probability of texts: a logistic regression over vectorizer()'s TF-IDF (with `settings`
    changed, e.g. strip_accents="unicode") fitted on the labelled `train` records."""
    from sklearn.linear_model import LogisticRegression

    tfidf = vectorizer().set_params(**settings).fit([r["text"] for r in train])
    model = LogisticRegression(C=10.0, max_iter=2000).fit(
        tfidf.transform([r["text"] for r in train]), [r["is_poi"] for r in train]
    )
    return lambda texts: model.predict_proba(tfidf.transform(texts))[:, 1]


def nearest(queries, matrix, k: int, batch: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """(cosines, rows) of each query's k nearest rows of `matrix` (sparse TF-IDF, unit rows; exact), best first."""
    transposed = matrix.T.tocsr()
    top, order = np.zeros((queries.shape[0], k), np.float32), np.zeros((queries.shape[0], k), np.int64)
    for start in range(0, queries.shape[0], batch):
        scores = (queries[start : start + batch] @ transposed).toarray()
        rows = np.argpartition(-scores, k, axis=1)[:, :k]
        found = np.take_along_axis(scores, rows, 1)
        best = np.argsort(-found, axis=1, kind="stable")
        order[start : start + batch] = np.take_along_axis(rows, best, 1)
        top[start : start + batch] = np.take_along_axis(found, best, 1)
    return top, order


def classify(labelled: str, evaluated: str, scored_path: str | None = None) -> None:
    started = time.perf_counter()
    train, rows = read(labelled), read(evaluated)
    probability = classifier(train)

    def scored(split: str):
        chosen = [r for r in rows if r["split"] == split]
        return probability([r["text"] for r in chosen]), np.array([r["is_poi"] for r in chosen])

    dev_scores, dev_gold = scored("dev")
    threshold = poi.best_threshold(np.round(dev_scores, 4), dev_gold)
    test_scores, test_gold = scored("test")
    report = {
        "score": "char n-gram TF-IDF + logistic regression",
        "train_records": len(train),
        **poi.metrics(test_scores, test_gold, 0.5),
        "tune_split": "dev",
        "tuned_threshold": threshold,
        "tuning": poi.metrics(dev_scores, dev_gold, threshold),
        "at_tuned_threshold": poi.metrics(test_scores, test_gold, threshold),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report))
    if scored_path:
        with open(scored_path, "w", encoding="utf-8") as f:
            for record, value in zip(rows, probability([r["text"] for r in rows])):
                f.write(json.dumps({**record, "baseline_score": round(float(value), 6)}, ensure_ascii=False) + "\n")


def lookup(names_path: str, queries_path: str, k: int = 10) -> None:
    names = [r["text"] for r in read(names_path)]
    queries = read(queries_path)
    tfidf = vectorizer()
    matrix = tfidf.fit_transform(names)
    started = time.perf_counter()
    top, order = nearest(tfidf.transform([q["text"] for q in queries]), matrix, k)
    for query, rows, row_scores in zip(queries, order, top):
        query["neighbors"] = [{"text": names[i], "score": round(float(s), 6)} for i, s in zip(rows, row_scores)]
        print(json.dumps(query, ensure_ascii=False))
    seconds = time.perf_counter() - started
    sys.stderr.write(f"baseline lookup: {len(queries)} queries in {seconds:.1f} s ({len(queries) / seconds:.0f}/s)\n")


def main() -> None:
    command, *args = sys.argv[1:]
    if command == "classify":
        classify(*args[:3])
    elif command == "lookup":
        lookup(args[0], args[1])
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
