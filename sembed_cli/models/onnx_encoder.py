"""Sentence vectors without torch: a sentence-transformers model's Transformer run by ONNX Runtime, pooled in numpy.

A model directory's `modules.json` says what a sentence vector is: the
Transformer's token vectors, a Pooling module (cls, mean, max, ...) and
optionally Normalize. Only the Transformer needs a deep-learning runtime;
it is exported once with `torch.onnx.export` (torch is imported then, and
only then) and reused by every later process, which imports onnxruntime,
tokenizers and numpy only: a cron job starts in a fraction of a second and
peaks at a fraction of the memory. Pooling and normalisation follow the
model's own module configs, in numpy (sentence-transformers' `Pooling` and
`Normalize`, step for step), so fp32 vectors equal the torch ones to float
rounding. A module sembed cannot run outside torch (a Dense layer, TA-SBERT's
Token Attention) is refused in one line: use --backend torch for those.

Where an export lives, as sentence-transformers lays it out:

    MODEL/onnx/model.onnx                 fp32
    MODEL/onnx/model_qint8_avx2.onnx      int8 (dynamic quantisation, AVX2 config)

when MODEL is writable, else `$SEMBED_CACHE/onnx/<key>/` (default
`~/.cache/sembed`). The key is a SHA-256 of the Transformer's files (weights,
config, tokenizer) and of this exporter's version, and every export carries
it in its ONNX metadata: an export whose key does not match (the model was
retrained in place) is stale and rebuilt; one ONNX Runtime cannot load is
corrupt and rebuilt; an `onnx/model.onnx` sembed did not write is left alone.
Exports are written under a temporary name and renamed, under a file lock,
so two jobs starting together neither corrupt one another's file nor both
export.

int8 is ONNX Runtime's dynamic quantisation (weights int8 ahead of time,
activations quantised per batch), with the configuration the CPU's
instruction set calls for (`int8_config`), named as optimum's
`AutoQuantizationConfig` names them: avx2, avx512 and avx512_vnni
(signed 7-bit per-channel weights: ONNX Runtime's u8s8 kernels can
saturate on 8-bit ones, VNNI's as well as AVX2's VPMADDUBSW, and 7 bits
cannot), arm64 (signed 8-bit per-channel weights).

The exported graph is not run through ONNX Runtime's offline transformer
optimiser (`onnxruntime.transformers.optimizer`, model_type "bert"): its
fused graph ran slower than the plain export under the session's own
ORT_ENABLE_ALL fusions.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import platform
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import threads as thread_count
from ..errors import SembedError
from ..io.atomic_files import atomic_path
from .transformer_loading import masked_lm_report_left_out, offline, token_window

BACKENDS = ("torch", "onnx")
QUANTIZATIONS = ("none", "int8")
EXTRA = "onnx"
EXTRA_HINT = f"pip install 'sembed[{EXTRA}]' (onnxruntime and onnx), or use --backend torch"
TORCH_ONLY_HINT = "use --backend torch for this model"
EXPORT_VERSION = "sembed-onnx-1"  # part of the key: a change to the exporter rebuilds every export
KEY_PROPERTY = "sembed_source_key"  # the ONNX metadata property carrying the key
OPSET = 17
ONNX_DIR = "onnx"
FP32_FILE = "model.onnx"
LOCK_FILE = ".sembed-export.lock"
CACHE_ENV = "SEMBED_CACHE"
MISSING, FOREIGN = "missing", "not written by sembed"
# sentence-transformers' legacy Pooling config keys, in the order it concatenates the modes.
LEGACY_POOLING = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
POOLING_MODES = tuple(LEGACY_POOLING.values())
MODULE_PREFIXES = (
    "sentence_transformers.models.",
    "sentence_transformers.sentence_transformer.modules.",
    "sentence_transformers.base.modules.",
)
NOT_IN_WEIGHT_KEY = {"README.md", ".gitattributes"}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pipeline:
    """What a sentence-transformers directory computes, as far as sembed runs it without torch."""

    model: Path  # the model directory
    transformer: Path  # the Transformer module's directory (the model directory itself, usually)
    max_seq_length: int
    do_lower_case: bool
    pooling: tuple[str, ...]
    normalize: bool


def module_kind(type_name: str) -> str:
    """The class name of a modules.json entry when it is sentence-transformers' own, else the full path."""
    if type_name.startswith(MODULE_PREFIXES):
        return type_name.rsplit(".", 1)[1]
    return type_name


