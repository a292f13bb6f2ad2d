"""One part of a split, embedded: `sembed embed INPUT --shard I/N --parts DIR` as a typed function.

`embed_part(settings, directory, shard)` plans the part (`files.Part`: is it done already?) and, when it is not,
runs `models.embed_stream.embed_sentences` over the share with the part's hidden file names as its output and
matrix, then commits them with the manifest. `sembed embed --parts` and every engine of `sembed parts run` call it
alike, so parts made by any of them mix in one directory.

The manifest's settings are the part's `PartSettings`: how the input is read and the sentence vectors' settings,
less the fields that do not change the records or vectors (`SentenceVectorSettings.NOT_VECTORS`); a setting added
to either class is in the manifest with no list to keep. Manifests written before, by the command's parameter names,
still match (`files.comparable_settings`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from ..artifacts import exclusive
from ..io import Shard, StreamOptions, TextFields
from ..models.embed_stream import SentenceVectorSettings, embed_sentences
from .files import Part

log = logging.getLogger(__name__)

NOT_READING = ("input", "vectors")  # PartSettings' fields that are not how the input is read


@dataclass(frozen=True)
class PartSettings:
    """What a part is made of: INPUT (a file: a part reads it twice), how its records are read (--lines,
    --text-key, --skip-errors), and the sentence vectors of --method model (the model and how it runs)."""

    input: str
    vectors: SentenceVectorSettings = field(default_factory=SentenceVectorSettings)
    text_keys: tuple[str, ...] = ()  # none: each record's own text, text_a, text_b (TextFields)
    lines: bool | None = None  # --lines / --jsonl; None: by the file's name
    skip_errors: bool = False

    def manifest_settings(self) -> dict:
        """What decides a part's records and vectors, as its manifest keeps it: every field but the input (whose
        digest the manifest keeps apart) and SentenceVectorSettings.NOT_VECTORS."""
        vectors = {key: value for key, value in asdict(self.vectors).items() if key not in self.vectors.NOT_VECTORS}
        reading = {each.name: getattr(self, each.name) for each in fields(self) if each.name not in NOT_READING}
        return {**vectors, **reading}


def embed_part(
    settings: PartSettings,
    directory: str | Path,
    shard: Shard | None = None,
    force: bool = False,
    show: Callable[[list], None] | None = None,
) -> bool:
    """Part `shard` (None: the whole input as part 1 of 1) of `settings.input` into `directory`, written atomically
    with its manifest; False when the part was done already (its manifest matches and its files are whole) and
    `force` is not given. `show` is embed_sentences' (the weights of --plain)."""
    part = Part.plan(directory, settings.input, shard, settings.vectors.model, settings.manifest_settings())
    with exclusive(Path(directory) / part.name):  # a second writer of this part refuses, in one line
        done = part.done()
        if done and not force:
            log.info(f"{done}: skipped (--force redoes it)")
            return False
        with part.writing() as (records, matrix):
            stream = StreamOptions(
                settings.input, records, lines=settings.lines, force=True, shard=shard, skip_errors=settings.skip_errors
            )
            embed_sentences(stream, TextFields(settings.text_keys), replace(settings.vectors, npy=matrix), show)
    return True
