"""`man sembed-embed` works after the README's set-up (issue 42.6): .ci/install puts the pages of man/ into
.venv/share/man/man1, where man-db's manpath looks for .venv/bin on PATH (it maps DIR/bin to DIR/share/man)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from conftest import ROOT

VENV = ROOT / ".venv"
INSTALLED = VENV / "share" / "man" / "man1"
PAGES = sorted((ROOT / "man").glob("*.1"))

needs_venv = pytest.mark.skipif(not (VENV / "bin").is_dir(), reason="no .venv in the checkout: run bash .ci/install")


def test_the_install_script_copies_the_man_pages():
    script = (ROOT / ".ci" / "install").read_text()
    assert "mkdir -p .venv/share/man/man1\ninstall -m 644 man/*.1 .venv/share/man/man1/\n" in script


@needs_venv
def test_the_installed_pages_are_the_checkouts():
    assert PAGES and "sembed-embed.1" in [page.name for page in PAGES]
    for page in PAGES:
        installed = INSTALLED / page.name
        assert installed.is_file(), f"{installed} is missing: run bash .ci/install"
        assert installed.read_bytes() == page.read_bytes(), f"{installed} is stale: run bash .ci/install"


@needs_venv
@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed (apt-get install man-db)")
def test_man_finds_the_pages_with_the_venv_on_path():
    env = {key: value for key, value in os.environ.items() if key != "MANPATH"}
    env["PATH"] = f"{VENV / 'bin'}:{env.get('PATH', '')}"
    run = subprocess.run(["man", "-w", "sembed-embed"], capture_output=True, text=True, env=env, check=False)
    assert run.returncode == 0, run.stderr
    assert os.path.realpath(run.stdout.strip()) == os.path.realpath(INSTALLED / "sembed-embed.1")