def read_pipeline(model: Path) -> Pipeline:
    """The model's Transformer, Pooling and Normalize modules; a one-line error for any other module."""
    modules_file = model / "modules.json"
    if not modules_file.exists():  # a bare transformers directory: sentence-transformers mean-pools it
        return Pipeline(model, model, transformer_max_length(model, None), False, ("mean",), False)
    modules = read_json(modules_file)
    transformer, pooling, normalize, max_length, lower = None, None, False, None, False
    for module in modules:
        kind = module_kind(str(module.get("type", "")))
        folder = model / module.get("path", "")
        if kind == "Transformer" and transformer is None:
            transformer = folder
            settings = read_json(folder / "sentence_bert_config.json", {})
            max_length, lower = settings.get("max_seq_length"), bool(settings.get("do_lower_case", False))
        elif kind == "Pooling" and transformer is not None and pooling is None:
            pooling = pooling_modes(read_json(folder / "config.json", {}))
        elif kind == "Normalize" and pooling is not None and not normalize:
            normalize = True
        else:
            what = "Token Attention pooling (TA-SBERT)" if kind.endswith("TokenAttention") else f"the module {kind}"
            raise SembedError(
                f"--backend onnx cannot run {what} of the model at '{model}' outside torch", TORCH_ONLY_HINT
            )
    if transformer is None or pooling is None:
        raise SembedError(
            f"--backend onnx needs a Transformer and a Pooling module; the model at '{model}' lacks one",
            TORCH_ONLY_HINT,
        )
    return Pipeline(model, transformer, transformer_max_length(transformer, max_length), lower, pooling, normalize)


def pooling_modes(config: dict) -> tuple[str, ...]:
    """The pooling modes of a Pooling config, old style (pooling_mode_*_token: true) or new (pooling_mode)."""
    if "pooling_mode" in config:
        modes = config["pooling_mode"]
        modes = (modes,) if isinstance(modes, str) else tuple(modes)
    else:
        modes = tuple(mode for key, mode in LEGACY_POOLING.items() if config.get(key)) or ("mean",)
    unknown = [mode for mode in modes if mode not in POOLING_MODES]
    if unknown:
        raise SembedError(f"--backend onnx does not know the pooling mode {unknown[0]!r}", TORCH_ONLY_HINT)
    return modes


def transformer_max_length(folder: Path, max_seq_length: int | None) -> int:
    """The longest input in tokens of the Transformer at `folder` (`token_window` of its settings files)."""
    return token_window(
        max_seq_length,
        read_json(folder / "tokenizer_config.json", {}).get("model_max_length"),
        read_json(folder / "config.json", {}).get("max_position_embeddings"),
    )


def read_json(path: Path, default=None):
    if default is not None and not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SembedError(f"cannot read {path}: {e}") from None


# --- Where exports live, and when they are stale ---------------------------------------------------------------


def source_key(pipeline: Pipeline) -> str:
    """SHA-256 of the Transformer's own files (not its subfolders: Pooling, onnx/) and of the exporter version."""
    digest = hashlib.sha256(EXPORT_VERSION.encode())
    for path in sorted(pipeline.transformer.iterdir()):
        if path.is_file() and not path.name.startswith(".") and path.name not in NOT_IN_WEIGHT_KEY:
            digest.update(f"\0{path.name}\0{path.stat().st_size}\0".encode())
            with open(path, "rb") as f:
                digest.update(hashlib.file_digest(f, "sha256").digest())
    return digest.hexdigest()


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "sembed").expanduser()


