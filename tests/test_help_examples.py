"""Every example pipeline in every --help runs (issue 14, item 8), so the help, the man pages and the README's
command reference (all made from --help) never show a pipeline that fails.

The quick test checks that each command has examples and that every option they use exists. The end-to-end test
runs each of them (one test per pipeline, in the order of the help, producers first) with `bash -o pipefail` in one
folder holding small versions of the files they name (heads of ../shared/data) and the artifacts they read but no
example writes (a salience table, a POI model, a default masked-LM). Where an example as written would run for
minutes, SHORTER swaps in a smaller setting; each swap is listed, and keeps the pipeline's commands and options.
A pipeline that reads what an earlier one writes runs that one first when it has not run (`-k` picks one alone).

The `sembed` on the pipelines' PATH is preloaded_sembed.py's client: each stage is still its own process on the
pipeline's pipes, with its own exit status, but forked from a server that imported torch, transformers, spaCy and
FAISS once: their imports were most of the 5 minutes that the 44 pipelines' ~110 processes took (now 1.3).
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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
    ("dedup",),
    ("cluster",),
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


def shell_words(pipeline: str) -> list[str]:
    """The words of a pipeline as the shell splits them, `|`, `>` and `;` words of their own."""
    lexer = shlex.shlex(pipeline, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def written_paths(pipeline: str) -> list[str]:
    """The files and folders a pipeline writes: after -o or >."""
    return [after for before, after in itertools.pairwise(shell_words(pipeline)) if before in ("-o", ">")]


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


PIPELINES = [(command, pipeline) for command in COMMANDS for pipeline in examples(command)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Iterator[tuple[Path, dict]]:
    """A folder with the files the examples name, and an environment whose `sembed` is this checkout's (forked
    from a preloaded server: see preloaded_sembed.py), with no SEMBED_* settings, one thread and no model hub."""
    from conftest import DATA

    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA} (set SEMBED_DATA)")
    work = tmp_path_factory.mktemp("examples")
    sockets = Path(tempfile.mkdtemp(prefix="sembed-"))  # short: a socket's path holds at most 107 bytes
    shim = work / "bin"
    shim.mkdir()
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
    server = start_server(sockets / "server", shim / "sembed", work, env)
    try:
        write_inputs(work)  # while the server imports
        wait_for(server, sockets / "server", work)
        for setup in [
            "sembed convert --from gazetteer | awk 'NR % 2000 == 1' > gazetteer.jsonl",
            "sembed convert --from prose --doc-break blank corpora/abc "
            "| sembed train --method nws --epochs 1 -o nws-glove -q",
            "cat gazetteer.jsonl | sembed train --method mlm --from-scratch --max-steps 2 -o poi-model -q",
        ]:
            done = run(setup, work, env)
            assert done.returncode == 0, f"{setup}: {done.stderr[-2000:]}"
        yield work, env
    finally:
        os.killpg(server.pid, signal.SIGKILL)  # the server and any sembed of its still running (a timeout)
        server.wait()
        shutil.rmtree(sockets, ignore_errors=True)


def start_server(socket: Path, shim: Path, work: Path, env: dict) -> subprocess.Popen:
    """Start preloaded_sembed.py's server on `socket`, and write the `sembed` shim that is its client."""
    script = Path(__file__).with_name("preloaded_sembed.py")
    quoted = " ".join(shlex.quote(str(word)) for word in (sys.executable, "-I", script, socket))
    shim.write_text(f'#!/bin/sh\nexec {quoted} "$@"\n')
    shim.chmod(0o755)
    with open(work / "server.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, str(script), "serve", str(socket)],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )


def wait_for(server: subprocess.Popen, socket: Path, work: Path) -> None:
    deadline = time.monotonic() + 600
    while not socket.exists():
        assert server.poll() is None, f"the sembed server ended: {(work / 'server.log').read_text()[-2000:]}"
        assert time.monotonic() < deadline, "the sembed server did not start in 600 s"
        time.sleep(0.1)


def write_inputs(work: Path) -> None:
    """Heads of the shared data, small files the examples name, and gensets' default masked-LM."""
    from conftest import DATA

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
    for seed in (1, 2, 3):  # eval sts's seeds example: each model trained with three seeds, the same pairs embedded
        for model, tilt in (("cf", 0.1), ("sbert", 0.3)):
            records = [
                {
                    "text_a": f"a{n}",
                    "text_b": f"b{n}",
                    "score": float(n),
                    "embedding_a": [1.0, 0.0],
                    "embedding_b": [n / 5, 1 - n / 5 + tilt * ((n * seed) % 3)],
                    "embedding_model": f"{model}-seed{seed}@{seed:012d}",
                }
                for n in range(6)
            ]
            (work / f"{model}.{seed}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
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
    _tiny_masked_lm(work / "share" / "sembed" / "minilm-mlm")  # gensets' default --mlm


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


def as_run(pipeline: str) -> str:
    """The pipeline as run here: SHORTER's swaps made."""
    for written, shorter in SHORTER.items():
        pipeline = pipeline.replace(written, shorter)
    return pipeline


def producers(number: int) -> list[int]:
    """The earlier pipelines whose outputs pipeline `number` reads (the last to write each path it names but does
    not write itself)."""
    shell = as_run(PIPELINES[number][1])
    words = set(shell_words(shell)) - set(written_paths(shell))
    last: dict[str, int] = {}
    for earlier in range(number):
        for path in written_paths(as_run(PIPELINES[earlier][1])):
            last[path] = earlier
    return sorted({earlier for path, earlier in last.items() if path in words})


@pytest.fixture(scope="module")
def examples_run(workdir) -> dict[int, str | None]:
    """Pipeline number -> None when it ran and exited 0, else why not (shared by the tests of this module)."""
    return {}


def run_example(number: int, workdir: tuple[Path, dict], done: dict[int, str | None]) -> str | None:
    """Run pipeline `number` (after the pipelines it reads from, when they have not run) once; why it failed."""
    if number in done:
        return done[number]
    for earlier in producers(number):
        if (why := run_example(earlier, workdir, done)) is not None:
            done[number] = f"needs the output of `{PIPELINES[earlier][1]}`, which failed: {why}"
            return done[number]
    work, env = workdir
    shell = as_run(PIPELINES[number][1])
    for written in written_paths(shell):  # an example shown twice must not meet its own output
        shutil.rmtree(work / written, ignore_errors=True)
        (work / written).unlink(missing_ok=True)
    ended = run(shell, work, env)
    done[number] = None if ended.returncode == 0 else f"exit {ended.returncode}: {ended.stderr.strip()[-2000:]}"
    return done[number]


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.subprocess
@pytest.mark.parametrize("number", range(len(PIPELINES)), ids=[f"{' '.join(c)}: {p}" for c, p in PIPELINES])
def test_help_example_runs(number, workdir, examples_run):
    command, pipeline = PIPELINES[number]
    why = run_example(number, workdir, examples_run)
    assert why is None, f"sembed {' '.join(command)}: {pipeline}\n  {why}"
