"""The one error type users see, and its record-level variant.

A `SembedError` becomes a one-line ``error: ...`` on stderr and exit status 1
(see ``main.SembedGroup``). A `BadRecord` is raised by the code that checks a
single record; the record source adds the file name and physical line number.
"""

from __future__ import annotations


class SembedError(Exception):
    """A failure the user can fix: bad input, a missing model, an existing output."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} (hint: {self.hint})"


class BadRecord(SembedError):
    """One record is unusable; the source knows where it came from."""
