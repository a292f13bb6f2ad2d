"""The trainer of `--method ta`: TA-SBERT (Seo et al. 2022), Token Attention pooling and a reconstruction loss on a
Siamese encoder.

The model is the encoder with its pooling replaced: Token Attention (eq. 1-4,
`sembed_cli.models.token_attention`) or, for the ablation, plain mean pooling; with
the reconstruction head of eq. 5 unless `--no-recon`. The objective:

    L_sen = cross-entropy of softmax((u, v, |u - v|) W_s^T) on NLI labels   (eq. 6)
    L     = L_sen + 0.017 (L_rec(a) + L_rec(b))                              (eq. 7)

or, with `--objective sts`, the SBERT cosine / MSE objective on scored pairs
in place of L_sen. Section IV-A: learning rate 2e-5 for the encoder and 3e-5
for Token Attention and the other new parameters (W_s, W_r), AdamW with a 10%
linear warm-up, batch 16.

The base model's normalisation layer is dropped: the sentence vector is V of
eq. 4 (or the mean), as in SBERT's NLI training, for every row of the ablation.
"""

from __future__ import annotations

import logging
from typing import Protocol

import torch
from torch import nn

from ..errors import SembedError
from ..io import RecordSource
from ..models.token_attention import TokenAttention, TokenReconstruction, reconstruction_loss
from .data import TrainingInput
from .job import Job
from .scored_pairs import LabelSet, PairFields, read_labelled_pairs, read_scored_pairs
from .sentence_loop import MethodParts, SentenceSettings, pair_fields_of, score_range_of, train_and_save

log = logging.getLogger(__name__)

RECONSTRUCTION_WEIGHT = 0.017  # eq. 7, the paper's best ratio (Fig. 6)
HEAD_LEARNING_RATE = 3e-5  # "3e-5 for TA and other parameters" (section IV-A)
POOLINGS = ("ta", "mean")
RECONSTRUCTION_INITS = ("uniform", "embeddings")
OBJECTIVES = ("nli", "sts")
VALIDATION_BATCH = 64
LABELS = LabelSet()  # entailment, neutral, contradiction


class TaSettings(SentenceSettings, Protocol):
    """ta's settings that this module reads (`training/methods/ta.py` declares them)."""

    @property
    def pooling(self) -> str: ...
    @property
    def no_recon(self) -> bool: ...
    @property
    def recon_init(self) -> str: ...
    @property
    def objective(self) -> str: ...
    @property
    def validation(self) -> str | None: ...


