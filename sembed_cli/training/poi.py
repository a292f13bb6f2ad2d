"""`train --method poi`: the POI paper's stage 2, batch-all online triplet mining alongside the masked-LM loss.

Zhang et al., "BERT has a Mouth, and it can Taste" (section 4, "Adding
triplet loss"): the stage-1 character BERT (`train --method mlm
--from-scratch`) goes on training with a triplet loss that separates POI
names from non-POI queries, all non-POI kinds one class (section 5), triplets
mined online with the Batch All strategy of Moindrot (2018, the paper's [2])
under a Euclidean, cosine or Manhattan distance as in Sentence-BERT (the
paper's [3]), while the masked-LM loss (one character masked at random per
POI name, as in stage 1) keeps the model's "taste".

Loss per batch: L = L_mlm + w * L_tri, with
L_tri = mean over the valid triplets (a, p, n) with d(a, p) - d(a, n) + margin > 0
of d(a, p) - d(a, n) + margin (valid: a != p, label(a) = label(p) != label(n)).
The embedding is what `sembed embed` writes for the saved model: the mean of
the last hidden states over the name's tokens, normalised to length 1.
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import torch

from ..artifacts import describe, refuse_existing
from ..errors import SembedError
from ..models import precision as precisions
from ..models import sentence_models
from ..models.masked_lm import load_masked_lm
from ..text import name_variants
from . import checkpoints
from .data import TrainingInput
from .job import Job
from .masked_lm_loop import COMMAND, MLM_IGNORE, finish, length_batches, run_loop
from .mlm_from_scratch import encode_names, mask_one, read_train_split
from .schedule import Schedule, ScheduleSettings

log = logging.getLogger(__name__)

DISTANCES = ("euclidean", "cosine", "manhattan")


class PoiSettings(ScheduleSettings, Protocol):
    """poi's settings that this module reads (`training/methods/poi.py` declares them). The margin is on unit-length
    embeddings (Euclidean distances lie in [0, 2])."""

    @property
    def model(self) -> str: ...
    @property
    def distance(self) -> str: ...
    @property
    def margin(self) -> float: ...
    @property
    def triplet_weight(self) -> float: ...
    @property
    def variants(self) -> int: ...
    @property
    def variant_weight(self) -> float: ...
    @property
    def ngram_weight(self) -> float: ...
    @property
    def precision(self) -> str: ...


def pairwise_distances(embeddings: torch.Tensor, distance: str) -> torch.Tensor:
    """All distances between the rows of `embeddings` (Sentence-BERT's three triplet distances)."""
    if distance == "euclidean":
        squared = (embeddings.unsqueeze(1) - embeddings.unsqueeze(0)).pow(2).sum(-1)
        return squared.clamp(min=1e-12).sqrt() * (squared > 1e-12)  # no NaN gradient at 0
    if distance == "cosine":
        normed = torch.nn.functional.normalize(embeddings, dim=-1)
        return 1 - normed @ normed.T
    if distance == "manhattan":
        return (embeddings.unsqueeze(1) - embeddings.unsqueeze(0)).abs().sum(-1)
    raise ValueError(f"unknown distance {distance!r}")


def batch_all_triplet_loss(
    embeddings: torch.Tensor, labels: torch.Tensor, margin: float, distance: str = "euclidean"
) -> tuple[torch.Tensor, float]:
    """Batch All online triplet mining (Moindrot 2018): the mean loss over the valid triplets with a positive loss.

    Returns the loss and the share of valid triplets with a positive loss.
    """
    d = pairwise_distances(embeddings, distance)
    loss = d.unsqueeze(2) - d.unsqueeze(1) + margin  # [a, p, n] = d(a, p) - d(a, n) + margin
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    distinct = ~torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    valid = (same & distinct).unsqueeze(2) & (~same).unsqueeze(1)
    loss = (loss * valid).clamp(min=0)
    positive = (loss > 1e-16).float()
    count = positive.sum()
    share = (count / valid.sum().clamp(min=1)).item()
    return loss.sum() / (count + 1e-16), share


def mean_pooled(hidden: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
    """The sentence-transformers mean pooling over the attended tokens, then unit length (Normalize)."""
    mask = attention.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)


def read_labelled_names(source: TrainingInput, text_key: str = "text") -> tuple[list[str], list[bool], dict]:
    """(names, is_poi) of the train split (all records when there is no split field), with the data description."""
    names, labels, left_out = read_train_split(source, text_key, label_required=True)
    if len(set(labels)) < 2:
        raise SembedError(
            f"poi needs POI names and non-POI queries of the train split in {source.name}",
            "e.g. sembed convert --from gazetteer",
        )
    if left_out:
        log.info(f"training on the {len(names)} records of the train split; {left_out} others left out")
    for name, is_poi in zip(names, labels):
        source.hash.add([name, is_poi])
    data = source.provenance(records=len(names), poi=sum(labels), non_poi=len(labels) - sum(labels), left_out=left_out)
    return names, labels, data


class LabelledBatches:
    """Each epoch: every name once, shuffled from (seed, epoch); the POI names also masked once for L_mlm.

    With `variants` V > 0, each POI name of a batch brings V generated variants (`name_variants`) as extra rows,
    labelled with the row of their name in `identity` (-1 for the non-POI rows): the lookup triplets' classes.
    """

    def __init__(
        self,
        tokenizer,
        names: list[str],
        labels: list[bool],
        batch_size: int,
        max_length: int,
        seed: int,
        variants: int = 0,
    ):
        self.tokenizer, self.names, self.labels = tokenizer, names, labels
        self.batch_size, self.max_length, self.seed, self.variants = batch_size, max_length, seed, variants
        self.lengths = [len(n) for n in names]
        self.steps_per_epoch = math.ceil(len(names) / batch_size)

    def epoch(self, epoch: int) -> Iterator[dict]:
        order = list(range(len(self.names)))
        rng = random.Random(f"{self.seed}/{epoch}")
        rng.shuffle(order)
        generator = torch.Generator().manual_seed(self.seed * 1000 + epoch)
        for chosen in length_batches(order, self.lengths, self.batch_size, rng):
            texts = [self.names[i] for i in chosen]
            poi = [self.labels[i] for i in chosen]
            identity = [row if is_poi else -1 for row, is_poi in enumerate(poi)]
            originals = len(texts)
            for row in range(originals):
                if poi[row]:
                    for _ in range(self.variants):
                        texts.append(name_variants.variant(texts[row], rng))
                        poi.append(True)
                        identity.append(row)
            ids, attention, lengths = encode_names(self.tokenizer, texts, self.max_length)
            is_poi = torch.tensor(poi)
            masked, mlm_labels = mask_one(ids, lengths.clamp(min=1), self.tokenizer.mask_token_id, generator)
            mlm_labels[~is_poi] = MLM_IGNORE  # the model learns to taste POI names only
            mlm_labels[originals:] = MLM_IGNORE  # and real names only, not their variants
            yield {
                "input_ids": ids,
                "attention_mask": attention,
                "masked_ids": masked,
                "mlm_labels": mlm_labels,
                "is_poi": is_poi,
                "identity": torch.tensor(identity),
            }


class TripletAndMaskedLoss:
    """L = L_mlm + w * L_tri (the paper's loss_lm + loss_tri) + w_v * L_variants.

    L_variants: batch-all triplets among the POI rows whose class is the name (a name and its generated variants
    positives, every other name negative), so that a misspelt or shortened name lands next to its own name.
    """

    def __init__(self, distance: str, margin: float, triplet_weight: float, variant_weight: float = 0.0):
        self.distance, self.margin, self.triplet_weight = distance, margin, triplet_weight
        self.variant_weight = variant_weight

    def __call__(self, model, batch: dict) -> tuple[torch.Tensor, dict]:
        hidden = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        pooled = mean_pooled(hidden.float(), batch["attention_mask"])  # distances in fp32, also under bf16 autocast
        triplet, share = batch_all_triplet_loss(pooled, batch["is_poi"].long(), self.margin, self.distance)
        parts = {"tri": triplet.item(), "positive_triplets": share}
        total = self.triplet_weight * triplet
        named = batch["identity"] >= 0
        if self.variant_weight and named.sum() > len(batch["identity"][named].unique()):
            lookup, lookup_share = batch_all_triplet_loss(
                pooled[named], batch["identity"][named], self.margin, self.distance
            )
            parts.update({"variants": lookup.item(), "positive_variant_triplets": lookup_share})
            total = total + self.variant_weight * lookup
        if (batch["mlm_labels"] != MLM_IGNORE).any():
            mlm = model(
                input_ids=batch["masked_ids"], attention_mask=batch["attention_mask"], labels=batch["mlm_labels"]
            ).loss
            parts["mlm"] = mlm.item()
            total = total + mlm
        return total, parts


def train_poi(job: Job, settings: PoiSettings) -> dict:
    """POI paper stage 2 on the stage-1 model --model; writes the job's model directory and returns its metadata."""
    base_model, distance, margin = settings.model, settings.distance, settings.margin
    triplet_weight, variants, variant_weight = settings.triplet_weight, settings.variants, settings.variant_weight
    ngram_weight = settings.ngram_weight
    schedule, text_key = Schedule.of(job, settings), job.text_key()
    if distance not in DISTANCES:
        raise SembedError(f"unknown distance '{distance}'", f"use one of {', '.join(DISTANCES)}")
    refuse_existing(job.output, job.force)
    resolved = sentence_models.resolve_device(job.device)
    precision = precisions.resolve_training(settings.precision, resolved)
    model, tokenizer = load_masked_lm(base_model, "cpu")
    base_metadata = {}
    if (Path(base_model) / sentence_models.METADATA_FILE).exists():
        base_metadata = json.loads((Path(base_model) / sentence_models.METADATA_FILE).read_text(encoding="utf-8"))
    if not hasattr(model, "bert"):
        raise SembedError(f"'{base_model}' is not a BERT masked-LM", "start from `sembed train --method mlm` output")
    max_length = model.config.max_position_embeddings
    names, labels, data = read_labelled_names(TrainingInput(job.source), text_key)
    described = {
        "distance": distance,
        "margin": margin,
        "triplet_weight": triplet_weight,
        "variants_per_poi_name": variants,
        "variant_weight": variant_weight if variants else 0.0,
        "ngram_weight": ngram_weight,
        "mining": "batch all (Moindrot 2018)",
        "non_poi": "one class",
        **schedule.settings(),
        "text_key": text_key,
    }
    run = {"method": "poi", "base_model": str(Path(base_model).resolve()), "data": data, "settings": described}
    checkpoint_dir, resume_from = checkpoints.prepare(job.output, run, job.resume, job.force)
    torch.manual_seed(schedule.seed)
    random.seed(schedule.seed)
    batches = LabelledBatches(tokenizer, names, labels, schedule.batch_size, max_length, schedule.seed, variants)
    log.info(
        f"poi: {data['poi']} POI names and {data['non_poi']} non-POI queries, {distance} distance, margin "
        f"{margin:g}, {batches.steps_per_epoch} steps an epoch on {resolved} ({precision})"
    )
    model.train()
    summary = run_loop(
        model,
        batches.epoch,
        batches.steps_per_epoch,
        TripletAndMaskedLoss(distance, margin, triplet_weight, variant_weight if variants else 0.0),
        schedule,
        resolved,
        checkpoint_dir,
        resume_from,
        precision=precision,
    )
    metadata = describe(
        COMMAND,
        data,
        described,
        method="poi",
        stage="poi stage 2 (triplet + masked LM)",
        base_model=str(base_model),
        base_model_data=base_metadata.get("data"),
        training=summary,
        seed=schedule.seed,
    )
    ngrams = None
    if ngram_weight:  # the lookup's character n-grams (poi_lookup), their IDF from the POI training names
        from ..models.poi_lookup import CharNgrams

        ngrams = CharNgrams.fit([name for name, is_poi in zip(names, labels) if is_poi])
    return finish(
        job,
        settings,
        model.cpu(),
        tokenizer,
        max_length,
        metadata,
        checkpoint_dir,
        extra=(lambda directory: ngrams.save(directory, ngram_weight)) if ngrams else None,
    )
