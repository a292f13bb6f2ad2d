"""`train --method mlm`: masked-language-model training, written as a normal Hugging Face masked-LM directory.

Two uses (SPEC, train): (a) adapting an encoder without a prediction head
into an English masked-LM on prose, for `gensets` (issue 6: not built yet);
(b) `--from-scratch`: the POI paper's stage 1 (Zhang et al., "BERT has a
Mouth, and it can Taste", section 4, "Training BERT Model"): a small
character-level BERT trained from scratch on POI names only, one character
masked at random in each sample, each name sampled 10 times.

The loop is a plain torch loop, shared with stage 2 (`poi_triplet`): the
data of an epoch (order and masked positions) follows from the seed and the
epoch number alone, so a checkpoint (weights, optimiser, scheduler, RNG
states, step) is enough for `--resume` to end where an uninterrupted run ends.
The model directory is what `AutoModelForMaskedLM` / `AutoTokenizer` load,
and also a sentence-transformers directory (the encoder in 0_Transformer, mean
pooling, normalisation: `SentenceTransformer(DIR)`, `sembed embed --model
DIR`), with `sembed.json`.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from .. import console, signals
from ..models import precision as precisions, sentence_models
from ..artifacts import ContentHash, building, describe, write_metadata
from ..errors import BadRecord, SembedError
from ..io import RecordSource, check_text, json_type, write_json_atomic
from ..models.precision import autocast
from . import checkpoints
from .methods.mlm import FROM_SCRATCH, Settings as MlmSettings  # the defaults, once, with the train options

log = logging.getLogger(__name__)

COMMAND = "sembed train"
MLM_IGNORE = -100  # positions without a masked-LM label (torch's CrossEntropyLoss ignore_index)


@dataclass(frozen=True)
class CharBertShape:
    """The small BERT of the POI paper: 4 to 7 layers (it found no difference; hidden sizes are ours, for a CPU)."""

    layers: int = MlmSettings.layers
    hidden: int = MlmSettings.hidden
    heads: int = 4
    max_length: int = 48  # characters, [CLS] and [SEP] included; longer names are cut
    dropout: float = 0.1  # the paper's attention and hidden dropout

    def config(self, tokenizer):
        from transformers import BertConfig

        return BertConfig(vocab_size=len(tokenizer), hidden_size=self.hidden, num_hidden_layers=self.layers,
                          num_attention_heads=self.heads, intermediate_size=4 * self.hidden,
                          max_position_embeddings=self.max_length, hidden_dropout_prob=self.dropout,
                          attention_probs_dropout_prob=self.dropout, pad_token_id=tokenizer.pad_token_id)


@dataclass(frozen=True)
class LoopSchedule:
    """Optimisation of the plain loop: AdamW, linear warm-up, then linear decay (the paper: polynomial decay, power 1)."""

    epochs: int = FROM_SCRATCH.epochs
    batch_size: int = FROM_SCRATCH.batch_size  # the paper's
    learning_rate: float = FROM_SCRATCH.lr
    warmup_ratio: float = FROM_SCRATCH.warmup
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    max_steps: int | None = None
    checkpoint_steps: int = 0  # 0: at each epoch's end only
    seed: int = 42

    def settings(self) -> dict:
        return {"optimizer": "AdamW", "scheduler": "linear warm-up, then linear decay", **asdict(self)}


# --- data ----------------------------------------------------------------------------------------------

def read_train_split(source: RecordSource, text_key: str = "text", label_required: bool = False
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

    for _ in console.progress(source.checked(keep), "reading names"):
        pass
    summary = source.summary()
    if summary:
        log.warning(summary)
    return names, labels, left_out


def read_poi_names(source: RecordSource, text_key: str = "text") -> tuple[list[str], dict]:
    """The training POI names of a record stream: records whose is_poi is not false and whose split, if any, is train.

    Returns the names (in input order) and the data description for the metadata.
    """
    names, labels, left_out = read_train_split(source, text_key)
    names = [name for name, is_poi in zip(names, labels) if is_poi]
    left_out += len(labels) - len(names)
    if not names:
        raise SembedError(f"no POI training names in {source.rejects.name}",
                          "mlm --from-scratch reads records with text (and is_poi true, split train when present), "
                          "e.g. from sembed convert --from gazetteer")
    if left_out:
        log.info(f"training on {len(names)} POI names of the train split; {left_out} other records left out")
    digest = ContentHash()
    for name in names:
        digest.add(name)
    return names, {"input": source.rejects.name, "names": len(names), "left_out": left_out,
                   "skipped": len(source.rejects.skipped), "sha256": digest.hexdigest()}


def mask_one(input_ids: torch.Tensor, lengths: torch.Tensor, mask_id: int,
             generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
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


BUCKET_BATCHES = 50  # batches sorted by length together: less padding, order still random


def length_batches(order: list[int], lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """`order` cut into batches of names of similar length (within windows of BUCKET_BATCHES batches), shuffled."""
    window = batch_size * BUCKET_BATCHES
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda i: lengths[i])
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def mlm_loss(model, batch: dict) -> tuple[torch.Tensor, dict]:
    output = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])
    return output.loss, {"mlm": output.loss.item()}


# --- the loop ------------------------------------------------------------------------------------------

STATE_FILE = checkpoints.STATE_FILE  # written last: a checkpoint with it is complete


def _save_checkpoint(directory: Path, step: int, model, optimizer, scheduler) -> int:
    """A checkpoint at `step`, the newest two kept; returns `step`."""
    path = directory / f"checkpoint-{step}"
    path.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "torch_rng": torch.get_rng_state(), "python_rng": random.getstate()}, path / "state.pt")
    write_json_atomic(path / STATE_FILE, {"global_step": step})
    kept = sorted((checkpoints.step_of(p), p) for p in directory.iterdir() if checkpoints.CHECKPOINT.fullmatch(p.name))
    for _, old in kept[:-checkpoints.KEEP]:
        import shutil

        shutil.rmtree(old, ignore_errors=True)
    return step


def _load_checkpoint(path: Path, model, optimizer, scheduler) -> int:
    state = torch.load(path / "state.pt", map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    random.setstate(state["python_rng"])
    return checkpoints.step_of(path)


def to_device(batch: dict, device: str) -> dict:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def parameter_groups(model, weight_decay: float, learning_rate: float,
                     lr_scale: Callable[[str], float] | None = None) -> list[dict]:
    """AdamW groups: weight decay except on biases and LayerNorms; each parameter at learning_rate * lr_scale(name)."""
    groups: dict[tuple[bool, float], list] = {}
    for name, parameter in model.named_parameters():  # a tied weight once, under its first name
        exempt = any(x in name for x in ("bias", "LayerNorm"))
        groups.setdefault((exempt, lr_scale(name) if lr_scale else 1.0), []).append(parameter)
    return [{"params": params, "weight_decay": 0.0 if exempt else weight_decay, "lr": learning_rate * scale}
            for (exempt, scale), params in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[0][1]))]


def run_loop(model, epoch_batches: Callable[[int], Iterable[dict]], steps_per_epoch: int,
             loss: Callable[[object, dict], tuple[torch.Tensor, dict]], schedule: LoopSchedule, device: str,
             checkpoint_dir: Path, resume_from: Path | None, lr_scale: Callable[[str], float] | None = None,
             log_steps: int = 0, precision: str = "fp32") -> dict:
    """Train `model` with `loss` over the epochs; checkpoints in `checkpoint_dir`; returns a summary.

    `lr_scale(name)`, when given, multiplies the schedule's learning rate for that parameter (one warm-up and decay
    for all). With `log_steps`, a line with the mean losses since the last one goes to stderr every that many steps
    (long epochs, logs that are not a terminal). `precision` (fp32 or bf16, precision.resolve_training) is the
    forward pass's: bf16 autocast keeps the weights, gradients and optimiser in fp32. Like the device it is not part
    of the run's fingerprint: a run may resume in another precision.
    """
    from transformers import get_linear_schedule_with_warmup
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # its "Writing model shards" bar is noise on our stderr

    total = steps_per_epoch * schedule.epochs
    if schedule.max_steps is not None:
        total = min(total, schedule.max_steps)
    optimizer = torch.optim.AdamW(parameter_groups(model, schedule.weight_decay, schedule.learning_rate, lr_scale),
                                  lr=schedule.learning_rate)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(schedule.warmup_ratio * total), total)
    step = _load_checkpoint(resume_from, model, optimizer, scheduler) if resume_from else 0
    model.to(device).train()
    started, losses = time.perf_counter(), {}
    recent: dict[str, float] = {}  # losses since the last log line
    recent_steps = 0
    saved = step
    try:
        while step < total:
            epoch, skip = divmod(step, steps_per_epoch)
            running: dict[str, float] = {}
            count = 0
            for index, batch in enumerate(console.progress(epoch_batches(epoch), f"epoch {epoch + 1}", steps_per_epoch,
                                                           "steps")):
                if index < skip:
                    continue  # done before the interruption: the same batches, drawn again from (seed, epoch)
                with signals.deferred():  # a step whole, or not at all: a checkpoint at `step` is then exact
                    with autocast(precision, device):
                        value, parts = loss(model, to_device(batch, device))
                    value.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), schedule.max_grad_norm)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                    step += 1
                count += 1
                for name, v in parts.items():
                    running[name] = running.get(name, 0.0) + v
                    recent[name] = recent.get(name, 0.0) + v
                recent_steps += 1
                if log_steps and step % log_steps == 0:
                    log.info(f"step {step}/{total}: mean loss " + ", ".join(f"{k} {v / recent_steps:.4f}"
                                                                            for k, v in recent.items()) +
                             f" ({time.perf_counter() - started:.0f} s)")
                    recent, recent_steps = {}, 0
                if schedule.checkpoint_steps and step % schedule.checkpoint_steps == 0 and step < total:
                    saved = _save_checkpoint(checkpoint_dir, step, model, optimizer, scheduler)
                if step >= total:
                    break
            losses = {name: round(v / max(count, 1), 4) for name, v in running.items()}
            log.info(f"epoch {epoch + 1}: step {step}/{total}, mean loss " +
                     ", ".join(f"{k} {v:.4f}" for k, v in losses.items()))
            if step < total:
                saved = _save_checkpoint(checkpoint_dir, step, model, optimizer, scheduler)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP (signals.py): keep the steps done
        if step > saved:
            _save_checkpoint(checkpoint_dir, step, model, optimizer, scheduler)
        log.warning(f"stopped at step {step}/{total}; checkpoint in {checkpoint_dir}: the same command with "
                    "--resume continues")
        raise
    model.eval()
    return {"steps": total, "final_epoch_losses": losses, "seconds": round(time.perf_counter() - started, 1),
            "precision": precision}


# --- the model directory -------------------------------------------------------------------------------

def save_model_directory(directory: Path, model, tokenizer, max_length: int) -> None:
    """A Hugging Face masked-LM directory that is also a sentence-transformers one (mean pooling, normalised).

    The root holds the masked-LM (`AutoModelForMaskedLM.from_pretrained(DIR)` tastes names); the
    sentence-transformers modules (`SentenceTransformer(DIR)` embeds them) hold a copy of its encoder, without
    the prediction head, in 0_Transformer, so each library loads exactly the weights it expects (a few MB twice).
    One model thus serves `taste`, `embed` and `index`.
    """
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    encoder = directory / "0_Transformer"
    model.bert.save_pretrained(encoder)
    tokenizer.save_pretrained(encoder)
    # no pooler: the masked-LM has none, and mean pooling needs none (without this it would be made up at random)
    write_json_atomic(encoder / "sentence_bert_config.json", {"max_seq_length": max_length, "do_lower_case": False,
                                                             "model_args": {"add_pooling_layer": False}})
    hidden = model.config.hidden_size
    modules = [{"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    write_json_atomic(directory / "modules.json", modules)
    (directory / "1_Pooling").mkdir()
    write_json_atomic(directory / "1_Pooling" / "config.json",
                      {"word_embedding_dimension": hidden, "pooling_mode_cls_token": False,
                       "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                       "pooling_mode_mean_sqrt_len_tokens": False})
    (directory / "2_Normalize").mkdir()


def finish(output: Path, model, tokenizer, max_length: int, metadata: dict, force: bool, checkpoint_dir: Path,
           extra: Callable[[Path], None] | None = None) -> dict:
    """Write the model directory atomically (`extra(directory)` adds files of its own), then drop the checkpoints."""
    with building(output, force) as work:
        save_model_directory(work, model, tokenizer, max_length)
        if extra is not None:
            extra(work)
        write_metadata(work, metadata, sentence_models.METADATA_FILE)
    checkpoints.remove(checkpoint_dir)
    log.info(f"wrote {output}")
    return metadata


# --- stage 1 -------------------------------------------------------------------------------------------

def train_from_scratch(source: RecordSource, output: Path, *, shape: CharBertShape = CharBertShape(),
                       schedule: LoopSchedule = LoopSchedule(), samples: int = MlmSettings.samples,
                       vocab: str = MlmSettings.vocab, vocab_size: int = MlmSettings.vocab_size,
                       text_key: str = "text", device: str = "auto", precision: str = "fp32", resume: bool = False,
                       force: bool = False) -> dict:
    """POI paper stage 1: a BERT trained from scratch on the POI training names of `source`, on their characters
    (the paper's) or on a word-piece vocabulary learnt from them (`vocab`)."""
    from transformers import BertForMaskedLM

    from ..artifacts import refuse_existing
    from ..text import char_tokenizer

    refuse_existing(output, force)
    resolved = sentence_models.resolve_device(device)
    precision = precisions.resolve_training(precision, resolved)
    names, data = read_poi_names(source, text_key)
    tokenizer, tokens = char_tokenizer.for_names(vocab, names, vocab_size, shape.max_length)
    settings = {"from_scratch": True, "tokenizer": tokens, "samples_per_name": samples,
                "masking": "one token at random per sample",
                **{f"model_{k}": v for k, v in asdict(shape).items()}, **schedule.settings(), "text_key": text_key}
    run = {"method": "mlm", "data": data, "settings": settings}
    checkpoint_dir, resume_from = checkpoints.prepare(output, run, resume, force)
    torch.manual_seed(schedule.seed)
    random.seed(schedule.seed)
    model = BertForMaskedLM(shape.config(tokenizer))
    dataset = MaskedNames(tokenizer, names, samples, schedule.batch_size, shape.max_length, schedule.seed)
    log.info(f"mlm --from-scratch: {len(names)} names x {samples} samples, {len(tokenizer)} {vocab}, "
             f"{shape.layers} layers x {shape.hidden}, {dataset.steps_per_epoch} steps an epoch on {resolved} ({precision})")
    summary = run_loop(model, dataset.epoch, dataset.steps_per_epoch, mlm_loss, schedule, resolved, checkpoint_dir,
                       resume_from, precision=precision)
    metadata = describe(COMMAND, data, settings, method="mlm", stage="poi stage 1 (masked LM from scratch)",
                        base_model=None, training=summary, seed=schedule.seed)
    return finish(output, model.cpu(), tokenizer, shape.max_length, metadata, force, checkpoint_dir)
