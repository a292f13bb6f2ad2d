"""Let BERT taste: how many of a name's tokens a masked-LM trained on POI names guesses back.

Zhang et al., "BERT has a Mouth, and it can Taste" (section 4, "Let BERT
taste"): for a name of n characters, mask each character in turn, take the
masked-LM's top-k predictions (k = 10) at the masked position, count a hit
when the true character is among them; score = hits / n, and the name is a
POI when the score reaches a threshold (0.5, section 5). A model trained only
on POI names "has a good taste only for POIs".

Beside the paper's hit ratio, the probability the model gives the true
token at its masked position: taste_prob = exp(mean_i log p(t_i | name with
t_i masked)), the geometric mean over the n tokens, in [0, 1]: with about
40 letters nearly every true character is a top-10 guess, so the hit ratio
cannot rank names by how sure the model is. On English names neither score
tells a city from a word; the k-NN vote of `indexes/neighbour_vote.py` does,
and `indexes/taste_vote.py` adds it where --neighbours is given (figures: the
docs' POI results).

Batched: every masked copy of every name of a batch (one copy per token: a
character for a character model, a word-piece for a word-piece model) goes
through the model together, in chunks of about `max_tokens` tokens (names
taken shortest first, each chunk padded to its own longest), and only the
masked positions go through the prediction head and are ranked. The encoder
may run in bf16 (`sembed taste --precision`); the head then runs in fp32 on
its output, so that near-tied predictions are not left to bf16's rounding.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch

from .transformer_loading import loaded_window

DEFAULT_TOP_K = 10
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class Taste:
    hits: int
    length: int
    log_probability: float  # sum over the tokens of log p(true token | its masked copy)

    @property
    def score(self) -> float:
        """The paper's taste: hits / length."""
        return self.hits / self.length if self.length else 0.0

    @property
    def probability(self) -> float:
        """The geometric mean probability of the true tokens, exp(log_probability / length); 0 for no token."""
        return math.exp(self.log_probability / self.length) if self.length else 0.0


class Taster:
    """Tastes names with a masked-LM and its tokenizer (see the module docstring)."""

    def __init__(
        self, model, tokenizer, top_k: int = DEFAULT_TOP_K, max_length: int | None = None, max_tokens: int = 32768
    ):
        self.model, self.tokenizer, self.top_k = model, tokenizer, top_k
        self.max_length = max_length or loaded_window(model, tokenizer)
        self.max_tokens = max_tokens
        self.device = next(model.parameters()).device
        self.special = torch.tensor(sorted(set(tokenizer.all_special_ids)))
        # BERT-style masked-LMs (BertForMaskedLM: .bert, .cls) can rank the masked positions alone
        self.encoder: torch.nn.Module | None = getattr(model, "bert", None)
        head = getattr(model, "cls", None) if self.encoder is not None else None
        half = next(model.parameters()).dtype != torch.float32
        self.head: torch.nn.Module | None = copy.deepcopy(head).float() if head is not None and half else head

    def _encode(self, texts: list[str]):
        encoded = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        ids, attention = encoded["input_ids"], encoded["attention_mask"]
        maskable = attention.bool() & ~torch.isin(ids, self.special)
        return ids, attention, maskable

    @torch.inference_mode()
    def taste(self, texts: list[str]) -> list[Taste]:
        """Hits and length of each text: all masked copies of all texts in as few forward passes as fit.

        Texts are taken shortest first and each chunk of copies is padded only to its own longest, so
        short names do not pay for the longest of the batch.
        """
        if not texts:
            return []
        encoded = self.tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]
        special = set(self.special.tolist())
        hits = torch.zeros(len(texts), dtype=torch.long)
        log_probabilities = torch.zeros(len(texts), dtype=torch.float64)
        lengths = [sum(token not in special for token in ids) for ids in encoded]
        chunk: list[int] = []
        for i in sorted(range(len(texts)), key=lambda i: len(encoded[i])):
            if chunk and (sum(lengths[j] for j in chunk) + lengths[i]) * len(encoded[i]) > self.max_tokens:
                self._taste_chunk([encoded[j] for j in chunk], chunk, hits, log_probabilities)
                chunk = []
            chunk.append(i)
        if chunk:
            self._taste_chunk([encoded[j] for j in chunk], chunk, hits, log_probabilities)
        return [Taste(int(h), n, float(p)) for h, n, p in zip(hits, lengths, log_probabilities)]

    def _taste_chunk(
        self, encoded: list[list[int]], owners: list[int], hits: torch.Tensor, log_probabilities: torch.Tensor
    ) -> None:
        """Every masked copy of the `encoded` texts in one forward pass; hits and log-probabilities added to
        `hits` and `log_probabilities` at `owners`."""
        width = max(len(ids) for ids in encoded)
        ids = torch.full((len(encoded), width), self.tokenizer.pad_token_id or 0, dtype=torch.long)
        attention = torch.zeros((len(encoded), width), dtype=torch.long)
        for row, tokens in enumerate(encoded):
            ids[row, : len(tokens)] = torch.tensor(tokens)
            attention[row, : len(tokens)] = 1
        maskable = attention.bool() & ~torch.isin(ids, self.special)
        rows, positions = maskable.nonzero(as_tuple=True)  # one masked copy per (text, position)
        if not len(rows):
            return
        copies = ids[rows]
        truth = copies[torch.arange(len(rows)), positions]
        copies[torch.arange(len(rows)), positions] = self.tokenizer.mask_token_id
        found, log_probability = self._guesses(copies, attention[rows], positions, truth)
        owner = torch.tensor(owners)[rows]
        hits.index_add_(0, owner, found.long())
        log_probabilities.index_add_(0, owner, log_probability.double())

    def _guesses(
        self, copies: torch.Tensor, attention: torch.Tensor, positions: torch.Tensor, truth: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """For each masked copy: is the true token among the top k, and its log-probability."""
        rows = torch.arange(len(copies), device=self.device)
        if self.encoder is not None and self.head is not None:  # only the masked positions through the head
            hidden = self.encoder(input_ids=copies.to(self.device), attention_mask=attention.to(self.device))[0]
            masked = self.head(hidden[rows, positions.to(self.device)].float())
        else:
            logits = self.model(input_ids=copies.to(self.device), attention_mask=attention.to(self.device)).logits
            masked = logits[rows, positions.to(self.device)].float()
        truth = truth.to(self.device)
        top = masked.topk(min(self.top_k, masked.shape[-1]), dim=-1).indices
        log_probability = masked.log_softmax(-1).gather(1, truth.unsqueeze(1)).squeeze(1)
        return (top == truth.unsqueeze(1)).any(1).cpu(), log_probability.cpu()

    @torch.inference_mode()
    def taste_one_copy_at_a_time(self, text: str) -> Taste:
        """The unbatched reference: one forward pass per masked copy (what the benchmark compares against)."""
        ids, attention, maskable = self._encode([text])
        hits, log_probability = 0, 0.0
        for position in maskable[0].nonzero(as_tuple=True)[0]:
            copy = ids.clone()
            truth = copy[0, position].clone()
            copy[0, position] = self.tokenizer.mask_token_id
            found, logp = self._guesses(copy, attention, position.view(1), truth.view(1))
            hits, log_probability = hits + int(found[0]), log_probability + float(logp[0])
        return Taste(hits, int(maskable.sum()), log_probability)
