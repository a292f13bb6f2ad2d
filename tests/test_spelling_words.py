"""search --spelling's index of the names' words kept between processes (indexes/spelling_words.py): the first
search keeps it in sembed's cache under the index's commit, later ones map it instead of reading every name, an
update's commit makes a new entry (the old one removed), a damaged entry is made again, and an unwritable cache
changes nothing but the start-up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import jsonl, sembed
from test_fresh_rows import NAMES, build, update
from test_index import rows

from sembed_cli.indexes.directory import VectorIndex

pytest.importorskip("rapidfuzz")

QUERIES = ["Salem Franklin", "Springfeld", "Bristol", "Milton Fairvew", "Ashland Clinton"]


def spelling(index: Path) -> list[list[tuple]]:
    queries = jsonl(*map(text, QUERIES))
    run = sembed("search", "-q", "--index", str(index), "--spelling", "--k", "5", "--device", "cpu", input=queries)
    assert run.exit_code == 0, run.stderr
    return [[(n["id"], n["score"]) for n in record["neighbors"]] for record in run.records]


def text(query: str) -> dict:
    return {"text": query}


def entries(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / "spelling").iterdir())


@pytest.fixture
def index(tiny_model, tmp_path) -> Path:
    made = tmp_path / "index"
    build(tiny_model, made, rows(NAMES), "flat")
    return made


def test_a_later_search_maps_the_words_the_first_kept_and_answers_the_same(index, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEMBED_CACHE", str(cache))
    first = spelling(index)
    (entry,) = entries(cache)

    def never(self, key):
        raise AssertionError("the names were read again")

    with monkeypatch.context() as patched:
        patched.setattr(VectorIndex, "texts", never)
        assert spelling(index) == first
    assert entries(cache) == [entry]

    monkeypatch.setenv("SEMBED_CACHE", str(tmp_path / "a-file" / "cache"))  # nothing can be written there
    (tmp_path / "a-file").write_text("")
    assert spelling(index) == first  # made in memory, as before the cache


def test_an_update_keeps_a_new_entry_and_drops_the_old(index, tiny_model, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEMBED_CACHE", str(cache))
    spelling(index)
    (before,) = entries(cache)
    changed = rows(NAMES)[:-5] + [{"id": "c900", "text": "Springfeld Gotham", "n": 900}]
    update(index, changed, "--sync")  # five removed, one added
    after = spelling(index)
    (entry,) = entries(cache)
    assert entry != before
    rebuilt = tmp_path / "rebuilt"
    build(tiny_model, rebuilt, changed, "flat")
    monkeypatch.setenv("SEMBED_CACHE", str(tmp_path / "other"))
    assert [[n[0] for n in r] for r in spelling(rebuilt)] == [[n[0] for n in r] for r in after]
    assert "c900" in {n[0] for n in after[1]}  # the word index holds the added name ("Springfeld" is one of its words)


def test_a_damaged_entry_is_made_again_never_an_answer(index, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEMBED_CACHE", str(cache))
    first = spelling(index)
    (entry,) = entries(cache)
    names = cache / "spelling" / entry / "names.npy"
    data = bytearray(names.read_bytes())
    data[-3] ^= 0xFF
    names.write_bytes(bytes(data))
    run = sembed("search", "--index", str(index), "--spelling", "--k", "5", "--device", "cpu", input=jsonl(text("x")))
    assert run.exit_code == 0 and "names.npy does not match its checksum" in run.stderr, run.stderr
    assert spelling(index) == first
    assert (cache / "spelling" / entry / "names.npy").read_bytes() != bytes(data)  # kept again, whole


def test_restored_name_words_give_the_bonuses_they_gave():
    from sembed_cli.indexes.spelling_words import KeyColumn
    from sembed_cli.models.poi_lookup import NameWords

    keys = [name.lower() for name in NAMES] + ["", "ocean county", "città di castello"]
    words = NameWords(keys)
    vocabulary, arrays = words.saved()
    restored = NameWords.restored(vocabulary, {name: np.array(array) for name, array in arrays.items()})
    for query in (["salem"], ["ocean"], ["springfield", "clinton"], ["castello", "di"], ["nowhere"]):
        for made, kept in zip(words.bonuses(query), restored.bonuses(query)):
            assert np.array_equal(made, kept)
    encoded = [key.encode() for key in keys]
    starts = np.concatenate([[0], np.cumsum([len(e) for e in encoded])])
    column = KeyColumn(b"".join(encoded), starts)
    assert len(column) == len(keys) and [column[i] for i in range(len(keys))] == keys


def test_edit_neighbours_find_every_one_word_name_one_edit_away():
    """EditNeighbours.near against a brute-force optimal string alignment over generated names: every one-word
    name within one edit (insertion, deletion, substitution, swap of neighbours) of a query is among its rows,
    whatever the script, and the numpy and the Python hashes agree."""
    from rapidfuzz.distance import OSA

    from sembed_cli.models.poi_lookup import EDIT_SHORTEST, EditNeighbours, deletion_hashes, word_hashes

    rng = np.random.default_rng(5)
    letters = list("abcdeéîøß") + ["ж", "ы", "日"]
    names = ["".join(rng.choice(letters, size=int(rng.integers(3, 9)))) for _ in range(3000)]
    names += ["svalo", "svaro", "sveio", "savio", "two words", "x" * 30]
    edits = EditNeighbours(names)
    queries = [names[i] for i in rng.integers(0, 3000, 200)] + ["svaio", "savio", "avio", "ssavio"]
    for query in queries:
        wanted = {row for row, name in enumerate(names[:-2]) if OSA.distance(query, name) <= 1}
        if len(query) < EDIT_SHORTEST:
            assert not len(edits.near(query))
            continue
        found = set(edits.near(query).tolist())
        assert wanted <= found, query
        assert set(deletion_hashes([query])[0].tolist()) == word_hashes(query)
    assert {names[row] for row in edits.near("svaio").tolist()} >= {"svalo", "svaro", "sveio", "savio"}


def test_a_one_word_name_faiss_did_not_return_joins_at_its_own_cosine():
    """Among many names one edit from a one-word query, the one FAISS left out of its candidates still joins,
    scored at its cosine plus the one-edit bonus; without the cosines (no query vector) the re-rank is as before."""
    from sembed_cli.models.poi_lookup import ONE_EDIT_BONUS, SpellingReranker

    names = ["Svalo", "Svaro", "Sveio", "Savio", "Paris", "Lyon"]
    reranker = SpellingReranker(names.__getitem__, len(names))
    cosine = {0: 0.5, 1: 0.4, 2: 0.3, 3: 0.45, 4: 0.1, 5: 0.05}
    faiss_found = np.array([0, 1, 2, 4]), np.array([0.5, 0.4, 0.3, 0.1], dtype=np.float32)
    scores, found = reranker.score("Svaio", faiss_found[1], faiss_found[0], lambda rows: [cosine[r] for r in rows])
    assert found.tolist()[:4] == [0, 3, 1, 2]
    assert scores[1] == pytest.approx(0.45 + ONE_EDIT_BONUS)
    _, without = reranker.score("Svaio", faiss_found[1], faiss_found[0])
    assert 3 not in without.tolist()


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw", "HNSW16,SQ8"])
def test_the_one_edit_names_join_on_every_index_type(tiny_model, tmp_path, kind, monkeypatch):
    """The one-edit names' cosines come from the index's own vectors whatever its type (exact storage, inverted
    lists through their map, a graph, kept float16 vectors beside a lossy graph), with fresh rows beside them."""
    from test_index import CITIES

    from sembed_cli.indexes import fresh

    monkeypatch.setenv("SEMBED_CACHE", str(tmp_path / "cache"))
    index = tmp_path / "index"
    build(tiny_model, index, rows(NAMES) + rows(CITIES, 100), kind)
    monkeypatch.setattr(fresh, "SHARE", 1.0)
    update(index, rows(["Gothamville"], 200))  # a fresh row
    from sembed_cli.models import poi_lookup

    monkeypatch.setattr(poi_lookup, "SPELLING_CANDIDATES", 1)  # FAISS gives one candidate: the rest must join
    read = []
    vectors_of = VectorIndex.vectors_of
    monkeypatch.setattr(VectorIndex, "vectors_of", lambda self, rows: read.extend(rows) or vectors_of(self, rows))
    search = ["search", "-q", "--index", str(index), "--spelling", "-k", "1", "--device", "cpu"]
    for query, meant in (("Sprngfield", "Springfield"), ("Gothamvile", "Gothamville")):
        run = sembed(*search, "--query", query)
        assert run.exit_code == 0, run.stderr
        assert [n["text"] for n in run.records[0]["neighbors"]] == [meant]
    assert len(NAMES) in read  # Springfield (CITIES[0]) joined at its cosine, read from the index (the fresh row
    # is the fresh rows' exact scan's own candidate)
