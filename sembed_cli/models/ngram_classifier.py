"""A logistic regression over the character n-grams of labelled names, the POI vote's partner.

The POI paper's route for English names, a k-NN vote over the stage-2 embeddings of labelled names
(`indexes/neighbour_vote.NeighbourVote`), and a logistic regression over TF-IDF of character 1-4-grams, what a user has
for free in scikit-learn, err on different names, so their mix beats either (figures: docs/papers/poi.md):
`taste --neighbours` writes poi_ngram, this regression's probability, beside poi_vote, and
poi_score = w poi_vote + (1 - w) poi_ngram.

The regression is a step of the POI path alone: `taste --neighbours` fits it on the records of the labelled index
(the vote's names and labels) the first time it opens the index, and keeps it beside the index in FILE (its
n-grams, IDF, weights and the index's data hash; no pickle), written under a temporary name and renamed, so a
second taste reads it; an index updated since has it fitted (and kept) again. `sembed index` knows nothing of it,
so a build scans no payloads for labels. Accents are kept: about a fifth of
the gazetteer's POI names have a letter outside ASCII against 0.2% of the English words, and the baseline keeps
them too (scikit-learn's default). Its settings are the baseline's (`examples/poi_baseline.py`): character
n-grams within words (char_wb, 1-4), lower case, sublinear TF, unit rows; C = 10.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

FILE = "ngram-classifier.npz"
LABEL_KEY = "is_poi"
NGRAMS = {"analyzer": "char_wb", "ngram_range": (1, 4), "lowercase": True, "strip_accents": None}
C = 10.0

log = logging.getLogger(__name__)


def labelled(payloads: list[dict], text_key: str) -> tuple[list[str], np.ndarray] | None:
    """The texts and 0/1 labels of index payloads that all carry a text and a boolean LABEL_KEY of both values;
    None otherwise (an index of unlabelled records, or of one class: nothing to tell apart)."""
    if not payloads or not all(
        isinstance(p.get(LABEL_KEY), bool) and isinstance(p.get(text_key), str) for p in payloads
    ):
        return None
    labels = np.array([p[LABEL_KEY] for p in payloads], dtype=np.int8)
    if labels.min() == labels.max():
        return None
    return [p[text_key] for p in payloads], labels


class NgramClassifier:
    """P(POI | text) = sigmoid(w . x + b), x the unit TF-IDF vector of the text's character n-grams."""

    def __init__(self, ngrams: np.ndarray, idf: np.ndarray, weights: np.ndarray, bias: float, digest: str):
        from sklearn.feature_extraction.text import CountVectorizer

        self.ngrams, self.idf, self.weights, self.bias, self.digest = ngrams, idf, weights, bias, digest
        self.counter = CountVectorizer(
            **NGRAMS, vocabulary={g: i for i, g in enumerate(ngrams.tolist())}, dtype=np.float32
        )

    @classmethod
    def fit(cls, texts: list[str], labels: np.ndarray, digest: str) -> NgramClassifier:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        tfidf = TfidfVectorizer(**NGRAMS, sublinear_tf=True, dtype=np.float32).fit(texts)
        # transform, not fit_transform: its rows' column indices come sorted, and L-BFGS' sums in that order give the
        # baseline's weights exactly; fit_transform's unsorted rows lead it to a different optimum on these names
        # (weakly regularised, C = 10: some probabilities differ by 0.4; test F0.5 0.9035 against 0.9051)
        model = LogisticRegression(C=C, max_iter=2000).fit(tfidf.transform(texts), labels)
        ngrams = np.array(sorted(tfidf.vocabulary_, key=tfidf.vocabulary_.get))
        return cls(
            ngrams, tfidf.idf_.astype(np.float32), model.coef_[0].astype(np.float32), float(model.intercept_[0]), digest
        )

    def features(self, texts: list[str]):
        """TfidfVectorizer(sublinear_tf=True)'s rows from the saved vocabulary and IDF: (1 + log tf) idf, unit
        length."""
        from sklearn.preprocessing import normalize

        counts = self.counter.transform(texts)
        counts.data = 1.0 + np.log(counts.data)
        return normalize(counts.multiply(self.idf).tocsr())

    def probability(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        return 1.0 / (1.0 + np.exp(-(self.features(texts) @ self.weights + self.bias)))

    def save(self, directory: Path) -> None:
        """FILE in `directory`, whole or not at all: a taste beside this one reads the old file or the new."""
        from ..io.atomic_files import commit, temporary_sibling

        path = Path(directory) / FILE
        hidden = temporary_sibling(path)
        try:
            with open(hidden, "wb") as f:  # a file, not a name: np.savez would add .npz to the hidden one
                np.savez(
                    f,
                    ngrams=self.ngrams,
                    idf=self.idf,
                    weights=self.weights,
                    bias=np.float64(self.bias),
                    digest=np.array(self.digest),
                )
            commit(hidden, path)
        finally:
            hidden.unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: Path, digest: str) -> NgramClassifier | None:
        """The classifier saved in `directory`, or None where there is none or it is of other records."""
        import zipfile

        from ..errors import SembedError

        path = Path(directory) / FILE
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as saved:
                if str(saved["digest"]) != digest:
                    return None
                return cls(saved["ngrams"], saved["idf"], saved["weights"], float(saved["bias"]), digest)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
            raise SembedError(
                f"cannot read the n-gram regression '{path}': {e}",
                "delete it (taste then fits it again) or rebuild the index",
            ) from None


def for_index(index) -> NgramClassifier | None:
    """The regression of a labelled index: the one kept beside it, else fitted on its records now and kept there
    for the next run (None: the index is not of labelled names of both classes)."""
    digest = index.metadata.get("data", {}).get("sha256", "")
    saved = NgramClassifier.load(index.path, digest)
    if saved is not None:
        return saved
    found = labelled([payload for _, _, payload in index.rows()], index.settings.get("text_key", "text"))
    if found is None:
        return None
    log.info(
        f"fitting the n-gram regression on the {len(found[0])} labelled names of '{index.path}' (once: it is kept "
        f"beside the index for the next run)"
    )
    fitted = NgramClassifier.fit(*found, digest)
    try:
        fitted.save(index.path)
    except OSError as e:  # an index one may read but not write: fitted again next time
        log.warning(
            f"cannot keep the n-gram regression beside the index at '{index.path}' ({e.strerror or e}): the "
            f"next taste fits it again"
        )
    return fitted
