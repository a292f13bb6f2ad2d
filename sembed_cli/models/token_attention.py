"""TA-SBERT's Token Attention pooling and reconstruction head, as sentence-transformers modules.

Seo et al. 2022, "TA-SBERT: Token Attention Sentence-BERT", section III:

    Q = E W_q^T,  K = E W_k^T,  T = E W_t^T               (eq. 1)
    A = softmax(Q K^T / sqrt(d))                          (eq. 2)
    O = softmax(A T / sqrt(s_max))                        (eq. 3)
    V = sum_i E_i * O_i                                   (eq. 4)
    r = softmax(E W_r^T)                                  (eq. 5)

E is the encoder's output token matrix (s x d), W_q, W_k in R^{d x d},
W_t in R^{1 x d}, W_r in R^{C x d} for a vocabulary of C word pieces.
Padding takes no part: it is masked out of both softmaxes, so it gets
exactly zero weight and a padded text pools as it does alone.

Both modules save into the model directory like any sentence-transformers
module (a config and safetensors weights), so `SentenceTransformer(DIR,
trust_remote_code=True)` loads a TA-SBERT model wherever sembed is
installed (sentence-transformers 6 asks for trust_remote_code before it
imports a module class from outside its own package).
"""

from __future__ import annotations

import math
from typing import Any, Self

import torch
from sentence_transformers.base.modules import Module
from torch import nn

# "All parameters of TA are initialized to a uniform distribution with a mean of 0 and a variance of 0.02"
# (section IV-A): U(-a, a) has variance a^2 / 3, so a = sqrt(3 * 0.02).
INIT_VARIANCE = 0.02
INIT_BOUND = math.sqrt(3 * INIT_VARIANCE)
S_MAX = 128  # the paper's longest input (0 < s <= 128), the temperature of eq. 3


class _SavedWithWeights(Module):
    """A module saved as its config plus safetensors weights, and loaded back the same way."""

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(
        cls,
        model_name_or_path: str,
        subfolder: str = "",
        token: bool | str | None = None,
        cache_folder: str | None = None,
        revision: str | None = None,
        local_files_only: bool = False,
        init_defaults: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        hub: dict[str, Any] = {
            "token": token,
            "cache_folder": cache_folder,
            "revision": revision,
            "local_files_only": local_files_only,
        }
        config = cls.load_config(model_name_or_path, subfolder=subfolder, **hub)
        for key, value in (init_defaults or {}).items():  # as Module.load: the saved config wins
            config.setdefault(key, value)
        module = cls(**config)
        cls.load_torch_weights(model_name_or_path, subfolder=subfolder, model=module, **hub)
        return module


class TokenAttention(_SavedWithWeights):
    """Token Attention pooling (TA-SBERT eq. 1-4): a sentence vector weighted by each token's importance.

    Reads token_embeddings and attention_mask; writes sentence_embedding and token_weights (O of eq. 3,
    batch x tokens, zero on padding, each row summing to 1).
    """

    config_keys: list[str] = ["dimension", "s_max"]  # noqa: RUF012 (a list in Module, the base class)

    def __init__(self, dimension: int, s_max: int = S_MAX):
        super().__init__()
        self.dimension = dimension
        self.s_max = s_max
        self.query = nn.Linear(dimension, dimension, bias=False)  # W_q
        self.key = nn.Linear(dimension, dimension, bias=False)  # W_k
        self.token = nn.Linear(dimension, 1, bias=False)  # W_t
        for layer in (self.query, self.key, self.token):
            nn.init.uniform_(layer.weight, -INIT_BOUND, INIT_BOUND)

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        embeddings = features["token_embeddings"]  # E: batch x s x d
        mask = features["attention_mask"].bool()  # batch x s
        weights = token_weights(embeddings, mask, self.query.weight, self.key.weight, self.token.weight, self.s_max)
        features["token_weights"] = weights
        features["sentence_embedding"] = (embeddings * weights.unsqueeze(-1)).sum(dim=1)  # eq. 4
        return features

    def get_embedding_dimension(self) -> int:
        return self.dimension


def token_weights(
    embeddings: torch.Tensor, mask: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_t: torch.Tensor, s_max: int
) -> torch.Tensor:
    """O of TA-SBERT eq. 3 for a batch: (batch x s) token weights, zero where `mask` is False."""
    d = embeddings.shape[-1]
    q, k, t = embeddings @ w_q.T, embeddings @ w_k.T, embeddings @ w_t.T  # eq. 1; t: batch x s x 1
    scores = q @ k.transpose(1, 2) / math.sqrt(d)  # batch x s x s
    scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))  # no query attends to padding
    attention = torch.softmax(scores, dim=-1)  # eq. 2
    influence = (attention @ t).squeeze(-1) / math.sqrt(s_max)  # A T / sqrt(s_max): batch x s
    influence = influence.masked_fill(~mask, float("-inf"))
    return torch.softmax(influence, dim=-1)  # eq. 3


class TokenReconstruction(_SavedWithWeights):
    """TA-SBERT's reconstruction head (eq. 5): predicts every input token's id from its output embedding.

    Only while training does it add reconstruction_logits (one row of C for each real token of the batch,
    padding left out: it would cost as much as a word and teach nothing) and reconstruction_targets (those
    tokens' ids) to the features, for the loss of eq. 7; at inference it passes the features through untouched.
    """

    config_keys: list[str] = ["dimension", "vocab_size"]  # noqa: RUF012 (a list in Module, the base class)

    def __init__(self, dimension: int, vocab_size: int):
        super().__init__()
        self.dimension = dimension
        self.vocab_size = vocab_size
        self.projection = nn.Linear(dimension, vocab_size, bias=False)  # W_r
        nn.init.uniform_(self.projection.weight, -INIT_BOUND, INIT_BOUND)

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        if self.training:
            real = features["attention_mask"].bool()
            features["reconstruction_logits"] = self.projection(features["token_embeddings"][real])
            features["reconstruction_targets"] = features["input_ids"][real]
        return features


def reconstruction_loss(features: dict[str, Any]) -> torch.Tensor:
    """Cross-entropy of eq. 5's prediction against every real (unpadded) input token id, averaged over them."""
    return nn.functional.cross_entropy(features["reconstruction_logits"], features["reconstruction_targets"])
