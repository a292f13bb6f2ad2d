"""TA-SBERT's Token Attention pooling (eq. 1-4) and reconstruction head (eq. 5) as sentence-transformers modules."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sembed_cli.models.token_attention import (  # noqa: E402
    INIT_BOUND,
    TokenAttention,
    TokenReconstruction,
    reconstruction_loss,
    token_weights,
)


def softmax(x: list[float]) -> list[float]:
    top = max(x)
    e = [math.exp(v - top) for v in x]
    return [v / sum(e) for v in e]


def by_hand(E: list[list[float]], Wq, Wk, Wt, s_max: int) -> tuple[list[float], list[float]]:
    """Eq. 1-4 written out with loops over plain lists: the weights O and the sentence vector V."""
    s, d = len(E), len(E[0])
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    Q = [[dot(e, row) for row in Wq] for e in E]  # E W_q^T
    K = [[dot(e, row) for row in Wk] for e in E]
    T = [dot(e, Wt[0]) for e in E]
    A = [softmax([dot(Q[i], K[j]) / math.sqrt(d) for j in range(s)]) for i in range(s)]
    O = softmax([sum(A[i][j] * T[j] for j in range(s)) / math.sqrt(s_max) for i in range(s)])  # noqa: E741 (eq. 3's O)
    V = [sum(E[i][c] * O[i] for i in range(s)) for c in range(d)]
    return O, V


E = [[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]]
WQ = [[0.2, -0.1], [0.4, 0.3]]
WK = [[-0.3, 0.5], [0.1, 0.2]]
WT = [[1.5, -2.0]]


def module_with(weights: tuple, s_max: int = 4) -> TokenAttention:
    module = TokenAttention(2, s_max=s_max)
    with torch.no_grad():
        for layer, w in zip((module.query, module.key, module.token), weights):
            layer.weight.copy_(torch.tensor(w))
    return module


def test_pooling_matches_a_hand_computation():
    weights, vector = by_hand(E, WQ, WK, WT, s_max=4)
    features = module_with((WQ, WK, WT))({"token_embeddings": torch.tensor([E]), "attention_mask": torch.ones(1, 3)})
    assert features["token_weights"][0].tolist() == pytest.approx(weights, abs=1e-6)
    assert features["sentence_embedding"][0].tolist() == pytest.approx(vector, abs=1e-6)
    assert sum(weights) == pytest.approx(1.0)
    assert len({round(w, 6) for w in weights}) == 3  # not the uniform weights of mean pooling


def test_padding_gets_no_weight_and_a_padded_text_pools_as_it_does_alone():
    module = module_with((WQ, WK, WT))
    padded = torch.tensor([E + [[9.0, 9.0], [-7.0, 4.0]], E[:2] + [[5.0, 5.0]] * 3])
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
    features = module({"token_embeddings": padded, "attention_mask": mask})
    w = features["token_weights"]
    assert w[0, 3:].tolist() == [0.0, 0.0] and w[1, 2:].tolist() == [0.0, 0.0, 0.0]
    assert w.sum(dim=1).tolist() == pytest.approx([1.0, 1.0])
    alone = module({"token_embeddings": torch.tensor([E[:2]]), "attention_mask": torch.ones(1, 2)})
    expected = alone["sentence_embedding"][0].tolist()
    assert features["sentence_embedding"][1].tolist() == pytest.approx(expected, abs=1e-6)
    _weights, vector = by_hand(E, WQ, WK, WT, s_max=4)
    assert features["sentence_embedding"][0].tolist() == pytest.approx(vector, abs=1e-6)


def test_the_temperature_s_max_flattens_the_weights():
    sharp = token_weights(
        torch.tensor([E]),
        torch.ones(1, 3, dtype=torch.bool),
        torch.tensor(WQ),
        torch.tensor(WK),
        torch.tensor(WT),
        s_max=1,
    )
    flat = token_weights(
        torch.tensor([E]),
        torch.ones(1, 3, dtype=torch.bool),
        torch.tensor(WQ),
        torch.tensor(WK),
        torch.tensor(WT),
        s_max=10_000,
    )
    assert float(sharp.max() - sharp.min()) > float(flat.max() - flat.min())
    assert flat[0].tolist() == pytest.approx([1 / 3] * 3, abs=0.01)


def test_initialisation_is_uniform_with_mean_0_and_variance_0_02():
    torch.manual_seed(0)
    module = TokenAttention(384)
    values = module.query.weight.detach().numpy().ravel()
    assert np.abs(values).max() <= INIT_BOUND
    assert values.mean() == pytest.approx(0.0, abs=2e-3)
    assert values.var() == pytest.approx(0.02, rel=0.02)


def test_reconstruction_logits_only_while_training_and_the_loss_ignores_padding():
    torch.manual_seed(0)
    head = TokenReconstruction(2, vocab_size=5)
    features = {
        "token_embeddings": torch.tensor([E, E]),
        "attention_mask": torch.tensor([[1, 1, 1], [1, 1, 0]]),
        "input_ids": torch.tensor([[1, 4, 2], [0, 3, 4]]),
    }
    head.eval()
    assert "reconstruction_logits" not in head(dict(features))
    head.train()
    with torch.no_grad():
        out = head(dict(features))
    logits = out["reconstruction_logits"]
    assert tuple(logits.shape) == (5, 5)  # the five real tokens, padding left out
    assert out["reconstruction_targets"].tolist() == [1, 4, 2, 0, 3]
    real = [(0, 0, 1), (0, 1, 4), (0, 2, 2), (1, 0, 0), (1, 1, 3)]  # (text, position, id) of the unpadded tokens
    projection = head.projection.weight.detach()
    embeddings = features["token_embeddings"]
    expected = -sum(torch.log_softmax(embeddings[b, i] @ projection.T, dim=-1)[t] for b, i, t in real) / len(real)
    assert reconstruction_loss(out).item() == pytest.approx(expected.item(), abs=1e-6)


def test_a_model_with_token_attention_saves_and_loads_with_sentence_transformers(tiny_model, tmp_path):
    from sentence_transformers import SentenceTransformer

    base = SentenceTransformer(tiny_model, device="cpu")
    transformer = base[0]
    dim = transformer.get_embedding_dimension()
    torch.manual_seed(0)
    model = SentenceTransformer(
        modules=[transformer, TokenAttention(dim), TokenReconstruction(dim, transformer.tokenizer.vocab_size)],
        device="cpu",
    )
    texts = ["A man is playing a guitar.", "Dogs bark."]
    before = model.encode(texts, convert_to_numpy=True)
    model.save(str(tmp_path / "ta"))
    loaded = SentenceTransformer(str(tmp_path / "ta"), device="cpu", trust_remote_code=True)
    assert [type(m).__name__ for m in loaded] == ["Transformer", "TokenAttention", "TokenReconstruction"]
    np.testing.assert_allclose(loaded.encode(texts, convert_to_numpy=True), before, atol=1e-6)
    weights = loaded.encode(texts, output_value="token_weights")
    assert [float(w.sum()) for w in weights] == pytest.approx([1.0, 1.0], abs=1e-5)
