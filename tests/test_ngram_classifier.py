"""The n-gram regression `taste --neighbours` mixes with the vote: scikit-learn's figures from saved arrays."""

from __future__ import annotations

import numpy as np
import pytest

from sembed_cli.errors import SembedError
from sembed_cli.models.ngram_classifier import FILE, NGRAMS, NgramClassifier, labelled

POI = ["Springfield", "Sinématiali", "Ešerovo", "Jackson County", "Fairview", "Qal'at Bishah", "Bordeaux", "Łódź"]
WORDS = ["butterfly", "quixotic", "zymurgy", "blithely", "esperanto", "syzygy", "quorum", "dollar"]


def fitted() -> NgramClassifier:
    return NgramClassifier.fit(POI + WORDS, np.array([1] * len(POI) + [0] * len(WORDS)), "digest-1")


def test_probabilities_are_the_baseline_s(monkeypatch):
    """poi_ngram is the regression of examples/poi_baseline.py, probability for probability."""
    from conftest import ROOT
    from sklearn.feature_extraction.text import TfidfVectorizer

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from poi_baseline import classifier

    queries = ["Springfeild", "butterflies", "Sinematiali", "", "Łódź Voivodeship"]
    ours = fitted()
    tfidf = TfidfVectorizer(**NGRAMS, sublinear_tf=True, dtype=np.float32).fit(POI + WORDS)
    assert abs(ours.features(queries) - tfidf.transform(queries)).max() < 1e-7
    records = [{"text": t, "is_poi": True} for t in POI] + [{"text": t, "is_poi": False} for t in WORDS]
    assert np.allclose(ours.probability(queries), classifier(records)(queries), rtol=0, atol=1e-6)
    assert ours.probability(["Springfield"])[0] > 0.5 > ours.probability(["butterfly"])[0]
    assert ours.probability([]).shape == (0,)


def test_accents_are_kept_and_case_is_not():
    ours = fitted()
    assert "é" in ours.ngrams.tolist() and "ł" in ours.ngrams.tolist()
    assert "S" not in ours.ngrams.tolist()
    assert ours.probability(["SPRINGFIELD"])[0] == pytest.approx(ours.probability(["springfield"])[0])
    assert ours.probability(["Sinématiali"])[0] != pytest.approx(ours.probability(["Sinematiali"])[0])


def test_saved_and_loaded_for_the_same_records_only(tmp_path):
    ours = fitted()
    assert NgramClassifier.load(tmp_path, "digest-1") is None  # nothing saved
    ours.save(tmp_path)
    assert (tmp_path / FILE).is_file()
    loaded = NgramClassifier.load(tmp_path, "digest-1")
    texts = ["Springfield", "butterfly", "Łódź"]
    assert np.array_equal(loaded.probability(texts), ours.probability(texts))
    assert NgramClassifier.load(tmp_path, "digest-2") is None  # the index's records have changed since
    (tmp_path / FILE).write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(SembedError, match=r"cannot read the n-gram regression .*delete it"):
        NgramClassifier.load(tmp_path, "digest-1")


def test_labelled_names_need_a_text_and_both_kinds():
    both = [{"text": "Salem", "is_poi": True}, {"text": "quorum", "is_poi": False}]
    texts, labels = labelled(both, "text")
    assert texts == ["Salem", "quorum"] and labels.tolist() == [1, 0]
    assert labelled([{"name": "Salem", "is_poi": True}, {"name": "quorum", "is_poi": False}], "name")[0] == texts
    assert labelled([{"text": "Salem", "is_poi": True}, {"text": "Bristol", "is_poi": True}], "text") is None
    assert labelled(both + [{"text": "Clinton"}], "text") is None
    assert labelled(both + [{"text": "Clinton", "is_poi": 1}], "text") is None
    assert labelled(both + [{"is_poi": False}], "text") is None
    assert labelled([], "text") is None
