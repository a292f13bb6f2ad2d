"""What every load of a Hugging Face transformer in sembed shares: offline, quiet, and the longest input it takes.

The modules that load models (sentence_models, onnx_encoder, masked_lm,
contextual_words, taste) import these from here, below all of them, so none
of them has to import another loader for them. Nothing here imports
transformers at import time.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

DEFAULT_WINDOW = 512  # BERT's position count: the window of a model that states none
NO_LIMIT = 1e9  # tokenizers write "no limit" as a huge number (int(1e30)); no window this long is real


def token_window(*limits: object) -> int:
    """The longest input in tokens, special tokens included, that a model takes: the least of the limits it states
    (sentence-transformers' max_seq_length, the tokenizer's model_max_length, the config's max_position_embeddings),
    as sentence-transformers caps it. A limit that is missing (None), not a number, or "no limit" is left out;
    DEFAULT_WINDOW when none is left."""
    usable = [
        int(limit)
        for limit in limits
        if isinstance(limit, (int, float)) and not isinstance(limit, bool) and 0 < limit < NO_LIMIT
    ]
    return min(usable) if usable else DEFAULT_WINDOW


def loaded_window(model, tokenizer) -> int:
    """`token_window` of a loaded transformers model and its tokenizer."""
    return token_window(
        getattr(getattr(model, "config", None), "max_position_embeddings", None),
        getattr(tokenizer, "model_max_length", None),
    )


def offline() -> None:
    """Model code must never reach a hub: say so to the libraries before they load."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# transformers' load report rows that say nothing wrong with an encoder made of a masked-LM checkpoint (the CF-BERT
# masked-LM start, a POI stage-1 model): its MLM head is left out, and BertModel's pooler, which it never had, is
# new; no vector sembed makes reads either (they pool the token vectors).
MASKED_LM_ROWS = (("cls.", "UNEXPECTED"), ("pooler.", "MISSING"))
STYLE = re.compile(r"\x1b\[[0-9;]*m")  # the report's terminal colours


class _MaskedLmReport(logging.Filter):
    """Drops transformers' load report ("BertModel LOAD REPORT ... pooler.dense.bias | MISSING ...") when each of its
    rows is one of MASKED_LM_ROWS; any other report (a weight of the encoder missing, a shape mismatch) shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = STYLE.sub("", record.getMessage())
        if "LOAD REPORT" not in message:
            return True
        rows = [[cell.strip() for cell in line.split("|")] for line in message.splitlines() if "|" in line][1:]
        return not rows or not all(
            any(key.startswith(prefix) and status == expected for prefix, expected in MASKED_LM_ROWS)
            for key, status, *_ in rows
        )


@contextmanager
def masked_lm_report_left_out() -> Iterator[None]:
    """Around an encoder's from_pretrained: no load report on stderr when all it says is that the checkpoint was a
    masked-LM's (see _MaskedLmReport); sembed's own messages and transformers' other warnings are untouched."""
    logger, report = logging.getLogger("transformers.modeling_utils"), _MaskedLmReport()  # where transformers 5 logs it
    logger.addFilter(report)
    try:
        yield
    finally:
        logger.removeFilter(report)


@contextmanager
def library_report_off() -> Iterator[None]:
    """Around a from_pretrained(output_loading_info=True) whose missing keys sembed checks and reports itself:
    transformers' own load report would say the same on stderr, or what sembed then refuses; its errors stay."""
    from transformers.utils import logging as transformers_logging

    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)
