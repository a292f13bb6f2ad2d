"""Sentence vectors for a record stream, with CF-BERT's component focusing.

`embed_records` reads records a window at a time and encodes every text of
the window in one `encode` call (sentence-transformers sorts the texts by
length inside it, so padding stays small), then stores each vector in its
record, or as a row of an `NpyMatrix` (the .npy file of `embed --npy`;
`vector_rows.RowVectors` reads it back) written alongside the stream.

Component focusing (Yin et al. 2020, "Improving Sentence Representations via
Component Focusing", eq. 1): emb_S = emb_basic + W_cf * emb_cf, where
emb_basic is the embedding of the text and emb_cf that of its S_cf (built by
`sembed spo` when the record does not carry it). With a sentence-transformers
model the pooling (and normalisation) happens inside each `encode`, so the
weighted sum is taken of the two finished sentence vectors.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import BadRecord, SembedError
from ..io import commit, temporary_sibling, write_json_atomic
from .poi_lookup import LookupEncoder

log = logging.getLogger(__name__)

EMBEDDING = "embedding"
BASIC = "embedding_basic"
CF = "embedding_cf"
ROW = "_row"  # with an NpyMatrix, field F holds the row number under F_row (embedding_row, embedding_row_a, ...)
TOKEN_WEIGHTS = "token_weights"


def encode(model, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
    """float32 vectors (len(texts) x dim) for `texts` in their order; a text repeated is encoded once."""
    unique = list(dict.fromkeys(texts))
    vectors = np.asarray(
        model.encode(unique, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True), dtype=np.float32
    )  # fp16/bf16 models give half floats: JSON and .npy carry float32
    if len(unique) == len(texts):
        return vectors
    position = {text: n for n, text in enumerate(unique)}
    return vectors[[position[text] for text in texts]]


class FastTokenizerCalls:
    """The few calls of transformers' tokenizer API that `LongTexts` makes, on a `tokenizers.Tokenizer` (the ONNX
    Runtime encoder's, which imports no torch), untruncated and unpadded."""

    def __init__(self, tokenizer):
        import copy

        self.tokenizer = copy.deepcopy(tokenizer)
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()

    def num_special_tokens_to_add(self) -> int:
        return self.tokenizer.num_special_tokens_to_add(False)

    def __call__(self, texts, add_special_tokens: bool = True, return_offsets_mapping: bool = False, **_):
        if isinstance(texts, str):
            encoding = self.tokenizer.encode(texts, add_special_tokens=add_special_tokens)
            return _Encoded(encoding)
        return {
            "input_ids": [
                e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=add_special_tokens)
            ]
        }


class _Encoded(dict):
    """One text's encoding, looked at as transformers' BatchEncoding is (offset_mapping, word_ids())."""

    def __init__(self, encoding):
        super().__init__(input_ids=encoding.ids, offset_mapping=encoding.offsets)
        self.encoding = encoding

    def word_ids(self):
        return self.encoding.word_ids


