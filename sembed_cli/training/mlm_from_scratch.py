"""`train --method mlm --from-scratch`: the character BERT of the POI paper's stage 1 (Zhang et al., "BERT has a
Mouth, and it can Taste", section 4, "Training BERT Model").

A small BERT trained from scratch on POI names only, on their characters (the
paper's; `text/char_tokenizer.py`) or on word pieces learnt from them, one
token masked at random in each sample, each name sampled 10 times an epoch.
The loop and the model directory are `masked_lm_loop`'s; stage 2
(`poi.py`) reads the names and masks them as this module does. mlm's other
trainer, adapting an encoder, is `mlm_adaptation.py`.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Protocol

import torch

from ..artifacts import describe
from ..errors import BadRecord
from ..io import check_text, json_type
from ..models import precision as precisions
from ..models import sentence_models
from . import checkpoints
from .data import TrainingInput
from .job import Job
from .masked_lm_loop import COMMAND, MLM_IGNORE, finish, length_batches, run_loop
from .schedule import Schedule, ScheduleSettings

log = logging.getLogger(__name__)

HEADS = 4  # attention heads: --hidden is a multiple of them (`training/methods/mlm.py` checks)
MAX_LENGTH = 48  # characters, [CLS] and [SEP] included; longer names are cut
DROPOUT = 0.1  # the paper's attention and hidden dropout


class CharBertSettings(ScheduleSettings, Protocol):
    """mlm --from-scratch's settings that this module reads (`training/methods/mlm.py` declares them)."""

    @property
    def layers(self) -> int: ...
    @property
    def hidden(self) -> int: ...
    @property
    def vocab(self) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def samples(self) -> int: ...
    @property
    def precision(self) -> str: ...


@dataclass(frozen=True)
class CharBertShape:
    """The small BERT of the POI paper: 4 to 7 layers (it found no difference; hidden sizes are ours, for a CPU)."""

    layers: int
    hidden: int
    heads: int = HEADS
    max_length: int = MAX_LENGTH
    dropout: float = DROPOUT

    @classmethod
    def of(cls, settings: CharBertSettings) -> CharBertShape:
        return cls(layers=settings.layers, hidden=settings.hidden)

    def config(self, tokenizer):
        from transformers import BertConfig

        return BertConfig(
            vocab_size=len(tokenizer),
            hidden_size=self.hidden,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            intermediate_size=4 * self.hidden,
            max_position_embeddings=self.max_length,
            hidden_dropout_prob=self.dropout,
            attention_probs_dropout_prob=self.dropout,
            pad_token_id=tokenizer.pad_token_id,
        )


# --- data ----------------------------------------------------------------------------------------------


def read_train_split(
    source: TrainingInput, text_key: str = "text", label_required: bool = False
) -> tuple[list[str], list[bool], int]:
    """(names, is_poi, records left out) of the train split of a record stream, in input order.

    A record belongs to the train split when its split field is "train" or absent. is_poi, when present,
    must be true or false; absent, it is true (a plain list of POI names) unless `label_required`.
    """
    names: list[str] = []
    labels: list[bool] = []
    left_out = 0

    def keep(record: dict) -> None:
        nonlocal left_out
        if text_key not in record:
            raise BadRecord(f"missing key '{text_key}'")
        text = check_text(record, text_key)
        if label_required and "is_poi" not in record:
            raise BadRecord("missing key 'is_poi' (poi trains on POI names and non-POI queries)")
        is_poi = record.get("is_poi", True)
        if not isinstance(is_poi, bool):
            raise BadRecord(f"'is_poi' must be true or false, got {json_type(is_poi)}")
        if record.get("split", "train") != "train":
            left_out += 1
            return
        names.append(text)
        labels.append(is_poi)

    for _ in source.read(keep, "reading names"):
        pass
    return names, labels, left_out


def read_poi_names(source: TrainingInput, text_key: str = "text") -> tuple[list[str], dict]:
    """The training POI names of a record stream: records whose is_poi is not false and whose split, if any, is train.

    Returns the names (in input order) and the data description for the metadata.
    """
    names, labels, left_out = read_train_split(source, text_key)
    names = [name for name, is_poi in zip(names, labels) if is_poi]
    left_out += len(labels) - len(names)
    source.refuse_empty(
        len(names),
        "POI training names",
        "mlm --from-scratch reads records with text (and is_poi true, split train when present), "
        "e.g. from sembed convert --from gazetteer",
    )
    if left_out:
        log.info(f"training on {len(names)} POI names of the train split; {left_out} other records left out")
    for name in names:
        source.hash.add(name)
    return names, source.provenance(names=len(names), left_out=left_out)


