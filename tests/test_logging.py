"""Library code reports through `logging`; the CLI's console shows it on stderr (issue 18, item 5).

As sentence-transformers does: each library module logs to `logging.getLogger(__name__)` and adds no handler;
the -q/-v options install the console's one handler on the `sembed_cli` logger, which shows INFO as information
(hidden by -q), WARNING as a `warning:` line (hidden by -q too: it shows errors only) and DEBUG under -v only.
"""

from __future__ import annotations

import ast
import json
import logging
import subprocess
import sys

import pytest
from conftest import ROOT, jsonl, sembed

PACKAGE = ROOT / "sembed_cli"
CLI_SHELL = ("commands", "main.py", "options.py", "console.py", "manpage.py", "__main__.py")  # may talk to people


def run_python(script: str) -> subprocess.CompletedProcess:
    """`script` in a fresh interpreter (nothing this test process imported or configured), which must succeed."""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    return run


def library_modules() -> list:
    return [path for path in sorted(PACKAGE.rglob("*.py")) if path.relative_to(PACKAGE).parts[0] not in CLI_SHELL]


@pytest.mark.subprocess
def test_library_modules_do_not_write_messages_on_the_console():
    calls = []
    for path in library_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "console"
                and node.attr in ("say", "warn", "error", "print")
            ):
                calls.append(f"{path.relative_to(ROOT)}:{node.lineno}: console.{node.attr}")
    assert calls == []


@pytest.mark.slow
@pytest.mark.subprocess
def test_importing_the_library_adds_no_logging_handler():
    names = [".".join(path.relative_to(ROOT).with_suffix("").parts) for path in library_modules()]
    script = (
        "import importlib, logging\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name.removesuffix('.__init__'))\n"
        "ours = [logger for name, logger in logging.Logger.manager.loggerDict.items()\n"
        "        if name.startswith('sembed_cli') and isinstance(logger, logging.Logger)]\n"
        "print([(logger.name, logger.handlers) for logger in [logging.getLogger(), *ours] if logger.handlers])\n"
    )
    assert run_python(script).stdout == "[]\n"


def test_a_library_message_is_a_log_record(caplog, tmp_path):
    from sembed_cli.training import checkpoints

    with caplog.at_level(logging.INFO, logger="sembed_cli"):
        checkpoints.prepare(tmp_path / "model", {"method": "nws"}, resume=True, force=False)
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "sembed_cli.training.checkpoints",
            "INFO",
            f"no checkpoint in {tmp_path / 'model.checkpoints'}: starting from the beginning",
        )
    ]


def test_the_stream_reports_skipped_records_as_a_warning_record(caplog, tmp_path):
    from sembed_cli.io import RecordSource, run_stream

    source = tmp_path / "in.jsonl"
    source.write_text(jsonl({"text": "A."}) + "not json\n")
    with caplog.at_level(logging.INFO, logger="sembed_cli"):
        written = run_stream(
            RecordSource(str(source), skip_errors=True), None, iter, str(tmp_path / "out.jsonl"), 1, "copying"
        )
    assert written == 1
    assert [(r.name, r.levelname) for r in caplog.records] == [("sembed_cli.io.stream", "WARNING")]
    assert caplog.records[0].getMessage().startswith(f"skipped 1 bad record(s) in {source}: line 2; first: invalid")