class LongTexts:
    """Texts longer than a sentence-transformers model's window (`max_seq_length` tokens, special tokens
    included), which the model would cut without a word: counted, and handled by `policy` (--long-text).

    truncate: the model's own behaviour, the first window's worth is embedded. window: the text is cut into
    consecutive windows between words, each embedded, and the text's vector is the mean of theirs weighted by
    their token counts (unit length again when the model normalises). error: such a text is bad input (`check`,
    as records are read, so the error names the line). A text of fewer UTF-8 bytes than the window has room
    for cannot be longer (a token covers at least a byte), so only long texts are tokenised to count.
    """

    def __init__(self, model, policy: str = "truncate"):
        self.model, self.policy = model, policy
        fast = getattr(model, "fast_tokenizer", None)  # the ONNX Runtime encoder's tokenizers.Tokenizer
        self.tokenizer = FastTokenizerCalls(fast) if fast is not None else model.tokenizer
        self.window = int(model.max_seq_length)
        self.room = self.window - self.tokenizer.num_special_tokens_to_add()
        self.count = 0

    def lengths(self, texts: Sequence[str]) -> dict[int, int]:
        """{position: token count} of the texts in `texts` that pass the window."""
        maybe = [n for n, text in enumerate(texts) if len(text.encode("utf-8")) > self.room]
        if not maybe:
            return {}
        ids = self.tokenizer([texts[n] for n in maybe], add_special_tokens=True, truncation=False, verbose=False)[
            "input_ids"
        ]
        return {n: len(pieces) for n, pieces in zip(maybe, ids) if len(pieces) > self.window}

    def check(self, record: dict, key: str) -> None:
        """--long-text error: a text past the window is bad input."""
        if self.policy == "error":
            for length in self.lengths([record[key]]).values():
                raise BadRecord(
                    f"'{key}' is {length} tokens, longer than the model's {self.window}-token window",
                    "--long-text truncate or window embeds it",
                )

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """`encode` with the long texts counted, and embedded whole under the window policy."""
        long = self.lengths(texts)
        self.count += len(long)
        if self.policy != "window" or not long:
            return encode(self.model, texts, batch_size)
        if isinstance(self.model, LookupEncoder):  # the windows make its stage-2 part; its n-grams see the whole text
            return self.model.combine(self.windowed(self.model.encoder, texts, long, batch_size), texts)
        return self.windowed(self.model, texts, long, batch_size)

    def windowed(self, model, texts: Sequence[str], long: dict[int, int], batch_size: int) -> np.ndarray:
        """`model`'s vectors of `texts`, those at the positions in `long` the token-weighted mean of their windows'."""
        pieces = {n: self.windows(texts[n]) for n in long}
        units = [text for n, text in enumerate(texts) if n not in long]
        units += [piece for n in long for piece, _ in pieces[n]]
        matrix = encode(model, units, batch_size)
        out = np.empty((len(texts), matrix.shape[1]), dtype=np.float32)
        out[[n for n in range(len(texts)) if n not in long]] = matrix[: len(texts) - len(long)]
        at = len(texts) - len(long)
        unit_length = normalises(model)
        for n in long:
            weights = np.asarray([count for _, count in pieces[n]], dtype=np.float32)
            vector = weights @ matrix[at : at + len(weights)] / weights.sum()
            if unit_length:
                vector /= max(float(np.linalg.norm(vector)), 1e-12)
            out[n] = vector
            at += len(weights)
        return out

    def windows(self, text: str) -> list[tuple[str, int]]:
        """(piece of `text`, its token count) for consecutive windows of at most `room` tokens, cut between words
        (inside a word only when one word is longer than a window)."""
        encoding = self.tokenizer(
            text, add_special_tokens=False, truncation=False, return_offsets_mapping=True, verbose=False
        )
        offsets, words = encoding["offset_mapping"], encoding.word_ids()
        pieces: list[tuple[str, int]] = []
        start = 0
        while start < len(offsets):
            end = min(start + self.room, len(offsets))
            if end < len(offsets) and words[end] is not None:
                cut = end
                while cut > start and words[cut - 1] == words[end]:
                    cut -= 1
                end = cut if cut > start else end
            pieces.append((text[offsets[start][0] : offsets[end - 1][1]], end - start))
            start = end
        return pieces

    def report(self) -> None:
        if not self.count:
            return
        what = f"{self.count} text(s) longer than the model's {self.window}-token window"
        if self.policy == "window":
            log.info(f"{what}: embedded whole, as the mean of their windows")
        else:
            log.warning(f"{what} were truncated to it (--long-text window embeds them whole, error refuses them)")


def normalises(model) -> bool:
    """Whether a sentence encoder's vectors are unit length (its last module is sentence-transformers' Normalize)."""
    pipeline = getattr(model, "pipeline", None)  # the ONNX Runtime encoder says so itself
    if pipeline is not None:
        return bool(pipeline.normalize)
    return any(type(module).__name__ == "Normalize" for module in model)


def has_token_attention(model) -> bool:
    from .token_attention import TokenAttention

    return any(isinstance(module, TokenAttention) for module in model)


def encode_explained(model, texts: Sequence[str], batch_size: int = 32) -> tuple[np.ndarray, list[list[list]]]:
    """Sentence vectors as `encode` gives them, and each text's words with their Token Attention weight
    (TA-SBERT eq. 3; a word's pieces summed), the special tokens included: [[word, weight], ...] summing to 1."""
    outputs = model.encode(list(texts), batch_size=batch_size, output_value=None, show_progress_bar=False)
    vectors = np.stack([output["sentence_embedding"].float().cpu().numpy() for output in outputs])
    return vectors, [word_weights(model, text, output) for text, output in zip(texts, outputs)]


