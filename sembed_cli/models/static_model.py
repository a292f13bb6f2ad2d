"""Static sentence models: one vector per word-piece, a sentence the mean of its pieces' vectors; numpy only.

A static model directory is a sentence-transformers model of one
`StaticEmbedding` module (and Normalize), as sentence-transformers and
model2vec lay it out, so plain sentence-transformers loads it too:

    DIR/modules.json           StaticEmbedding (path ""), Normalize (1_Normalize)
    DIR/model.safetensors      embedding.weight: vocabulary x dim float32, each row already weighted
    DIR/tokenizer.json         the teacher's word-piece tokenizer, no truncation, no padding
    DIR/sembed.json            how `sembed train --method static` made it

A sentence vector is the mean of the rows of its word-pieces (special tokens
left out, as `StaticEmbedding` does: torch's EmbeddingBag in mean mode), made
unit length. The per-piece weights of SIF/Zipf or learnt salience are folded
into the rows (model2vec's convention), so the runtime is a lookup and a
sum: this module imports `tokenizers`, `safetensors.numpy` and numpy, never
torch. Built by `sembed_cli/training/static.py`.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..errors import SembedError

MODULE = "sentence_transformers.models.StaticEmbedding"  # the name every sentence-transformers version >= 3 loads
NORMALIZE = "sentence_transformers.models.Normalize"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_KEY = "embedding.weight"  # StaticEmbedding's state dict
TOKENIZER_FILE = "tokenizer.json"
NORMALIZE_DIR = "1_Normalize"
BY_POSITION = 32  # texts from which a window is summed a piece position at a time (`StaticModel.embed_ids`)
POSITIONS = 64  # pieces past which a text is summed alone there

log = logging.getLogger(__name__)


def module_types(path: Path) -> list[str]:
    """The module classes of the sentence-transformers directory at `path`, [] when it has no readable modules.json."""
    try:
        return [str(module["type"]) for module in json.loads((path / "modules.json").read_text(encoding="utf-8"))]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def is_static(path: Path) -> bool:
    """Whether the model at `path` is a static one (its first module a StaticEmbedding): embedded in numpy."""
    types = module_types(path)
    return bool(types) and types[0].rsplit(".", 1)[-1] == "StaticEmbedding"


class StaticModel:
    """A static sentence encoder with SentenceTransformer's `encode` (the arguments sembed uses), in numpy.

    `matrix` holds one row per token id of `tokenizer`; `normalize` makes the
    sentence vectors unit length. A text without a word-piece (empty after
    normalisation) gets the zero vector, as StaticEmbedding gives it.
    """

    identity: ClassVar[dict[str, str]] = {"backend": "static"}
    max_seq_length = 1 << 30  # no window: a text of any length is one sum

    def __init__(self, tokenizer, matrix: np.ndarray, normalize: bool = True, path: Path | None = None):
        self.tokenizer, self.matrix, self.normalize, self.path = tokenizer, matrix, normalize, path
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.fast_tokenizer = tokenizer  # what LongTexts reads (it never finds a text too long)
        self.ascii_tokenizer = ascii_tokenizer(tokenizer)

    @property
    def pipeline(self):  # sentence_embedding.normalises() asks the encoder's pipeline
        return self

    def get_embedding_dimension(self) -> int:
        return int(self.matrix.shape[1])

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, no special tokens (`encode_batch_fast`: no character offsets computed); a
        batch of plain ASCII texts by `ascii_tokenizer`'s copy, which gives them the same ids in less time."""
        texts = list(texts)
        tokenizer = self.tokenizer
        if self.ascii_tokenizer is not None and plain_ascii(texts):
            tokenizer = self.ascii_tokenizer
        return [encoding.ids for encoding in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 32,
        show_progress_bar: bool = False,
        convert_to_numpy: bool = True,
        **_,
    ) -> np.ndarray:
        """float32 sentence vectors of `texts`, in order; `batch_size` is ignored (a batch is one tokenizer call)."""
        return self.embed_ids(self.token_ids(texts))

    def embed_ids(self, ids: list[list[int]]) -> np.ndarray:
        """The mean of each text's rows (StaticEmbedding's EmbeddingBag, mode mean), then unit length.

        A text's sum adds its rows in their order in float32 to 0.0 (as numpy's sum over axis 0 of the text's
        rows does: -0.0 alone sums to 0.0), so the vectors are the same bits whichever way they are computed: a
        window of BY_POSITION texts or more a position at a time (`_sums_by_position`: a few numpy calls a
        window, about 2x faster than a call per text), a smaller one (a query, the first windows of a stream) a
        text at a time."""
        if len(ids) >= BY_POSITION:
            vectors = self._sums_by_position(ids)
        else:
            vectors = np.zeros((len(ids), self.matrix.shape[1]), dtype=np.float32)
            for n, pieces in enumerate(ids):
                if pieces:
                    vectors[n] = self.matrix[pieces].sum(axis=0)
        vectors /= np.maximum(np.fromiter(map(len, ids), dtype=np.float32, count=len(ids)), 1)[:, None]
        if self.normalize:
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors

    def _sums_by_position(self, ids: list[list[int]]) -> np.ndarray:
        """Each text's sum of rows, a piece position at a time: the texts sorted by length (longest first), so
        those with a p-th piece are the first k_p, and step p adds the rows of their p-th pieces in one gather;
        a text of more than POSITIONS pieces is summed alone, so a long one costs the rest no steps."""
        lengths = np.fromiter(map(len, ids), dtype=np.intp, count=len(ids))
        vectors = np.zeros((len(ids), self.matrix.shape[1]), dtype=np.float32)
        for n in np.flatnonzero(lengths > POSITIONS).tolist():
            vectors[n] = self.matrix[ids[n]].sum(axis=0)
        short = np.flatnonzero((lengths > 0) & (lengths <= POSITIONS))
        if not len(short):
            return vectors
        order = short[np.argsort(-lengths[short], kind="stable")]
        counts = lengths[order]
        pieces = np.fromiter(
            itertools.chain.from_iterable(ids[n] for n in order.tolist()), dtype=np.intp, count=int(counts.sum())
        )
        starts = np.zeros(len(order), dtype=np.intp)
        np.cumsum(counts[:-1], out=starts[1:])
        having = np.searchsorted(-counts, -np.arange(int(counts[0])), side="left")  # texts with a p-th piece
        sums = np.zeros((len(order), self.matrix.shape[1]), dtype=np.float32)
        for p, k in enumerate(having.tolist()):
            sums[:k] += self.matrix[pieces[starts[:k] + p]]
        vectors[order] = sums
        return vectors


