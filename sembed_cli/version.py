"""The version of sembed, in one place (pyproject.toml reads it; `sembed --version` and saved models show it)."""

__version__ = "0.1.0"
