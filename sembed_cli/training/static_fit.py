"""`--fit teacher`: learn a static model's piece weights (and vectors) from its teacher's sentence vectors.

The static sentence vector of a text is the weighted mean of its pieces'
rows, s = sum_t w_t v_t / n. The fit learns log w (and, with
--fit-vectors, v) so that s points where the teacher's own vector of the
text points, projected into the static model's space by the same PCA that
made the rows, over batches of unlabelled corpus texts (never an
evaluation set), Adam, as tokenlearn (MinishLab) fits static vectors to a
teacher's sentence vectors. The loss (`--fit-loss`, LOSSES):

    cosine   the mean cosine distance 1 - cos(s_i, t_i) of each text's static
             vector s_i and its teacher's t_i: each text on its own.
    infonce  InfoNCE with in-batch negatives (van den Oord et al. 2018, "CPC",
             eq. 4; the contrastive fit issue 40 reports for tokenlearn's
             potion models): the cross-entropy of picking t_i among the
             batch's teacher vectors by cos(s_i, t_j) / TEMPERATURE, so a
             static vector must also stay away from the other texts' teacher
             vectors, the relative similarities STS scores.

A share of the texts is held out; the weights and vectors kept are those of
the epoch with the lowest held-out loss (infonce: over the held-out texts
in batches of the training size, so that the loss has the same negatives),
so more epochs never make the model worse on text it did not fit.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from .. import console
from .job import Recipe

log = logging.getLogger(__name__)

HELD_OUT = (0.05, 2000)  # the share of the fit sentences held out, and at most this many
LOSSES = ("cosine", "infonce")
TEMPERATURE = 0.07  # InfoNCE's temperature, as issue 40 reports tokenlearn's


@dataclass
class Fitted:
    vectors: np.ndarray
    weights: np.ndarray
    best_epoch: int  # 0: no epoch beat the start on the held-out sentences
    held_out: int
    history: list[dict] = field(default_factory=list)


class Texts:
    """The fit's texts as one flat tensor of piece ids on the device, so that a batch's pieces are gathered there
    (no Python list per step): text i's pieces are flat[starts[i] : starts[i] + lengths[i]]."""

    def __init__(self, ids: list[list[int]], device: str):
        import torch

        self.lengths = np.fromiter((len(pieces) for pieces in ids), dtype=np.int64, count=len(ids))
        self.flat = torch.as_tensor(np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64), device=device)
        self.starts = torch.as_tensor(np.concatenate(([0], np.cumsum(self.lengths)[:-1])), device=device)
        self.counts = torch.as_tensor(self.lengths, device=device)

    def batch(self, chosen):
        """The pieces of the texts `chosen` (a tensor of indices), one after another, and where each text's start."""
        import torch

        lengths = self.counts[chosen]
        offsets = torch.cumsum(lengths, 0) - lengths
        within = torch.arange(int(lengths.sum()), device=lengths.device) - torch.repeat_interleave(offsets, lengths)
        return self.flat[torch.repeat_interleave(self.starts[chosen], lengths) + within], offsets, lengths


def fit_to_teacher(
    vectors: np.ndarray,
    weights: np.ndarray,
    ids: list[list[int]],
    targets: np.ndarray,
    recipe: Recipe,
    seed: int,
    fit_vectors: bool,
    device: str,
    loss: str = "cosine",
) -> Fitted:
    """Fit log-weights (and with `fit_vectors` the rows) so that each text's static vector (`ids`: its pieces) has
    the cosine of its target (`loss`, see the module docstring); Adam at `recipe.lr`, `recipe.epochs` passes in
    batches of `recipe.batch_size`."""
    import torch
    from torch.nn.functional import cross_entropy, embedding_bag, normalize

    generator = np.random.default_rng(seed)
    torch.manual_seed(seed)
    texts = Texts(ids, device)
    usable = generator.permutation(np.flatnonzero(texts.lengths))
    held = min(int(len(usable) * HELD_OUT[0]), HELD_OUT[1])
    held_out, usable = usable[:held], usable[held:]
    log_weights = torch.nn.Parameter(torch.log(torch.as_tensor(weights, device=device)))
    # torch.tensor copies: the fit never writes the caller's array (as_tensor would share it on a CPU)
    table = torch.nn.Parameter(torch.tensor(vectors, device=device), requires_grad=fit_vectors)
    optimizer = torch.optim.Adam([log_weights, table] if fit_vectors else [log_weights], lr=recipe.lr)
    goal = normalize(torch.as_tensor(targets, dtype=torch.float32, device=device), dim=1)

    def batch_loss(chosen: np.ndarray) -> torch.Tensor:
        rows = torch.as_tensor(chosen, device=device)
        flat, offsets, lengths = texts.batch(rows)
        sums = embedding_bag(flat, table, offsets, mode="sum", per_sample_weights=torch.exp(log_weights[flat]))
        sentences = normalize(sums / lengths[:, None], dim=1)
        if loss == "infonce":
            logits = sentences @ goal[rows].T / TEMPERATURE
            return cross_entropy(logits, torch.arange(len(rows), device=device))
        return (1 - (sentences * goal[rows]).sum(dim=1)).mean()

    def held_out_loss() -> float:
        if not held:
            return float("nan")
        with torch.no_grad():
            parts = [held_out[start : start + recipe.batch_size] for start in range(0, held, recipe.batch_size)]
            return float(sum(float(batch_loss(part)) * len(part) for part in parts) / held)

    best = (held_out_loss(), 0, vectors, weights)
    history = [{"epoch": 0, "held_out_loss": round(best[0], 6)}]
    for epoch in range(1, recipe.epochs + 1):
        tick, total, steps = time.perf_counter(), 0.0, 0
        order = generator.permutation(usable)
        for start in console.progress(
            range(0, len(order), recipe.batch_size),
            f"epoch {epoch}",
            total=-(-len(order) // recipe.batch_size),
            unit="steps",
        ):
            step = batch_loss(order[start : start + recipe.batch_size])
            optimizer.zero_grad(set_to_none=True)
            step.backward()
            optimizer.step()
            total, steps = total + float(step.detach()), steps + 1
        seconds, checked = time.perf_counter() - tick, held_out_loss()
        history.append(
            {
                "epoch": epoch,
                "loss": round(total / steps, 6),
                "held_out_loss": round(checked, 6),
                "seconds": round(seconds, 2),
            }
        )
        log.info(f"epoch {epoch}/{recipe.epochs}: loss {total / steps:.5f}, held out {checked:.5f}, {seconds:.1f} s")
        if not held or checked < best[0]:
            best = (checked, epoch, table.detach().cpu().numpy().copy(), torch.exp(log_weights.detach()).cpu().numpy())
    if held and best[1] < recipe.epochs:
        log.info(f"kept epoch {best[1]}: the lowest loss on the {held} held-out sentences")
    return Fitted(best[2], best[3], best[1], held, history)
