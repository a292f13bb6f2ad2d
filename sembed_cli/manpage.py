"""Man pages (man/*.1) and the docs site's command reference (docs/commands.md), generated from --help.

    python -m sembed_cli.manpage          # rewrite man/ and docs/commands.md
    python -m sembed_cli.manpage --check  # exit 1 when either is stale

The help is rendered at a fixed width of 72 columns so the output does not
depend on the terminal, and set in the man page as preformatted text.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import typer

from .main import app
from .version import __version__

ROOT = Path(__file__).resolve().parent.parent
MAN_DIR = ROOT / "man"
REFERENCE = ROOT / "docs" / "commands.md"
WIDTH = 72


def help_texts() -> dict[str, str]:
    """'sembed', 'sembed CMD' and 'sembed GROUP CMD' mapped to their --help text, in the order the help lists them."""
    group = typer.main.get_command(app)
    root_ctx = group.make_context("sembed", [], resilient_parsing=True, terminal_width=WIDTH, max_content_width=WIDTH)
    texts: dict[str, str] = {}

    def visit(command, ctx) -> None:
        texts[ctx.command_path] = command.get_help(ctx)
        for name in getattr(command, "list_commands", lambda _: [])(ctx):
            sub = command.get_command(ctx, name)
            visit(sub, sub.make_context(name, [], parent=ctx, resilient_parsing=True))

    visit(group, root_ctx)
    return texts


def _roff(line: str) -> str:
    line = line.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + line if line.startswith((".", "'")) else line


def man_page(command: str, help_text: str) -> str:
    name = command.replace(" ", "-")
    summary = next((ln.strip() for ln in help_text.splitlines()[1:] if ln.strip()), "")
    see_also = (
        "sembed(1)"
        if " " in command
        else ", ".join(f"{c.replace(' ', chr(92) + '-')}(1)" for c in help_texts() if " " in c)
    )
    body = "\n".join(_roff(line) for line in help_text.rstrip().splitlines())
    return (
        f'.TH {name.upper()} 1 "" "sembed {__version__}" "sembed manual"\n'
        f".SH NAME\n{name.replace('-', chr(92) + '-')} \\- {_roff(summary)}\n"
        f".SH DESCRIPTION\n.nf\n{body}\n.fi\n.SH SEE ALSO\n{see_also}\n"
    )


def reference(texts: dict[str, str]) -> str:
    """The command reference page: every command's --help, in the order the help lists them."""
    parts = [
        "# Command reference\n\n"
        "<!-- Generated from --help by `python -m sembed_cli.manpage`; edit the commands, not this page. -->\n\n"
        "Every command's `--help`, as `sembed CMD --help` prints it (and `man -l man/sembed-CMD.1` shows it)."
    ]
    for command, text in texts.items():
        parts.append(f"\n## `{command}`\n\n```text\n{text.rstrip()}\n```")
    return "\n".join(parts) + "\n"


def expected_files() -> dict[Path, str]:
    texts = help_texts()
    files = {MAN_DIR / f"{c.replace(' ', '-')}.1": man_page(c, t) for c, t in texts.items()}
    files[REFERENCE] = reference(texts)
    return files


def stale() -> list[Path]:
    """Generated files that differ from what is on disk, and man pages for commands that no longer exist."""
    files = expected_files()
    out = [p for p, text in files.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    out += [p for p in MAN_DIR.glob("*.1") if p not in files]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale files instead of writing them")
    args = parser.parse_args()
    if args.check:
        paths = stale()
        for p in paths:
            print(f"stale: {p.relative_to(ROOT)}", file=sys.stderr)
        sys.exit(1 if paths else 0)
    MAN_DIR.mkdir(exist_ok=True)
    REFERENCE.parent.mkdir(exist_ok=True)
    for p in MAN_DIR.glob("*.1"):
        p.unlink()
    for path, text in expected_files().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
