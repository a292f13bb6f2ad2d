"""sembed train --method sbert|cf: the CF-BERT loss, model directories, checkpoints and resume, bad input.

Fast tests train the tiny BERT of conftest (2 layers, hidden size 32, the
packaged MiniLM's vocabulary); the e2e test trains the packaged
all-MiniLM-L6-v2 on a slice of STS-B.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import jsonl, same_weights, sembed

torch = pytest.importorskip("torch")
pytest.importorskip("datasets")
pytest.importorskip("accelerate")

from sentence_transformers import SentenceTransformer  # noqa: E402

from sembed_cli.artifacts import ContentHash  # noqa: E402
from sembed_cli.models import sentence_models  # noqa: E402
from sembed_cli.training import checkpoints, sentence_loop  # noqa: E402
from sembed_cli.training.sbert import ComponentFocusCosineLoss  # noqa: E402

WORDS = "man woman dog cat child runs eats plays guitar piano ball park street kitchen the a is on in".split()

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def pairs(n: int = 40, seed: int = 1, s_cf: bool = True) -> list[dict]:
    """Random word-salad pairs whose score is their word overlap, so there is something to learn."""
    rng = random.Random(seed)
    records = []
    for i in range(n):
        a = [rng.choice(WORDS) for _ in range(6)]
        b = a[: rng.randint(0, 6)] + [rng.choice(WORDS) for _ in range(rng.randint(0, 3))]
        b = b or ["dog"]
        overlap = len(set(a) & set(b)) / len(set(a) | set(b))
        record = {"id": i, "text_a": " ".join(a), "text_b": " ".join(b), "score": round(5 * overlap, 2)}
        if s_cf:  # given, so these tests need no parser
            record["s_cf_a"], record["s_cf_b"] = " ".join(a[:3]), " ".join(b[:3])
        records.append(record)
    return records


def train(*args: str, data: list[dict] | None = None):
    return sembed("train", "-q", *args, input=jsonl(*(pairs() if data is None else data)))


def weights(directory: Path) -> dict:
    return SentenceTransformer(str(directory), device="cpu").state_dict()


def max_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)


# --- the CF-BERT loss -----------------------------------------------------------------------------------------


def test_cf_loss_is_the_mse_of_the_cosine_of_eq1_embeddings(tiny_model):
    """loss = mean (cos(a + W a_cf, b + W b_cf) - label)^2, with every part embedded on its own."""
    import numpy as np

    model = SentenceTransformer(tiny_model, device="cpu").eval()
    weight = 0.3
    rows = [
        ("a man plays the guitar", "man plays guitar", "a woman plays the piano", "woman plays piano", 0.4),
        ("the dog runs in the park", "dog runs", "a cat eats", "cat eats", 0.1),
        ("a child is in the kitchen", "child kitchen", "the child is in a kitchen", "child kitchen", 1.0),
    ]
    columns = list(zip(*rows))
    features = [model.tokenize(list(texts)) for texts in columns[:4]]
    labels = torch.tensor(columns[4])
    with torch.no_grad():
        loss = ComponentFocusCosineLoss(model, weight)(features, labels).item()

    a, a_cf, b, b_cf = (model.encode(list(texts), convert_to_numpy=True) for texts in columns[:4])
    u, v = a + weight * a_cf, b + weight * b_cf
    cosine = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    assert loss == pytest.approx(float(np.mean((cosine - np.array(columns[4])) ** 2)), abs=1e-6)


def test_cf_weight_zero_is_the_sbert_loss(tiny_model):
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

    model = SentenceTransformer(tiny_model, device="cpu").eval()
    a, b = model.tokenize(["a man runs", "the dog eats"]), model.tokenize(["a woman runs", "a cat eats"])
    cf = model.tokenize(["ball", "piano"])
    labels = torch.tensor([0.7, 0.2])
    with torch.no_grad():
        focused = ComponentFocusCosineLoss(model, 0.0)([a, cf, b, cf], labels)
        plain = CosineSimilarityLoss(model)([a, b], labels)
    assert focused.item() == pytest.approx(plain.item(), abs=1e-7)


# --- training runs through the CLI ----------------------------------------------------------------------------


def test_loss_decreases_on_a_tiny_data_set(tiny_model, tmp_path):
    run = train(
        "--method",
        "cf",
        "-m",
        tiny_model,
        "-o",
        str(tmp_path / "m"),
        "--epochs",
        "6",
        "--lr",
        "2e-3",
        "--checkpoint-steps",
        "0",
    )
    assert run.exit_code == 0, run.stderr
    losses = json.loads((tmp_path / "m" / "sembed.json").read_text())["training"]["epoch_losses"]
    assert len(losses) == 6
    assert losses[-1] < 0.7 * losses[0]


def test_model_directory_loads_and_records_how_it_was_made(tiny_model, tmp_path):
    data = pairs()
    run = train(
        "--method",
        "cf",
        "-m",
        tiny_model,
        "-o",
        str(tmp_path / "m"),
        "--epochs",
        "1",
        "--seed",
        "7",
        "--cf-weight",
        "0.3",
        data=data,
    )
    assert run.exit_code == 0, run.stderr
    assert run.stdout == ""  # a model, not records
    assert not (tmp_path / "m.checkpoints").exists()  # removed once the model is written
    assert SentenceTransformer(str(tmp_path / "m"), device="cpu").encode(["a man"]).shape == (1, 32)

    meta = json.loads((tmp_path / "m" / "sembed.json").read_text())
    assert meta == sentence_models.metadata(str(tmp_path / "m"))
    assert (meta["method"], meta["cf_weight"], meta["seed"], meta["base_model"]) == ("cf", 0.3, 7, tiny_model)
    digest = ContentHash()
    for record in data:
        digest.add([record["text_a"], record["text_b"], record["score"]])
    assert meta["data"]["sha256"] == digest.hexdigest()
    assert (meta["data"]["input"], meta["data"]["records"], meta["data"]["skipped"]) == ("<stdin>", 40, 0)
    assert "s_cf_computed" not in meta["data"]  # S_cf given in the input is used as it is
    settings = meta["settings"]
    assert (settings["epochs"], settings["batch_size"], settings["learning_rate"], settings["warmup_ratio"]) == (
        1,
        16,
        2e-5,
        0.1,
    )
    assert (settings["cf_weight"], settings["score_range"], settings["seed"]) == (0.3, "0:5", 7)
    assert set(meta["versions"]) >= {"sembed", "torch", "transformers", "sentence-transformers"}
    assert all(meta["versions"][name] for name in ("sembed", "torch", "transformers", "sentence-transformers"))
    assert meta["training"]["steps"] == 3  # 40 pairs in batches of 16
    card = (tmp_path / "m" / "README.md").read_text()  # the tiny base model's card is replaced by how this was made
    assert card.startswith("---\nlibrary_name: sentence-transformers\n")
    assert f"Trained with `sembed train --method cf` from `{tiny_model}` on `<stdin>`." in card
    for line in (
        "- records: 40",
        "- epochs: 1",
        "- optimiser steps: 3",
        "- batch size: 16 pairs",
        "- learning rate: 2e-05 (AdamW)",
        "- seed: 7",
        "- cf_weight: 0.3",
        f"- sembed {meta['versions']['sembed']}",
    ):
        assert f"\n{line}" in card, line


def test_max_steps_inside_an_epoch_reports_the_steps_not_epoch_zero(tiny_model, tmp_path):
    run = sembed(
        "train",
        "--method",
        "sbert",
        "-m",
        tiny_model,
        "-o",
        str(tmp_path / "m"),
        "--max-steps",
        "1",
        "--checkpoint-steps",
        "0",
        input=jsonl(*pairs()),
    )
    assert run.exit_code == 0, run.stderr
    assert "step 1/1 (0.33 of an epoch): mean loss " in run.stderr  # 3 steps an epoch
    assert "epoch 0/" not in run.stderr and ": at most 1 step(s), batch 16" in run.stderr
    assert "- epochs: 4 (stopped after --max-steps 1)" in (tmp_path / "m" / "README.md").read_text()


@pytest.mark.parametrize(
    "step, steps, epoch, epochs, label",
    [
        (120, 120, 1 / 3, 1, "step 120/120 (0.33 of an epoch)"),
        (20, 40, 2.0, 4, "epoch 2/4 (step 20/40)"),
        (30, 30, 1.5, 2, "step 30/30 (1.50 epochs)"),
    ],
)
def test_progress_label_says_what_is_true(step, steps, epoch, epochs, label):
    assert sentence_loop.progress_label(step, steps, epoch, epochs) == label


def test_sbert_records_no_cf_weight(tiny_model, tmp_path):
    run = train(
        "--method", "sbert", "-m", tiny_model, "-o", str(tmp_path / "m"), "--epochs", "1", data=pairs(s_cf=False)
    )
    assert run.exit_code == 0, run.stderr
    meta = sentence_models.metadata(str(tmp_path / "m"))
    assert meta["method"] == "sbert" and "cf_weight" not in meta and "cf_weight" not in meta["settings"]


def test_cf_builds_missing_s_cf_as_spo_does(tiny_model, tmp_path):
    data = [
        {"text_a": "A man attacks a woman", "text_b": "A woman is slicing an onion.", "score": 1.0},
        {
            "text_a": "A dog runs.",
            "text_b": "A dog is running.",
            "score": 4.6,
            "s_cf_a": "dog runs",
            "s_cf_b": "dog running",
        },
    ]
    run = train("--method", "cf", "-m", tiny_model, "-o", str(tmp_path / "m"), "--epochs", "1", data=data)
    assert run.exit_code == 0, run.stderr
    assert sentence_models.metadata(str(tmp_path / "m"))["data"]["s_cf_computed"] == 1


def test_existing_output_is_kept_without_force_and_replaced_with_it(tiny_model, tmp_path):
    out = tmp_path / "m"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    run = train("--method", "sbert", "-m", tiny_model, "-o", str(out), "--epochs", "1")
    assert run.exit_code == 1
    assert run.stderr == f"error: {out} already exists (hint: pass --force to replace it, or choose another -o)\n"
    assert (out / "precious.txt").exists()
    run = train("--method", "sbert", "-m", tiny_model, "-o", str(out), "--epochs", "1", "--force")
    assert run.exit_code == 0, run.stderr
    assert not (out / "precious.txt").exists() and (out / "sembed.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary siblings left


def test_same_seed_same_weights_other_seed_other_weights(tiny_model, tmp_path):
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        run = train("--method", "cf", "-m", tiny_model, "-o", str(tmp_path / name), "--epochs", "2", "--seed", seed)
        assert run.exit_code == 0, run.stderr
    assert max_difference(weights(tmp_path / "a"), weights(tmp_path / "b")) == 0.0
    assert max_difference(weights(tmp_path / "a"), weights(tmp_path / "c")) > 1e-6


def interrupt_after(step: int):
    """A progress callback's on_step_end that stands for Ctrl-C (or a killed job) right after optimiser `step`."""

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == step:
            raise KeyboardInterrupt

    return on_step_end


