"""eval sts --versus / --versus-key: two models on the same pairs, their paired difference with a bootstrap interval."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import jsonl, sembed

from sembed_cli.evaluation import statistics, sts

GOLD = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
PERFECT = np.array([0.0, 1.0, 2.0, 3.0, 4.0])  # r = rho = 1
SWAPPED = np.array([0.0, 1.0, 2.0, 4.0, 3.0])  # r = rho = 9 / 10 (sum of dx dy = 9, sum dx^2 = 10)


def bootstrap_by_hand(a: np.ndarray, b: np.ndarray, gold: np.ndarray, resamples: int, seed: int) -> dict:
    """The documented procedure, one resample at a time with scipy: the percentile interval of r_a - r_b."""
    import scipy.stats

    draws = np.random.default_rng(seed).integers(0, len(gold), (resamples, len(gold)))
    found = {"pearson": [], "spearman": []}
    for rows in draws:
        x, y, g = a[rows], b[rows], gold[rows]
        if np.ptp(x) == 0 or np.ptp(y) == 0 or np.ptp(g) == 0:
            continue
        found["pearson"].append(scipy.stats.pearsonr(x, g).statistic - scipy.stats.pearsonr(y, g).statistic)
        found["spearman"].append(scipy.stats.spearmanr(x, g).statistic - scipy.stats.spearmanr(y, g).statistic)
    return {name: list(100 * np.percentile(values, [2.5, 97.5])) for name, values in found.items()} | {
        "defined": len(found["pearson"])
    }


def test_paired_difference_point_figures_are_exact():
    result = statistics.paired_difference(PERFECT, SWAPPED, GOLD, resamples=200, seed=3)
    assert result["pearson"] == 10.0 and result["spearman"] == 10.0  # 100 * (1 - 0.9)
    assert result["n"] == 5 and result["of"] == "a - b" and result["resamples"] == 200 and result["seed"] == 3
    assert result["interval"] == "paired bootstrap over the test pairs, 95% percentile interval"


def test_paired_difference_interval_is_the_documented_bootstrap():
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 40)
    a, b = gold + rng.normal(0, 1, 40), gold + rng.normal(0, 2, 40)
    result = statistics.paired_difference(a, b, gold, resamples=300, seed=7)
    expected = bootstrap_by_hand(a, b, gold, 300, 7)
    assert result["pearson_ci"] == pytest.approx(expected["pearson"], abs=1e-4)
    assert result["spearman_ci"] == pytest.approx(expected["spearman"], abs=1e-4)
    assert "undefined_resamples" not in result
    assert result["pearson_ci"][0] < result["pearson"] < result["pearson_ci"][1]
    assert statistics.paired_difference(a, b, gold, resamples=300, seed=7) == result  # seeded
    assert statistics.paired_difference(a, b, gold, resamples=300, seed=8)["pearson_ci"] != result["pearson_ci"]


def test_paired_difference_counts_resamples_with_an_undefined_correlation():
    result = statistics.paired_difference(PERFECT, SWAPPED, GOLD, resamples=200, seed=3)
    expected = bootstrap_by_hand(PERFECT, SWAPPED, GOLD, 200, 3)
    assert result["undefined_resamples"] == 200 - expected["defined"] > 0  # 5 pairs: some draws repeat one pair
    assert result["pearson_ci"] == pytest.approx(expected["pearson"], abs=1e-4)
    assert result["spearman_ci"] == pytest.approx(expected["spearman"], abs=1e-4)


def test_a_model_against_itself_or_a_monotone_copy_differs_by_exactly_zero():
    rng = np.random.default_rng(1)
    gold, a = rng.uniform(0, 5, 30), rng.uniform(-1, 1, 30)
    same = statistics.paired_difference(a, a, gold, resamples=100)
    assert (same["pearson"], same["pearson_ci"], same["spearman"], same["spearman_ci"]) == (
        0.0,
        [0.0, 0.0],
        0.0,
        [0.0, 0.0],
    )
    cubed = statistics.paired_difference(a, a**3, gold, resamples=100)  # the same ranks: the same rho in every resample
    assert cubed["spearman"] == 0.0 and cubed["spearman_ci"] == [0.0, 0.0] and cubed["pearson"] != 0.0


def test_swapping_the_models_negates_the_difference_and_its_interval():
    rng = np.random.default_rng(2)
    gold = rng.uniform(0, 5, 25)
    a, b = gold + rng.normal(0, 1, 25), gold + rng.normal(0, 1.5, 25)
    ab, ba = statistics.paired_difference(a, b, gold, 150, 4), statistics.paired_difference(b, a, gold, 150, 4)
    for name in ("pearson", "spearman"):
        assert ba[name] == -ab[name]
        assert ba[f"{name}_ci"] == pytest.approx([-ab[f"{name}_ci"][1], -ab[f"{name}_ci"][0]], abs=1e-4)


# --- the CLI ------------------------------------------------------------------------------------------------

# Four pairs on a unit circle: embedding_a = [1, 0], embedding_b = [c, s], so the cosine is c (s = sqrt(1 - c^2)).
A_COSINES = [(0.0, 1.0), (0.6, 0.8), (0.8, 0.6), (1.0, 0.0)]  # rho 1 against scores 0..3
B_COSINES = [(0.0, 1.0), (0.8, 0.6), (0.6, 0.8), (1.0, 0.0)]  # two middle pairs swapped: rho 0.8
# Pearson (scores 0..3, dy = -1.5, -.5, .5, 1.5; both cosine columns have mean .6 and sum dx^2 = .56):
R_A, R_B = 1.6 / math.sqrt(0.56 * 5), 1.4 / math.sqrt(0.56 * 5)
MODEL_A, MODEL_B = "models/cf@0123456789ab;cf=0.2", "models/sbert@ba9876543210"


def side(cosines, model: str | None = None, **extra) -> list[dict]:
    records = []
    for i, (c, s) in enumerate(cosines):
        record = {
            "text_a": f"a{i}",
            "text_b": f"b{i}",
            "score": float(i),
            "embedding_a": [1.0, 0.0],
            "embedding_b": [c, s],
            **extra,
        }
        if model is not None:
            record["embedding_model"] = model
        records.append(record)
    return records


def test_versus_file_reports_both_models_and_their_difference(tmp_path):
    other = tmp_path / "sbert.jsonl"
    other.write_text(jsonl(*side(B_COSINES, MODEL_B)))
    run = sembed(
        "eval",
        "sts",
        "--versus",
        str(other),
        "--resamples",
        "200",
        "--seed",
        "1",
        input=jsonl(*side(A_COSINES, MODEL_A)),
    )
    assert run.exit_code == 0, run.stderr
    [report] = run.records
    assert list(report) == ["task", "gold", "a", "b", "difference"]
    assert report["a"]["embedding_model"] == MODEL_A and report["b"]["embedding_model"] == MODEL_B
    assert report["a"]["similarity"] == "<stdin>: cosine(embedding_a, embedding_b)"
    assert report["b"]["similarity"] == f"{other}: cosine(embedding_a, embedding_b)"
    assert report["a"]["pearson"] == round(100 * R_A, 4) and report["b"]["pearson"] == round(100 * R_B, 4)
    assert report["a"]["spearman"] == 100.0 and report["b"]["spearman"] == 80.0
    difference = report["difference"]
    assert difference["pearson"] == round(100 * (R_A - R_B), 4) == 11.9523
    assert difference["spearman"] == 20.0
    assert (difference["resamples"], difference["seed"], difference["n"]) == (200, 1, 4)
    a, b = np.array([c for c, _ in A_COSINES]), np.array([c for c, _ in B_COSINES])
    assert difference == statistics.paired_difference(a, b, np.arange(4.0), 200, 1)
    assert "a - b" in run.stderr and "+11.95" in run.stderr
    assert difference["undefined_resamples"] > 0  # 4 pairs: some resamples draw one pair four times
    assert f"{difference['undefined_resamples']} of 200 bootstrap resamples left out" in run.stderr


def test_versus_key_reads_the_other_model_from_the_same_records():
    records = side(A_COSINES, MODEL_A)
    for record, (c, s) in zip(records, B_COSINES):
        record |= {"sbert_a": [1.0, 0.0], "sbert_b": [c, s], "sbert_model": MODEL_B}
    run = sembed(
        "eval", "sts", "-q", "--versus-key", "sbert", "--resamples", "50", "--seed", "5", input=jsonl(*records)
    )
    assert run.exit_code == 0, run.stderr
    [report] = run.records
    assert report["b"]["similarity"] == "cosine(sbert_a, sbert_b)" and report["b"]["embedding_model"] == MODEL_B
    assert report["difference"]["pearson"] == 11.9523 and report["difference"]["spearman"] == 20.0
    unlabelled = [{k: v for k, v in r.items() if not k.endswith("model")} for r in records]
    report = sembed("eval", "sts", "-q", "--versus-key", "sbert", input=jsonl(*unlabelled)).records[0]
    assert report["a"]["embedding_model"] is None and report["b"]["embedding_model"] is None
    assert report["difference"]["resamples"] == 1000 and report["difference"]["seed"] == 0  # the defaults


def test_versus_leaves_unscored_pairs_out_of_both(tmp_path):
    a, b = side(A_COSINES + [(0.5, math.sqrt(0.75))]), side(B_COSINES + [(0.1, math.sqrt(0.99))])
    a[-1]["score"] = b[-1]["score"] = None
    other = tmp_path / "b.jsonl"
    other.write_text(jsonl(*b))
    run = sembed("eval", "sts", "--versus", str(other), "--resamples", "50", input=jsonl(*a))
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["difference"]["spearman"] == 20.0 and run.records[0]["unscored"] == 1
    assert "1 pair(s) have no gold score ('score')" in run.stderr


def test_each_side_must_still_be_one_model(tmp_path):
    mixed = side(B_COSINES, MODEL_B)
    mixed[2]["embedding_model"] = MODEL_A
    other = tmp_path / "mixed.jsonl"
    other.write_text(jsonl(*mixed))
    run = sembed("eval", "sts", "--versus", str(other), input=jsonl(*side(A_COSINES, MODEL_A)))
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: {other}:3: embedding_model is '{MODEL_A}', but earlier records are '{MODEL_B}': "
        "vectors of two models cannot be compared\n"
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda b: b[:3], "error: <stdin> has 4 pairs, {other} 3: --versus needs the same pairs in the same order\n"),
        (
            lambda b: [b[0], b[2], b[1], b[3]],
            "error: pair 2 differs between the two files (('a1', 'b1'), score 1.0 "
            "against ('a2', 'b2'), score 2.0): --versus needs the same pairs in the "
            "same order\n",
        ),
    ],
)
def test_versus_refuses_files_of_other_pairs(tmp_path, change, message):
    other = tmp_path / "b.jsonl"
    other.write_text(jsonl(*change(side(B_COSINES))))
    run = sembed("eval", "sts", "--versus", str(other), input=jsonl(*side(A_COSINES)))
    assert run.exit_code == 1 and run.stderr == message.format(other=other)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--versus", "b.jsonl", "--versus-key", "sbert"],
            "give the other model once: --versus FILE or --versus-key NAME",
        ),
        (
            ["--versus-key", "sbert", "--cf-grid", "0:1:0.5"],
            "--versus-key compares two models over all pairs; leave out --cf-grid",
        ),
        (
            ["--versus", "b.jsonl", "--pairs", "p.jsonl"],
            "--versus compares two models over all pairs; leave out --pairs",
        ),
        (["--versus", "-"], "--versus names the input itself: give the other model's records"),
        (
            ["--versus-key", "sbert", "--resamples", "0"],
            "Invalid value for '--resamples': Input should be greater than or equal to 1",
        ),
    ],
)
def test_versus_usage_errors(args, message):
    run = sembed("eval", "sts", *args, input=jsonl(*side(A_COSINES)))
    assert run.exit_code == 2 and message in run.stderr.replace("\n", " ").replace("  ", " ")


def test_versus_key_without_those_vectors_is_a_bad_record():
    records = [{**r, "similarity": 0.5} for r in side(A_COSINES)]  # never taken for the other model's similarity
    run = sembed("eval", "sts", "--versus-key", "sbert", input=jsonl(*records))
    assert run.exit_code == 1
    assert run.stderr == "error: <stdin>:1: missing key 'sbert_a' (run sembed embed first)\n"


def test_versus_with_group_by_compares_each_group_and_all_pairs(tmp_path):
    a = side(A_COSINES + A_COSINES, MODEL_A)
    b = side(B_COSINES + B_COSINES, MODEL_B)
    for records in (a, b):
        for i, record in enumerate(records):
            record["genre"] = "news" if i < 4 else "forum"
            record["text_a"] = f"a{i}"
    other = tmp_path / "b.jsonl"
    other.write_text(jsonl(*b))
    run = sembed("eval", "sts", "--versus", str(other), "--group-by", "genre", "--resamples", "50", input=jsonl(*a))
    assert run.exit_code == 0, run.stderr
    [report] = run.records
    assert report["group_by"] == "genre" and list(report["groups"]) == ["news", "forum"]
    for group in report["groups"].values():
        assert group["difference"]["pearson"] == 11.9523 and group["difference"]["spearman"] == 20.0
        assert group["a"]["n"] == group["b"]["n"] == group["difference"]["n"] == 4
        assert group["a"]["embedding_model"] == MODEL_A and group["b"]["embedding_model"] == MODEL_B
    assert report["difference"]["n"] == 8
    table = run.stderr[run.stderr.index("STS: two models") :]
    assert "┃ group ┃" in table and "│ news  │" in table and "│ forum │" in table and "│ all   │" in table


def test_versus_group_with_an_undefined_correlation_is_reported_not_fatal():
    records = side(A_COSINES + [(0.5, math.sqrt(0.75))], MODEL_A)
    for record, (c, s) in zip(records, B_COSINES + [(0.1, math.sqrt(0.99))]):
        record |= {"sbert_a": [1.0, 0.0], "sbert_b": [c, s], "genre": "news"}
    records[-1]["genre"] = "alone"
    run = sembed(
        "eval", "sts", "--versus-key", "sbert", "--group-by", "genre", "--resamples", "20", input=jsonl(*records)
    )
    assert run.exit_code == 0, run.stderr
    [report] = run.records
    assert report["groups"]["alone"] == {"n": 1, "undefined": "correlation undefined: 1 pair(s), at least 2 needed"}
    assert report["groups"]["news"]["difference"]["spearman"] == 20.0
    assert "group 'alone': correlation undefined: 1 pair(s), at least 2 needed" in run.stderr


def test_the_table_never_cuts_two_long_model_names_alike(monkeypatch, capsys):
    from sembed_cli import console

    monkeypatch.setattr(console.console, "_width", 80)
    long = "/models/experiments/2026/a-very-long-directory-name/cf-bert-large-finetuned-on-stsb@9c0e41d2b7a5;cf=0."
    metrics = {
        "similarity": "cosine",
        "n": 4,
        "pearson": 80.0,
        "pearson_ci": None,
        "spearman": 80.0,
        "spearman_ci": None,
    }
    difference = {
        "n": 4,
        "pearson": 1.0,
        "pearson_ci": None,
        "spearman": 1.0,
        "spearman_ci": None,
        "interval": statistics.INTERVAL,
        "resamples": 10,
    }
    report = {
        "task": "sts",
        "gold": "score",
        "a": {**metrics, "embedding_model": long + "2"},
        "b": {**metrics, "embedding_model": long + "3"},
        "difference": difference,
    }
    sts.print_report(report)
    rows = [line for line in capsys.readouterr().err.splitlines() if line.startswith(("│ a     │", "│ b     │"))]
    assert len(rows) == 2 and long + "2" in rows[0] and long + "3" in rows[1]
    assert console.console.width == 80  # the console keeps its width for what follows


def test_the_python_api_compares_two_models_as_the_command_does(tmp_path):
    from sembed_cli import api
    from sembed_cli.errors import SembedError

    other = tmp_path / "sbert.jsonl"
    other.write_text(jsonl(*side(B_COSINES, MODEL_B)))
    args = ("eval", "sts", "--versus", str(other), "--resamples", "200", "--seed", "1")
    [command] = sembed(*args, input=jsonl(*side(A_COSINES, MODEL_A))).records
    report = api.evaluate_sts(side(A_COSINES, MODEL_A), versus=side(B_COSINES, MODEL_B), resamples=200, seed=1)
    for part in ("a", "b"):  # the same figures; the similarity names the files each was read from
        assert {k: v for k, v in report[part].items() if k != "similarity"} == {
            k: v for k, v in command[part].items() if k != "similarity"
        }
    assert report["difference"] == command["difference"] and report["gold"] == command["gold"]
    mixed = side(A_COSINES, MODEL_A)[:2] + side(A_COSINES[2:], MODEL_B)
    with pytest.raises(SembedError, match="two models"):
        api.evaluate_sts(mixed)


# --- several training seeds of each model (issue 42.8) -----------------------------------------------------------

SEED_B = [SWAPPED, np.array([1.0, 0.0, 2.0, 4.0, 3.0]), np.array([0.0, 1.0, 4.0, 3.0, 2.0])]  # r 0.9, 0.8, 0.6


def seed_files(tmp_path, sides: dict[str, list[np.ndarray]]) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    for side, columns in sides.items():
        for number, column in enumerate(columns, 1):
            path = tmp_path / f"{side}{number}.jsonl"
            path.write_text(
                jsonl(
                    *(
                        {"text_a": f"a{i}", "text_b": f"b{i}", "score": float(g), "similarity": float(s)}
                        for i, (g, s) in enumerate(zip(GOLD, column))
                    )
                )
            )
            files.setdefault(side, []).append(str(path))
    return files


def test_seeds_of_each_model_give_the_mean_difference_with_a_t_interval(tmp_path):
    import scipy.stats

    files = seed_files(tmp_path, {"a": [PERFECT] * 3, "b": SEED_B})
    common = ("--similarity-key", "similarity", "--resamples", "50")
    run = sembed("eval", "sts", *files["a"], "--versus", *files["b"], *common)
    assert run.exit_code == 0, run.stderr
    [report] = run.records
    for number, (a, b) in enumerate(zip(files["a"], files["b"])):  # each seed: the one-seed report of its pair
        alone = sembed("eval", "sts", a, "--versus", b, *common).records[0]
        assert report["seeds"][number] == {"input": a, **alone}
    combined = report["over_seeds"]
    differences = [100 * (1 - scipy.stats.pearsonr(b, GOLD).statistic) for b in SEED_B]
    assert differences == pytest.approx([10.0, 20.0, 40.0])
    mean = sum(differences) / 3
    expected = scipy.stats.t.interval(0.95, 2, loc=mean, scale=np.std(differences, ddof=1) / math.sqrt(3))
    for name in ("pearson", "spearman"):  # ranks already: rho = r
        assert combined[name] == 23.3333
        assert combined[f"{name}_ci"] == pytest.approx(list(expected), abs=1e-4)
        assert combined[f"{name}_ci"] == [-14.6125, 61.2792]
        assert combined[f"{name}_by_seed"] == [10.0, 20.0, 40.0]
    assert combined["seeds"] == 3 and combined["of"] == "a - b"
    assert combined["interval"] == statistics.T_INTERVAL
    assert report["task"] == "sts" and report["gold"] == "score"
    repeated = sembed(  # the same with --versus given once per seed
        "eval", "sts", *files["a"], *(arg for b in files["b"] for arg in ("--versus", b)), *common
    )
    assert repeated.records == run.records
    table = run.stderr.splitlines()
    assert any(line.startswith("│ mean ") and "+23.33" in line and "[-14.61, 61.28]" in line for line in table)


def test_seeds_need_one_versus_file_each_and_the_same_pairs(tmp_path):
    files = seed_files(tmp_path, {"a": [PERFECT] * 2, "b": SEED_B[:2]})
    fewer = sembed("eval", "sts", *files["a"], "--versus", files["b"][0], "--similarity-key", "similarity")
    assert fewer.exit_code == 2
    assert "Invalid value for '--versus': 2 INPUT(s) and 1 --versus FILE(s): give one of each per seed, paired by " in (
        fewer.stderr
    )
    alone = sembed("eval", "sts", *files["a"], "--similarity-key", "similarity")
    assert alone.exit_code == 2
    assert "2 INPUTs are seeds of one model: compare them with --versus (one FILE each) or --versus-key" in alone.stderr
    other = tmp_path / "other.jsonl"
    other.write_text(Path(files["a"][1]).read_text().replace('"a3"', '"a33"'))
    changed = tmp_path / "changed-b.jsonl"
    changed.write_text(Path(files["b"][1]).read_text().replace('"a3"', '"a33"'))
    run = sembed("eval", "sts", files["a"][0], str(other), "--versus", files["b"][0], str(changed))
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: seed 2 ({other}) holds other pairs than seed 1 ({files['a'][0]}): the seeds must be of the same "
        "pairs in the same order\n"
    )
    assert run.stdout == ""


def test_t_interval_is_students_over_k_minus_1_degrees_of_freedom():
    import scipy.stats

    values = [1.5, 2.0, 4.5, 3.0]
    low, high = statistics.t_interval(values)
    expected = scipy.stats.t.interval(0.95, 3, loc=np.mean(values), scale=np.std(values, ddof=1) / 2)
    assert (low, high) == pytest.approx(expected, abs=1e-12)
    assert statistics.t_interval([1.0]) is None and statistics.t_interval([]) is None


def test_the_python_api_combines_seeds_as_the_command_does(tmp_path):
    from sembed_cli import api

    b_seeds = [B_COSINES, B_COSINES[1:] + B_COSINES[:1], B_COSINES[::-1]]
    a_files, b_files = [], []
    for number, cosines in enumerate(b_seeds):
        a_files.append(tmp_path / f"a{number}.jsonl")
        a_files[-1].write_text(jsonl(*side(A_COSINES, MODEL_A)))
        b_files.append(tmp_path / f"b{number}.jsonl")
        b_files[-1].write_text(jsonl(*side(cosines, MODEL_B)))
    args = ("eval", "sts", *map(str, a_files), "--versus", *map(str, b_files), "--resamples", "50")
    run = sembed(*args)
    assert run.exit_code == 0, run.stderr
    [command] = run.records
    in_memory = [side(cosines, MODEL_B) for cosines in b_seeds]  # one seed's records, a list of dicts each
    report = api.evaluate_sts(a_files, versus=in_memory, resamples=50)
    assert report["over_seeds"] == command["over_seeds"]
    assert [seed["difference"] for seed in report["seeds"]] == [seed["difference"] for seed in command["seeds"]]
