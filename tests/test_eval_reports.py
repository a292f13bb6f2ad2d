"""The report functions behind `sembed eval`, called without the CLI: each task's `evaluate` returns the dict that
the command writes, and its `print_report` shows the table on stderr."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import jsonl

from sembed_cli import console
from sembed_cli.errors import SembedError
from sembed_cli.evaluation import classify, entailment, poi, salience, statistics, structure, sts
from sembed_cli.models.salience import SalienceTable

# Six scored pairs of 2-d vectors (cosines 1, 0.8, 0.6, 0, -0.6, -1), two genres, and an unscored pair.
PAIRS = [
    {
        "text_a": f"a{i}",
        "text_b": f"b{i}",
        "genre": genre,
        "score": score,
        "embedding_a": [1.0, 0.0],
        "embedding_b": vector,
    }
    for i, (genre, score, vector) in enumerate(
        [
            ("news", 5.0, [2.0, 0.0]),
            ("news", 3.5, [0.8, 0.6]),
            ("forum", 4.0, [0.6, 0.8]),
            ("news", 2.0, [0.0, 1.0]),
            ("forum", 1.0, [-0.6, 0.8]),
            ("forum", 0.5, [-3.0, 0.0]),
            ("news", None, [1.0, 1.0]),
        ]
    )
]
COSINES = np.array([1.0, 0.8, 0.6, 0.0, -0.6, -1.0])
GOLD = np.array([5.0, 3.5, 4.0, 2.0, 1.0, 0.5])


def written(tmp_path, name: str, records) -> str:
    path = tmp_path / name
    path.write_text(jsonl(*records))
    return str(path)


def test_sts_evaluate_counts_unscored_pairs_and_groups(tmp_path, capsys):
    report = sts.evaluate(written(tmp_path, "pairs.jsonl", PAIRS), group_by="genre")
    expected = statistics.grouped(
        COSINES, GOLD, ["news", "news", "forum", "news", "forum", "forum"], "cosine(embedding_a, embedding_b)", "score"
    )
    assert report == {
        "task": "sts",
        "similarity": "cosine(embedding_a, embedding_b)",
        "gold": "score",
        "group_by": "genre",
        **expected,
        "unscored": 1,
    }
    assert list(report["groups"]) == ["news", "forum"]
    assert capsys.readouterr().err == ("warning: 1 pair(s) have no gold score ('score'): left out of the correlation\n")


def test_sts_evaluate_writes_each_pair_with_its_similarity(tmp_path):
    pairs = tmp_path / "similarities.jsonl"
    sts.evaluate(written(tmp_path, "pairs.jsonl", PAIRS), pairs=str(pairs))
    lines = pairs.read_text().splitlines()
    assert len(lines) == 7 and '"embedding' not in pairs.read_text()
    assert '"similarity":0.8' in lines[1] and '"score":null' in lines[6]


def test_sts_evaluate_sweeps_w_cf_over_the_parts(tmp_path):
    rng = np.random.default_rng(1)
    keys = ("embedding_basic_a", "embedding_cf_a", "embedding_basic_b", "embedding_cf_b")
    records = [{"score": float(i), **{key: rng.normal(size=4).tolist() for key in keys}} for i in range(8)]
    report = sts.evaluate(written(tmp_path, "parts.jsonl", records), cf_grid=[0.0, 0.5])
    assert [entry["cf_weight"] for entry in report["cf_grid"]] == [0.0, 0.5]
    parts = np.array([[r[key] for key in keys] for r in records])
    u, v = parts[:, 0] + 0.5 * parts[:, 1], parts[:, 2] + 0.5 * parts[:, 3]
    cosines = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    at_half = statistics.correlation(cosines, np.arange(8.0)).as_dict()
    assert report["cf_grid"][1]["pearson"] == pytest.approx(at_half["pearson"], abs=1e-4)
    assert report["best_cf_weight"] == max(report["cf_grid"], key=lambda entry: entry["pearson"])["cf_weight"]


def test_sts_evaluate_versus_a_file_and_a_key(tmp_path):
    other = [{**pair, "embedding_b": [1.0, 0.1 * i]} for i, pair in enumerate(PAIRS)]
    report = sts.evaluate_versus(
        written(tmp_path, "a.jsonl", PAIRS), written(tmp_path, "b.jsonl", other), resamples=50, seed=1
    )
    assert report["a"]["pearson"] == statistics.correlation(COSINES, GOLD).as_dict()["pearson"]
    assert report["difference"]["pearson"] == round(report["a"]["pearson"] - report["b"]["pearson"], 4)
    assert (report["unscored"], report["difference"]["resamples"], report["a"]["embedding_model"]) == (1, 50, None)
    both = [{**pair, "other_a": o["embedding_a"], "other_b": o["embedding_b"]} for pair, o in zip(PAIRS, other)]
    by_key = sts.evaluate_versus(written(tmp_path, "both.jsonl", both), versus_key="other", resamples=50, seed=1)
    assert by_key["difference"] == report["difference"]
    assert by_key["b"]["similarity"] == "cosine(other_a, other_b)"
    with pytest.raises(ValueError, match="give versus or versus_key"):
        sts.evaluate_versus(str(tmp_path / "a.jsonl"))
    with pytest.raises(SembedError, match="pair 2 differs between the two files"):
        sts.evaluate_versus(str(tmp_path / "a.jsonl"), written(tmp_path, "c.jsonl", [PAIRS[0], *PAIRS[2:], PAIRS[1]]))


# (score, gold, split): dev's best F0.5 is at 0.6, where test has one false positive
POI_ROWS = [
    (0.9, True, "dev"),
    (0.6, True, "dev"),
    (0.55, False, "dev"),
    (0.3, False, "dev"),
    (0.8, True, "test"),
    (0.58, False, "test"),
    (0.62, False, "test"),
    (0.2, False, "test"),
    (0.7, True, "train"),
]


def test_poi_report_tunes_the_threshold_on_one_split_and_reports_another():
    report = poi.report(POI_ROWS, threshold=0.5, tune_split="dev", test_split="test")
    test_scores, test_gold = np.array([0.8, 0.58, 0.62, 0.2]), np.array([True, False, False, False])
    assert report == {
        "score": "taste_score",
        **poi.metrics(test_scores, test_gold, 0.5),
        "split": "test",
        "tune_split": "dev",
        "tuned_threshold": 0.6,
        "tuning": poi.metrics(np.array([0.9, 0.6, 0.55, 0.3]), np.array([True, True, False, False]), 0.6),
        "at_tuned_threshold": poi.metrics(test_scores, test_gold, 0.6),
    }
    assert (report["fp"], report["at_tuned_threshold"]["fp"]) == (2, 1)
    assert poi.report(POI_ROWS, tune_split="dev")["n"] == 5  # every record but the tuning split's
    assert poi.report(POI_ROWS)["n"] == 9


def test_poi_report_needs_records_of_each_split():
    with pytest.raises(SembedError, match=r"^no records of split 'dev' to report$"):
        poi.report(POI_ROWS[4:], test_split="dev")
    with pytest.raises(SembedError, match=r"^no records of split 'nothing' to tune the threshold on$"):
        poi.report(POI_ROWS, tune_split="nothing")


def test_poi_evaluate_reads_the_gold_label_taste_kept(tmp_path):
    records = [{"taste_score": s, "is_poi_gold": g, "is_poi": not g, "split": split} for s, g, split in POI_ROWS]
    path = written(tmp_path, "tasted.jsonl", records)
    assert poi.evaluate(path, tune_split="dev", test_split="test") == poi.report(
        POI_ROWS, "taste_score", 0.5, "dev", "test"
    )
    flipped = [(s, not g, None) for s, g, _ in POI_ROWS]
    assert poi.evaluate(path, gold_key="is_poi") == poi.report(flipped)


def separable_records(n: int, key: str = "embedding") -> list[dict]:
    rng = np.random.default_rng(0)
    return [
        {key: [3.0 if i % 2 else -3.0, *rng.normal(size=3).tolist()], "label": ("neg", "pos")[i % 2]} for i in range(n)
    ]


def test_classify_and_entailment_evaluate(tmp_path):
    report = classify.evaluate(
        written(tmp_path, "mr.jsonl", separable_records(20, "embedding_sentence")), text_key="sentence", folds=4
    )
    assert (report["task"], report["features"], report["accuracy"], report["folds"]) == (
        "classify",
        "embedding_sentence",
        100.0,
        4,
    )
    assert report["classes"] == {"neg": 10, "pos": 10}
    pairs = [
        {"embedding_a": r["embedding"], "embedding_b": [-3.0, *r["embedding"][1:]], "label": r["label"]}
        for r in separable_records(20)
    ]  # |u - v| is 6 or 0 in the first coordinate
    report = entailment.evaluate(written(tmp_path, "sick.jsonl", pairs), folds=4, kind="senteval", c=None)
    assert (report["task"], report["accuracy"]) == ("entailment", 100.0)
    assert report["features"] == "(|embedding_a - embedding_b|, embedding_a * embedding_b)"
    assert report["c"] in classify.C_GRID or all(c in classify.C_GRID for c in report["c"])


def test_structure_evaluate_equals_the_report_of_the_kept_words(tmp_path):
    from test_structure import WORDS

    kept = structure.StructureWords()
    for record in WORDS:
        kept(record)
    report = structure.evaluate(written(tmp_path, "words.jsonl", WORDS), min_tag_count=1, ks=(2,))
    assert report == structure.structure_report(kept, min_tag_count=1, ks=(2,))


@pytest.fixture
def salience_table(tmp_path):
    words = ["dog", "piano", "soup", "the", "of"]
    table = SalienceTable(
        words,
        np.array([3.0, 2.5, 2.0, 0.5, 0.2], dtype=np.float32),
        np.array([5, 4, 3, 9, 9]),
        np.array([6, 4, 3, 20, 18]),
        {"corpus": {"sentences": 10, "tokens": 60}, "vectors": {"lowercase": True}},
    )
    (tmp_path / "table").mkdir()
    table.save(tmp_path / "table")
    return str(tmp_path / "table")


def test_salience_evaluate_against_norms(tmp_path, salience_table, capsys):
    norms = tmp_path / "norms.tsv"
    norms.write_text("Word\tConc\ndog\t4.9\nthe\t1.2\nPiano\t4.8\nof\t1.0\nunicorn\t3.0\nsoup\t\n")
    report = salience.evaluate(
        str(norms), salience_table, word_key="Word", rating_key="Conc", extremes=1, min_sentences=4, skip_errors=True
    )
    assert (report["rated"], report["missing"], report["n"], report["words"]) == (5, 1, 4, 5)
    assert report["top"] == [["dog", 3.0]] or report["top"] == [("dog", 3.0)]
    assert capsys.readouterr().err == (
        f"warning: skipped 1 bad record(s) in {norms}: line 7; first: 'Conc' must be a number, got a string\n"
    )


def test_print_report_shows_the_table_unless_quiet(capsys, monkeypatch):
    report = poi.report(POI_ROWS, test_split="test")
    monkeypatch.setattr(console.console, "_width", 80)
    poi.print_report(report)
    err = capsys.readouterr().err
    assert err.startswith("POI identification: taste_score >= threshold (POI = positive)\n")
    assert "│    test │       0.5 │ 4 │     0.333 │  1.000 │ 0.385 │    0.500 │" in err
    monkeypatch.setattr(console.state, "quiet", True)
    poi.print_report(report)
    sts.print_report(sts.report(COSINES, GOLD, "cosine", "score"))
    assert capsys.readouterr().err == ""


@pytest.mark.subprocess
def test_the_evaluation_package_loads_no_cli():
    import subprocess
    import sys

    code = (
        "import sys; from sembed_cli.evaluation import classify, entailment, poi, salience, structure, sts; "
        "print(sorted(m for m in sys.modules if m == 'typer' or m.startswith('sembed_cli.commands')))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