DROPPED_BY_CLEAN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # ASCII controls but tab, LF, CR


def plain_ascii(texts: list[str]) -> bool:
    """Whether every text is ASCII without a control character other than tab, line feed and carriage return
    (str.isascii is a flag of the string: no scan)."""
    return all(map(str.isascii, texts)) and not any(map(DROPPED_BY_CLEAN_TEXT.search, texts))


def ascii_tokenizer(tokenizer):
    """A copy of a BERT-uncased tokenizer whose normaliser only lowercases (None for any other tokenizer): on
    `plain_ascii` texts BertNormalizer's other steps change nothing (clean_text drops control characters and
    makes tab, LF and CR spaces, which the pre-tokenizer splits on as it does on a space; the Chinese
    characters and accents it handles are not ASCII), so the pieces and ids are the same in about 70% of the
    time (15 CPU us a 12-word text against 22: its Unicode look-ups saved). tests/test_static_fast_path.py
    compares them."""
    import copy

    from tokenizers import normalizers

    normalizer = tokenizer.normalizer
    if not isinstance(normalizer, normalizers.BertNormalizer) or not normalizer.lowercase:
        return None
    plain = copy.deepcopy(tokenizer)
    plain.normalizer = normalizers.Lowercase()
    return plain


def load(path: str | Path) -> StaticModel:
    """The static model in directory `path`; a one-line error when its files are missing or unreadable."""
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError as e:
        raise SembedError(
            f"a static model needs {e.name}, which is not installed",
            "pip install 'sembed[static]' (tokenizers and safetensors)",
        ) from None

    path = Path(path)
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        folder = path / modules[0].get("path", "")
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        weights = load_file(str(folder / WEIGHTS_FILE))
    except Exception as e:  # OSError, JSON, SafetensorError; tokenizers raises a bare Exception
        raise SembedError(f"cannot load the static model at '{path}': {e}") from None
    types = [str(module.get("type", "")) for module in modules]
    if WEIGHTS_KEY in weights:
        matrix = weights[WEIGHTS_KEY]
    elif "embeddings" in weights:  # model2vec's layout: rows, and optionally a token mapping and weights
        matrix = fold_model2vec(weights)
    else:
        raise SembedError(f"the static model at '{path}' has no '{WEIGHTS_KEY}' in {WEIGHTS_FILE}")
    if matrix.ndim != 2 or matrix.shape[0] < tokenizer.get_vocab_size():
        raise SembedError(
            f"the static model at '{path}' has {matrix.shape[0]} rows for a tokenizer of "
            f"{tokenizer.get_vocab_size()} tokens"
        )
    normalize = any(t.rsplit(".", 1)[-1] == "Normalize" for t in types[1:])
    return StaticModel(tokenizer, np.ascontiguousarray(matrix, dtype=np.float32), normalize, path)


def fold_model2vec(weights: dict[str, np.ndarray]) -> np.ndarray:
    """model2vec's rows folded to one per token id, as StaticEmbedding folds them: embeddings[mapping[t]] * w[t]."""
    matrix = weights["embeddings"].astype(np.float32)
    if "mapping" in weights:
        matrix = matrix[weights["mapping"].astype(np.int64)]
    if "weights" in weights:
        matrix = matrix * weights["weights"].astype(np.float32)[:, None]
    return matrix


def save(directory: Path, tokenizer, matrix: np.ndarray, normalize: bool = True) -> None:
    """Write a static model into the (empty) `directory`, loadable by `load` and by sentence-transformers."""
    import copy

    from safetensors.numpy import save_file

    modules = [{"idx": 0, "name": "0", "path": "", "type": MODULE}]
    if normalize:
        modules.append({"idx": 1, "name": "1", "path": NORMALIZE_DIR, "type": NORMALIZE})
        (directory / NORMALIZE_DIR).mkdir()
    (directory / "modules.json").write_text(json.dumps(modules, indent=2) + "\n", encoding="utf-8")
    (directory / "config_sentence_transformers.json").write_text(
        json.dumps(
            {
                "model_type": "SentenceTransformer",
                "prompts": {},
                "default_prompt_name": None,
                "similarity_fn_name": "cosine",
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    save_file({WEIGHTS_KEY: np.ascontiguousarray(matrix, dtype=np.float32)}, str(directory / WEIGHTS_FILE))
    plain = copy.deepcopy(tokenizer)
    plain.no_truncation()
    plain.no_padding()
    plain.save(str(directory / TOKENIZER_FILE))