def mask_one(
    input_ids: torch.Tensor, lengths: torch.Tensor, mask_id: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """POI paper stage 1: one character masked at random per name (positions 1..length, after [CLS]).

    Returns the masked ids and the labels (the true id at the masked position, ignored elsewhere).
    """
    rows = torch.arange(len(input_ids))
    positions = 1 + (torch.rand(len(input_ids), generator=generator) * lengths).long()
    labels = torch.full_like(input_ids, MLM_IGNORE)
    labels[rows, positions] = input_ids[rows, positions]
    masked = input_ids.clone()
    masked[rows, positions] = mask_id
    return masked, labels


def encode_names(tokenizer, names: list[str], max_length: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Padded ids, attention mask and the number of characters (without [CLS]/[SEP]) of each name."""
    encoded = tokenizer(names, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    attention = encoded["attention_mask"]
    return encoded["input_ids"], attention, attention.sum(1) - 2


class MaskedNames:
    """Stage 1's samples: every name `samples` times, shuffled and masked anew each epoch from (seed, epoch)."""

    def __init__(self, tokenizer, names: list[str], samples: int, batch_size: int, max_length: int, seed: int):
        self.tokenizer, self.names, self.samples = tokenizer, [n for n in names if n.strip()], samples
        self.batch_size, self.max_length, self.seed = batch_size, max_length, seed
        self.lengths = [len(n) for n in self.names]
        self.steps_per_epoch = math.ceil(len(self.names) * samples / batch_size)

    def epoch(self, epoch: int) -> Iterator[dict]:
        order = list(range(len(self.names))) * self.samples
        rng = random.Random(f"{self.seed}/{epoch}")
        rng.shuffle(order)
        generator = torch.Generator().manual_seed(self.seed * 1000 + epoch)
        for batch in length_batches(order, self.lengths, self.batch_size, rng):
            chosen = [self.names[i] for i in batch]
            ids, attention, lengths = encode_names(self.tokenizer, chosen, self.max_length)
            masked, labels = mask_one(ids, lengths.clamp(min=1), self.tokenizer.mask_token_id, generator)
            yield {"input_ids": masked, "attention_mask": attention, "labels": labels}


def mlm_loss(model, batch: dict) -> tuple[torch.Tensor, dict]:
    output = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])
    return output.loss, {"mlm": output.loss.item()}


# --- training -------------------------------------------------------------------------------------------


def train_char_bert(job: Job, settings: CharBertSettings) -> dict:
    """POI paper stage 1: a BERT trained from scratch on the POI training names of the job's input, on their
    characters (the paper's) or on a word-piece vocabulary learnt from them (--vocab); returns the metadata."""
    from transformers import BertForMaskedLM, PreTrainedTokenizerFast

    from ..artifacts import refuse_existing
    from ..text import char_tokenizer

    source, text_key, samples, vocab = job.source, job.text_key(), settings.samples, settings.vocab
    shape, schedule = CharBertShape.of(settings), Schedule.of(job, settings)
    refuse_existing(job.output, job.force)
    resolved = sentence_models.resolve_device(job.device)
    precision = precisions.resolve_training(settings.precision, resolved)
    names, data = read_poi_names(TrainingInput(source), text_key)
    tokenizer, tokens = char_tokenizer.for_names(vocab, names, settings.vocab_size, shape.max_length)
    if not isinstance(tokenizer, PreTrainedTokenizerFast):  # for_names is annotated as returning an object
        raise TypeError(f"char_tokenizer.for_names built a {type(tokenizer).__name__}, not a PreTrainedTokenizerFast")
    described = {
        "from_scratch": True,
        "tokenizer": tokens,
        "samples_per_name": samples,
        "masking": "one token at random per sample",
        **{f"model_{k}": v for k, v in asdict(shape).items()},
        **schedule.settings(),
        "text_key": text_key,
    }
    run = {"method": "mlm", "data": data, "settings": described}
    checkpoint_dir, resume_from = checkpoints.prepare(job.output, run, job.resume, job.force)
    torch.manual_seed(schedule.seed)
    random.seed(schedule.seed)
    model = BertForMaskedLM(shape.config(tokenizer))
    dataset = MaskedNames(tokenizer, names, samples, schedule.batch_size, shape.max_length, schedule.seed)
    log.info(
        f"mlm --from-scratch: {len(names)} names x {samples} samples, {len(tokenizer)} {vocab}, "
        f"{shape.layers} layers x {shape.hidden}, {dataset.steps_per_epoch} steps an epoch on {resolved} ({precision})"
    )
    summary = run_loop(
        model,
        dataset.epoch,
        dataset.steps_per_epoch,
        mlm_loss,
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
        method="mlm",
        stage="poi stage 1 (masked LM from scratch)",
        base_model=None,
        training=summary,
        seed=schedule.seed,
    )
    return finish(job, settings, model.cpu(), tokenizer, shape.max_length, metadata, checkpoint_dir)