# 3 steps an epoch, checkpoints at steps 2, 3, 4, 6, ...; the interrupted step's own checkpoint is never written:
# resumes from step 4 (mid-epoch 2) and from step 6 (an epoch's end)
@pytest.mark.parametrize("stop_at, resumed_from", [(6, 4), (8, 6)])
def test_resume_after_an_interruption_ends_where_an_uninterrupted_run_ends(
    tiny_model, tmp_path, monkeypatch, stop_at, resumed_from
):
    common = ("--method", "cf", "-m", tiny_model, "--lr", "1e-3", "--checkpoint-steps", "2")
    args = (*common, "--epochs", "3")
    assert train(*args, "-o", str(tmp_path / "whole")).exit_code == 0

    out = tmp_path / "resumed"
    with monkeypatch.context() as patch:
        patch.setattr(sentence_loop.ConsoleProgress, "on_step_end", interrupt_after(stop_at))
        run = sembed("train", *args, "-o", str(out), input=jsonl(*pairs()))
    assert run.exit_code == 130
    assert f"checkpoints are kept in {out}.checkpoints: the same command with --resume continues" in run.stderr
    assert not out.exists() and checkpoints.latest(Path(f"{out}.checkpoints")) is not None

    run = train(*args, "-o", str(out))
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: {out}.checkpoints holds the checkpoints of an unfinished run "
        "(hint: add --resume to continue it, or --force to start over)\n"
    )
    run = train(*common, "--epochs", "2", "-o", str(out), "--resume")
    assert run.exit_code == 1
    assert run.stderr.startswith(
        f"error: the checkpoints in {out}.checkpoints are of a different run (settings.epochs: 3 -> 2)"
    )

    run = train(*args, "-o", str(out), "--resume")
    assert run.exit_code == 0, run.stderr
    meta = sentence_models.metadata(str(out))
    assert meta["training"]["resumed_from_step"] == resumed_from and meta["training"]["steps"] == 9
    assert max_difference(weights(tmp_path / "whole"), weights(out)) < 1e-6
    assert not Path(f"{out}.checkpoints").exists()


