"""The bad-input policy of one input: stop at the first bad line with FILE:LINE, or (--skip-errors) count and go on."""

from __future__ import annotations

from ..errors import BadRecord


class Rejects:
    """The bad-input policy of one input: stop at the first bad line, or count and go on."""

    def __init__(self, name: str, skip_errors: bool = False):
        self.name = name
        self.skip_errors = skip_errors
        self.skipped: list[tuple[int, str]] = []

    def reject(self, line: int, message: str, hint: str | None = None) -> None:
        if not self.skip_errors:
            raise BadRecord(f"{self.name}:{line}: {message}", hint)
        self.skipped.append((line, message))

    def summary(self) -> str | None:
        """One line for stderr about skipped records, or None when nothing was skipped."""
        if not self.skipped:
            return None
        shown = ", ".join(str(line) for line, _ in self.skipped[:10])
        more = f" and {len(self.skipped) - 10} more" if len(self.skipped) > 10 else ""
        return (
            f"skipped {len(self.skipped)} bad record(s) in {self.name}: line {shown}{more}; first: {self.skipped[0][1]}"
        )
