"""Loading a Hugging Face masked-LM directory, for every command that predicts masked words, and `MaskedLM`, which
asks one for whole-word candidates at a masked word.

`taste` (the POI paper's character test), `gensets` (the syntax-distillation
paper's substitutions) and the trainers that go on from a masked-LM (`train
--method poi`'s stage 2) all load one here: never downloaded, refused with a
one-line error when the directory is not a masked-LM or its head is missing
(transformers would fill a missing head with random weights).

`MaskedLM` is what `gensets` runs for the structural sets (`text/structural_sets.py`, the syntax-distillation
paper's section 3.1, holds the sets and their rules): the candidates are the words those rules let replace a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import SembedError
from ..text.structural_sets import Sentence, candidate_word
from . import sentence_models
from .precision import cast
from .transformer_loading import loaded_window

WORD_START = ("Ġ", "▁")  # how byte-level BPE and SentencePiece vocabularies mark a word's first piece


def load_masked_lm(model: str, device: str = "cpu", precision: str = "fp32"):
    """(model, tokenizer) of a Hugging Face masked-LM directory, on `device` in `precision` (fp32, bf16, fp16; see
    sembed_cli.models.precision); never downloaded."""
    path = Path(model).expanduser()
    if not (path / "config.json").exists():
        raise SembedError(
            f"no masked-LM directory at '{model}'",
            "pass --model with a directory `sembed train --method mlm` wrote (or any Hugging Face masked-LM directory)",
        )
    sentence_models.offline()
    from safetensors import SafetensorError
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    try:
        with sentence_models.library_report_off():  # missing weights are refused below
            tokenizer = AutoTokenizer.from_pretrained(str(path))
            lm, loading = AutoModelForMaskedLM.from_pretrained(str(path), output_loading_info=True)
    except (OSError, ValueError, SafetensorError) as e:
        raise SembedError(f"cannot load the masked-LM at '{path}': {e}") from None
    missing = sorted(loading["missing_keys"])
    if missing:  # transformers fills them with random weights: the guesses would be noise
        raise SembedError(
            f"the model at '{path}' has no masked-LM head (missing {', '.join(missing[:3])}"
            f"{', ...' if len(missing) > 3 else ''})",
            "pass a masked-LM directory, e.g. one `sembed train --method mlm` wrote",
        )
    if tokenizer.mask_token_id is None:
        raise SembedError(f"the tokenizer at '{path}' has no mask token")
    return cast(lm.to(device), precision).eval(), tokenizer


class MaskedLM:
    """A Hugging Face masked-LM asked for whole-word candidates at one masked word of many sentences at once."""

    def __init__(self, model, tokenizer, device: str = "cpu", rows_per_forward: int = 128):
        import torch

        self.model, self.tokenizer, self.device = model, tokenizer, device
        self.rows_per_forward = rows_per_forward
        self.uncased = bool(getattr(tokenizer, "do_lower_case", False) or tokenizer.init_kwargs.get("do_lower_case"))
        size = model.get_output_embeddings().weight.shape[0]
        entries = tokenizer.convert_ids_to_tokens(list(range(min(size, len(tokenizer)))))
        wordpiece = any(e.startswith("##") for e in entries)
        special = set(tokenizer.all_special_ids)
        self.texts: list[str] = []
        eligible = torch.zeros(size, dtype=torch.bool)
        for n, entry in enumerate(entries):
            if wordpiece:
                text = "" if entry.startswith("##") else entry
            else:
                text = entry[1:] if entry.startswith(WORD_START) else ""
            self.texts.append(text)
            eligible[n] = n not in special and candidate_word(text)
        self.texts += [""] * (size - len(self.texts))
        self.blocked = (~eligible).to(device)
        self.max_length = max_length(model, tokenizer)
        self.wordpiece = wordpiece
        # the special tokens around a sentence ([CLS] ... [SEP]), as the tokenizer adds them
        probe = tokenizer(tokenizer.mask_token)["input_ids"]
        at = probe.index(tokenizer.mask_token_id)
        self.before, self.after = probe[:at], probe[at + 1 :]
        # BERT-style models: run the encoder, then the head on the masked positions only (the head's vocabulary
        # projection would otherwise cost as much as the encoder, for logits nobody reads)
        base = getattr(model, getattr(model, "base_model_prefix", ""), None)
        head = getattr(model, "cls", None) or getattr(model, "lm_head", None)
        self.split = (base, head) if base is not None and head is not None else None
        self._pieces: dict[tuple[str, bool], list[int]] = {}

    @classmethod
    def load(cls, path: Path, device: str = "cpu", precision: str = "fp32") -> MaskedLM:
        model, tokenizer = load_masked_lm(str(path), device, precision)
        return cls(model, tokenizer, device)

    def pieces(self, word: str, spaced: bool) -> list[int]:
        key = (word, spaced)
        found = self._pieces.get(key)
        if found is None:
            if len(self._pieces) > 500_000:
                self._pieces.clear()
            text = " " + word if spaced and not self.wordpiece else word
            found = self._pieces[key] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return found

    def encode(self, words: Sequence[str], spaces: Sequence[bool], masked: int | None = None) -> tuple[list[int], int]:
        """Input ids with special tokens, and where the mask is (-1 without one); a masked word is one [MASK]."""
        ids: list[int] = []
        where = -1
        for n, word in enumerate(words):
            spaced = n > 0 and spaces[n - 1]
            if n == masked:
                where = len(ids)
                ids.append(self.tokenizer.mask_token_id)
            else:
                ids.extend(self.pieces(word, spaced))
        return self.before + ids + self.after, where + len(self.before) if where >= 0 else -1

    def length(self, sentence: Sentence) -> int:
        return len(self.encode(sentence.words, sentence.spaces)[0])

    def candidates(self, rows: Sequence[tuple[Sequence[str], Sequence[bool], int]], top: int) -> list[list[str]]:
        """For each (words, spaces, i): the `top` best whole-word predictions for word i (masked), best first,
        without the word itself."""
        import torch

        encoded = [self.encode(words, spaces, i) for words, spaces, i in rows]
        found: list[list[str]] = [[] for _ in rows]
        order = sorted(range(len(rows)), key=lambda n: len(encoded[n][0]))  # little padding in each forward
        for start in range(0, len(order), self.rows_per_forward):
            chunk = order[start : start + self.rows_per_forward]
            logits = self.mask_logits([encoded[n][0] for n in chunk], [encoded[n][1] for n in chunk])
            logits = logits.masked_fill(self.blocked, float("-inf"))
            best = torch.topk(logits, min(top + 1, logits.shape[1]), dim=1)
            usable = torch.isfinite(best.values).tolist()  # fewer eligible entries than asked for
            for n, ids, ok in zip(chunk, best.indices.tolist(), usable):
                own = rows[n][0][rows[n][2]].lower()
                words = [self.texts[i] for i, good in zip(ids, ok) if good]
                found[n] = [w for w in words if w.lower() != own][:top]
        return found

    def mask_logits(self, ids: list[list[int]], where: list[int]):
        """(rows, vocabulary) logits at the masked position of each row."""
        import torch

        width = max(len(row) for row in ids)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(ids), width), pad, dtype=torch.long)
        attention = torch.zeros((len(ids), width), dtype=torch.long)
        for n, row in enumerate(ids):
            input_ids[n, : len(row)] = torch.tensor(row)
            attention[n, : len(row)] = 1
        input_ids, attention = input_ids.to(self.device), attention.to(self.device)
        rows = torch.arange(len(ids), device=self.device)
        position = torch.tensor(where, device=self.device)
        with torch.inference_mode():
            if self.split is not None:
                base, head = self.split
                hidden = base(input_ids=input_ids, attention_mask=attention).last_hidden_state
                return head(hidden[rows, position]).float()
            return self.model(input_ids=input_ids, attention_mask=attention).logits[rows, position].float()


def max_length(model, tokenizer) -> int:
    """Word pieces the model takes, special tokens included."""
    return loaded_window(model, tokenizer)