def test_the_cli_shows_library_information_and_warnings_and_q_shows_neither(tiny_model, one_torch_thread):
    # sembed_cli.models.sentence_embedding says how long texts were handled (INFO); sembed_cli.io warns of the
    # skipped line (WARNING)
    records = jsonl({"text": "word " * 100}) + "not json\n" + jsonl({"text": "Dogs bark."})
    information = "1 text(s) longer than the model's 64-token window: embedded whole, as the mean of their windows\n"
    warning = (
        "warning: skipped 1 bad record(s) in <stdin>: line 2; first: invalid JSON: invalid literal, expected "
        "'null' at column 1\n"
    )
    shown = sembed("embed", "-m", tiny_model, "--long-text", "window", "--skip-errors", input=records)
    assert shown.exit_code == 0 and len(shown.records) == 2
    assert shown.stderr == warning + information
    quiet = sembed("embed", "-m", tiny_model, "--long-text", "window", "--skip-errors", "-q", input=records)
    assert quiet.exit_code == 0 and quiet.records == shown.records
    assert quiet.stderr == ""  # -q: errors only, so a cron job mails nothing but failures
    verbose = sembed("embed", "-m", tiny_model, "--long-text", "window", "--skip-errors", "-v", input=records)
    debug = [line for line in verbose.stderr.splitlines(keepends=True) if line.startswith("DEBUG sembed_cli.")]
    assert "DEBUG sembed_cli.threads: 1 thread(s) (--threads)\n" in debug
    assert [line for line in verbose.stderr.splitlines(keepends=True) if line not in debug] == [warning, information]


def test_information_shows_on_rank_0_only(monkeypatch, capsys):
    from sembed_cli import console

    console.set_quiet(False)
    library = logging.getLogger("sembed_cli.io")
    monkeypatch.setattr(console.state, "rank", 1)
    library.info("information")
    library.warning("a warning")
    monkeypatch.setattr(console.state, "rank", 0)
    library.info("more information")
    assert capsys.readouterr().err == "warning: a warning\nmore information\n"


@pytest.mark.subprocess
def test_a_library_logging_through_the_root_logger_does_not_double_sembeds_messages():
    # onnxruntime's quantizer calls logging.warning, which gave the root a stderr handler (logging.basicConfig),
    # and each sembed warning then came out a second time as "WARNING:sembed_cli...:"
    script = (
        "import logging\n"
        "from sembed_cli import console\n"
        "console.set_quiet(False)\n"
        "logging.warning('a library on the root logger')\n"
        "logging.getLogger('sembed_cli.x').warning('once')\n"
    )
    assert run_python(script).stderr == "warning: once\n"


def test_q_shows_no_warning_and_the_index_records_them(tiny_model, one_torch_thread, tmp_path):
    # issue 42.3: a cron job's -q run mails nothing unless it fails; its warnings go into the index's sembed.json
    truncated = (
        "1 text(s) longer than the model's 64-token window were truncated to it "
        "(--long-text window embeds them whole, error refuses them)"
    )
    index = tmp_path / "idx"
    records = jsonl({"text": "word " * 100, "id": 1}, {"text": "Dogs bark.", "id": 2})
    built = sembed("index", "-q", "-m", tiny_model, "-o", str(index), input=records)
    assert (built.exit_code, built.stderr) == (0, "")
    assert json.loads((index / "sembed.json").read_text())["warnings"] == [truncated]
    more = jsonl({"text": "Cats purr.", "id": 3}, {"text": "words " * 100, "id": 4}) + "not json\n"
    updated = sembed("index", "-q", "--update", str(index), "--skip-errors", input=more)
    assert (updated.exit_code, updated.stderr) == (0, "")
    assert json.loads((index / "sembed.json").read_text())["warnings"] == [
        truncated,
        "skipped 1 bad record(s) in <stdin>: line 3; first: invalid JSON: invalid literal, expected 'null' at column 1",
    ]
    shown = sembed("index", "-m", tiny_model, "-o", str(tmp_path / "shown"), input=records)
    assert f"warning: {truncated}\n" in shown.stderr
    assert json.loads((tmp_path / "shown" / "sembed.json").read_text())["warnings"] == [truncated]
    clean = sembed("index", "-q", "-m", tiny_model, "-o", str(tmp_path / "clean"), input=jsonl({"text": "Hi."}))
    assert clean.exit_code == 0 and json.loads((tmp_path / "clean" / "sembed.json").read_text())["warnings"] == []