def writable(folder: Path) -> bool:
    """Whether sembed may create or replace files in `folder` (or create it, in its nearest existing ancestor)."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)


def export_folders(pipeline: Pipeline, key: str) -> list[Path]:
    """Where an export may be, in the order they are tried: next to the model, then the cache."""
    return [pipeline.transformer / ONNX_DIR, cache_root() / "onnx" / key[:32]]


def cpu_instruction_set() -> str:
    """The quantisation config this CPU calls for: avx512_vnni, avx512, avx2 or arm64 (optimum's names)."""
    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            flags = next((line.split(":", 1)[1] for line in f if line.startswith("flags")), "")
    except OSError:
        pass  # no /proc/cpuinfo (macOS)
    return instruction_set(set(flags.split()), platform.machine())


def instruction_set(flags: set[str], machine: str) -> str:
    """avx512_vnni, avx512, avx2 (also when the flags are unknown: every x86-64 CPU ONNX Runtime is fast on has
    it) or arm64, from the CPU's flags as /proc/cpuinfo lists them and its machine name."""
    if machine.lower() in ("arm64", "aarch64"):
        return "arm64"
    if "avx512f" in flags:
        return "avx512_vnni" if flags & {"avx512_vnni", "avx512vnni"} else "avx512"
    return "avx2"


@dataclass(frozen=True)
class Int8Config:
    """ONNX Runtime dynamic quantisation settings for one instruction set."""

    weight_type: str  # QUInt8 or QInt8
    per_channel: bool
    reduce_range: bool  # 7-bit weights: no saturation in ONNX Runtime's u8s8 kernels on x86


def int8_config(isa: str) -> Int8Config:
    """Signed per-channel weights everywhere; on x86 (avx2, avx512, avx512_vnni) 7-bit ones, so that ONNX Runtime's
    u8s8 kernels cannot saturate (AVX2's VPMADDUBSW sums pairs of u8 x s8 products in int16; with 8-bit weights the
    AVX-512 VNNI path lost as much). Unsigned weights would take the slower u8u8 kernel. Of the configurations
    measured on STS-B and SICK-R this one keeps the fp32 quality and is the fastest."""
    return Int8Config("QInt8", per_channel=True, reduce_range=isa != "arm64")


def file_name(quantize: str, isa: str) -> str:
    return FP32_FILE if quantize == "none" else f"model_qint8_{isa}.onnx"


def import_onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        raise SembedError("--backend onnx needs onnxruntime, which is not installed", EXTRA_HINT) from None
    onnxruntime.set_default_logger_severity(3)  # its warnings about unused initialisers are noise on our stderr
    return onnxruntime


def session_options(threads: int | None):
    """All of ONNX Runtime's graph optimisations; `threads` intra-op threads that sleep, not spin, between parallel
    regions: spinning ones fight every other process for the cores, and on a busy machine cost more time than
    they save."""
    ort = import_onnxruntime()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.inter_op_num_threads = 1
    if threads:
        options.intra_op_num_threads = threads
    return options


def open_session(path: Path, key: str, threads: int | None):
    """(session, None) for a sound export of this model at `path`; (None, why not) otherwise."""
    if not path.exists():
        return None, MISSING
    ort = import_onnxruntime()
    try:
        session = ort.InferenceSession(str(path), session_options(threads), providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types for a damaged file
        return None, f"corrupt ({str(e).splitlines()[0][:200]})"
    found = session.get_modelmeta().custom_metadata_map.get(KEY_PROPERTY)
    if found is None:
        return None, FOREIGN
    if found != key:
        return None, "stale (made from another version of the model, or with other settings)"
    return session, None


@contextlib.contextmanager
def export_lock(folder: Path) -> Iterator[None]:
    """One exporter at a time per folder: a second job waits, then finds the export done."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a+b") as lock:
        try:
            import fcntl
        except ImportError:  # no advisory locks (Windows): atomic renames still keep every file whole
            yield
            return
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def session_for(pipeline: Pipeline, quantize: str = "none", threads: int | None = None):
    """An ONNX Runtime session of the model's Transformer (exported, and quantised, on first use); and its path."""
    key = source_key(pipeline)
    isa = cpu_instruction_set()
    name = file_name(quantize, isa)
    expected = key if quantize == "none" else f"{key}:{name}:{int8_config(isa)}"  # int8: stamped with its config
    found = {}
    for folder in export_folders(pipeline, key):
        session, found[folder] = open_session(folder / name, expected, threads)
        if session is not None:
            return session, folder / name
    problems = [f"{folder / name} is {why}" for folder, why in found.items() if why != MISSING]
    for folder, why in found.items():
        if (
            why == FOREIGN
            or not writable(folder)
            or (name != FP32_FILE and open_session(folder / FP32_FILE, key, threads)[1] == FOREIGN)
        ):
            continue  # a file sembed did not write is never replaced
        try:
            with export_lock(folder):
                session, why = open_session(folder / name, expected, threads)  # another job may have built it
                if session is None:
                    if why != MISSING:
                        log.warning("rebuilding %s: it is %s", folder / name, why)
                    build(pipeline, folder, key, quantize, isa, threads)
                    session, why = open_session(folder / name, expected, threads)
                if session is None:
                    raise SembedError(f"the ONNX export {folder / name} is {why} right after it was written")
                return session, folder / name
        except OSError as e:
            problems.append(f"cannot write {folder}: {e.strerror}")
    detail = "; ".join(problems) or "no writable place for it"
    raise SembedError(
        f"cannot export the model at '{pipeline.model}' to ONNX: {detail}",
        f"make the model directory or {cache_root()} writable (or set {CACHE_ENV})",
    )


def build(pipeline: Pipeline, folder: Path, key: str, quantize: str, isa: str, threads: int | None) -> None:
    """Write the fp32 export into `folder` (when missing or unsound), then the int8 one from it when asked for."""
    fp32 = folder / FP32_FILE
    if quantize == "none" or open_session(fp32, key, threads)[0] is None:
        export_fp32(pipeline, fp32, key)
    if quantize == "int8":
        name = file_name(quantize, isa)
        quantize_int8(fp32, folder / name, f"{key}:{name}:{int8_config(isa)}", isa)


def export_fp32(pipeline: Pipeline, path: Path, key: str) -> None:
    """torch.onnx.export of the Transformer: input_ids, attention_mask (token_type_ids) -> last_hidden_state."""
    log.debug("exporting %s to ONNX at %s (once)", pipeline.transformer, path)
    offline()
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # its weight-loading bar is noise on our stderr
    tokenizer = AutoTokenizer.from_pretrained(str(pipeline.transformer))
    with masked_lm_report_left_out():
        model = AutoModel.from_pretrained(str(pipeline.transformer), dtype=torch.float32).eval()
    sample = tokenizer(["an export needs a sample", "of two texts"], padding=True, return_tensors="pt")
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in sample]

    class LastHidden(torch.nn.Module):  # positional inputs in `names` order, one output
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            return self.inner(**dict(zip(names, inputs))).last_hidden_state

    axes = {name: {0: "batch", 1: "tokens"} for name in names} | {"last_hidden_state": {0: "batch", 1: "tokens"}}
    with atomic_path(path) as tmp, torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's warnings are about shapes the dynamic axes cover
        torch.onnx.export(
            LastHidden(model),
            tuple(sample[name] for name in names),
            str(tmp),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
        stamp(tmp, key)


def quantize_int8(fp32: Path, path: Path, key: str, isa: str) -> None:
    """ONNX Runtime dynamic quantisation of the MatMuls (weights int8 once, activations uint8 per batch: so an int8
    vector depends a little on the batch its text was encoded in)."""
    log.debug("quantising %s to int8 (%s) at %s (once)", fp32, isa, path)
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise SembedError("--quantize int8 needs onnxruntime and onnx, which are not installed", EXTRA_HINT) from None
    config = int8_config(isa)
    with atomic_path(path) as tmp:
        quantize_dynamic(
            str(fp32),
            str(tmp),
            weight_type=getattr(QuantType, config.weight_type),
            per_channel=config.per_channel,
            reduce_range=config.reduce_range,
            op_types_to_quantize=["MatMul", "Attention"],
        )
        stamp(tmp, key)


def stamp(path: Path, key: str) -> None:
    """Write `key` into the ONNX file's metadata, so a later run can tell a stale export from a sound one."""
    try:
        import onnx
    except ImportError:
        raise SembedError(
            "exporting a model to ONNX needs the onnx package, which is not installed", EXTRA_HINT
        ) from None
    model = onnx.load(str(path))
    del model.metadata_props[:]
    model.metadata_props.add(key=KEY_PROPERTY, value=key)
    onnx.save(model, str(path))


# --- Encoding ------------------------------------------------------------------------------------------------


def pool(token_vectors: np.ndarray, mask: np.ndarray, modes: Sequence[str]) -> np.ndarray:
    """sentence-transformers' Pooling (padded inputs, no prompt) in numpy: the modes' vectors concatenated."""
    mask = mask.astype(np.float32)[:, :, None]
    outputs = []
    for mode in modes:
        if mode == "cls":
            outputs.append(token_vectors[np.arange(len(mask)), mask[:, :, 0].argmax(axis=1)])
        elif mode == "max":
            outputs.append(np.where(mask > 0, token_vectors, -np.inf).max(axis=1))
        elif mode in ("mean", "mean_sqrt_len_tokens"):
            counts = np.maximum(mask.sum(axis=1), 1e-9)
            total = (token_vectors * mask).sum(axis=1)
            outputs.append(total / (counts if mode == "mean" else np.sqrt(counts)))
        elif mode == "weightedmean":  # position-weighted, right padding
            weighted = mask * np.arange(1, mask.shape[1] + 1, dtype=np.float32)[None, :, None]
            outputs.append((token_vectors * weighted).sum(axis=1) / np.maximum(weighted.sum(axis=1), 1e-9))
        elif mode == "lasttoken":
            last = mask[:, :, 0].shape[1] - 1 - mask[:, ::-1, 0].argmax(axis=1)
            outputs.append(token_vectors[np.arange(len(mask)), last] * mask[np.arange(len(mask)), last])
    return np.concatenate(outputs, axis=1).astype(np.float32, copy=False)


def unit_length(vectors: np.ndarray) -> np.ndarray:
    """sentence-transformers' Normalize: each row over max(its L2 norm, 1e-12), as torch's F.normalize."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


class OnnxEncoder:
    """A sentence encoder with SentenceTransformer's `encode` (the arguments sembed uses), running no torch.

    Texts are sorted by length and encoded `batch_size` at a time, each
    batch padded to its longest text and truncated at the model's
    max_seq_length, as sentence-transformers does.
    """

    def __init__(self, pipeline: Pipeline, quantize: str = "none", threads: int | None = None):
        self.pipeline, self.quantize = pipeline, quantize
        self.session, self.path = session_for(pipeline, quantize, threads)
        self.fast_tokenizer = fast_tokenizer(pipeline)  # a `tokenizers.Tokenizer`, not transformers' tokenizer API
        self.inputs = [arg.name for arg in self.session.get_inputs()]
        self.isa = cpu_instruction_set()

    @property
    def identity(self) -> dict:
        """What, beyond the model, decides the vectors: the backend and, for int8, the quantisation."""
        if self.quantize == "none":
            return {"backend": "onnx"}
        return {"backend": "onnx", "quantization": f"qint8_{self.isa}"}

    @property
    def max_seq_length(self) -> int:
        """The longest input in tokens; longer texts are truncated, as SentenceTransformer.max_seq_length says."""
        return self.pipeline.max_seq_length

    def get_embedding_dimension(self) -> int:
        return len(self.encode(["a"])[0])

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 32,
        show_progress_bar: bool = False,
        convert_to_numpy: bool = True,
        **_,
    ) -> np.ndarray:
        order = np.argsort([-len(text) for text in texts], kind="stable")
        vectors: np.ndarray | None = None
        for start in range(0, len(texts), batch_size):
            chosen = order[start : start + batch_size]
            batch = self.encode_batch([texts[i] for i in chosen])
            if vectors is None:
                vectors = np.empty((len(texts), batch.shape[1]), dtype=np.float32)
            vectors[chosen] = batch
        return vectors if vectors is not None else np.empty((0, 0), dtype=np.float32)

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        if self.pipeline.do_lower_case:
            texts = [text.lower() for text in texts]
        encodings = self.fast_tokenizer.encode_batch(texts)
        features = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        (token_vectors,) = self.session.run(None, {name: features[name] for name in self.inputs})[:1]
        vectors = pool(token_vectors, features["attention_mask"], self.pipeline.pooling)
        return unit_length(vectors) if self.pipeline.normalize else vectors


def fast_tokenizer(pipeline: Pipeline):
    """The model's tokenizer.json with padding to the batch's longest text and truncation at max_seq_length."""
    from tokenizers import Tokenizer

    path = pipeline.transformer / "tokenizer.json"
    if not path.exists():
        raise SembedError(
            f"--backend onnx needs the model's tokenizer.json (a fast tokenizer), missing in '{pipeline.transformer}'",
            TORCH_ONLY_HINT,
        )
    tokenizer = Tokenizer.from_file(str(path))
    settings = read_json(pipeline.transformer / "tokenizer_config.json", {})
    declared = settings.get("pad_token") or "[PAD]"  # a string, or an AddedToken's dict
    pad_token = str(declared.get("content") or "[PAD]") if isinstance(declared, dict) else str(declared)
    pad_id = tokenizer.token_to_id(pad_token)
    tokenizer.enable_truncation(max_length=pipeline.max_seq_length)
    tokenizer.enable_padding(pad_id=pad_id if pad_id is not None else 0, pad_token=pad_token)
    return tokenizer


def load(model: Path, quantize: str = "none", threads: int | None = None) -> OnnxEncoder:
    """The ONNX encoder of the sentence-transformers model at `model`: exported on first use, then reused."""
    import_onnxruntime()  # the missing extra is the first thing to say
    return OnnxEncoder(read_pipeline(model), quantize, threads or thread_count.requested_count())
