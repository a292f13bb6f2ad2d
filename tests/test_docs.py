"""The man pages and the command reference (docs/commands.md) match --help; --help is instant."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

from sembed_cli import manpage


def test_man_pages_and_command_reference_are_current():
    stale = [str(p.relative_to(ROOT)) for p in manpage.stale()]
    assert stale == [], f"regenerate with: python -m sembed_cli.manpage  (stale: {stale})"


def test_every_command_has_a_man_page():
    names = {p.name for p in (ROOT / "man").glob("*.1")}
    assert names == {f"{c.replace(' ', '-')}.1" for c in manpage.help_texts()}
    assert {"sembed.1", "sembed-parse.1", "sembed-spo.1", "sembed-normalize.1", "sembed-convert.1"} <= names


@pytest.mark.subprocess
def test_help_imports_nothing_heavy():
    """--help stays fast because the command tree imports no model library; its time is bench/startup.py's."""
    code = (
        "import sys; from sembed_cli.main import app; "
        "print([m for m in ('spacy', 'torch', 'transformers', 'faiss', 'sentence_transformers') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"
    run = subprocess.run([sys.executable, "-m", "sembed_cli", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0 and "Commands:" in run.stdout
