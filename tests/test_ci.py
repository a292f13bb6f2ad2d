"""CI runs what the README says it runs (issue 39, item 6): `.ci/run` calls the README's test command word for word,
the install it starts with is the only one that asks pip (the command's own is then a check), and it prints the
slowest tests."""

from __future__ import annotations

import re

from conftest import ROOT


def readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"\*\*Install and run the tests\*\*.*?\n\n    ([^\n]+)\n", readme, re.S)
    assert found, "the README's 'Install and run the tests' command"
    return found.group(1)


def test_ci_calls_the_readme_test_command_after_one_install():
    command = readme_test_command()
    assert command == "bash .ci/install && .venv/bin/python -m pytest"
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if not line.startswith("#")]
    assert lines[-1] == command
    assert [line for line in lines if "bash .ci/install" in line] == ["bash .ci/install", command]
    assert any("--durations=25" in line for line in lines)


def test_a_second_install_only_checks():
    install = (ROOT / ".ci" / "install").read_text()
    check, installing = install.index(".venv/.installed 2>/dev/null"), install.index("pip install")
    assert check < installing and "exit 0" in install[check:installing]
    assert install.rstrip().splitlines()[-2] == 'echo "$made_from" > .venv/.installed'  # recorded only once done
