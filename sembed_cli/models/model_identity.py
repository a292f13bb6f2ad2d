"""What made a vector: the `embedding_model` field every vector sembed writes carries, and the checks that read it.

SPEC section 1: vectors name the model that made them, and nothing compares or
indexes vectors of two different models. An identity is one short string:

    NAME@DIGEST[;SETTING=VALUE...]

    all-MiniLM-L6-v2@3d1f0b8e9a27
    /models/cf-bert@9c0e41d2b7a5;cf=0.2
    glove-6b-50d@b2e61c0d4f13;method=nws;salience=nws-glove@70aa2e51c9d8
    all-MiniLM-L6-v2@3d1f0b8e9a27;words=layer4;syntax_map=syntax-map@51e0c7aa9b3f

NAME is what the user called the model (a packaged name or a path, as given);
DIGEST is a short content hash of its files (`content_digest`); the settings
are what else changes the vector (CF-BERT's W_cf, a word-vector method and its
salience table, the --words recipe, a syntax map), in the order they apply.
A backend or quantisation whose vectors should not be compared with the
model's own is one more setting, one line where the vector is made:
`identity.with_setting("backend", "onnx-int8")`. The precision of
`embed --precision` (fp16/bf16 on CUDA) is not: its vectors are the same
model's within rounding, and an index built on a GPU answers queries
embedded on the CPU. Two identities name
the same vectors when their digest and settings agree (`Identity.key`): the
name is for people, since one model has many paths.

Records one `embed` run writes get one `embedding_model` for all their
vectors (a pair's embedding_a and embedding_b come from one model). Records
without the field (older files, vectors from elsewhere) are accepted as of
an unknown model, but never mixed with labelled ones (`OneModel`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadRecord, SembedError

FIELD = "embedding_model"
DIGEST_LENGTH = 12  # hex digits: 48 bits, plenty to tell a handful of models apart, short enough to read
SMALL_FILE = 1 << 20  # files up to 1 MiB (configs, tokenizers, pooling) are hashed whole
BLOCK = 1 << 16  # a larger file (the weights): its size, first and last 256 KiB and SAMPLES blocks between
EDGE = 1 << 18
SAMPLES = 16
SKIPPED_FILES = ("sembed.json",)  # sembed's metadata: timestamps, not weights (W_cf is a setting)
SKIPPED_DIRECTORIES = ("onnx", "openvino")  # other runtimes' copies of the weights: a backend is a setting


@dataclass(frozen=True)
class Identity:
    """NAME@DIGEST;k=v...: see the module docstring."""

    name: str
    digest: str
    settings: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return f"{self.name}@{self.digest}" + "".join(f";{key}={value}" for key, value in self.settings)

    @property
    def key(self) -> tuple:
        """What decides the vectors: the digest and the settings (a salience table's or map's digest, not its name)."""
        return self.digest, tuple((key, _digest_part(value)) for key, value in self.settings)

    def with_setting(self, key: str, value: object) -> Identity:
        """This identity with one more thing that changes the vector (e.g. with_setting("backend", "onnx-int8"))."""
        text = f"{value:g}" if isinstance(value, float) else str(value)
        return Identity(self.name, self.digest, (*self.settings, (key, text)))

    def without(self, *keys: str) -> Identity:
        return Identity(self.name, self.digest, tuple((k, v) for k, v in self.settings if k not in keys))

    def same(self, other: Identity) -> bool:
        return self.key == other.key

    @classmethod
    def parse(cls, text: str) -> Identity:
        """The identity written as `str(identity)`; ValueError when `text` is not one."""
        head, *rest = text.split(";")
        name, at, digest = head.rpartition("@")
        if not at or not name or not digest:
            raise ValueError(f"'{text}' is not NAME@DIGEST[;SETTING=VALUE...]")
        settings = []
        for part in rest:
            key, equals, value = part.partition("=")
            if not equals or not key:
                raise ValueError(f"'{text}': '{part}' is not SETTING=VALUE")
            settings.append((key, value))
        return cls(name, digest, tuple(settings))


def _digest_part(value: str) -> str:
    """A setting's value as it decides the vector: NAME@DIGEST compares by DIGEST."""
    name, at, digest = value.rpartition("@")
    return digest if at and name else value


