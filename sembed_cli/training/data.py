"""Reading a training input: every method reads its input whole before the first step, and all read it alike.

`TrainingInput` is that reading: the checked records with a progress count on the console, the warning that
counts the records skipped as bad (--skip-errors) once all are read, the refusal of an input with nothing to
train on, and the provenance of the data (`data` in the model's sembed.json and in the checkpoints'
fingerprint: the input's name, what was read, the records skipped, the SHA-256 of what training sees).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from .. import console
from ..artifacts import ContentHash
from ..errors import SembedError
from ..io import RecordSource

log = logging.getLogger(__name__)


class TrainingInput:
    """One training input, read whole; `hash` takes what training sees of each record, in input order."""

    def __init__(self, source: RecordSource):
        self.source = source
        self.hash = ContentHash()

    @property
    def name(self) -> str:
        """The input as messages and the metadata name it (`<stdin>` or the path)."""
        return self.source.rejects.name

    @property
    def skipped(self) -> int:
        return len(self.source.rejects.skipped)

    def read(self, check: Callable[[dict], object], description: str, unit: str = "records") -> Iterator[dict]:
        """The records that pass `check`, counted on the console; once all are read, a warning counts the bad
        records skipped (the stream's own rules: without --skip-errors a bad record stops the command)."""
        yield from console.progress(self.source.checked(check), description, unit=unit)
        summary = self.source.summary()
        if summary:
            log.warning(summary)

    def refuse_empty(self, count: int, what: str, hint: str, detail: str = "") -> None:
        """The error "no WHAT in INPUT" when `count` is 0: training needs something to learn from."""
        if not count:
            raise SembedError(f"no {what} in {self.name}{detail}", hint)

    def provenance(self, sha256: str | None = None, **counts: object) -> dict:
        """The `data` part of the metadata: the input, `counts` (what was read), the records skipped, and the
        SHA-256 of what training sees (`hash`, unless given)."""
        return {
            "input": self.name,
            **counts,
            "skipped": self.skipped,
            "sha256": self.hash.hexdigest() if sha256 is None else sha256,
        }
