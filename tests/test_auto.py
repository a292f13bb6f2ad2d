"""--type auto by measurement: past the exact limit each candidate type is built over a seeded sample, tuned to
--recall and timed, and the cheapest that meets it is built; what was measured goes into sembed.json and search -v
(sembed_cli/indexes/auto.py)."""

from __future__ import annotations

import json

import pytest
from conftest import sembed
from test_recall import records, vectors

from sembed_cli.indexes import auto, kinds

pytest.importorskip("faiss")


def measured(recall: float, speed: float, ram: int) -> dict:
    return {"recall": recall, "met": recall >= 0.9, "queries_per_cpu_second": speed, "ram_bytes_per_vector": ram}


def test_the_cheapest_is_the_fastest_that_met_the_recall_or_a_smaller_one_near_it():
    assert auto.cheapest({"a": measured(0.95, 100, 900), "b": measured(0.92, 200, 900)}) == "b"
    assert auto.cheapest({"a": measured(0.95, 100, 900), "b": measured(0.85, 900, 100)}) == "a"  # b missed it
    assert auto.cheapest({"a": measured(0.95, 100, 900), "b": measured(0.95, 81, 100)}) == "b"  # within the slack
    assert auto.cheapest({"a": measured(0.95, 100, 900), "b": measured(0.95, 79, 100)}) == "a"
    assert auto.cheapest({"a": measured(0.80, 100, 900), "b": measured(0.85, 1, 900)}) == "b"  # none met: the most


def test_candidates_are_the_issues_types():
    assert [auto.candidate(name, 1_000_000, 384).factory for name in auto.CANDIDATES] == [
        "HNSW32",
        "HNSW32,SQ8",
        "IVF4096_HNSW32,PQ192x4fs",
    ]


def test_auto_measures_each_candidate_on_a_sample_and_records_its_choice(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setattr(kinds, "AUTO_EXACT_LIMIT", 1000)
    monkeypatch.setattr(auto, "SAMPLE_ROWS", 2000)
    out = tmp_path / "auto"
    run = sembed("index", "-q", "-m", tiny_model, "-o", str(out), "--recall", "0.9", input=records(vectors(3000)))
    assert run.exit_code == 0, run.stderr
    settings = json.loads((out / "sembed.json").read_text())["settings"]
    trial = settings["auto"]
    assert list(trial["candidates"]) == list(auto.CANDIDATES) and trial["sample_rows"] == 2000
    for name, m in trial["candidates"].items():
        assert m["factory"] == auto.candidate(name, 2000, 32).factory
        assert m["queries_per_cpu_second"] > 0 and m["breadth"] > 0 and 0 < m["recall"] <= 1
    assert trial["chosen"] == auto.cheapest(trial["candidates"]) == settings["type"]
    assert settings["factory"] == auto.candidate(trial["chosen"], 3000, 32).factory
    assert settings["recall"]["met"]  # the full build measured its own breadth for the target
    again = sembed(
        "index", "-q", "-m", tiny_model, "-o", str(tmp_path / "again"), "--recall", "0.9", input=records(vectors(3000))
    )
    assert again.exit_code == 0, again.stderr
    repeated = json.loads((tmp_path / "again" / "sembed.json").read_text())["settings"]["auto"]["candidates"]
    assert {n: m["recall"] for n, m in repeated.items()} == {n: m["recall"] for n, m in trial["candidates"].items()}
    shown = sembed("search", "-v", "--index", str(out), input=records(vectors(3000)[:1]))
    assert shown.exit_code == 0, shown.stderr
    assert f"type {trial['chosen']} chosen by auto on 2,000 sampled rows" in shown.stderr


def test_small_corpora_stay_exact_without_measuring(tiny_model, tmp_path):
    out = tmp_path / "small"
    run = sembed("index", "-q", "-m", tiny_model, "-o", str(out), input=records(vectors(500)))
    assert run.exit_code == 0, run.stderr
    settings = json.loads((out / "sembed.json").read_text())["settings"]
    assert settings["type"] == "flat" and "auto" not in settings
