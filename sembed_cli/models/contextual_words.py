"""Contextualised word vectors from a BERT-style encoder, as the syntax-distillation paper represents words.

Syntax-distillation paper, section 3.2: "For BERT, we concatenate the mean of
the words' representation across all 23 layers of BERT-Large, with the
representation of layer 16, which was found by Hewitt & Manning (2019) most
indicative of syntax." Here, for an encoder of L transformer layers: the mean
of the hidden states of layers 1..L (the embedding layer, not contextual, is
left out) concatenated with layer round(2/3 * L) (16 of BERT-large's 24, 4 of
MiniLM's 6), so a word vector has 2 * hidden-size dimensions (768 for MiniLM).
A word is the mean of its word-pieces.

The encoder is the transformer of a sentence-transformers directory (the
packaged all-MiniLM-L6-v2 by default) or any Hugging Face BERT-style encoder
directory, loaded with transformers' AutoModel; nothing is ever downloaded.
`random_init` keeps the architecture and re-initialises the weights from a
seed: the paper's randomly-initialised control.

Sentences longer than the encoder's position limit are cut, at word
boundaries, into consecutive windows that each fit and are encoded on their
own (a word then sees only the words of its window). A word the tokenizer
turns into no piece at all (whitespace, characters it drops) is encoded as
the tokenizer's unknown token, so every word gets a vector.
"""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path

from ..errors import SembedError
from . import sentence_models
from .transformer_loading import loaded_window, masked_lm_report_left_out, offline

log = logging.getLogger(__name__)

RECIPE = "concat(mean of transformer layers 1..L, layer round(2/3 * L)); word = mean of its word-pieces"


def syntax_layer(num_layers: int) -> int:
    """The single layer the representation adds: round(2/3 * L), layer 16 of 24 as in the paper (Hewitt & Manning)."""
    return max(1, min(num_layers, round(2 * num_layers / 3)))


def transformer_path(model: str) -> Path:
    """The directory of the transformer itself: a sentence-transformers model's Transformer module, or `model`."""
    root = sentence_models.resolve_path(model)
    modules = root / "modules.json"
    if modules.exists():
        try:
            entries = json.loads(modules.read_text(encoding="utf-8"))
            for entry in entries:
                if str(entry.get("type", "")).endswith("Transformer"):
                    path = root / entry.get("path", "")
                    if (path / "config.json").exists():
                        return path
        except (OSError, ValueError, AttributeError, TypeError):
            pass
    if not (root / "config.json").exists():
        raise SembedError(
            f"no transformer in '{model}' (no config.json, and no Transformer module in modules.json)",
            sentence_models.MODEL_HINT,
        )
    return root


