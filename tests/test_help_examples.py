"""Every example pipeline in every --help runs (issue 14, item 8), so the help, the man pages and the README's
command reference (all made from --help) never show a pipeline that fails.

The quick test checks that each command has examples and that every option they use exists. The end-to-end test
runs them all, in order, with `bash -o pipefail` in a folder holding small versions of the files they name (heads
of ../shared/data) and the artifacts they read but no example writes (a salience table, a POI model, a default
masked-LM). Where an example as written would run for minutes, SHORTER swaps in a smaller setting; each swap is
listed, and keeps the pipeline's commands and options.
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, sembed

COMMANDS = [
    ("convert",),
    ("parse",),
    ("spo",),
    ("normalize",),
    ("gensets",),
    ("train",),
    ("embed",),
    ("taste",),
    ("index",),
    ("index-merge",),
    ("search",),
    ("eval", "sts"),
    ("eval", "entailment"),
    ("eval", "classify"),
    ("eval", "poi"),
    ("eval", "structure"),
    ("eval", "salience"),
]
# (producers first: gensets' sets before embed --syntax-map)

SHORTER = {  # as written -> as run here
    "--max-steps 2000": "--max-steps 2",
    "--epochs 4": "--epochs 1",
    "sembed convert --from gazetteer": "cat gazetteer.jsonl",  # 440,000 names: a sample of them, converted once
}


def examples(command: tuple[str, ...]) -> list[str]:
    """The pipelines of a command's Example block, continuation lines joined."""
    lines = sembed(*command, "--help").stdout.splitlines()
    start = next(n for n, line in enumerate(lines) if line.strip() in ("Example:", "Examples:"))
    pipelines: list[str] = []
    joining = False
    for line in lines[start + 1 :]:
        text = line.strip()
        if not text:
            break
        if joining or text.startswith("|"):
            pipelines[-1] += " " + text
        else:
            pipelines.append(text)
        joining = pipelines[-1].endswith("\\")
        if joining:
            pipelines[-1] = pipelines[-1][:-1].rstrip()
    return pipelines


def written_paths(pipeline: str) -> list[str]:
    """The files and folders a pipeline writes: after -o or >."""
    words = shlex.split(pipeline)
    return [after for before, after in itertools.pairwise(words) if before in ("-o", ">")]


def sembed_calls(pipeline: str) -> list[list[str]]:
    """The arguments of each `sembed ...` stage of a pipeline."""
    stages = [shlex.split(stage) for stage in pipeline.replace(">", "|").split("|")]
    return [words[1:] for words in stages if words and words[0] == "sembed"]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_examples_whose_options_exist(command):
    found = examples(command)
    assert found, f"sembed {' '.join(command)} --help has no example"
    for pipeline in found:
        assert pipeline.split()[0] in ("sembed", "echo"), pipeline
        for call in sembed_calls(pipeline):
            run = sembed(*call, "--help")  # options are parsed before --help acts: an unknown one exits 2
            assert run.exit_code == 0, f"{pipeline}: sembed {shlex.join(call)}: {run.stderr}"


DATA_HEADS = {  # shared data file -> lines kept (the first ones)
    "stsb/sts-test.csv": 40,
    "stsb/sts-train.csv": 16,
    "sick/SICK_train.txt": 17,
    "sick/SICK_test_annotated.txt": 81,
    "senteval/sentence_polarity/rt-polarity.pos": 60,
    "senteval/sentence_polarity/rt-polarity.neg": 60,
    "treebank/dependency_treebank/wsj_0001.dp": 10**6,
    "treebank/dependency_treebank/wsj_0002.dp": 10**6,
    "corpora/abc/rural.txt": 60,
    "corpora/abc/science.txt": 60,
    "corpora/state_union/1945-Truman.txt": 30,
    "corpora/state_union/1946-Truman.txt": 30,
}
AT_TOP = {"stsb/sts-test.csv", "stsb/sts-train.csv", "sick/SICK_train.txt", "sick/SICK_test_annotated.txt"}


