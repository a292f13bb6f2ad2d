"""sembed: composable command-line tools for sentence and word representations."""

__version__ = "0.1.0"
