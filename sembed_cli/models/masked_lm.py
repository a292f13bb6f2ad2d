"""Loading a Hugging Face masked-LM directory, for every command that predicts masked words.

`taste` (the POI paper's character test), `gensets` (the syntax-distillation
paper's substitutions) and the trainers that go on from a masked-LM (`train
--method poi`'s stage 2) all load one here: never downloaded, refused with a
one-line error when the directory is not a masked-LM or its head is missing
(transformers would fill a missing head with random weights).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SembedError
from . import sentence_models
from .precision import cast


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
