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


def test_fitted_at_the_first_vote_and_kept_beside_the_index(tmp_path, monkeypatch, caplog):
    """The POI path fits the regression when it first opens a labelled index and keeps it there, written whole (no
    hidden file left); an index it cannot write to has it fitted each time, with a warning."""
    from sembed_cli.models.ngram_classifier import for_index

    class Index:  # what for_index reads of a VectorIndex
        path, metadata, settings = tmp_path, {"data": {"sha256": "digest-1"}}, {"text_key": "name"}

        def rows(self):
            names = [(t, True) for t in POI] + [(t, False) for t in WORDS]
            return ((row, row, {"name": t, "is_poi": y}) for row, (t, y) in enumerate(names))

    with caplog.at_level("INFO", logger="sembed_cli"):
        first = for_index(Index())
    assert "fitting the n-gram regression on the 16 labelled names" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE]
    monkeypatch.setattr(NgramClassifier, "fit", None)  # a second vote reads it: nothing to fit
    again = for_index(Index())
    assert np.array_equal(again.probability(POI + WORDS), first.probability(POI + WORDS))

    (tmp_path / FILE).unlink()
    monkeypatch.undo()

    def refuse(self, directory):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(NgramClassifier, "save", refuse)
    caplog.clear()
    assert for_index(Index()) is not None
    assert "cannot keep the n-gram regression beside the index" in caplog.text and not (tmp_path / FILE).exists()