def reshape(model, pooling: str, reconstruction: bool, reconstruction_init: str = "uniform"):
    """The encoder of `model` followed by the chosen pooling and, optionally, the reconstruction head.

    The paper initialises Token Attention uniformly (section IV-A) and says nothing of W_r: "uniform" treats it
    like Token Attention, "embeddings" starts it as a copy of the encoder's word-piece embeddings (BERT's own
    masked-LM decoder is tied to them), so reconstruction starts from what the encoder already keeps.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    encoder = model[0]
    dim = encoder.get_embedding_dimension()
    modules = [encoder, TokenAttention(dim) if pooling == "ta" else Pooling(dim, "mean")]
    if reconstruction:
        embeddings = encoder.auto_model.get_input_embeddings().weight
        head = TokenReconstruction(dim, embeddings.shape[0])
        if reconstruction_init == "embeddings":
            with torch.no_grad():
                head.projection.weight.copy_(embeddings)
        modules.append(head)
    return SentenceTransformer(modules=modules, device=str(model.device))


class TokenAttentionLoss(nn.Module):
    """TA-SBERT's objective (eq. 6-7): the sentence loss plus the weighted reconstruction of both sides.

    Returns its parts as a dict (sentence, reconstruction), which the trainer sums and logs one by one.
    """

    def __init__(
        self,
        model,
        objective: str = "nli",
        labels: LabelSet = LabelSet(),
        reconstruction_weight: float = RECONSTRUCTION_WEIGHT,
    ):
        super().__init__()
        self.model = model
        self.objective = objective
        self.reconstruction_weight = reconstruction_weight
        self.reconstructs = any(isinstance(module, TokenReconstruction) for module in model)
        if objective == "nli":
            self.classifier = nn.Linear(3 * model.get_embedding_dimension(), len(labels.names))  # W_s

    def logits(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.cat([u, v, (u - v).abs()], dim=-1))  # eq. 6, before the softmax

    def forward(
        self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        outputs = [self.model(features) for features in sentence_features]
        u, v = (output["sentence_embedding"] for output in outputs)
        if self.objective == "nli":
            parts = {"sentence": nn.functional.cross_entropy(self.logits(u, v), labels.long().view(-1))}
        else:
            parts = {"sentence": nn.functional.mse_loss(torch.cosine_similarity(u, v), labels.float().view(-1))}
        if self.reconstructs:
            first, *others = (reconstruction_loss(o) for o in outputs)
            parts["reconstruction"] = self.reconstruction_weight * sum(others, first)
        return parts

    def get_config_dict(self) -> dict:
        return {"objective": self.objective, "reconstruction_weight": self.reconstruction_weight}


def new_parameters(loss: nn.Module) -> dict[str, float]:
    """Everything but the encoder (model.0) learns at the TA rate; nothing to map for mean pooling on STS."""
    new = [name for name, _ in loss.named_parameters() if not name.startswith("model.0.")]
    return {r"^(?!model\.0\.)": HEAD_LEARNING_RATE} if new else {}


def nli_accuracy(model, loss: TokenAttentionLoss, pairs: dict[str, list], fields: PairFields) -> dict:
    """Cross-entropy and accuracy of the trained classifier (eq. 6) on held-out NLI pairs."""
    model.eval()
    u = model.encode(pairs[fields.text_a], batch_size=VALIDATION_BATCH, convert_to_tensor=True)
    v = model.encode(pairs[fields.text_b], batch_size=VALIDATION_BATCH, convert_to_tensor=True)
    gold = torch.tensor(pairs["label"], device=u.device)
    with torch.no_grad():
        logits = loss.logits(u, v)
        return {
            "pairs": len(gold),
            "loss": round(float(nn.functional.cross_entropy(logits, gold)), 6),
            "accuracy": round(float((logits.argmax(dim=-1) == gold).float().mean()) * 100, 4),
        }


def train_ta(job: Job, settings: TaSettings) -> dict:
    """Fine-tune --model as TA-SBERT on the pairs of the job's input and write it to its output; returns the
    metadata."""
    pooling, reconstruction, reconstruction_init = settings.pooling, not settings.no_recon, settings.recon_init
    objective, fields, score_range, labels = settings.objective, pair_fields_of(job), score_range_of(settings), LABELS
    validation = RecordSource(settings.validation) if settings.validation else None
    if validation is not None and objective != "nli":
        raise SembedError("held-out accuracy (--validation) needs the NLI objective", "drop --validation")

    def read(from_source: RecordSource) -> tuple[dict[str, list], dict]:
        source = TrainingInput(from_source)
        if objective == "nli":
            pairs = read_labelled_pairs(source, fields, labels)
        else:
            pairs = read_scored_pairs(source, fields, score_range)
        target = "label (entailment, neutral, contradiction)" if objective == "nli" else "score"
        return pairs.training_data(
            source, f"--method ta reads records with text_a, text_b and a {target}, e.g. from sembed convert"
        )

    held_out = read(validation)[0] if validation is not None else None  # a bad file fails before training
    described = {
        "pooling": pooling,
        "reconstruction": reconstruction,
        "reconstruction_weight": RECONSTRUCTION_WEIGHT if reconstruction else None,
        "reconstruction_init": reconstruction_init if reconstruction else None,
        "objective": "softmax over (u, v, |u - v|), cross-entropy on NLI labels"
        if objective == "nli"
        else "cosine similarity, MSE against the scaled score",
        "labels": list(labels.names) if objective == "nli" else None,
        "score_range": str(score_range) if objective == "sts" else None,
        "head_learning_rate": HEAD_LEARNING_RATE,
        "text_keys": list(fields.texts),
        "validation": validation.rejects.name if validation is not None else None,
    }

    def validate(model, loss: nn.Module) -> dict:
        if not isinstance(loss, TokenAttentionLoss) or held_out is None:
            raise TypeError("held-out accuracy needs held-out pairs and the TokenAttentionLoss this method trains")
        return nli_accuracy(model, loss, held_out, fields)

    parts = MethodParts(
        prepare_model=lambda model: reshape(model, pooling, reconstruction, reconstruction_init),
        learning_rates=new_parameters,
        validate=validate if held_out else None,
    )
    metadata = train_and_save(
        job,
        settings,
        method="ta",
        make_data=lambda: read(job.source),
        make_loss=lambda model: TokenAttentionLoss(model, objective, labels),
        described=described,
        fields={"pooling": pooling},
        parts=parts,
    )
    if "validation" in metadata:
        result = metadata["validation"]
        log.info(
            f"held-out NLI: accuracy {result['accuracy']:.2f}%, loss {result['loss']:.4f} ({result['pairs']} pairs)"
        )
    return metadata
