"""`sembed eval`'s exact output: the report on stdout, the warnings and tables on stderr, the files (byte for byte,
but for the last digits of numbers in JSONL, compared to 12 places: see `settled`).

The expected bytes in eval_output.json were captured from the commands before they were split into one module
per subcommand (commit b0cdf2c), by `python tests/test_eval_output.py` with that tree on PYTHONPATH; rich draws
the tables 100 columns wide here.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import jsonl, sembed
from test_structure import WORDS

from sembed_cli import console

GOLDEN = Path(__file__).with_name("eval_output.json")
WIDTH = 100


def pairs() -> list[dict]:
    """Eight scored pairs of 2-d vectors in two genres, one unscored, one model."""
    rng = np.random.default_rng(0)
    records = []
    for i in range(9):
        records.append(
            {
                "text_a": f"a{i}",
                "text_b": f"b{i}",
                "genre": ("news", "forum")[i % 2],
                "score": None if i == 4 else round(float(rng.uniform(0, 5)), 2),
                "embedding_a": rng.normal(size=2).round(3).tolist(),
                "embedding_b": rng.normal(size=2).round(3).tolist(),
                "embedding_model": "tiny@1",
            }
        )
    return records


def other_model(records: list[dict]) -> list[dict]:
    rng = np.random.default_rng(1)
    return [{**r, "embedding_a": rng.normal(size=2).round(3).tolist(), "embedding_model": "other@2"} for r in records]


def parts() -> list[dict]:
    rng = np.random.default_rng(2)
    keys = ("embedding_basic_a", "embedding_cf_a", "embedding_basic_b", "embedding_cf_b")
    return [
        {
            "genre": ("news", "forum")[i % 2],
            "score": float(i % 5),
            **{key: rng.normal(size=3).round(3).tolist() for key in keys},
        }
        for i in range(10)
    ]


def labelled(n: int = 24) -> list[dict]:
    rng = np.random.default_rng(3)
    return [
        {
            "text_a": f"s{i}",
            "embedding": [float(i % 3), *rng.normal(size=3).round(3).tolist()],
            "embedding_a": rng.normal(size=3).round(3).tolist(),
            "embedding_b": rng.normal(size=3).round(3).tolist(),
            "label": ("entailment", "neutral", "contradiction")[i % 3],
        }
        for i in range(n)
    ]


def tasted() -> list[dict]:
    rng = np.random.default_rng(4)
    return [
        {
            "name": f"n{i}",
            "taste_score": round(float(rng.uniform()), 3),
            "is_poi_gold": bool(i % 3 == 0),
            "split": ("dev", "test", "train")[i % 3],
        }
        for i in range(30)
    ]


def salience_table(directory: Path) -> None:
    from sembed_cli.models.salience import SalienceTable

    words = ["dog", "piano", "soup", "the", "of", "bread"]
    table = SalienceTable(
        words,
        np.array([3.0, 2.5, 2.0, 0.5, 0.2, 1.5], dtype=np.float32),
        np.array([5, 4, 3, 9, 9, 1]),
        np.array([6, 4, 3, 20, 18, 1]),
        {"corpus": {"sentences": 10, "tokens": 60}, "vectors": {"lowercase": True}},
    )
    directory.mkdir()
    table.save(directory)


FILES = {
    "pairs.jsonl": lambda: jsonl(*pairs()),
    "other.jsonl": lambda: jsonl(*other_model(pairs())),
    "both.jsonl": lambda: jsonl(
        *(
            {**r, "other_a": o["embedding_a"], "other_b": o["embedding_b"], "other_model": o["embedding_model"]}
            for r, o in zip(pairs(), other_model(pairs()))
        )
    ),
    "parts.jsonl": lambda: jsonl(*parts()),
    "labelled.jsonl": lambda: jsonl(*labelled()),
    "tasted.jsonl": lambda: jsonl(*tasted()),
    "words.jsonl": lambda: jsonl(*WORDS),
    "norms.tsv": lambda: "Word\tConc\ndog\t4.9\nthe\t1.2\nPiano\t4.8\nof\t1.0\nunicorn\t3.0\nsoup\t\nbread\t4.1\n",
}

# name: the arguments after `sembed eval`, the files written after the run to compare too
CASES = {
    "sts": (["sts", "pairs.jsonl"], []),
    "sts-groups-stdin": (["sts", "--group-by", "genre", "-"], []),
    "sts-quiet": (["sts", "pairs.jsonl", "-q"], []),
    "sts-pairs-file": (
        ["sts", "pairs.jsonl", "--pairs", "out.jsonl", "-o", "metrics.json"],
        ["out.jsonl", "metrics.json"],
    ),
    "sts-pairs-stdout": (["sts", "pairs.jsonl", "--pairs", "-", "-o", "metrics.json"], ["metrics.json"]),
    "sts-cf-grid": (["sts", "parts.jsonl", "--cf-grid", "0:1:0.5", "--group-by", "genre"], []),
    "sts-versus": (["sts", "pairs.jsonl", "--versus", "other.jsonl", "--resamples", "40", "--seed", "3"], []),
    "sts-versus-key": (["sts", "both.jsonl", "--versus-key", "other", "--resamples", "40"], []),
    "sts-versus-and-group": (["sts", "pairs.jsonl", "--versus", "other.jsonl", "--group-by", "genre"], []),
    "sts-three-text-keys": (["sts", "pairs.jsonl", "--text-key", "a", "--text-key", "b", "--text-key", "c"], []),
    "sts-no-gold": (["sts", "pairs.jsonl", "--gold-key", "nothing"], []),
    "entailment": (["entailment", "labelled.jsonl", "--folds", "4"], []),
    "entailment-senteval-thin": (["entailment", "labelled.jsonl", "--features", "senteval", "--folds", "10"], []),
    "classify-auto": (["classify", "labelled.jsonl", "--folds", "3", "--c", "auto", "--seed", "2"], []),
    "classify-bad-c": (["classify", "labelled.jsonl", "--c", "0"], []),
    "salience": (
        [
            "salience",
            "norms.tsv",
            "--salience",
            "table",
            "--word-key",
            "Word",
            "--rating-key",
            "Conc",
            "--extremes",
            "2",
            "--min-sentences",
            "2",
            "--skip-errors",
        ],
        [],
    ),
    "poi": (["poi", "tasted.jsonl"], []),
    "poi-tuned": (["poi", "tasted.jsonl", "--tune-split", "dev", "--test-split", "test"], []),
    "poi-no-split": (["poi", "tasted.jsonl", "--test-split", "nothing"], []),
    "structure": (["structure", "words.jsonl", "--min-tag-count", "1", "--clusters", "2,10"], []),
}


@contextmanager
def inside(directory: Path):
    """In `directory` (file names in the output stay short), with the stderr console WIDTH columns wide."""
    here, width = os.getcwd(), console.console._width
    os.chdir(directory)
    console.console._width = WIDTH
    try:
        yield
    finally:
        os.chdir(here)
        console.console._width = width


def run(name: str, directory: Path) -> dict:
    """`sembed eval ...` of case `name` on fresh input files in `directory`: exit status, stdout, stderr, files."""
    args, outputs = CASES[name]
    for file, content in FILES.items():
        (directory / file).write_text(content())
    salience_table(directory / "table")
    with inside(directory):
        result = sembed("eval", *args, input=(directory / "pairs.jsonl").read_text() if "-" in args else None)
    return {
        "exit": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "files": {file: (directory / file).read_text() for file in outputs},
    }


def settled(output: dict) -> dict:
    """`output` with the numbers of stdout and of each JSONL file rounded to 12 places: a per-pair cosine's last
    bits follow numpy's summation order (numpy 2.4.6 moved 7 of 9 by a unit or two in the 16th digit)."""

    def rounded(value):
        if isinstance(value, float):
            return round(value, 12)
        if isinstance(value, dict):
            return {k: rounded(v) for k, v in value.items()}
        return [rounded(v) for v in value] if isinstance(value, list) else value

    def records(text: str) -> list:
        return [rounded(json.loads(line)) for line in text.splitlines()]

    files = {name: records(text) if name.endswith(".jsonl") else text for name, text in output["files"].items()}
    return {**output, "stdout": records(output["stdout"]), "files": files}


@pytest.mark.parametrize("name", CASES)
def test_eval_output_is_unchanged(name, tmp_path):
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))[name]
    assert settled(run(name, tmp_path)) == settled(expected)


if __name__ == "__main__":  # write eval_output.json from the sembed_cli on PYTHONPATH
    import tempfile

    golden = {}
    for case in CASES:
        with tempfile.TemporaryDirectory() as scratch:
            golden[case] = run(case, Path(scratch))
    GOLDEN.write_text(json.dumps(golden, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
