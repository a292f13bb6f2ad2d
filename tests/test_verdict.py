"""The multi-seed reports of examples/cf_bert_report.py and ta_sbert_report.py (examples/verdict.py) on synthetic
per-seed results: means, 95% t intervals over seeds, paired differences and verdicts, exactly."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import cf_bert_report
import ta_sbert_report
import verdict

T_975 = {4: 2.7764451051977987, 1: 12.706204736174698, 2: 4.302652729749464, 3: 3.182446305284263}  # t(0.975, df)


def half_width(xs: list[float]) -> float:
    return T_975[len(xs) - 1] * statistics.stdev(xs) / math.sqrt(len(xs))


def test_t_interval_over_seeds():
    xs = [0.5, 0.7, 0.6, 0.4, 0.8]  # mean 0.6, sd sqrt(0.1 / 4)
    low, high = verdict.t_interval(xs)
    h = 2.7764451051977987 * math.sqrt(0.025) / math.sqrt(5)
    assert (low, high) == pytest.approx((0.6 - h, 0.6 + h), abs=1e-12)
    assert (round(low, 4), round(high, 4)) == (0.4037, 0.7963)
    assert verdict.t_interval([1.0]) is None and verdict.t_interval([]) is None
    assert verdict.paired([2.0, None, 5.0, 1.0], [1.0, 3.0, None, 1.5]) == [1.0, -0.5]  # seeds where both ran


@pytest.mark.parametrize(
    "paper, interval, word",
    [
        (0.5, (0.1, 0.9), "reproduces"),
        (0.5, (-0.9, -0.1), "does not reproduce"),
        (0.5, (-0.1, 0.9), "inconclusive at this power"),
        (0.5, (0.0, 0.9), "inconclusive at this power"),  # touching 0 is containing it
        (-0.14, (-0.9, -0.1), "reproduces"),  # the paper's difference below 0: ours must be below 0 too
        (-0.14, (0.1, 0.9), "does not reproduce"),
        (0.5, None, "inconclusive at this power"),  # one seed: no interval
        (0.5, (0.1, 0.4), "reproduces, smaller than the paper's"),  # wholly short of the paper's +0.5
        (0.5, (-0.2, 0.14), "inconclusive at this power, smaller than the paper's"),
        (-0.14, (-0.1, -0.05), "reproduces, smaller than the paper's"),
        (0.5, (-0.2, 0.5), "inconclusive at this power"),  # reaching the paper's difference is not short of it
    ],
)
def test_verdict_rule(paper, interval, word):
    assert verdict.verdict(paper, interval) == word


def test_paper_differences_are_the_papers_tables():
    assert cf_bert_report.PAPER_DIFFERENCE["cf"] == pytest.approx(
        {"SICK-R r": 0.58, "SICK-R ρ": 0.51, "STS-B r": 0.54, "STS-B ρ": 0.53, "SICK-E acc": 0.5}
    )
    assert ta_sbert_report.PAPER_DIFFERENCE["form_att_recon"] == pytest.approx(
        {"STS-B r": 2.10, "STS-B ρ": 2.03, "SICK-R r": 1.56, "SICK-R ρ": 1.08, "MR": 0.11, "CR": -0.08, "SUBJ": 0.75}
    )
    assert ta_sbert_report.PAPER_DIFFERENCE["form"]["SICK-R r"] == pytest.approx(-0.14)


SBERT = [80.0, 81.0, 82.0, 83.0, 84.0]
CF_RESULTS = {
    "starts": {
        "minilm": {
            "seeds": [1, 2, 3, 4, 5],
            "zero_shot": {"SICK-R r": 83.63, "SICK-R ρ": None, "STS-B r": 82.74, "STS-B ρ": 82.03, "SICK-E acc": 82.93},
            "rows": {
                "sbert": {
                    "SICK-R r": SBERT,
                    "SICK-R ρ": SBERT,
                    "STS-B r": SBERT,
                    "STS-B ρ": SBERT,
                    "SICK-E acc": SBERT,
                },
                "cf": {
                    "SICK-R r": [s + d for s, d in zip(SBERT, [0.5, 0.7, 0.6, 0.4, 0.8])],
                    "SICK-R ρ": [s + d for s, d in zip(SBERT, [1.0, -1.0, 0.5, -0.5, 0.0])],
                    "STS-B r": [s + d for s, d in zip(SBERT, [-1.0, -1.2, -0.8, -1.1, -0.9])],
                    "STS-B ρ": [s + d for s, d in zip(SBERT, [0.2, 0.4, 0.3, 0.1, 0.5])],
                    "SICK-E acc": [81.0, 82.0, 83.0, 84.0, None],
                },
            },  # seed 5 not run yet
            "time": {"wall_seconds": 7200, "cpu_seconds": 12960},
            "machine": "2 CPU cores",
        },
        "mlm": {
            "seeds": [1],
            "zero_shot": {"SICK-R r": 55.0, "SICK-R ρ": 50.0, "STS-B r": 40.0, "STS-B ρ": 41.0, "SICK-E acc": 70.0},
            "rows": {
                "sbert": {m: [70.0] for m in cf_bert_report.LABELS},
                "cf": {m: [71.25] for m in cf_bert_report.LABELS},
            },
            "time": {"wall_seconds": 1800, "cpu_seconds": 3600},
        },  # 30 min wall, 1.0 h CPU
    }
}


def test_cf_table_means_intervals_and_verdicts(tmp_path):
    path = tmp_path / "cf_bert.json"
    path.write_text(json.dumps(CF_RESULTS))
    text = cf_bert_report.table(json.loads(path.read_text()))
    lines = text.splitlines()
    h = half_width(SBERT)  # 1.963...: every SBERT column is 80..84
    assert "| paper: SBERT-base | 87.81 | 83.26 | 87.04 | 85.76 | 85.80 |" in lines
    assert "| ours: all-MiniLM-L6-v2, zero-shot | 83.63 | - | 82.74 | 82.03 | 82.93 |" in lines
    assert (
        f"| **ours: all-MiniLM-L6-v2 + SBERT fine-tuning (W_cf = 0)** | 82.00 ± {h:.2f} | 82.00 ± {h:.2f} | "
        f"82.00 ± {h:.2f} | 82.00 ± {h:.2f} | 82.00 ± {h:.2f} |"
    ) in lines
    sick_e = half_width([81.0, 82.0, 83.0, 84.0])
    assert (
        f"| 82.50 ± {sick_e:.2f} |"
        in lines[lines.index("| paper: CF-BERT-large (W_cf = 0.2) | 89.29 | 84.35 | 87.83 | 86.82 | 87.50 |") + 3]
    )
    # paired differences: SICK-R r +0.6 [0.4037, 0.7963]; SICK-R rho 0 +- 2.78 * 0.79 / sqrt 5; STS-B r -1.0;
    # STS-B rho +0.3, same spread as SICK-R r; SICK-E: seeds 1-4 only, CF - SBERT = +1 each: sd 0, [1, 1]
    spread = 2.7764451051977987 * math.sqrt(0.025) / math.sqrt(5)
    wide = 2.7764451051977987 * statistics.stdev([1.0, -1.0, 0.5, -0.5, 0.0]) / math.sqrt(5)
    assert (
        "| **ours (all-MiniLM-L6-v2): CF − SBERT** | "
        f"+0.60 [{0.6 - spread:+.2f}, {0.6 + spread:+.2f}] reproduces | "
        f"+0.00 [{-wide:+.2f}, {wide:+.2f}] inconclusive at this power | "
        f"-1.00 [{-1.0 - spread:+.2f}, {-1.0 + spread:+.2f}] does not reproduce | "
        f"+0.30 [{0.3 - spread:+.2f}, {0.3 + spread:+.2f}] reproduces, smaller than the paper's | "
        "+1.00 [+1.00, +1.00] reproduces |"
    ) in lines
    assert "| paper: CF − SBERT | +0.58 | +0.51 | +0.54 | +0.53 | +0.50 |" in lines
    assert (
        "- all-MiniLM-L6-v2, CF − SBERT: SICK-R r reproduces; SICK-R ρ inconclusive at this power; STS-B r does "
        "not reproduce; STS-B ρ reproduces, smaller than the paper's; SICK-E acc reproduces."
    ) in lines
    # one seed: the figure without an interval, and no verdict but inconclusive
    assert (
        "| **ours: masked-LM MiniLM + CF fine-tuning (W_cf = 0.2)** | 71.25 | 71.25 | 71.25 | 71.25 | 71.25 |" in lines
    )
    assert (
        "| **ours (masked-LM MiniLM): CF − SBERT** | +1.25 inconclusive at this power | +1.25 inconclusive at "
        "this power | +1.25 inconclusive at this power | +1.25 inconclusive at this power | +1.25 inconclusive at "
        "this power |"
    ) in lines
    assert (
        "- all-MiniLM-L6-v2: seeds 1, 2, 3, 4, 5; 3.6 h of CPU time (2.0 h wall) over all sittings; 2 CPU cores."
    ) in lines
    assert "- masked-LM MiniLM: seeds 1; 1.0 h of CPU time (30 min wall) over all sittings." in lines
    assert verdict.INTERVAL in text and verdict.RULE in text


def test_collect_and_merge_build_the_results_file_start_by_start(tmp_path):
    work = tmp_path / "work"
    (work / "metrics").mkdir(parents=True)
    figures = {
        "sbert.1.sick.sts": {"pearson": 80.0, "spearman": 75.0},
        "sbert.2.sick.sts": {"pearson": 81.0, "spearman": 76.0},
        "cf.1.sick.sts": {"pearson": 80.5, "spearman": 75.5},
        "sbert.1.stsb.sts": {"pearson": 82.0, "spearman": 81.0},
        "sbert.1.sick.sick-e": {"accuracy": 84.0},
        "zeroshot.none.stsb.sts": {"pearson": 82.74, "spearman": 82.03},
    }
    for name, metrics in figures.items():
        (work / "metrics" / f"{name}.json").write_text(json.dumps(metrics))
    (work / "cpu.tsv").write_text(
        "prepare\t10\t12.5\ntrain stsb sbert seed 1\t100\t190\ntrain stsb sbert seed 1\t50\t95.5\n"
    )
    entry = verdict.collect(work, ["sbert", "cf"], cf_bert_report.MEASURES, ["1", "2"])
    assert entry["seeds"] == [1, 2]
    assert entry["rows"]["sbert"]["SICK-R r"] == [80.0, 81.0] and entry["rows"]["cf"]["SICK-R r"] == [80.5, None]
    assert entry["rows"]["sbert"]["SICK-E acc"] == [84.0, None] and entry["rows"]["cf"]["STS-B r"] == [None, None]
    assert entry["zero_shot"] == {
        "SICK-R r": None,
        "SICK-R ρ": None,
        "STS-B r": 82.74,
        "STS-B ρ": 82.03,
        "SICK-E acc": None,
    }
    assert verdict.stage_seconds(work) == {
        "wall_seconds": 160,
        "cpu_seconds": 298,
        "stages": {
            "prepare": {"wall_seconds": 10, "cpu_seconds": 12},
            "train stsb sbert seed 1": {"wall_seconds": 150, "cpu_seconds": 286},
        },
    }

    results = tmp_path / "results" / "cf_bert.json"
    results.parent.mkdir()
    results.write_text(json.dumps({"ours": {"old": "single-seed form"}}))  # replaced, not mixed in
    verdict.merge(results, "mlm", {"seeds": [1]}, {"rule": verdict.RULE})
    merged = verdict.merge(results, "minilm", entry, {"rule": verdict.RULE})
    assert list(merged) == ["starts", "rule"] and list(merged["starts"]) == ["mlm", "minilm"]
    assert json.loads(results.read_text()) == merged
    again = verdict.merge(results, "mlm", {"seeds": [1, 2]}, {"rule": verdict.RULE})
    assert again["starts"]["mlm"] == {"seeds": [1, 2]} and again["starts"]["minilm"] == entry


def test_ta_table_pairs_every_row_with_mean_pooling_and_drops_measures_not_run():
    mean = [79.0, 80.0, 81.0]
    rows = {row: {label: [None] * 3 for label in ta_sbert_report.LABELS} for row, _, _ in ta_sbert_report.ROWS}
    for row, shift in (
        ("mean", 0.0),
        ("form", -0.5),
        ("att", 0.2),
        ("form_att", 0.0),
        ("att_recon", -7.0),
        ("form_att_recon", -6.0),
    ):
        for label in ("STS-B r", "STS-B ρ", "SICK-R r", "SICK-R ρ"):
            rows[row][label] = [x + shift + (0.1 * i if row != "mean" else 0) for i, x in enumerate(mean)]
    results = {
        "starts": {
            "minilm": {
                "seeds": [1, 2, 3],
                "zero_shot": dict.fromkeys(ta_sbert_report.LABELS),
                "rows": rows,
                "time": {"wall_seconds": 3600, "cpu_seconds": 7000},
            }
        }
    }
    lines = ta_sbert_report.table(results).splitlines()
    assert "| model | STS-B r | STS-B ρ | SICK-R r | SICK-R ρ |" in lines  # no MR / CR / SUBJ: TRANSFER=0
    h = half_width([0.0, 0.1, 0.2])
    form = f"{-0.4:+.2f} [{-0.4 - h:+.2f}, {-0.4 + h:+.2f}]"
    # the paper's + form: STS-B r +0.01, rho +0.19, SICK-R r -0.14, rho -0.22: ours below 0 everywhere
    assert (
        f"| **ours (all-MiniLM-L6-v2): + form − mean pooling** | {form} does not reproduce | {form} does not "
        f"reproduce | {form} reproduces | {form} reproduces |"
    ) in lines
    recon = f"{-6.9:+.2f} [{-6.9 - h:+.2f}, {-6.9 + h:+.2f}]"
    assert (
        f"| **ours (all-MiniLM-L6-v2): + att + recon − mean pooling** | {recon} does not reproduce | {recon} "
        f"does not reproduce | {recon} does not reproduce | {recon} does not reproduce |"
    ) in lines
    assert "| paper: + att + recon − mean pooling | +2.09 | +1.91 | +1.58 | +1.04 |" in lines
    assert (
        f"| **ours: all-MiniLM-L6-v2 SBERT-NLI (mean pooling)** | 80.00 ± {half_width(mean):.2f} |"
        in lines[lines.index("| ours: all-MiniLM-L6-v2, zero-shot | - | - | - | - |") + 1]
    )


# --- the masked-LM start: what START=mlm hands to train and embed --------------------------------------------

WORDS = "the a dog cat man woman runs eats sleeps plays in on park house food ball quickly slowly".split()


def test_a_masked_lm_directory_is_a_start_for_sbert_cf_and_ta(tiny_model, tmp_path, one_torch_thread):
    """`train --method mlm` writes the encoder with mean pooling beside its masked-LM head, so the verdict scripts pass
    its directory to `train --model` (sbert, cf, ta) and `embed -m` as it is."""
    from conftest import jsonl, sembed

    sentences = [f"the {WORDS[2 + i % 4]} {WORDS[9 + i % 4]} in the {WORDS[13 + i % 3]}" for i in range(12)]
    mlm = tmp_path / "mlm"
    run = sembed(
        "train",
        "--method",
        "mlm",
        "--model",
        tiny_model,
        "--max-steps",
        "1",
        "--batch-size",
        "4",
        "--device",
        "cpu",
        "-q",
        "-o",
        str(mlm),
        input=jsonl(*({"text": t} for t in sentences)),
    )
    assert run.exit_code == 0, run.stderr
    modules = json.loads((mlm / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == ["Transformer", "Pooling", "Normalize"]
    assert json.loads((mlm / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"] is True
    pairs = [
        {
            "text_a": a,
            "text_b": b,
            "score": float(i % 5),
            "s_cf_a": a.split()[1],
            "s_cf_b": b.split()[1],
            "label": ("entailment", "neutral", "contradiction")[i % 3],
        }
        for i, (a, b) in enumerate(zip(sentences, sentences[1:] + sentences[:1]))
    ]
    for method, extra in (("sbert", ()), ("cf", ()), ("ta", ("--pooling", "ta"))):
        out = tmp_path / method
        run = sembed(
            "train",
            "--method",
            method,
            "--model",
            str(mlm),
            *extra,
            "--max-steps",
            "1",
            "--epochs",
            "1",
            "--device",
            "cpu",
            "-q",
            "-o",
            str(out),
            input=jsonl(*pairs),
        )
        assert run.exit_code == 0, (method, run.stderr)
        assert json.loads((out / "sembed.json").read_text())["base_model"] == str(mlm)
    run = sembed("embed", "-q", "-m", str(mlm), "--device", "cpu", input=jsonl(*pairs[:2]))
    assert run.exit_code == 0, run.stderr
    assert len(run.records[0]["embedding_a"]) == 32


def test_build_start_gives_build_mlm_its_own_work_directory(tmp_path):
    """A user's exported WORK is the reproduction's: build_mlm.sh, which removes its work directory at its end, must
    not get it (it once removed runs/cf_bert/mlm that way)."""
    stub = tmp_path / "examples" / "build_mlm.sh"
    stub.parent.mkdir()
    stub.write_text('echo "WORK=${WORK:-unset} STEPS=$STEPS OUT=$1" > seen.txt\n')
    stages = Path(__file__).parent.parent / "examples" / "stages.sh"
    script = (
        f'source "{stages}"; export WORK="$PWD/reproduction"; mkdir -p "$WORK"; MLM="$PWD/mlm"; MLM_STEPS=7; '
        "build_start minilm; build_start mlm"
    )
    subprocess.run(["bash", "-c", script], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "seen.txt").read_text() == f"WORK=unset STEPS=7 OUT={tmp_path / 'mlm'}\n"
    assert (tmp_path / "reproduction" / "times.tsv").read_text().startswith("build the masked-LM (7 steps)\t")
