"""`--fit teacher`: learn a static model's piece weights (and vectors) from its teacher's sentence vectors.

The static sentence vector of a text is the weighted mean of its pieces'
rows, s = sum_t w_t v_t / n. The fit learns log w (and, with
--fit-vectors, v) so that s points where the teacher's own vector of the
text points, projected into the static model's space by the same PCA that
made the rows: the loss is the mean cosine distance 1 - cos(s, P(teacher))
over a batch of unlabelled corpus sentences (never an evaluation set),
Adam, as tokenlearn (MinishLab) fits static vectors to a teacher's sentence
vectors. A share of the sentences is held out; the weights and vectors
kept are those of the epoch with the lowest held-out loss, so more epochs
never make the model worse on text it did not fit.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from .. import console
from .job import Recipe

log = logging.getLogger(__name__)

HELD_OUT = (0.05, 2000)  # the share of the fit sentences held out, and at most this many


@dataclass
class Fitted:
    vectors: np.ndarray
    weights: np.ndarray
    best_epoch: int  # 0: no epoch beat the start on the held-out sentences
    held_out: int
    history: list[dict] = field(default_factory=list)


def fit_to_teacher(
    vectors: np.ndarray,
    weights: np.ndarray,
    ids: list[list[int]],
    targets: np.ndarray,
    recipe: Recipe,
    seed: int,
    fit_vectors: bool,
    device: str,
) -> Fitted:
    """Fit log-weights (and with `fit_vectors` the rows) so that each text's static vector (`ids`: its pieces) has
    the cosine of its target; Adam at `recipe.lr`, `recipe.epochs` passes in batches of `recipe.batch_size`."""
    import torch
    from torch.nn.functional import cosine_similarity, embedding_bag

    generator = np.random.default_rng(seed)
    torch.manual_seed(seed)
    lengths = np.fromiter((len(piece) for piece in ids), dtype=np.int64, count=len(ids))
    usable = generator.permutation(np.flatnonzero(lengths))
    held = min(int(len(usable) * HELD_OUT[0]), HELD_OUT[1])
    held_out, usable = usable[:held], usable[held:]
    log_weights = torch.nn.Parameter(torch.log(torch.as_tensor(weights, device=device)))
    table = torch.nn.Parameter(torch.as_tensor(vectors, device=device), requires_grad=fit_vectors)
    optimizer = torch.optim.Adam([log_weights, table] if fit_vectors else [log_weights], lr=recipe.lr)
    goal = torch.as_tensor(targets, dtype=torch.float32, device=device)

    def batch_loss(chosen: np.ndarray) -> torch.Tensor:
        flat = torch.as_tensor(np.concatenate([ids[i] for i in chosen]), device=device)
        offsets = torch.as_tensor(np.concatenate(([0], np.cumsum(lengths[chosen])[:-1])), device=device)
        sums = embedding_bag(flat, table, offsets, mode="sum", per_sample_weights=torch.exp(log_weights[flat]))
        sentences = sums / torch.as_tensor(lengths[chosen], device=device)[:, None]
        return (1 - cosine_similarity(sentences, goal[torch.as_tensor(chosen, device=device)])).mean()

    def held_out_loss() -> float:
        if not held:
            return float("nan")
        with torch.no_grad():
            return float(batch_loss(held_out))

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
            loss = batch_loss(order[start : start + recipe.batch_size])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total, steps = total + float(loss.detach()), steps + 1
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
