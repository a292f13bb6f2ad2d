"""sembed train --method mlm without --from-scratch: an encoder adapted into a masked-LM (issue 6).

The encoder is the tiny BERT of conftest (2 layers, hidden size 32, the
packaged MiniLM's vocabulary) trained a few steps on a few dozen sentences:
the tests check the machinery (model directory, tied head, held-out share,
determinism, resume, errors), not the quality (bench/mlm_recovery.py does).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import interrupt_at_call, jsonl, same_weights, sembed

torch = pytest.importorskip("torch")

from sembed_cli.artifacts import ContentHash  # noqa: E402
from sembed_cli.models.masked_lm import load_masked_lm  # noqa: E402
from sembed_cli.training import mlm_adaptation  # noqa: E402
from sembed_cli.training.masked_lm_loop import MLM_IGNORE  # noqa: E402
from sembed_cli.training.mlm_adaptation import WordMasking, held_out, mask_words  # noqa: E402

SENTENCES = [
    "The farmers planted wheat in the northern fields this spring.",
    "Scientists say the drought has reduced the harvest by a third.",
    "The minister promised new funding for rural hospitals.",
    "Prices for wool rose sharply at the auction on Tuesday.",
    "A small dog barked at the postman every single morning.",
    "The committee approved the proposal without any discussion.",
    "Heavy rain flooded several roads near the river.",
    "She played the piano beautifully at the concert hall.",
    "Researchers discovered a new species of frog in the rainforest.",
    "The government will announce its budget next week.",
    "Unbelievably, the weatherman's forecast was correct.",
    "Children were playing football in the park after school.",
]
HOLDOUT = "0.25"  # holds out 4 of the 12 sentences (see test_held_out_records_are_never_trained_on)
ROUNDING = 1e-5  # weights of two runs differ by float rounding (CPU kernels may sum in another order)
FAST = ("--batch-size", "4", "--holdout", HOLDOUT, "--device", "cpu", "-q")

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def records(*extra: dict) -> str:
    return jsonl(*({"doc_id": f"news#{i // 4}", "sent_id": i % 4, "text": t} for i, t in enumerate(SENTENCES)), *extra)


def adapt(tiny_model: str, out: Path, *args: str, input: str | None = None, quiet: bool = True):
    return sembed(
        "train",
        "--method",
        "mlm",
        "--model",
        tiny_model,
        *(FAST if quiet else [arg for arg in FAST if arg != "-q"]),
        *args,
        "-o",
        str(out),
        input=records() if input is None else input,
    )


@pytest.fixture(scope="module")
def adapted(tiny_model, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mlm") / "adapted"
    run = adapt(tiny_model, out)
    assert run.exit_code == 0, run.stderr
    return out


# --- pieces ------------------------------------------------------------------------------------------------


def test_held_out_is_a_fixed_share_by_text():
    texts = [f"sentence number {i}" for i in range(4000)]
    share = sum(held_out(t, 0.1) for t in texts) / len(texts)
    assert 0.08 < share < 0.12
    assert [held_out(t, 0.1) for t in texts[:50]] == [held_out(t, 0.1) for t in texts[:50]]
    assert not any(held_out(t, 0.0) for t in texts)
    assert all(held_out(t, 0.1) <= held_out(t, 0.2) for t in texts)  # a larger share holds out more, never other


def test_mask_words_masks_whole_words_bert_style():
    # [CLS] un ##believ ##ably the dog bark ##ed [SEP] [PAD]: word pieces 10.. continue a word when odd
    continuation = torch.tensor([i >= 10 and i % 2 == 1 for i in range(40)])
    ids = torch.tensor([[2, 10, 11, 13, 20, 22, 24, 15, 3, 0]] * 400)
    maskable = torch.zeros_like(ids, dtype=torch.bool)
    maskable[:, 1:8] = True
    replacements = torch.arange(30, 40)
    bert = WordMasking(share=0.15)
    masked, labels = mask_words(ids, maskable, continuation, 4, replacements, bert, torch.Generator().manual_seed(0))
    chosen = labels != MLM_IGNORE
    assert (labels[chosen] == ids[chosen]).all() and not chosen[:, [0, 8, 9]].any()
    words = [[1, 2, 3], [4], [5], [6, 7]]  # un-believ-ably, the, dog, bark-ed
    assert (sum(chosen[:, w[0]].long() for w in words) == 1).all()  # 15% of 4 words: at least one
    for w in words:  # all pieces of a word alike: chosen, masked or kept together
        assert (chosen[:, w] == chosen[:, w[:1]]).all()
        assert ((masked[:, w] == 4) == (masked[:, w[:1]] == 4)).all()
    share_masked = (masked[chosen] == 4).float().mean().item()
    share_random = (masked[chosen] >= 30).float().mean().item()
    assert 0.7 < share_masked < 0.9 and 0.04 < share_random < 0.16
    again = mask_words(ids, maskable, continuation, 4, replacements, bert, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], masked) and torch.equal(again[1], labels)
    _, labels = mask_words(
        ids, maskable, continuation, 4, replacements, WordMasking(share=0.4), torch.Generator().manual_seed(0)
    )
    assert (sum((labels[:, w[0]] != MLM_IGNORE).long() for w in words) == 2).all()  # 40% of 4 words


def test_loss_at_the_masked_positions_is_the_masked_lm_loss(tiny_model):
    model, tokenizer, _, new_head = mlm_adaptation.start_model(tiny_model, seed=1)
    assert new_head
    model.eval()
    pieces = tokenizer(SENTENCES[:4])["input_ids"]
    batch = mlm_adaptation.MaskedSentences(tokenizer, pieces, WordMasking(), 4, 1).batch(
        pieces, torch.Generator().manual_seed(1)
    )
    ours, _ = mlm_adaptation.masked_positions_loss(model, batch)
    full = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    assert ours.item() == pytest.approx(full.item(), rel=1e-5)


def test_bf16_autocast_loss_is_close_to_fp32(tiny_model):
    from sembed_cli.models.precision import autocast

    model, tokenizer, _, _ = mlm_adaptation.start_model(tiny_model, seed=1)
    pieces = tokenizer(SENTENCES[:8])["input_ids"]
    batch = mlm_adaptation.MaskedSentences(tokenizer, pieces, WordMasking(), 8, 1).batch(
        pieces, torch.Generator().manual_seed(1)
    )
    fp32, _ = mlm_adaptation.masked_positions_loss(model, batch)
    with autocast("bf16", "cpu"):
        bf16, _ = mlm_adaptation.masked_positions_loss(model, batch)
    assert bf16.dtype == torch.float32  # the cross-entropy leaves autocast in fp32
    assert bf16.item() == pytest.approx(fp32.item(), rel=0.02)


# --- training ----------------------------------------------------------------------------------------------


def test_adapted_model_is_a_masked_lm_with_a_tied_head(adapted, tiny_model):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model = AutoModelForMaskedLM.from_pretrained(str(adapted))
    assert model.config.num_hidden_layers == 2
    assert model.cls.predictions.decoder.weight.data_ptr() == model.bert.embeddings.word_embeddings.weight.data_ptr()
    assert AutoTokenizer.from_pretrained(str(adapted)).mask_token == "[MASK]"
    lm, tokenizer = load_masked_lm(str(adapted))
    batch = tokenizer(["The farmers planted [MASK] in the fields."], return_tensors="pt")
    assert lm(**batch).logits.shape == (1, batch["input_ids"].shape[1], tokenizer.vocab_size)
    base = mlm_adaptation.start_model(tiny_model, seed=42)[0]
    trained = model.bert.encoder.layer[0].attention.self.query.weight
    assert not torch.equal(trained, base.bert.encoder.layer[0].attention.self.query.weight)  # encoder fine-tuned
    assert not (adapted.parent / "adapted.checkpoints").exists()


def test_training_goes_on_from_an_adapted_model_with_its_head(adapted, tiny_model, tmp_path):
    model, _, directory, new_head = mlm_adaptation.start_model(str(adapted), seed=1)
    assert directory == adapted and not new_head
    saved = load_masked_lm(str(adapted))[0]
    assert torch.equal(model.cls.predictions.transform.dense.weight, saved.cls.predictions.transform.dense.weight)
    run = adapt(str(adapted), tmp_path / "more", "--max-steps", "2")
    assert run.exit_code == 0, run.stderr
    assert json.loads((tmp_path / "more" / "sembed.json").read_text())["settings"]["head"] == "the base model's"


def test_metadata_names_data_settings_and_the_held_out_rule(adapted, tiny_model):
    meta = json.loads((adapted / "sembed.json").read_text())
    assert meta["method"] == "mlm" and meta["base_model"] == tiny_model and meta["seed"] == 42
    assert meta["held_out"]["share"] == 0.25 and meta["held_out"]["text_key"] == "text"
    assert "SHA-256" in meta["held_out"]["rule"]
    held = sum(held_out(t, 0.25) for t in SENTENCES)
    assert meta["data"]["records"] == 12 and meta["data"]["held_out_records"] == held
    assert meta["data"]["training_records"] == 12 - held
    settings = meta["settings"]
    assert settings["batch_size"] == 4 and settings["masked_share"] == WordMasking().share
    assert settings["head_lr_scale"] == mlm_adaptation.HEAD_LR_SCALE and settings["head"].startswith("new")
    assert meta["training"]["steps"] == -(-(12 - held) // 4)


def test_held_out_records_are_never_trained_on(adapted, monkeypatch, tiny_model, tmp_path):
    held = [t for t in SENTENCES if held_out(t, 0.25)]
    assert 0 < len(held) < len(SENTENCES)  # the share splits these sentences: the test means something
    digest = ContentHash()
    for text in SENTENCES:
        if text not in held:
            digest.add(text)
    assert json.loads((adapted / "sembed.json").read_text())["data"]["sha256"] == digest.hexdigest()
    seen = []
    real = mlm_adaptation.MaskedSentences.batch

    def spy(self, chosen, generator):
        seen.extend(chosen)
        return real(self, chosen, generator)

    monkeypatch.setattr(mlm_adaptation.MaskedSentences, "batch", spy)
    assert adapt(tiny_model, tmp_path / "spied").exit_code == 0
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "spied"))
    trained = {tokenizer.decode(ids, skip_special_tokens=True) for ids in seen}
    assert trained == {
        tokenizer.decode(tokenizer(t)["input_ids"], skip_special_tokens=True) for t in SENTENCES if t not in held
    }


def test_same_seed_same_model(adapted, tiny_model, tmp_path):
    assert adapt(tiny_model, tmp_path / "again").exit_code == 0
    assert same_weights(tmp_path / "again", adapted, ROUNDING)
    assert adapt(tiny_model, tmp_path / "other", "--seed", "7").exit_code == 0
    assert not same_weights(tmp_path / "other", adapted, 1e-3)


def test_resume_after_an_interruption_ends_where_an_uninterrupted_run_ends(adapted, tiny_model, tmp_path, monkeypatch):
    out = tmp_path / "resumed"
    real = interrupt_at_call(monkeypatch, mlm_adaptation, "masked_positions_loss", 2)
    assert adapt(tiny_model, out, "--checkpoint-steps", "1").exit_code == 130
    monkeypatch.setattr(mlm_adaptation, "masked_positions_loss", real)
    refused = adapt(tiny_model, out, "--checkpoint-steps", "1")
    assert refused.exit_code == 1 and "holds the checkpoints of an unfinished run" in refused.stderr
    assert adapt(tiny_model, out, "--checkpoint-steps", "1", "--resume").exit_code == 0
    assert same_weights(out, adapted, ROUNDING)


def test_an_fp32_run_resumes_in_bf16_and_says_so(adapted, tiny_model, tmp_path, monkeypatch):
    assert json.loads((adapted / "sembed.json").read_text())["training"]["precision"] == "fp32"  # the default
    out = tmp_path / "mixed"
    real = interrupt_at_call(monkeypatch, mlm_adaptation, "masked_positions_loss", 2)
    assert adapt(tiny_model, out, "--checkpoint-steps", "1").exit_code == 130
    monkeypatch.setattr(mlm_adaptation, "masked_positions_loss", real)
    run = adapt(tiny_model, out, "--checkpoint-steps", "1", "--resume", "--precision", "bf16")
    assert run.exit_code == 0, run.stderr
    assert json.loads((out / "sembed.json").read_text())["training"]["precision"] == "bf16"
    assert same_weights(out, adapted, 0.05) and not same_weights(out, adapted, ROUNDING)


def test_max_steps_and_not_overwritten_without_force(adapted, tiny_model, tmp_path):
    run = adapt(tiny_model, adapted)
    assert run.exit_code == 1
    assert run.stderr.strip() == (
        f"error: {adapted} already exists (hint: pass --force to replace it, or choose another -o)"
    )
    assert adapt(tiny_model, tmp_path / "short", "--max-steps", "1").exit_code == 0
    assert json.loads((tmp_path / "short" / "sembed.json").read_text())["training"]["steps"] == 1


# --- errors ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"doc_id": "x", "text": "  "}, "<stdin>:13: empty text in 'text'"),
        ({"doc_id": "x", "sentence": "No text key here."}, "<stdin>:13: missing key 'text'"),
        ({"text": 3}, "<stdin>:13: 'text' must be a string, got a number"),
    ],
)
def test_bad_records_name_file_and_line(bad, message, tiny_model, tmp_path):
    run = adapt(tiny_model, tmp_path / "m", input=records(bad))
    assert run.exit_code == 1
    assert run.stderr.strip() == f"error: {message}"
    assert not (tmp_path / "m").exists()
    skipped = adapt(tiny_model, tmp_path / "m", "--skip-errors", input=records(bad), quiet=False)  # -q: errors only
    assert skipped.exit_code == 0, skipped.stderr
    assert "skipped 1" in skipped.stderr


def test_no_training_text_is_a_clear_error(tiny_model, tmp_path):
    run = adapt(tiny_model, tmp_path / "m", input="")
    assert run.exit_code == 1
    assert run.stderr.startswith("error: no training text in <stdin> (hint: mlm reads records with text")
    run = adapt(tiny_model, tmp_path / "m", input=jsonl({"text": SENTENCES[1]}, {"text": SENTENCES[3]}))
    assert run.exit_code == 1 and "(all 2 held out: lower --holdout)" in run.stderr


def test_not_a_bert_encoder_or_no_model(tmp_path):
    run = sembed(
        "train", "--method", "mlm", "--model", str(tmp_path / "nowhere"), "-o", str(tmp_path / "m"), input=records()
    )
    assert run.exit_code == 1 and f"no sentence-transformers model at '{tmp_path / 'nowhere'}'" in run.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (("--from-scratch", "--holdout", "0.1"), "'--holdout': only without --from-scratch"),
        (("--from-scratch", "--model", "x"), "'--model': only without --from-scratch"),
        (("--layers", "2"), "'--layers': only with --from-scratch"),
        (("--samples", "2"), "'--samples': only with --from-scratch"),
    ],
)
def test_options_of_the_other_use_are_usage_errors(args, message, tmp_path):
    run = sembed("train", "--method", "mlm", *args, "-o", str(tmp_path / "m"), input=records())
    assert run.exit_code == 2
    assert message in " ".join(run.stderr.split())


def test_sentence_training_from_the_masked_lm_start_resumes_after_an_interruption(adapted, tmp_path, monkeypatch):
    """The masked-LM start has no pooler; its checkpoints must still load into the model being trained (they did
    not: 'Unexpected key(s) in state_dict: 0.model.pooler.dense.weight', issue 17's verdict run)."""
    from sembed_cli.training import sentence_loop

    pairs = jsonl(
        *(
            {"text_a": a, "text_b": b, "score": s}
            for a, b, s in zip(SENTENCES, SENTENCES[1:] + SENTENCES[:1], [0.1 * i for i in range(12)])
        )
    )
    args = (
        "train",
        "-q",
        "--method",
        "sbert",
        "-m",
        str(adapted),
        "--batch-size",
        "4",
        "--epochs",
        "2",
        "--checkpoint-steps",
        "1",
        "--device",
        "cpu",
        "-o",
        str(tmp_path / "m"),
    )

    def stop_at_step_2(self, args, state, control, **kwargs):
        if state.global_step == 2:
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(sentence_loop.ConsoleProgress, "on_step_end", stop_at_step_2)
        assert sembed(*args, input=pairs).exit_code == 130
    run = sembed(*args, "--resume", input=pairs)
    assert run.exit_code == 0, run.stderr
    # interrupted in step 2, before its checkpoint: resumed from step 1's
    assert json.loads((tmp_path / "m" / "sembed.json").read_text())["training"]["resumed_from_step"] == 1
