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

from importlib import import_module

from ..job import Job, Recipe
from .method import Method, OptionError

__all__ = ["METHODS", "Job", "Method", "OptionError", "Recipe"]

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