def test_resume_with_force_starts_over_when_the_checkpoints_are_of_another_run(tiny_model, tmp_path, monkeypatch):
    args = ("--method", "sbert", "-m", tiny_model, "-o", str(tmp_path / "m"), "--checkpoint-steps", "1")
    with monkeypatch.context() as patch:
        patch.setattr(sentence_loop.ConsoleProgress, "on_step_end", interrupt_after(2))
        assert sembed("train", *args, "--epochs", "2", input=jsonl(*pairs())).exit_code == 130
    run = sembed("train", *args, "--epochs", "1", "--resume", "--force", input=jsonl(*pairs()))
    assert run.exit_code == 0, run.stderr
    assert (
        f"the checkpoints in {tmp_path / 'm'}.checkpoints are of a different run: starting over (--force)" in run.stderr
    )
    assert "resumed_from_step" not in sentence_models.metadata(str(tmp_path / "m"))["training"]


def test_resume_without_checkpoints_starts_from_the_beginning(tiny_model, tmp_path):
    run = sembed(
        "train",
        "--method",
        "sbert",
        "-m",
        tiny_model,
        "-o",
        str(tmp_path / "m"),
        "--epochs",
        "1",
        "--resume",
        input=jsonl(*pairs()),
    )
    assert run.exit_code == 0, run.stderr
    assert f"no checkpoint in {tmp_path / 'm'}.checkpoints: starting from the beginning" in run.stderr


