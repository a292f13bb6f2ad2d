"""sembed eval sts / entailment / classify: metric values, the CLI contract, bad input, and the published pins."""

from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
import scipy.stats
from conftest import jsonl, sembed

from sembed_cli.evaluation import cf_sweep, classify, entailment, pair_similarity, statistics, sts

# --- the pure functions ------------------------------------------------------------------------------

X = np.array([0.9, 0.1, 0.5, 0.5, 0.7, 0.2, 0.95, 0.3])  # ties in both columns
Y = np.array([4.8, 0.4, 2.5, 3.0, 3.0, 1.2, 5.0, 1.0])


def test_pearson_and_spearman_equal_scipy_on_the_same_numbers():
    assert statistics.pearson(X, Y) == pytest.approx(scipy.stats.pearsonr(X, Y).statistic, abs=1e-12)
    assert statistics.spearman(X, Y) == pytest.approx(scipy.stats.spearmanr(X, Y).statistic, abs=1e-12)
    result = statistics.correlation(X, Y)
    assert result.n == 8
    assert result.as_dict()["pearson"] == round(100 * scipy.stats.pearsonr(X, Y).statistic, 4)
    assert result.as_dict()["spearman"] == round(100 * scipy.stats.spearmanr(X, Y).statistic, 4)


def test_fisher_interval_matches_a_hand_computation():
    # NWS eq. 11-12 by hand: F(0.5) = 1/2 ln 3 = 0.549306; 1.96 / sqrt(28 - 3) = 0.392;
    # tanh(0.549306 - 0.392) = 0.156021, tanh(0.549306 + 0.392) = 0.735822
    low, high = statistics.fisher_interval(0.5, 28)
    assert low == pytest.approx(0.156021, abs=1e-6) and high == pytest.approx(0.735822, abs=1e-6)
    # F(-0.3) = -0.309520; 1.96 / 3 = 0.653333: tanh(-0.962853) = -0.745547, tanh(0.343814) = 0.330878
    low, high = statistics.fisher_interval(-0.3, 12)
    assert low == pytest.approx(-0.745547, abs=1e-6) and high == pytest.approx(0.330878, abs=1e-6)
    assert statistics.fisher_interval(0.9, 3) is None  # eq. 12 needs n > 3
    assert statistics.fisher_interval(1.0, 10) == (1.0, 1.0)


def test_undefined_correlations_say_why():
    undefined = statistics.UndefinedCorrelation
    with pytest.raises(undefined, match=r"^correlation undefined: 1 pair\(s\), at least 2 needed$"):
        statistics.correlation(np.array([0.5]), np.array([3.0]))
    with pytest.raises(statistics.UndefinedCorrelation, match="every gold score is 3 "):
        statistics.correlation(X, np.full(8, 3.0))


def test_cf_cosines_equal_the_cosine_of_recombined_vectors():
    rng = np.random.default_rng(0)
    parts = rng.normal(size=(20, 4, 16))  # per pair: basic_a, cf_a, basic_b, cf_b
    reader = cf_sweep.CfParts()
    dots = np.stack([reader(dict(zip(reader.keys, [p.tolist() for p in pair]))) for pair in parts])
    for w in (0.0, 0.2, 1.0, 6.0):
        u, v = parts[:, 0] + w * parts[:, 1], parts[:, 2] + w * parts[:, 3]
        direct = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
        assert np.allclose(cf_sweep.cf_cosines(dots, w), direct, atol=1e-12)


def test_grid_specs():
    assert sts.parse_grid("0:1:0.1") == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert sts.parse_grid("2:6:1") == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert sts.parse_grid("0,0.2,2") == [0.0, 0.2, 2.0]
    for bad in ("1:0:0.1", "0:1:0", "a,b", "0:1"):
        with pytest.raises(ValueError):
            sts.parse_grid(bad)