class WordEncoder:
    """One vector per word of pre-tokenised sentences: see the module's docstring for the recipe."""

    def __init__(
        self, model, tokenizer, *, name: str, path: Path, layer: int, random_init: bool, seed: int, device: str
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.path = path
        self.layer = layer
        self.random_init = random_init
        self.seed = seed
        self.device = device
        self.num_layers = model.config.num_hidden_layers
        self.dimension = 2 * model.config.hidden_size
        self.max_length = loaded_window(model, tokenizer)
        self.special = len(tokenizer(["x"], is_split_into_words=True)["input_ids"]) - len(
            tokenizer(["x"], is_split_into_words=True, add_special_tokens=False)["input_ids"]
        )  # [CLS] + [SEP]: 2

    @classmethod
    def open(
        cls,
        model: str = sentence_models.DEFAULT_MODEL,
        *,
        random_init: bool = False,
        seed: int = 0,
        device: str = "auto",
        layer: int | None = None,
    ) -> WordEncoder:
        """The encoder of `model` (packaged name or path); `random_init`: its architecture with weights from `seed`.
        `layer` overrides round(2/3 * L) (from_description uses it to repeat a recorded recipe)."""
        path = transformer_path(model)
        resolved = sentence_models.resolve_device(device)
        offline()
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path))
            if random_init:
                config = AutoConfig.from_pretrained(str(path))
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(seed)
                    encoder = AutoModel.from_config(config)
            else:
                with masked_lm_report_left_out():
                    encoder = AutoModel.from_pretrained(str(path))
        except (OSError, ValueError) as e:
            raise SembedError(f"cannot load the word encoder at '{path}': {e}", sentence_models.MODEL_HINT) from None
        if not getattr(tokenizer, "is_fast", False):
            raise SembedError(
                f"the tokenizer at '{path}' is not a fast tokenizer; word alignment needs one",
                "save the model with a tokenizer.json",
            )
        encoder.to(device=resolved, dtype=torch.float32).eval()
        num_layers = encoder.config.num_hidden_layers
        chosen = syntax_layer(num_layers) if layer is None else int(layer)
        if not 1 <= chosen <= num_layers:
            raise SembedError(f"layer {chosen} asked for, but the encoder at '{path}' has {num_layers} layers")
        return cls(
            encoder, tokenizer, name=model, path=path, layer=chosen, random_init=random_init, seed=seed, device=resolved
        )

    def describe(self) -> dict:
        """JSON-able: enough to open the same encoder again (`from_description`)."""
        return {
            "model": str(self.path),
            "model_name": self.name,
            "recipe": RECIPE,
            "num_layers": self.num_layers,
            "mean_layers": [1, self.num_layers],
            "layer": self.layer,
            "dimension": self.dimension,
            "random_init": self.random_init,
            "seed": self.seed,
        }

    @classmethod
    def from_description(cls, description: dict, device: str = "auto") -> WordEncoder:
        """The encoder `describe()` described: the packaged model by name, else the recorded path, else the name."""
        try:
            name, path = description.get("model_name"), description.get("model")
            random_init = bool(description.get("random_init", False))
            seed = int(description.get("seed", 0))
            layer = description.get("layer")
        except (AttributeError, TypeError, ValueError):
            raise SembedError(f"unusable word-encoder description: {description!r}") from None
        if name in sentence_models.PACKAGED or not path or not Path(path).is_dir():
            model = name or path
        else:
            model = path
        if not model:
            raise SembedError(f"the word-encoder description names no model: {description!r}")
        encoder = cls.open(model, random_init=random_init, seed=seed, device=device, layer=layer)
        expected = description.get("dimension")
        if expected is not None and expected != encoder.dimension:
            raise SembedError(
                f"the word encoder at '{model}' gives {encoder.dimension}-d vectors, the description says {expected}-d"
            )
        return encoder

    # -- encoding -------------------------------------------------------------------------------------------------

    def _pieces(self, words: list[str]) -> tuple[list[int], list[int]]:
        """input ids (with special tokens) and, per position, the word index (-1 for special tokens)."""
        encoding = self.tokenizer(
            words, is_split_into_words=True, add_special_tokens=True, truncation=False, verbose=False
        )
        ids = encoding["input_ids"]
        word_ids = [-1 if w is None else w for w in encoding.word_ids()]
        return ids, word_ids

    def _units(self, words: list[str]) -> list[tuple[list[int], list[int], int]]:
        """The sentence as (ids, word ids, first word) windows that fit the position limit."""
        ids, word_ids = self._pieces(words)
        present = set(word_ids)
        if len(present - {-1}) < len(words):  # words with no piece: encode them as the unknown token
            unknown = self.tokenizer.unk_token or "[UNK]"
            words = [w if i in present else unknown for i, w in enumerate(words)]
            ids, word_ids = self._pieces(words)
        if len(ids) <= self.max_length:
            return [(ids, word_ids, 0)]
        counts = [0] * len(words)
        for w in word_ids:
            if w >= 0:
                counts[w] += 1
        room = self.max_length - self.special
        units, start, used = [], 0, 0
        for i, n in enumerate(counts):
            if n > room:
                raise SembedError(
                    f"word {i} ({words[i][:40]!r}) has {n} word-pieces, more than the encoder's limit "
                    f"of {self.max_length} positions"
                )
            if used + n > room:
                units.append(start)
                start, used = i, 0
            used += n
        units.append(start)
        bounds = units + [len(words)]
        windows = []
        for a, b in itertools.pairwise(bounds):
            window_ids, window_word_ids = self._pieces(words[a:b])
            windows.append((window_ids, window_word_ids, a))
        log.debug("a %d-word sentence of %d pieces was encoded in %d windows", len(words), len(ids), len(windows))
        return windows

    def encode(self, sentences: list[list[str]], batch_size: int = 32) -> list:
        """One float32 CPU tensor (len(words), dimension) per sentence of pre-tokenised words."""
        import torch

        units: list[tuple[int, list[int], list[int], int]] = []  # (sentence index, ids, word ids, first word)
        for s, words in enumerate(sentences):
            if not words:
                continue
            units.extend((s, ids, word_ids, first) for ids, word_ids, first in self._units(list(words)))
        out = [torch.zeros(len(words), self.dimension) for words in sentences]
        order = sorted(range(len(units)), key=lambda u: -len(units[u][1]))  # similar lengths pad little
        pad = self.tokenizer.pad_token_id or 0
        with torch.inference_mode():
            for b in range(0, len(order), batch_size):
                batch = [units[u] for u in order[b : b + batch_size]]
                width = max(len(ids) for _, ids, _, _ in batch)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                word_index = torch.full((len(batch), width), -1, dtype=torch.long)
                for row, (_, ids, word_ids, _) in enumerate(batch):
                    input_ids[row, : len(ids)] = torch.tensor(ids)
                    attention[row, : len(ids)] = 1
                    word_index[row, : len(ids)] = torch.tensor(word_ids)
                outputs = self.model(
                    input_ids=input_ids.to(self.device),
                    attention_mask=attention.to(self.device),
                    output_hidden_states=True,
                )
                hidden = outputs.hidden_states  # L + 1: the embedding layer, then each transformer layer
                mixed = torch.cat([torch.stack(hidden[1:]).mean(0), hidden[self.layer]], dim=-1).float().cpu()
                for row, (s, ids, _word_ids, first) in enumerate(batch):
                    # word = mean of its pieces, as a (words x pieces) averaging matrix: a small matrix product
                    # (index_add_ is far slower on the CPU)
                    index = word_index[row, : len(ids)]
                    positions = torch.nonzero(index >= 0).squeeze(1)
                    n = int(index[positions].max()) + 1
                    average = torch.zeros(n, len(ids))
                    average[index[positions], positions] = 1.0
                    average /= average.sum(1, keepdim=True).clamp(min=1.0)
                    out[s][first : first + n] = average @ mixed[row, : len(ids)]
        return out