# --- content hashes --------------------------------------------------------------------------------------------


def _signature(path: Path) -> tuple:
    """What tells a changed file or directory from the last time we hashed it in this process."""
    stats = [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in _files(path)]
    return tuple(stats)


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    found = []
    for root, directories, names in os.walk(path):
        directories[:] = sorted(d for d in directories if not d.startswith(".") and d not in SKIPPED_DIRECTORIES)
        found += [
            Path(root) / n
            for n in sorted(names)
            if not n.startswith(".") and not n.endswith(".md") and n not in SKIPPED_FILES
        ]
    return found


def content_digest(path: str | Path) -> str:
    """A short hash of a model file or directory, cheap enough to take on every run (cached per process).

    It covers each file's path (relative to `path`) and size, the whole
    content of files up to 1 MiB (configuration, tokenizer, pooling, a
    salience table's small files) and, of a larger file (the weights), its
    first and last 256 KiB and 16 blocks of 64 KiB spread evenly between:
    about 1.5 MiB read for a 90 MB model. Training changes every block of
    the weights, so a fine-tuned model never shares its base model's digest.
    Left out: hidden files, *.md, sembed's own sembed.json (timestamps) and
    onnx/ and openvino/ copies of the weights.
    """
    root = Path(path).expanduser().resolve()
    try:
        return _cached_digest(root, _signature(root))
    except OSError as e:
        raise SembedError(f"cannot read {root} to identify it: {e.strerror}") from None