def separable(n: int = 60, dim: int = 8, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    labels = [("pos", "neg")[i % 2] for i in range(n)]
    x = rng.normal(size=(n, dim))
    x[:, 0] = [3.0 if label == "pos" else -3.0 for label in labels]
    return x, labels


def test_cross_validation_on_separable_and_on_random_labels():
    x, labels = separable(200)
    result = classify.cross_validate(x, labels, folds=10, seed=0)
    assert result.accuracy == 1.0 and len(result.fold_accuracies) == 10
    assert result.classes == {"neg": 100, "pos": 100}
    rng = np.random.default_rng(1)
    noise = classify.cross_validate(rng.normal(size=(400, 8)), list(rng.choice(["a", "b"], 400)), seed=0)
    assert 0.35 < noise.accuracy < 0.65  # chance is 0.5
    again = classify.cross_validate(rng.normal(size=(400, 8)), list(rng.choice(["a", "b"], 400)), seed=0)
    assert again.fold_accuracies != noise.fold_accuracies  # other data
    assert classify.cross_validate(x, labels, seed=0).fold_accuracies == result.fold_accuracies  # same seed


def test_cross_validation_with_inner_search_picks_c_from_the_grid():
    x, labels = separable(60)
    result = classify.cross_validate(x, labels, folds=3, c=None)
    assert result.accuracy == 1.0 and set(result.chosen_c) <= set(classify.C_GRID)


def test_pair_features():
    u, v = np.array([1.0, -2.0]), np.array([0.5, 1.0])
    assert entailment.pair_features(u, v).tolist() == [0.5, 3.0]
    assert entailment.pair_features(u, v, "senteval").tolist() == [0.5, 3.0, 0.5, -2.0]


# --- eval sts through the CLI ------------------------------------------------------------------------


def pair_records(n: int = 12, seed: int = 0, dim: int = 6, **extra) -> list[dict]:
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        a = rng.normal(size=dim)
        b = a + rng.normal(size=dim) * (i % 4)
        records.append(
            {
                "id": i,
                "text_a": f"a{i}",
                "text_b": f"b{i}",
                "genre": "news" if i % 3 else "forum",
                "score": round(float(rng.uniform(0, 5)), 1) if i % 5 else 2.5,
                "embedding_a": a.round(4).tolist(),
                "embedding_b": b.round(4).tolist(),
                **extra,
            }
        )
    return records


def cosines(records: list[dict], a: str = "embedding_a", b: str = "embedding_b") -> np.ndarray:
    """Each pair's cosine by pair_similarity.cosine, the function eval uses (test_sts_writes_each_pairs_similarity
    checks it against numpy's): a pair of one vector twice has a cosine within a bit or two of 1, and which way that bit
    falls decides its rank in Spearman's rho (numpy 2.4.6's sums moved it), so a reference computed another way
    would test the bit, not the correlation."""
    return np.array([pair_similarity.cosine(np.array(r[a]), np.array(r[b]), a, b) for r in records])


def test_sts_reports_pearson_and_spearman_x100_with_intervals():
    records = pair_records()
    run = sembed("eval", "sts", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    [report] = run.records
    sim, gold = cosines(records), np.array([r["score"] for r in records])
    r, rho = scipy.stats.pearsonr(sim, gold).statistic, scipy.stats.spearmanr(sim, gold).statistic
    assert report["pearson"] == pytest.approx(100 * r, abs=1e-4)
    assert report["spearman"] == pytest.approx(100 * rho, abs=1e-4)
    half = 1.96 / math.sqrt(12 - 3)
    assert report["pearson_ci"] == pytest.approx(
        [100 * math.tanh(math.atanh(r) - half), 100 * math.tanh(math.atanh(r) + half)], abs=1e-4
    )
    assert report["spearman_ci"] == pytest.approx(
        [100 * math.tanh(math.atanh(rho) - half), 100 * math.tanh(math.atanh(rho) + half)], abs=1e-4
    )
    assert list(report) == ["task", "similarity", "gold", "n", "pearson", "pearson_ci", "spearman", "spearman_ci"]
    assert report["n"] == 12 and report["similarity"] == "cosine(embedding_a, embedding_b)"
    assert "Pearson" in run.stderr and f"{report['pearson']:.2f}" in run.stderr
    quiet = sembed("eval", "sts", "-q", input=jsonl(*records))
    assert quiet.stderr == "" and quiet.records == [report]


def test_sts_from_a_file_into_a_file(tmp_path):
    src, out = tmp_path / "pairs.jsonl", tmp_path / "metrics.json"
    src.write_text(jsonl(*pair_records()))
    run = sembed("eval", "sts", str(src), "-o", str(out), "-q")
    assert run.exit_code == 0 and run.stdout == ""
    assert orjson.loads(out.read_bytes()) == sembed("eval", "sts", input=jsonl(*pair_records())).records[0]


def test_sts_other_pair_keys_and_gold_key():
    records = [{"q_emb": r["embedding_a"], "d_emb": r["embedding_b"], "gold": r["score"]} for r in pair_records()]
    renamed = [{"embedding_q": r["q_emb"], "embedding_d": r["d_emb"], "gold": r["gold"]} for r in records]
    run = sembed("eval", "sts", "--text-key", "q", "--text-key", "d", "--gold-key", "gold", input=jsonl(*renamed))
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["pearson"] == sembed("eval", "sts", input=jsonl(*pair_records())).records[0]["pearson"]
    assert run.records[0]["similarity"] == "cosine(embedding_q, embedding_d)"


def test_sts_similarity_field():
    records = [{"similarity": float(x), "score": float(y)} for x, y in zip(X, Y)]
    run = sembed("eval", "sts", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["similarity"] == "similarity"
    assert run.records[0]["spearman"] == pytest.approx(100 * scipy.stats.spearmanr(X, Y).statistic, abs=1e-4)
    renamed = [{"sim": float(x), "score": float(y), "embedding_a": [1.0], "embedding_b": [1.0]} for x, y in zip(X, Y)]
    run = sembed("eval", "sts", "--similarity-key", "sim", input=jsonl(*renamed))
    assert run.records[0]["pearson"] == pytest.approx(100 * scipy.stats.pearsonr(X, Y).statistic, abs=1e-4)


def test_sts_group_by():
    records = pair_records(30)
    run = sembed("eval", "sts", "--group-by", "genre", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    report = run.records[0]
    assert report["group_by"] == "genre" and list(report["groups"]) == ["forum", "news"]  # first-seen order
    sim, gold = cosines(records), np.array([r["score"] for r in records])
    for name, metrics in report["groups"].items():
        mask = np.array([r["genre"] == name for r in records])
        assert metrics["n"] == mask.sum()
        pearson, spearman = scipy.stats.pearsonr(sim[mask], gold[mask]), scipy.stats.spearmanr(sim[mask], gold[mask])
        assert metrics["pearson"] == pytest.approx(100 * pearson.statistic, abs=1e-4)
        assert metrics["spearman"] == pytest.approx(100 * spearman.statistic, abs=1e-4)
    assert report["pearson"] == pytest.approx(100 * scipy.stats.pearsonr(sim, gold).statistic, abs=1e-4)
    assert "forum" in run.stderr and "all" in run.stderr


def test_sts_group_with_an_undefined_correlation_gets_nulls_and_a_warning():
    records = pair_records(12) + [{**pair_records(1)[0], "genre": "lonely"}]
    quiet = sembed("eval", "sts", "--group-by", "genre", "-q", input=jsonl(*records))
    assert quiet.exit_code == 0 and quiet.stderr == ""  # -q: errors only
    run = sembed("eval", "sts", "--group-by", "genre", input=jsonl(*records))
    assert run.exit_code == 0 and run.records == quiet.records
    assert run.records[0]["groups"]["lonely"] == {
        "n": 1,
        "pearson": None,
        "pearson_ci": None,
        "spearman": None,
        "spearman_ci": None,
        "undefined": "correlation undefined: 1 pair(s), at least 2 needed",
    }
    assert run.stderr.startswith("warning: group 'lonely': correlation undefined: 1 pair(s), at least 2 needed\n")


def cf_records(n: int = 15, dim: int = 8) -> list[dict]:
    rng = np.random.default_rng(3)
    records = []
    for i in range(n):
        basic_a, cf_a = rng.normal(size=dim), rng.normal(size=dim)
        basic_b, cf_b = basic_a + rng.normal(size=dim), cf_a + rng.normal(size=dim) * 0.3
        records.append(
            {
                "genre": ("x", "y")[i % 2],
                "score": float(rng.uniform(0, 5)),
                "embedding_basic_a": basic_a.tolist(),
                "embedding_cf_a": cf_a.tolist(),
                "embedding_basic_b": basic_b.tolist(),
                "embedding_cf_b": cf_b.tolist(),
            }
        )
    return records


def test_cf_grid_equals_recombining_the_vectors():
    records = cf_records()
    run = sembed("eval", "sts", "--cf-grid", "0:1:0.1", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    report = run.records[0]
    assert report["similarity"] == (
        "cosine(embedding_basic_a + W * embedding_cf_a, embedding_basic_b + W * embedding_cf_b)"
    )
    assert [entry["cf_weight"] for entry in report["cf_grid"]] == sts.parse_grid("0:1:0.1")
    gold = np.array([r["score"] for r in records])
    for entry in report["cf_grid"]:
        w = entry["cf_weight"]
        combined = [
            {
                "embedding_a": (np.array(r["embedding_basic_a"]) + w * np.array(r["embedding_cf_a"])).tolist(),
                "embedding_b": (np.array(r["embedding_basic_b"]) + w * np.array(r["embedding_cf_b"])).tolist(),
            }
            for r in records
        ]
        sim = cosines(combined)
        assert entry["pearson"] == pytest.approx(100 * scipy.stats.pearsonr(sim, gold).statistic, abs=1e-4)
        assert entry["spearman"] == pytest.approx(100 * scipy.stats.spearmanr(sim, gold).statistic, abs=1e-4)
    assert report["best_cf_weight"] == max(report["cf_grid"], key=lambda e: e["pearson"])["cf_weight"]
    assert "W_cf" in run.stderr


def test_cf_grid_with_groups():
    run = sembed("eval", "sts", "--cf-grid", "0,0.2", "--group-by", "genre", "-q", input=jsonl(*cf_records()))
    assert run.exit_code == 0
    assert [sorted(entry["groups"]) for entry in run.records[0]["cf_grid"]] == [["x", "y"], ["x", "y"]]


# --- entailment and classify through the CLI ------------------------------------------------------------


def labelled_pairs(n: int, separable_labels: bool, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    labels = ["entailment", "neutral", "contradiction"]
    records = []
    for i in range(n):
        label = labels[i % 3] if separable_labels else str(rng.choice(labels))
        u = rng.normal(size=6)
        v = u + rng.normal(size=6) * 0.1
        if separable_labels:
            v[i % 3] += 4.0  # the class decides which coordinate differs
        records.append(
            {"text_a": "a", "text_b": "b", "label": label, "embedding_a": u.tolist(), "embedding_b": v.tolist()}
        )
    return records


def test_entailment_on_separable_pairs_and_on_random_labels():
    run = sembed("eval", "entailment", input=jsonl(*labelled_pairs(150, True)))
    assert run.exit_code == 0, run.stderr
    report = run.records[0]
    assert report["accuracy"] == 100.0 and report["accuracy_std"] == 0.0
    assert report["classes"] == {"contradiction": 50, "entailment": 50, "neutral": 50}
    assert report["features"] == "|embedding_a - embedding_b|" and report["folds"] == 10 and report["n"] == 150
    assert list(report) == [
        "task",
        "features",
        "label",
        "n",
        "classes",
        "folds",
        "accuracy",
        "accuracy_std",
        "fold_accuracies",
        "c",
        "seed",
    ]
    noise = sembed("eval", "entailment", "--features", "senteval", input=jsonl(*labelled_pairs(300, False)))
    assert noise.records[0]["features"] == "(|embedding_a - embedding_b|, embedding_a * embedding_b)"
    assert 20 < noise.records[0]["accuracy"] < 47  # chance is 33.3


def test_entailment_is_seeded():
    records = jsonl(*labelled_pairs(90, False))
    first = sembed("eval", "entailment", "--seed", "3", input=records)
    again = sembed("eval", "entailment", "--seed", "3", input=records)
    other = sembed("eval", "entailment", "--seed", "4", input=records)
    assert first.records == again.records
    assert first.records[0]["fold_accuracies"] != other.records[0]["fold_accuracies"]


def test_classify_on_separable_data_and_random_labels():
    x, labels = separable(100)
    records = [{"text": "t", "embedding": row.tolist(), "label": int(label == "pos")} for row, label in zip(x, labels)]
    run = sembed("eval", "classify", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    report = run.records[0]
    assert report["task"] == "classify" and report["accuracy"] == 100.0 and report["classes"] == {"0": 50, "1": 50}
    assert "classify" in run.stderr and "100.00" in run.stderr
    rng = np.random.default_rng(5)
    noise = [{"embedding": rng.normal(size=8).tolist(), "label": int(rng.integers(2))} for _ in range(300)]
    assert 35 < sembed("eval", "classify", "-q", input=jsonl(*noise)).records[0]["accuracy"] < 65


def test_classify_folds_c_and_text_key():
    x, labels = separable(40)
    records = [{"embedding_title": row.tolist(), "y": label} for row, label in zip(x, labels)]
    run = sembed(
        "eval",
        "classify",
        "--text-key",
        "title",
        "--label-key",
        "y",
        "--folds",
        "4",
        "--c",
        "0.5",
        input=jsonl(*records),
    )
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["folds"] == 4 and run.records[0]["c"] == 0.5 and run.records[0]["label"] == "y"


def test_a_label_thinner_than_the_folds_is_a_warning():
    x, labels = separable(40)
    labels[:3] = ["rare"] * 3
    records = [{"embedding": row.tolist(), "label": label} for row, label in zip(x, labels)]
    quiet = sembed("eval", "classify", "-q", input=jsonl(*records))
    assert quiet.exit_code == 0 and quiet.stderr == ""  # -q: errors only
    run = sembed("eval", "classify", input=jsonl(*records))
    assert run.exit_code == 0 and run.records == quiet.records
    assert run.stderr.startswith(
        "warning: label 'rare' has only 3 record(s), fewer than the 10 folds: some test folds lack it\n"
    )


# --- bad input: exact messages, exit 1 ------------------------------------------------------------------

GOOD = {
    "text_a": "a",
    "text_b": "b",
    "score": 1.0,
    "label": "neutral",
    "embedding_a": [1.0, 0.0, 2.0],
    "embedding_b": [0.5, 1.0, 2.0],
}


def _with(**changes) -> dict:
    record = {**GOOD, **changes}
    return {key: value for key, value in record.items() if value is not ...}


BAD_PAIRS = [
    (_with(embedding_b=...), "missing key 'embedding_b' (run sembed embed first)"),
    (_with(embedding_b=[1.0, 2.0]), "'embedding_b' has 2 dimensions, 'embedding_a' has 3"),
    (_with(embedding_a=[1.0, 2.0], embedding_b=[1.0, 2.0]), "'embedding_a' has 2 dimensions, earlier records 3"),
    (_with(embedding_a=[0.0, 0.0, 0.0]), "'embedding_a' is a zero vector (cosine undefined)"),
    (_with(embedding_a="1 2 3"), "'embedding_a' must be a list of numbers, got a string"),
    (_with(embedding_a=[1.0, "2", 3.0]), "'embedding_a' must be a list of numbers, found a string"),
    (_with(embedding_a=[1.0, True, 3.0]), "'embedding_a' must be a list of numbers, found a boolean"),
    (_with(embedding_a=[]), "'embedding_a' is an empty list"),
]


@pytest.mark.parametrize(
    "record, message",
    BAD_PAIRS
    + [
        (_with(score=True), "'score' must be a number, got a boolean"),
        (_with(score="4.2"), "'score' must be a number, got a string"),
    ],
)
def test_sts_bad_records(record, message):
    run = sembed("eval", "sts", input=jsonl(GOOD, GOOD) + "\n" + orjson.dumps(record).decode() + "\n")
    assert run.exit_code == 1
    assert run.stderr == f"error: <stdin>:4: {message}\n"
    assert run.stdout == ""


@pytest.mark.parametrize(
    "record, message",
    BAD_PAIRS[:3]
    + [
        (_with(label=...), "missing key 'label' (the gold label)"),
        (_with(label=None), "'label' must be a string or an integer label, got null"),
    ],
)
def test_entailment_bad_records(record, message):
    run = sembed("eval", "entailment", input=jsonl(GOOD, GOOD) + "\n" + orjson.dumps(record).decode() + "\n")
    assert run.exit_code == 1
    assert run.stderr == f"error: <stdin>:4: {message}\n"


def test_classify_bad_records():
    good = {"text": "t", "embedding": [1.0, 2.0], "label": 1}
    for record, message in [
        ({"text": "t", "label": 1}, "missing key 'embedding' (run sembed embed first)"),
        ({**good, "embedding": [1.0]}, "'embedding' has 1 dimensions, earlier records 2"),
        ({**good, "label": 0.5}, "'label' must be a string or an integer label, got a number"),
    ]:
        run = sembed("eval", "classify", input=jsonl(good, record))
        assert run.exit_code == 1
        assert run.stderr == f"error: <stdin>:2: {message}\n"


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e999"])
def test_nan_and_infinite_values_are_rejected_at_their_line(value):
    # orjson, like strict JSON, has no NaN or infinity: such a value fails as JSON, at its line and column
    line = f'{{"score": 1, "embedding_a": [{value}, 1.0], "embedding_b": [1.0, 1.0]}}'
    run = sembed("eval", "sts", input=jsonl(GOOD) + line + "\n")
    assert run.exit_code == 1
    assert run.stderr.startswith("error: <stdin>:2: invalid JSON: ")
    if value != "1e999":
        column = line.index(value) + 1
        assert run.stderr == (
            f"error: <stdin>:2: invalid JSON: NaN and Infinity are not JSON numbers at column {column}\n"
        )


def test_nan_is_named_by_the_field_reader():
    from sembed_cli.errors import BadRecord
    from sembed_cli.io import check_number, vector

    with pytest.raises(BadRecord, match=r"^'embedding' has a NaN or infinite value at index 1$"):
        vector({"embedding": [1.0, float("nan")]}, "embedding")
    with pytest.raises(BadRecord, match=r"^'score' must be a finite number, got inf$"):
        check_number({"score": float("inf")}, "score", "the gold similarity score")


@pytest.mark.parametrize(
    "records, message",
    [
        ([GOOD], "correlation undefined: 1 pair(s), at least 2 needed"),
        (
            [GOOD, _with(embedding_b=[2.0, 1.0, 2.0])],
            "correlation undefined: every score is 1 (a constant column over 2 pairs)",
        ),
        (
            [_with(score=1.0), _with(score=2.0)],
            "correlation undefined: every cosine(embedding_a, embedding_b) is 0.87831 (a constant column over 2 pairs)",
        ),
    ],
)
def test_undefined_correlation_is_a_clear_error(records, message):
    run = sembed("eval", "sts", input=jsonl(*records))
    assert run.exit_code == 1
    assert run.stderr == f"error: {message}\n"


def test_too_few_records_or_labels_for_cross_validation():
    run = sembed("eval", "entailment", input=jsonl(*[GOOD] * 7))
    assert run.exit_code == 1
    assert run.stderr == (
        "error: 10-fold cross-validation needs at least 10 records, got 7 "
        "(hint: give more records, or fewer folds with --folds)\n"
    )
    run = sembed("eval", "entailment", input=jsonl(*[GOOD] * 12))
    assert run.stderr == (
        "error: every one of the 12 records has the label 'neutral': nothing to classify "
        "(hint: give records of at least two labels)\n"
    )
    run = sembed("eval", "sts", input="\n")
    assert run.exit_code == 1 and run.stderr == "error: no usable records in <stdin>\n"


def test_skip_errors_leaves_bad_records_out_and_says_where():
    records = pair_records(12)
    text = jsonl(*records[:5]) + '{"score": 1}\n' + jsonl(*records[5:]) + "not json\n"
    quiet = sembed("eval", "sts", "--skip-errors", "-q", input=text)
    assert quiet.exit_code == 0 and quiet.stderr == ""  # -q: errors only
    run = sembed("eval", "sts", "--skip-errors", input=text)
    assert run.exit_code == 0
    assert run.records == quiet.records == sembed("eval", "sts", "-q", input=jsonl(*records)).records
    assert run.stderr.startswith(
        "warning: skipped 2 bad record(s) in <stdin>: line 6, 14; first: missing key 'embedding_a' "
        "(run sembed embed first)\n"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["sts", "--cf-grid", "1:0:0.1"], "is not START:STOP:STEP"),
        (["sts", "--cf-grid", "0:1:0.1", "--similarity-key", "s"], "cannot use --similarity-key"),
        (["sts", "--text-key", "a"], "a pair needs exactly two --text-key options, got 1"),
        (["entailment", "--features", "cosine"], "'cosine' is not one of abs-diff, senteval"),
        (["classify", "--c", "-1"], "'-1' is neither a positive number nor 'auto'"),
        (["classify", "--folds", "1"], "--folds"),
    ],
)
def test_usage_errors_exit_2(args, message):
    run = sembed("eval", *args, input=jsonl(GOOD))
    assert run.exit_code == 2
    assert message in run.stderr


# --- end to end: the published all-MiniLM-L6-v2 figures --------------------------------------------------


def embedded(data_dir, fmt: str, path: str) -> str:
    converted = sembed("convert", "--from", fmt, str(data_dir / path), "-q")
    assert converted.exit_code == 0, converted.stderr
    run = sembed("embed", "-q", input=converted.stdout)
    assert run.exit_code == 0, run.stderr
    return run.stdout


@pytest.mark.slow
@pytest.mark.e2e
def test_stsb_test_reproduces_the_published_minilm_figures(data_dir):
    # sentence-transformers' published all-MiniLM-L6-v2 result on STS-B test (cosine): Spearman 82.03, Pearson 82.74
    report = sembed("eval", "sts", "-q", input=embedded(data_dir, "stsb", "stsb/sts-test.csv")).records[0]
    assert report["n"] == 1379
    assert report["spearman"] == pytest.approx(82.03, abs=0.05)
    assert report["pearson"] == pytest.approx(82.74, abs=0.05)


# measured with this pipeline (sembed embed, packaged all-MiniLM-L6-v2, CPU) on SICK test, 4927 pairs:
# SICK-R (cosine against the relatedness score) and SICK-E (|u - v|, 10 folds, seed 0)
SICK_R_PIN = {"pearson": 83.63, "spearman": 77.15}
SICK_E_PIN = 82.93


@pytest.mark.slow
@pytest.mark.e2e
def test_sick_test_pinned(data_dir):
    records = embedded(data_dir, "sick", "sick/SICK_test_annotated.txt")
    report = sembed("eval", "sts", "-q", input=records).records[0]
    assert report["n"] == 4927
    assert report["pearson"] == pytest.approx(SICK_R_PIN["pearson"], abs=0.05)
    assert report["spearman"] == pytest.approx(SICK_R_PIN["spearman"], abs=0.05)
    entailment = sembed("eval", "entailment", "-q", input=records).records[0]
    assert entailment["n"] == 4927 and entailment["accuracy"] == pytest.approx(SICK_E_PIN, abs=0.05)


# --- issue 14: huge vectors, small classification sets, unscored pairs, per-pair similarities ------------------


def test_sts_on_vectors_scaled_by_1e30_or_1e_200_equals_the_unscaled_result_and_past_float32_is_refused():
    records = [r for r in pair_records(20) if r["id"] % 4]  # b = a gives cosines of 1 whose ties rounding may split
    huge = [
        {**r, "embedding_a": [x * 1e30 for x in r["embedding_a"]], "embedding_b": [x * 1e30 for x in r["embedding_b"]]}
        for r in records
    ]
    tiny = [{**r, "embedding_a": [x * 1e-200 for x in r["embedding_a"]]} for r in records]
    past = [{**r, "embedding_a": [x * 1e200 for x in r["embedding_a"]]} for r in records]
    run = sembed("eval", "sts", "-q", input=jsonl(*past))
    assert run.exit_code == 1
    assert run.stderr == "error: <stdin>:1: 'embedding_a' has a value at index 0 past float32's range (about 3.4e38)\n"
    plain = sembed("eval", "sts", "-q", input=jsonl(*records))
    for scaled in (huge, tiny):
        run = sembed("eval", "sts", "-q", input=jsonl(*scaled))
        assert run.exit_code == 0, run.stderr
        assert run.records[0]["pearson"] == pytest.approx(plain.records[0]["pearson"], abs=1e-3)
        assert run.records[0]["spearman"] == pytest.approx(plain.records[0]["spearman"], abs=1e-3)


def test_cf_grid_on_huge_parts_equals_the_unscaled_sweep():
    records = pair_records(seed=3)
    parts = [
        {
            **r,
            "embedding_basic_a": r["embedding_a"],
            "embedding_cf_a": r["embedding_b"],
            "embedding_basic_b": r["embedding_b"],
            "embedding_cf_b": r["embedding_a"],
        }
        for r in records
    ]
    huge = [
        {
            **r,
            **{
                k: [x * 1e30 for x in r[k]]
                for k in r
                if k.startswith("embedding_basic") or k.startswith("embedding_cf")
            },
        }
        for r in parts
    ]
    plain = sembed("eval", "sts", "-q", "--cf-grid", "0,0.5", input=jsonl(*parts)).records[0]
    scaled = sembed("eval", "sts", "-q", "--cf-grid", "0,0.5", input=jsonl(*huge)).records[0]
    assert [e["pearson"] for e in scaled["cf_grid"]] == pytest.approx(
        [e["pearson"] for e in plain["cf_grid"]], abs=1e-3
    )


def test_pearson_of_huge_columns():
    assert statistics.pearson(X * 1e300, Y) == pytest.approx(scipy.stats.pearsonr(X, Y).statistic, abs=1e-12)


def test_classify_on_12_records_uses_fewer_folds_with_a_warning():
    rng = np.random.default_rng(0)
    records = [{"embedding": rng.normal(size=4).tolist(), "label": "ab"[i % 2]} for i in range(12)]
    run = sembed("eval", "classify", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["folds"] == 6 and len(run.records[0]["fold_accuracies"]) == 6
    assert run.stderr.startswith(
        "warning: 10-fold cross-validation needs a label with 10 records, the largest has 6: 6 folds instead\n"
    )
    assert sembed("eval", "classify", "-q", "--c", "auto", input=jsonl(*records)).exit_code == 0
    single = [{"embedding": [float(i), 1.0], "label": str(i)} for i in range(12)]
    run = sembed("eval", "classify", input=jsonl(*single))
    assert run.exit_code == 1
    assert run.stderr == (
        "error: every label has a single record: 10-fold cross-validation needs at least 2 of one "
        "label (hint: give more records)\n"
    )


def test_entailment_features_that_overflow_are_a_clear_error():
    records = [
        {
            **r,
            "label": "ab"[i % 2],
            "embedding_a": [x * 1e30 for x in r["embedding_a"]],
            "embedding_b": [x * 1e30 for x in r["embedding_b"]],
        }
        for i, r in enumerate(pair_records(20))
    ]
    run = sembed("eval", "entailment", "--features", "senteval", input=jsonl(*records))
    assert run.exit_code == 1
    assert run.stderr == (
        "error: the features overflow (a value past float32's range): the vectors are too large "
        "(hint: scale the embeddings down)\n"
    )


def test_sts_leaves_unscored_pairs_out_and_counts_them():
    records = pair_records()
    unscored = [{k: v for k, v in r.items() if k != "score"} for r in records[:3]] + [{**records[3], "score": None}]
    run = sembed("eval", "sts", input=jsonl(*unscored, *records[4:]))
    assert run.exit_code == 0, run.stderr
    expected = sembed("eval", "sts", "-q", input=jsonl(*records[4:])).records[0]
    assert run.records == [{**expected, "unscored": 4}]
    assert run.stderr.startswith("warning: 4 pair(s) have no gold score ('score'): left out of the correlation\n")
    run = sembed("eval", "sts", input=jsonl(*unscored))
    assert run.exit_code == 1
    assert run.stderr.endswith(
        "error: no pair has a gold score ('score') (hint: give the score field with --gold-key)\n"
    )


def test_semeval_files_with_blank_scores_go_through_the_pipeline(tmp_path):
    (tmp_path / "STS.input.forum.txt").write_text(
        "A man sings.\tA man is singing.\nA cat.\tA plane.\nHi there.\tHello.\nA dog runs.\tA dog is running.\n"
    )
    (tmp_path / "STS.gs.forum.txt").write_text("4.8\n\n3\n4.5\n")
    converted = sembed("convert", "-q", "--from", "semeval-sts", str(tmp_path / "STS.input.forum.txt"))
    rng = np.random.default_rng(1)
    records = [
        {**r, "embedding_a": rng.normal(size=5).tolist(), "embedding_b": rng.normal(size=5).tolist()}
        for r in converted.records
    ]
    run = sembed("eval", "sts", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["n"] == 3 and run.records[0]["unscored"] == 1


def test_sts_writes_each_pairs_similarity(tmp_path):
    records = pair_records()
    records[2].pop("score")
    pairs = tmp_path / "pairs.jsonl"
    run = sembed("eval", "sts", "-q", "--pairs", str(pairs), input=jsonl(*records))
    assert run.exit_code == 0 and len(run.records) == 1  # stdout: the metrics only
    written = [orjson.loads(line) for line in pairs.read_text().splitlines()]
    assert [r["id"] for r in written] == list(range(12))
    assert not any(k.startswith("embedding") for r in written for k in r)
    u, v = (np.array([r[key] for r in records]) for key in ("embedding_a", "embedding_b"))
    numpy_cosines = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    assert [r["similarity"] for r in written] == pytest.approx(numpy_cosines.tolist(), abs=1e-12)
    assert list(written[0]) == ["id", "text_a", "text_b", "genre", "score", "similarity"]
    metrics = tmp_path / "metrics.json"
    run = sembed("eval", "sts", "-q", "--pairs", "-", "-o", str(metrics), input=jsonl(*records))
    assert run.exit_code == 0 and run.records == written
    assert orjson.loads(metrics.read_bytes())["n"] == 11
    run = sembed("eval", "sts", "--pairs", "-", input=jsonl(*records))
    assert run.exit_code == 2 and "--pairs - writes the pairs to stdout: give the metrics a file with -o" in run.stderr
    run = sembed("eval", "sts", "--pairs", str(pairs), "--cf-grid", "0,1", input=jsonl(*records))
    assert run.exit_code == 2 and "--cf-grid gives each pair a similarity per W_cf; leave out --pairs" in run.stderr