# --- bad input --------------------------------------------------------------------------------------------------

GOOD = {"text_a": "a man runs", "text_b": "a man is running", "score": 4.2}


@pytest.mark.parametrize(
    "record, message",
    [
        (
            {"text_a": "a man runs", "text_b": "a man is running"},
            "missing key 'score' (training needs each pair's gold similarity score)",
        ),
        ({**GOOD, "score": "4.2"}, "'score' must be a number, got a string"),
        ({**GOOD, "score": None}, "'score' must be a number, got null"),
        ({**GOOD, "score": True}, "'score' must be a number, got a boolean"),
        ({**GOOD, "score": 5.5}, "'score' 5.5 is outside --score-range 0:5"),
        ({**GOOD, "text_b": "  "}, "empty text in 'text_b'"),
        ({"text_a": "a man runs", "score": 1}, "missing key 'text_b'"),
        ({**GOOD, "text_a": 3}, "'text_a' must be a string, got a number"),
        ({**GOOD, "s_cf_a": ""}, "empty text in 's_cf_a'"),
    ],
)
def test_bad_pairs_are_reported_with_file_and_line(tiny_model, tmp_path, record, message):
    lines = jsonl(GOOD) + "\n" + jsonl(record)  # the blank line counts: the bad record is on line 3
    run = sembed("train", "--method", "cf", "-m", tiny_model, "-o", str(tmp_path / "m"), input=lines)
    assert run.exit_code == 1
    assert run.stderr == f"error: <stdin>:3: {message}\n"
    assert not (tmp_path / "m").exists() and not (tmp_path / "m.checkpoints").exists()


def test_skip_errors_trains_on_the_rest_and_says_what_it_skipped(tiny_model, tmp_path):
    data = pairs(s_cf=False)
    data[5]["score"] = "high"
    run = sembed(
        "train",
        "--method",
        "sbert",
        "-m",
        tiny_model,
        "-o",
        str(tmp_path / "m"),
        "--epochs",
        "1",
        "--skip-errors",
        input=jsonl(*data),
    )
    assert run.exit_code == 0, run.stderr
    assert (
        "warning: skipped 1 bad record(s) in <stdin>: line 6; first: 'score' must be a number, got a string"
        in run.stderr
    )
    assert sentence_models.metadata(str(tmp_path / "m"))["data"]["records"] == 39


def test_no_pairs_at_all_is_an_error(tiny_model, tmp_path):
    run = sembed("train", "--method", "sbert", "-m", tiny_model, "-o", str(tmp_path / "m"), input="")
    assert run.exit_code == 1
    assert run.stderr.startswith("error: no training pairs in <stdin>")


@pytest.mark.parametrize(
    "args, message",
    [
        (("--method", "sbert", "--cf-weight", "0.2"), "only for --method cf"),
        (("--method", "cf", "--score-range", "5:0"), "expected LOW < HIGH"),
        (("--method", "cf", "-k", "text_a"), "give it twice"),
        (
            (
                "--method",
                "tfidf",
            ),
            "'tfidf' is not one of",
        ),
        (("--method", "sbert", "--precision", "bf16"), "only for --method mlm|poi"),
        (("--method", "mlm", "--precision", "fp16"), "'fp16' is not one of"),
    ],
)
def test_usage_errors_exit_2(tmp_path, args, message):
    run = sembed("train", *args, "-o", str(tmp_path / "m"), input="")
    assert run.exit_code == 2
    assert message in run.stderr


