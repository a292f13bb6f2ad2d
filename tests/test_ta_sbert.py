"""sembed train --method ta (TA-SBERT) and embed --explain / --plain, on the tiny BERT of conftest."""

from __future__ import annotations

import json
import random

import pytest
from conftest import api_gives_what_embed_writes, jsonl, sembed

torch = pytest.importorskip("torch")

from sembed_cli.models import sentence_models  # noqa: E402
from sembed_cli.models.token_attention import reconstruction_loss  # noqa: E402
from sembed_cli.training.ta import TokenAttentionLoss, new_parameters, reshape  # noqa: E402

WORDS = "man woman dog cat child plays runs eats guitar ball park kitchen".split()
LABELS = ("entailment", "neutral", "contradiction")

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def nli_pairs(n: int = 32, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        a = [rng.choice(WORDS) for _ in range(5)]
        label = LABELS[i % 3]
        b = a[:3] if label == "entailment" else [rng.choice(WORDS) for _ in range(4)]
        pairs.append({"id": i, "text_a": " ".join(a), "text_b": " ".join(b), "label": label, "score": 2.5})
    return pairs


def train(*args: str, data: list[dict] | None = None):
    return sembed(
        "train", "-q", "--method", "ta", "--device", "cpu", *args, input=jsonl(*(nli_pairs() if data is None else data))
    )


def test_nli_training_writes_a_token_attention_model_with_its_held_out_accuracy(tiny_model, tmp_path):
    from sentence_transformers import SentenceTransformer

    held_out = tmp_path / "dev.jsonl"
    held_out.write_text(jsonl(*nli_pairs(12, seed=9)))
    run = sembed(
        "train",
        "--method",
        "ta",
        "-m",
        tiny_model,
        "-o",
        str(tmp_path / "ta"),
        "--batch-size",
        "8",
        "--validation",
        str(held_out),
        input=jsonl(*nli_pairs()),
    )
    assert run.exit_code == 0, run.stderr
    assert "training ta on 32 pairs" in run.stderr and "held-out NLI: accuracy" in run.stderr
    model = SentenceTransformer(str(tmp_path / "ta"), device="cpu", trust_remote_code=True)
    assert [type(m).__name__ for m in model] == ["Transformer", "TokenAttention", "TokenReconstruction"]
    meta = json.loads((tmp_path / "ta" / "sembed.json").read_text())
    assert (meta["method"], meta["pooling"], meta["settings"]["reconstruction_weight"]) == ("ta", "ta", 0.017)
    assert (meta["settings"]["epochs"], meta["settings"]["batch_size"], meta["settings"]["head_learning_rate"]) == (
        1,
        8,
        3e-5,
    )
    assert meta["training"]["steps"] == 4
    assert meta["validation"]["pairs"] == 12 and 0 <= meta["validation"]["accuracy"] <= 100
    assert meta["data"]["sha256_of"] == "text_a, text_b, label of each pair, in input order"


def test_a_model_saved_before_the_move_to_models_still_loads(tiny_model, tmp_path):
    """TA-SBERT models saved before token_attention.py moved into sembed_cli/models/ name the old module path."""
    from sentence_transformers import SentenceTransformer

    assert train("-m", tiny_model, "-o", str(tmp_path / "ta"), "--batch-size", "16").exit_code == 0
    modules_file = tmp_path / "ta" / "modules.json"
    modules = json.loads(modules_file.read_text())
    assert modules[1]["type"] == "sembed_cli.models.token_attention.TokenAttention"
    for module in modules[1:]:
        module["type"] = module["type"].replace("sembed_cli.models.token_attention.", "sembed_cli.token_attention.")
    modules_file.write_text(json.dumps(modules))
    model = SentenceTransformer(str(tmp_path / "ta"), device="cpu", trust_remote_code=True)
    assert [type(m).__name__ for m in model] == ["Transformer", "TokenAttention", "TokenReconstruction"]
    run = sembed("embed", "-m", str(tmp_path / "ta"), "--explain", input=jsonl({"text": "man plays guitar"}))
    assert run.exit_code == 0, run.stderr
    assert len(run.records[0]["token_weights"]) > 0


def test_the_mean_pooling_row_of_the_ablation_has_no_new_module(tiny_model, tmp_path):
    run = train("-m", tiny_model, "-o", str(tmp_path / "mean"), "--pooling", "mean", "--no-recon")
    assert run.exit_code == 0, run.stderr
    model = sentence_models.open_model(str(tmp_path / "mean"), "cpu")
    assert [type(m).__name__ for m in model] == ["Transformer", "Pooling"]


def test_sts_objective_trains_on_scores(tiny_model, tmp_path):
    run = train(
        "-m", tiny_model, "-o", str(tmp_path / "sts"), "--objective", "sts", "--score-range", "0:5", "--no-recon"
    )
    assert run.exit_code == 0, run.stderr
    meta = json.loads((tmp_path / "sts" / "sembed.json").read_text())
    assert meta["settings"]["objective"] == "cosine similarity, MSE against the scaled score"
    assert meta["data"]["sha256_of"] == "text_a, text_b, score of each pair, in input order"


def test_loss_is_eq_7_the_nli_softmax_plus_0_017_of_both_reconstructions(tiny_model):
    torch.manual_seed(0)
    model = reshape(sentence_models.open_model(tiny_model, "cpu"), "ta", reconstruction=True)
    loss = TokenAttentionLoss(model)
    model.train()  # the reconstruction head works only in training; dropout off, so two passes agree
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    a = model.tokenize(["a man plays guitar", "dogs run"])
    b = model.tokenize(["a woman eats", "a cat runs in the park"])
    labels = torch.tensor([0, 2])
    parts = loss([dict(a), dict(b)], labels)
    out_a, out_b = model(dict(a)), model(dict(b))
    u, v = out_a["sentence_embedding"], out_b["sentence_embedding"]
    logits = torch.cat([u, v, (u - v).abs()], dim=-1) @ loss.classifier.weight.T + loss.classifier.bias
    expected_sentence = torch.nn.functional.cross_entropy(logits, labels)
    expected_recon = 0.017 * (reconstruction_loss(out_a) + reconstruction_loss(out_b))
    assert parts["sentence"].item() == pytest.approx(expected_sentence.item(), rel=1e-5)
    assert parts["reconstruction"].item() == pytest.approx(expected_recon.item(), rel=1e-5)


def test_token_attention_and_the_heads_learn_at_3e_5_and_the_encoder_at_the_schedule_rate(tiny_model):
    import re

    model = reshape(sentence_models.open_model(tiny_model, "cpu"), "ta", reconstruction=True)
    loss = TokenAttentionLoss(model)
    [(pattern, rate)] = new_parameters(loss).items()
    names = [name for name, _ in loss.named_parameters()]
    faster = {name for name in names if re.search(pattern, name)}
    assert rate == 3e-5
    assert faster == {
        "model.1.query.weight",
        "model.1.key.weight",
        "model.1.token.weight",
        "model.2.projection.weight",
        "classifier.weight",
        "classifier.bias",
    }
    plain = reshape(sentence_models.open_model(tiny_model, "cpu"), "mean", reconstruction=False)
    assert new_parameters(TokenAttentionLoss(plain, objective="sts")) == {}


def test_bad_input_and_usage(tiny_model, tmp_path):
    data = nli_pairs(3)
    data[1]["label"] = "maybe"
    run = train("-m", tiny_model, "-o", str(tmp_path / "m"), data=data)
    assert run.exit_code == 1
    assert run.stderr == "error: <stdin>:2: 'label' 'maybe' is not one of entailment, neutral, contradiction\n"
    assert not (tmp_path / "m").exists()
    run = sembed("train", "--method", "sbert", "--no-recon", "-o", str(tmp_path / "m"), input="")
    assert run.exit_code == 2 and "Invalid value for '--no-recon': only for --method ta" in run.stderr
    run = train("-o", str(tmp_path / "m"), "--score-range", "1:5")
    assert run.exit_code == 2 and "only with --objective sts" in run.stderr
    run = train("-o", str(tmp_path / "m"), "--objective", "sts", "--validation", "x.jsonl")
    assert run.exit_code == 2 and "only with --objective nli" in run.stderr


@pytest.fixture(scope="module")
def ta_model(tiny_model, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("ta") / "model"
    run = train("-m", tiny_model, "-o", str(out))
    assert run.exit_code == 0, run.stderr
    return str(out)


def test_explain_writes_each_word_with_its_token_attention_weight(ta_model):
    records = [{"text": "A man's playing the guitar."}, {"text_a": "Dogs run", "text_b": "unbelievably"}]
    run = sembed("embed", "-m", ta_model, "--explain", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    first, pair = run.records
    words = first["token_weights"]
    assert [w for w, _ in words] == ["[CLS]", "A", "man", "'", "s", "playing", "the", "guitar", ".", "[SEP]"]
    assert sum(weight for _, weight in words) == pytest.approx(1.0, abs=1e-4)
    assert [w for w, _ in pair["token_weights_a"]] == ["[CLS]", "Dogs", "run", "[SEP]"]
    assert [w for w, _ in pair["token_weights_b"]] == ["[CLS]", "unbelievably", "[SEP]"]  # pieces merged
    plain = sembed("embed", "-m", ta_model, input=jsonl(*records)).records
    assert [r["embedding"] for r in plain[:1]] == [first["embedding"]]


def test_plain_shows_the_weights_on_stderr_and_explain_needs_token_attention(ta_model, tiny_model):
    run = sembed("embed", "-m", ta_model, "--plain", input=jsonl({"text": "Dogs run"}))
    assert run.exit_code == 0, run.stderr
    [record] = run.records
    shown = " ".join(f"{word}({weight:.3f})" for word, weight in record["token_weights"])
    assert shown in run.stderr.splitlines()
    run = sembed("embed", "-m", tiny_model, "--explain", input=jsonl({"text": "Dogs run"}))
    assert run.exit_code == 1
    assert f"error: the model at '{tiny_model}' has no Token Attention pooling" in run.stderr
    run = sembed("embed", "--method", "avg", "--explain", input=jsonl({"text": "Dogs run"}))
    assert run.exit_code == 2 and "only for --method model" in run.stderr


def test_the_reconstruction_head_can_start_from_the_word_piece_embeddings(tiny_model):
    model = reshape(
        sentence_models.open_model(tiny_model, "cpu"), "ta", reconstruction=True, reconstruction_init="embeddings"
    )
    embeddings = model[0].auto_model.get_input_embeddings().weight
    assert torch.equal(model[2].projection.weight, embeddings)
    assert model[2].projection.weight.data_ptr() != embeddings.data_ptr()  # a copy: trained apart from the encoder
    uniform = reshape(sentence_models.open_model(tiny_model, "cpu"), "ta", reconstruction=True)
    assert uniform[2].projection.weight.abs().max().item() <= 0.245


def test_the_python_api_pools_with_token_attention_as_the_command_does(ta_model):
    from sembed_cli import api

    records = [{"text": "A man's playing the guitar."}, {"text_a": "Dogs run", "text_b": "unbelievably"}]
    api_gives_what_embed_writes(records, api.load_model(ta_model, device="cpu"), "-m", ta_model, "--device", "cpu")