@functools.lru_cache(maxsize=32)
def _cached_digest(root: Path, signature: tuple) -> str:
    digest = hashlib.sha256()
    for file in _files(root):
        size = file.stat().st_size
        relative = file.name if root.is_file() else file.relative_to(root).as_posix()
        digest.update(f"{relative}\0{size}\0".encode())
        with open(file, "rb") as f:
            if size <= SMALL_FILE:
                digest.update(f.read())
                continue
            digest.update(f.read(EDGE))
            for n in range(1, SAMPLES + 1):
                f.seek(EDGE + (size - 2 * EDGE - BLOCK) * n // (SAMPLES + 1))
                digest.update(f.read(BLOCK))
            f.seek(size - EDGE)
            digest.update(f.read(EDGE))
    return digest.hexdigest()[:DIGEST_LENGTH]


def of_path(name: str, path: str | Path) -> Identity:
    """The identity of the model `name` whose files are at `path`, with no settings yet."""
    return Identity(name, content_digest(path))


def of_sentence_model(model: str) -> Identity:
    """A sentence-transformers model (packaged name or directory), by its directory's content."""
    from . import sentence_models

    return of_path(model, sentence_models.resolve_path(model))


def of_word_vector_method(vectors: Identity, method: str, salience: str | None, sif_component: str) -> Identity:
    """Sentence vectors of `embed --method` (avg, isf, sif, nws) from word vectors of identity `vectors`, with the
    salience table at `salience` (isf, sif, nws)."""
    identity = vectors.with_setting("method", method)
    if salience is not None:
        identity = identity.with_setting("salience", of_path(salience, salience))
    if method == "sif" and sif_component == "batch":
        identity = identity.with_setting("sif_component", "batch")
    return identity


# --- reading identities back -----------------------------------------------------------------------------------


PROBE_TEXT = "sembed index probe: Springfield, Illinois"


def model_fingerprint(encoder) -> str:
    """A short hash of the model's (rounded) vector for PROBE_TEXT: the same model gives the same fingerprint. Indexes
    written before model identities were checked by it."""
    import numpy as np

    vector = np.asarray(encoder.encode([PROBE_TEXT], show_progress_bar=False)[0], dtype=np.float32)
    return hashlib.sha256(np.round(vector, 3).tobytes() + str(vector.shape).encode()).hexdigest()[:16]


def read(record: dict, key: str = FIELD) -> Identity | None:
    """The record's identity, None when it has none; a BadRecord when the field is not one."""
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRecord(f"'{key}' must be a string NAME@DIGEST, got {type(value).__name__}")
    try:
        return Identity.parse(value)
    except ValueError as e:
        raise BadRecord(f"'{key}': {e}") from None


UNLABELLED = "no 'embedding_model' (vectors of an unknown model)"


def of_another_model(found: Identity | None, expected: Identity | None, *, weights_only: bool = False) -> bool:
    """Whether vectors of `found` are another model's than `expected`'s, so that the two are never compared, indexed
    together or searched with one another. Where either is unknown (None) the other is taken at its word.
    `weights_only` compares the model files alone, not the settings: a query model, which has none, against an
    index whose vectors carry W_cf."""
    if found is None or expected is None:
        return False
    return found.digest != expected.digest if weights_only else not found.same(expected)


def refuse_another_model(
    found: Identity | None,
    expected: Identity | None,
    message: str,
    hint: str | None = None,
    *,
    weights_only: bool = False,
    error: type[SembedError] = SembedError,
) -> None:
    """Raise `error(message, hint)` when vectors of `found` are another model's than `expected`'s
    (`of_another_model`): the one check behind every "vectors of another model" refusal."""
    if of_another_model(found, expected, weights_only=weights_only):
        raise error(message, hint)


class OneModel:
    """The check that every record's vectors come from one model: the first record read decides.

    Records with no `embedding_model` are accepted when no record has one;
    a labelled record after unlabelled ones (or the reverse) is refused, as is
    another identity. `ignore` names settings that do not matter to the
    reader (eval sts --cf-grid reads the parts, the same for every W_cf).
    """

    def __init__(self, ignore: tuple[str, ...] = ()):
        self.ignore = ignore
        self.identity: Identity | None = None
        self.decided = False

    def __call__(self, record: dict) -> None:
        identity = read(record)
        if identity is not None and self.ignore:
            identity = identity.without(*self.ignore)
        if not self.decided:
            self.identity, self.decided = identity, True
            return
        if identity is None and self.identity is None:
            return
        if identity is None or self.identity is None or not identity.same(self.identity):
            raise BadRecord(
                f"{describe(identity)}, but earlier records {describe(self.identity, plural=True)}: "
                "vectors of two models cannot be compared"
            )

    def agree(self, other: Identity | None, what: str, hint: str | None = None) -> None:
        """The records' identity against another source's (an .npy sidecar); a SembedError naming both. Where
        either says nothing, the other is taken at its word."""
        if self.decided:
            refuse_another_model(
                self.identity,
                other,
                f"the records' vectors are of {name(self.identity)}, but {what} of {name(other)}",
                hint,
            )


def name(identity: Identity | None) -> str:
    return f"'{identity}'" if identity is not None else "an unknown model (no 'embedding_model')"


def describe(identity: Identity | None, plural: bool = False) -> str:
    if identity is None:
        return "have no 'embedding_model'" if plural else "no 'embedding_model' (vectors of an unknown model)"
    return f"{'are' if plural else 'embedding_model is'} '{identity}'"


# --- writing identities --------------------------------------------------------------------------------------


class Stamp:
    """Gives each record a run writes its `embedding_model`, after refusing records that would mix two models.

    `names` are the vector fields the run writes per text key (embedding,
    embedding_basic, embedding_row, ...; suffixed like the text key). A record
    that already holds other vectors (another text key's, from an earlier run)
    keeps them only when they are of this run's model.
    """

    def __init__(self, identity: Identity, names: tuple[str, ...] = ("embedding",)):
        self.identity, self.names = identity, names
        self.text = str(identity)

    def check(self, record: dict, keys: list[str]) -> None:
        kept = [f for f in record if f.startswith("embedding") and f != FIELD]
        if not kept:  # the common case, a record without vectors: nothing to compare (once a record, so quick)
            return
        from ..io import derived_key

        written = {derived_key(key, name) for key in keys for name in self.names}
        kept = [f for f in kept if f not in written]
        if kept:
            old = read(record)
            if old is None or not old.same(self.identity):
                raise BadRecord(
                    f"'{kept[0]}' is of {name(old)}, and this run embeds with '{self.identity}': one "
                    "record cannot hold vectors of two models (embed every text field in one run, or "
                    f"drop '{kept[0]}')"
                )

    def label(self, records):
        """The records, each with `embedding_model` (a lazy iterator)."""
        for record in records:
            record[FIELD] = self.text
            yield record
