"""The trainer of `--method sbert` and `--method cf`: Siamese fine-tuning of a sentence encoder on scored pairs.

One module for both, named after sbert: CF-BERT is SBERT with component focusing (W_cf = 0 is SBERT).

`sbert` (Reimers & Gurevych 2019): both texts through the same encoder,
cosine similarity of the two embeddings, mean squared error against the gold
score scaled to [0, 1] (sentence-transformers' `CosineSimilarityLoss`).

`cf` (Yin et al. 2020, "Improving Sentence Representations via Component
Focusing", section 3): each side is embedded as
emb(S_basic) + W_cf * emb(S_cf) (eq. 1) before the cosine, where S_cf is the
subject-predicate-object part `sembed spo` builds; W_cf = 0 is SBERT.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn

from .data import TrainingInput
from .job import Job
from .scored_pairs import read_scored_pairs
from .sentence_loop import SentenceSettings, pair_fields_of, score_range_of, train_and_save

METHODS = ("sbert", "cf")
SPO_BATCH_SIZE = 1000  # texts a batch while building the missing s_cf fields as `sembed spo` does


class CfSettings(SentenceSettings, Protocol):
    """cf's settings: sbert's and W_cf (`training/methods/cf.py` declares them)."""

    @property
    def cf_weight(self) -> float: ...


def component_focus(basic: torch.Tensor, cf: torch.Tensor, cf_weight: float) -> torch.Tensor:
    """CF-BERT eq. 1: emb_S = emb_basic + W_cf * emb_cf."""
    return basic + cf_weight * cf


class ComponentFocusCosineLoss(nn.Module):
    """The CF-BERT training objective (section 3.2.1).

    Inputs, in order: S_basic of A, S_cf of A, S_basic of B, S_cf of B, each
    through the one (Siamese) encoder; u and v are eq. 1 of each side; the loss
    is the mean squared error between cos(u, v) and the scaled gold score.
    """

    def __init__(self, model, cf_weight: float):
        super().__init__()
        self.model = model
        self.cf_weight = cf_weight
        self.loss_fct = nn.MSELoss()

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        basic_a, cf_a, basic_b, cf_b = (self.model(features)["sentence_embedding"] for features in sentence_features)
        u = component_focus(basic_a, cf_a, self.cf_weight)
        v = component_focus(basic_b, cf_b, self.cf_weight)
        return self.loss_fct(torch.cosine_similarity(u, v), labels.float().view(-1))

    def get_config_dict(self) -> dict:
        return {"cf_weight": self.cf_weight, "loss_fct": "MSELoss"}


def make_loss(method: str, cf_weight: float):
    """The loss of `method` around a loaded model."""

    def build(model) -> nn.Module:
        if method == "cf":
            return ComponentFocusCosineLoss(model, cf_weight)
        from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

        return CosineSimilarityLoss(model)

    return build


def train_sbert(job: Job, settings: SentenceSettings) -> dict:
    """Fine-tune --model as SBERT on the scored pairs of the job's input and write it to the job's output.

    Returns the model's metadata (also written as sembed.json in the output).
    """
    return train_siamese(job, settings, "sbert", 0.0)


def train_cf(job: Job, settings: CfSettings) -> dict:
    """As `train_sbert`, each side embedded with component focusing at W_cf (CF-BERT eq. 1)."""
    return train_siamese(job, settings, "cf", settings.cf_weight)


def train_siamese(job: Job, settings: SentenceSettings, method: str, cf_weight: float) -> dict:
    """sbert or cf (`method`) on the scored pairs of the job's input; returns the model's metadata."""
    uses_cf = method == "cf"
    source, fields, score_range = TrainingInput(job.source), pair_fields_of(job), score_range_of(settings)

    def make_data() -> tuple[dict[str, list], dict]:
        pairs = read_scored_pairs(source, fields, score_range, uses_cf, SPO_BATCH_SIZE)
        return pairs.training_data(
            source, "train reads records with text_a, text_b and score, e.g. from sembed convert"
        )

    described: dict[str, object] = {
        "loss": "cosine similarity, MSE against the scaled score",
        "score_range": str(score_range),
        "text_keys": list(fields.texts),
        "score_key": fields.score,
    }
    if uses_cf:
        described["cf_weight"] = cf_weight
    return train_and_save(
        job,
        settings,
        method=method,
        make_data=make_data,
        make_loss=make_loss(method, cf_weight),
        described=described,
        fields={"cf_weight": cf_weight} if uses_cf else None,
    )
