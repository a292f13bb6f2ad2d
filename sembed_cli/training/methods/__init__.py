"""The training methods of `sembed train --method`, by name: one module each, one line here.

    sbert   SBERT's Siamese cosine fine-tuning            training/sbert.py
    cf      CF-BERT, component focusing                   training/sbert.py
    ta      TA-SBERT, Token Attention                     training/ta.py
    nws     Neural Word Saliency scores                   training/nws.py
    mlm     masked-LM: an encoder adapted, or POI stage 1  training/mlm_adaptation.py, mlm_from_scratch.py
    poi     POI stage 2, triplets + masked-LM             training/poi.py
    syntax  the syntax-distillation map                   training/syntax.py
    static  a static model distilled from a teacher       training/static.py

A method module declares its recipe, its settings (a frozen dataclass whose
fields are its options, with their defaults) and `run(job, settings)`, which
imports its trainer; see `method.py`. `sembed train` builds its --method
choices, its options, the "only for --method" rule and its help from here.
"""

from __future__ import annotations

from contextlib import nullcontext
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import distributed
from ...artifacts import exclusive
from ..job import Job, Recipe
from .method import Method, OptionError

if TYPE_CHECKING:
    from ...io import RecordSource

__all__ = ["METHODS", "Job", "Method", "OptionError", "Recipe", "train"]

NAMES = (
    "sbert",
    "cf",
    "ta",
    "nws",
    "mlm",
    "poi",
    "syntax",
    "static",
)  # each the module of that name here; --help's order
METHODS: dict[str, Method] = {name: import_module(f"{__name__}.{name}").METHOD for name in NAMES}


def train(
    method: Method,
    settings: Any,
    source: RecordSource,
    output: Path,
    recipe: Recipe,
    *,
    text_keys: tuple[str, ...] | None = None,
    seed: int = 42,
    device: str = "auto",
    resume: bool = False,
    force: bool = False,
) -> bool:
    """Train `method` with its `settings` on the records of `source` into the model directory `output`, as
    `sembed train` does (and the Python API's `train`): one process, or rank 0 of a distributed run, writes it,
    holding its lock until done. Returns False when `resume` found `output` complete (nothing to do)."""
    from ..checkpoints import finished

    writer = distributed.is_main_process()  # rank 0 alone logs, writes `output` and its checkpoints
    with exclusive(output) if writer else nullcontext():  # a second run writing `output` meanwhile refuses
        if writer and resume and not force and finished(output):
            return False
        method.run(Job(source, output, recipe, text_keys, seed, device, resume, force), settings)
    return True