def word_weights(model, text: str, output: dict) -> list[list]:
    """The weights of one text's tokens merged into its words, in order, each word as written in the text."""
    length = int(output["attention_mask"].sum())  # encode leaves the batch's padding on
    weights = output["token_weights"][:length].float().cpu().tolist()
    ids = output["input_ids"][:length].tolist()
    encoding = model.tokenizer(text, return_offsets_mapping=True, truncation=True, max_length=length)
    if encoding["input_ids"] != ids:  # another tokenisation: show the word pieces
        tokens = model.tokenizer.convert_ids_to_tokens(ids)
        return [[token, round(weight, 6)] for token, weight in zip(tokens, weights)]
    tokens = encoding.tokens()
    merged: list[list] = []
    last_word = None
    for n, (word, (start, end)) in enumerate(zip(encoding.word_ids(), encoding["offset_mapping"])):
        if word is not None and word == last_word:
            merged[-1][0] = text[merged[-1][2] : end]
            merged[-1][1] += weights[n]
        else:
            merged.append([tokens[n] if word is None else text[start:end], weights[n], start])
        last_word = word
    return [[word, round(weight, 6)] for word, weight, _ in merged]


NPY_MAGIC = b"\x93NUMPY\x01\x00"  # .npy format version 1.0
NPY_HEADER_BYTES = 128  # a multiple of 64, as numpy aligns it; room for any (rows, dim)


def npy_header(rows: int, dim: int) -> bytes:
    """The fixed-size .npy header of a little-endian float32 C-order (rows x dim) matrix."""
    text = repr({"descr": "<f4", "fortran_order": False, "shape": (rows, dim)}).encode("latin1")
    padding = NPY_HEADER_BYTES - len(NPY_MAGIC) - 2 - len(text) - 1
    return NPY_MAGIC + struct.pack("<H", len(text) + padding + 1) + text + b" " * padding + b"\n"


def sidecar_path(path: str | Path) -> Path:
    """Where the metadata of the .npy matrix `path` lives: FILE.npy -> FILE.npy.json."""
    path = Path(path)
    return path.with_name(path.name + ".json")


class NpyMatrix:
    """The float32 .npy matrix `embed --npy` writes, a window of rows at a time, so memory stays flat (the index's
    vector store is another format: `indexes/vector_file.VectorFile`).

    Rows go to a temporary file next to `path` behind a placeholder header;
    on leaving the `with` block the header gets the final shape and the file
    is renamed to `path`, so no reader ever sees half a file. That happens
    also after a bad record or a closed pipe, because the records already
    written point into it; an internal error leaves nothing behind. An
    existing `path` is refused unless `force`.
    """

    def __init__(self, path: str | Path, force: bool = False):
        self.path = Path(path)
        if self.path.is_dir():
            raise SembedError(f"--npy {self.path} is a directory", "give a file name")
        if self.path.exists() and not force:
            raise SembedError(f"{self.path} already exists", "pass --force to replace it, or choose another --npy")
        self.rows = 0
        self.dim = 0
        self.identity: Any = None  # the model_identity.Identity of the vectors: written to the sidecar FILE.json
        self._tmp = temporary_sibling(self.path)
        self._file: IO[bytes] | None = None

    def __enter__(self) -> NpyMatrix:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self._tmp, "wb")
            self._file.write(npy_header(0, 0))
        except OSError as e:
            raise SembedError(f"cannot write {self.path}: {e.strerror}") from None
        return self

    def append(self, matrix: np.ndarray) -> int:
        """Write rows after those already written; returns the number of the first."""
        assert self._file is not None, "NpyMatrix is used inside a with block"
        matrix = np.ascontiguousarray(matrix, dtype="<f4")
        if not self.rows:
            self.dim = matrix.shape[1]
        first = self.rows
        self._file.write(matrix.tobytes())
        self._file.flush()
        self.rows += len(matrix)
        return first

    def sidecar(self) -> dict:
        """FILE.npy.json: the model that made the rows (as each record's embedding_model names it) and the shape."""
        from .model_identity import FIELD

        return {
            FIELD: None if self.identity is None else str(self.identity),
            "rows": self.rows,
            "dim": self.dim,
            "dtype": "float32",
        }

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self._file is not None
        keep = exc_type is None or issubclass(exc_type, (SembedError, BrokenPipeError, KeyboardInterrupt))
        try:
            if keep:
                self._file.seek(0)
                self._file.write(npy_header(self.rows, self.dim))
            self._file.close()
            if keep:
                write_json_atomic(sidecar_path(self.path), self.sidecar())  # first: the matrix never lacks its own
                commit(self._tmp, self.path)
            if keep and exc_type is not None:
                log.warning(f"{self.path} holds the {self.rows} vectors of the records written before the stop")
        except OSError as e:
            raise SembedError(f"cannot write {self.path}: {e.strerror}") from None
        finally:
            if self._tmp.exists():
                self._tmp.unlink()