# --- the real model -----------------------------------------------------------------------------------------------


@pytest.mark.e2e
def test_cf_fine_tuning_of_minilm_on_stsb(data_dir, tmp_path):
    """The packaged all-MiniLM-L6-v2 trained with CF on 64 STS-B pairs (S_cf by the packaged parser)."""
    convert = sembed("convert", "--from", "stsb", str(data_dir / "stsb" / "sts-train.csv"))
    records = convert.records[:64]
    run = sembed("train", "--method", "cf", "-o", str(tmp_path / "cf"), "--epochs", "1", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    meta = sentence_models.metadata(str(tmp_path / "cf"))
    assert (meta["cf_weight"], meta["data"]["records"], meta["data"]["s_cf_computed"]) == (0.2, 64, 64)
    assert meta["training"]["steps"] == 4
    model = SentenceTransformer(str(tmp_path / "cf"), device="cpu")
    assert model.encode(["A man is playing a guitar."]).shape == (1, 384)


# --- finished models and concurrent runs ----------------------------------------------------------------------------


def test_resume_of_a_complete_model_leaves_it_alone(tiny_model, tmp_path):
    out = tmp_path / "m"
    assert train("--method", "sbert", "-m", tiny_model, "-o", str(out), "--epochs", "1").exit_code == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    run = sembed(
        "train",
        "--method",
        "sbert",
        "-m",
        tiny_model,
        "-o",
        str(out),
        "--epochs",
        "1",
        "--resume",
        input=jsonl(*pairs()),
    )
    assert (run.exit_code, run.stderr) == (0, f"{out} is complete: nothing to resume (--force trains it again)\n")
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_a_second_run_writing_the_same_directory_refuses(tiny_model, tmp_path):
    import fcntl
    import os

    out = tmp_path / "m"
    lock = tmp_path / ".m.lock"
    with open(lock, "w") as held:  # another run holds the lock (an flock of another open file)
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("4242\n")
        held.flush()
        run = train("--method", "sbert", "-m", tiny_model, "-o", str(out), "--epochs", "1")
        assert (run.exit_code, run.stderr) == (
            1,
            f"error: {out} is being written by another run (process 4242) "
            f"(hint: wait for it to end, or choose another output; the lock "
            f"is {lock})\n",
        )
        assert not out.exists() and not Path(f"{out}.checkpoints").exists()
    assert os.path.exists(lock)  # left by the "crashed" holder: no obstacle, the next run locks it and removes it
    run = train("--method", "sbert", "-m", tiny_model, "-o", str(out), "--epochs", "1")
    assert run.exit_code == 0, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_artifact_locks_nest_within_a_process_and_refuse_other_holders(tmp_path):
    import fcntl

    from sembed_cli import artifacts
    from sembed_cli.errors import SembedError

    out = tmp_path / "index"
    with artifacts.exclusive(out):
        with artifacts.building(out) as work:  # the same process: the lock is shared
            (work / "x").write_text("x")
        with open(tmp_path / ".index.lock") as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    with open(tmp_path / ".index.lock", "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        with pytest.raises(SembedError, match="is being written by another run"), artifacts.building(out, force=True):
            pass
    assert (out / "x").read_text() == "x"


def test_the_python_api_trains_a_method_as_the_command_does(tiny_model, tmp_path):
    """api.train runs the registry's method through training.methods.train, as `sembed train` does: the same data,
    settings and seed give the same weights and the same recorded W_cf; a wrong method or setting names the
    Python argument."""
    from sembed_cli import api
    from sembed_cli.errors import SembedError

    data = pairs()
    common = ("--max-steps", "2", "--checkpoint-steps", "0", "--device", "cpu", "--cf-weight", "0.5")
    run = train("--method", "cf", "-m", tiny_model, "-o", str(tmp_path / "cli"), *common, data=data)
    assert run.exit_code == 0, run.stderr
    out = api.train(
        data, "cf", tmp_path / "api", model=tiny_model, max_steps=2, checkpoint_steps=0, device="cpu", cf_weight=0.5
    )
    assert out == tmp_path / "api" and same_weights(out, tmp_path / "cli")
    assert api.load_model(str(out), device="cpu").cf_weight == 0.5
    with pytest.raises(SembedError, match=r"unknown method 'simcse' \(hint: method= one of sbert, cf, ta"):
        api.train(data, "simcse", tmp_path / "x")
    with pytest.raises(SembedError, match=r"method 'cf' has no setting temperature="):
        api.train(data, "cf", tmp_path / "x", temperature=0.1)