def run(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> tuple[Path, dict]:
    """A folder with the files the examples name, and an environment whose `sembed` is this checkout's."""
    from conftest import DATA

    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA} (set SEMBED_DATA)")
    work = tmp_path_factory.mktemp("examples")
    for name, count in DATA_HEADS.items():
        target = work / (Path(name).name if name in AT_TOP else name)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(DATA / name, "rb") as f:
            target.write_bytes(b"".join(line for _, line in zip(range(count), f)))
    (work / "corpus.txt").write_text(
        "The old man walked to the market. He bought fresh bread and milk.\n"
        "A young girl played in the park. Her dog chased a red ball.\n"
    )
    pairs = [
        ("A man is playing a guitar.", "A man plays the guitar.", "4.8"),
        ("A dog runs in the park.", "A cat sleeps on the sofa.", "0.6"),
        ("Stocks fell sharply today.", "Markets dropped on Monday.", ""),  # SemEval's unscored pair
        ("The child reads a book.", "A kid is reading.", "3.9"),
    ]
    (work / "STS.input.answers-forums.txt").write_text("".join(f"{a}\t{b}\n" for a, b, _ in pairs))
    (work / "STS.gs.answers-forums.txt").write_text("".join(f"{score}\n" for _, _, score in pairs))
    (work / "more.txt").write_text("The market opened early on Sunday.\n")  # a corpus grown overnight
    (work / "names.jsonl").write_text('{"text": "Springfield"}\n{"text": "Lake Geneva"}\n{"text": "Mount Fuji"}\n')
    (work / "concreteness.tsv").write_text(
        "Word\tConc.M\n"
        + "".join(
            f"{word}\t{rating}\n"
            for word, rating in [
                ("the", 1.4),
                ("rural", 2.5),
                ("farmers", 4.6),
                ("water", 5.0),
                ("government", 2.4),
                ("said", 1.7),
                ("drought", 3.9),
                ("new", 1.5),
                ("research", 2.0),
                ("scientists", 4.4),
            ]
        )
    )
    shim = work / "bin"
    shim.mkdir()
    (shim / "sembed").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m sembed_cli "$@"\n')
    (shim / "sembed").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(work / "share"),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env = {key: value for key, value in env.items() if not key.startswith("SEMBED_") or key == "SEMBED_DATA"}
    _tiny_masked_lm(work / "share" / "sembed" / "minilm-mlm")  # gensets' default --mlm
    for setup in [
        "sembed convert --from gazetteer | awk 'NR % 2000 == 1' > gazetteer.jsonl",
        "sembed convert --from prose --doc-break blank corpora/abc "
        "| sembed train --method nws --epochs 1 -o nws-glove -q",
        "cat gazetteer.jsonl | sembed train --method mlm --from-scratch --max-steps 2 -o poi-model -q",
    ]:
        done = run(setup, work, env)
        assert done.returncode == 0, f"{setup}: {done.stderr[-2000:]}"
    return work, env


def _tiny_masked_lm(path: Path) -> None:
    """A 2-layer BERT masked-LM with MiniLM's vocabulary: quick, and complete (its head is saved too)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    from sembed_cli.models import sentence_models

    tokenizer = BertTokenizerFast(str(sentence_models.resolve_path(sentence_models.DEFAULT_MODEL) / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertForMaskedLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


@pytest.mark.e2e
def test_every_help_example_runs(workdir):
    work, env = workdir
    failures = []
    for command in COMMANDS:
        for pipeline in examples(command):
            shell = pipeline
            for written, shorter in SHORTER.items():
                shell = shell.replace(written, shorter)
            for written in written_paths(shell):  # an example shown twice must not meet its own output
                shutil.rmtree(work / written, ignore_errors=True)
                (work / written).unlink(missing_ok=True)
            done = run(shell, work, env)
            if done.returncode != 0:
                failures.append(
                    f"sembed {' '.join(command)}: {pipeline}\n  exit {done.returncode}: "
                    f"{done.stderr.strip().splitlines()[-1:] or ''}"
                )
    assert not failures, "\n".join(failures)
