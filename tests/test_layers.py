"""The layers of sembed_cli: every import runs down the layers (`LAYERS`), `commands/` is a leaf, library code
loads no CLI, no module is part of an import circle, and the README's paper table is true.

spaCy's library never imports its `cli/`; sembed's library modules (text/,
models/, training/, evaluation/, readers/ and the root's stream) never import
`sembed_cli.commands` either: only the commands themselves and `main.py` do.
More generally a module imports modules of its own layer and of the layers
below it, never above (`upward_imports` names each "module -> module" that
does). The check reads the source with `ast`, so an import inside a function
counts, and so does one under `if TYPE_CHECKING`: a type from above is still
an arrow up.

Run as a script, this file prints the import graph between sembed modules
(one line per module: the sembed modules it imports), for any checkout:

    python tests/test_layers.py [--root CHECKOUT]
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "sembed_cli"
CLI = "sembed_cli.commands"
CLI_SHELL = {"sembed_cli.main"}  # the root command registers the subcommands
# The layers, top to bottom, each a name and what it holds: paths under sembed_cli/, a folder (`x/`) for every module
# in it, a file (`x.py`) for a module of the root; the longest path that holds a module places it. A module may import
# its own layer's modules and those of the layers below, never a layer above. Every module has a layer: a new root
# module is placed here.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("main", ("main.py", "__main__.py", "manpage.py")),  # the CLI shell: the root command, `python -m`, man pages
    ("commands", ("commands/",)),  # one thin typer command each
    ("options", ("options.py",)),  # the typer options the commands share
    ("api", ("__init__.py", "api.py")),  # the Python API: `import sembed_cli`
    ("parts", ("parts/",)),  # `parts run`: a corpus embedded in parts, and put back together
    ("training.methods", ("training/methods/",)),  # the registry of `train --method`
    ("training", ("training/",)),  # the trainers
    ("evaluation", ("evaluation/",)),  # `eval`'s tasks and their metrics
    ("indexes", ("indexes/",)),  # the index directory: build, update, merge, search, the votes over neighbours
    ("models", ("models/", "vector_rows.py", "token_attention.py")),  # models, what runs them, their vectors' rows
    ("readers", ("readers/",)),  # the formats of `convert`
    ("text", ("text/",)),  # spaCy, parses, S_cf, base forms, structural sets, name words
    ("io", ("io/", "artifacts.py")),  # the record stream, and the artifact directories written atomically
    ("root", ("errors.py", "console.py", "threads.py", "signals.py", "version.py", "distributed.py")),  # the base
)
PAPER_TABLE = re.compile(r"<!-- BEGIN PAPER FILES -->\n(.*?)<!-- END PAPER FILES -->", re.S)


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package under `root`, by dotted name (a package by its `__init__.py`)."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The sembed modules that module `name` (at `path`) imports anywhere in its source: at the top, inside
    functions, under `if TYPE_CHECKING`. `from PACKAGE import NAME` counts as the module PACKAGE.NAME where that
    is a module, else as PACKAGE."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                targets.add(submodule if submodule in known else source)
    return {module for module in (nearest(target, known) for target in targets) if module and module != name}


def nearest(target: str, known: dict[str, Path]) -> str | None:
    """`target` or the closest package above it that is a sembed module; None outside sembed."""
    parts = target.split(".")
    while parts:
        if ".".join(parts) in known:
            return ".".join(parts)
        parts.pop()
    return None


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the sembed modules it imports, for every module of the checkout at `root`."""
    known = modules(root)
    return {name: imported(name, path, known) for name, path in known.items()}


def layer_of(path: Path, root: Path = ROOT) -> int | None:
    """The position in `LAYERS` (0 at the top) of the module at `path`, None for a module no layer holds."""
    relative = path.relative_to(root / PACKAGE).as_posix()
    held = [
        (len(entry), n)
        for n, (_, entries) in enumerate(LAYERS)
        for entry in entries
        if relative == entry or (entry.endswith("/") and relative.startswith(entry))
    ]
    return max(held)[1] if held else None


def layers(root: Path = ROOT) -> dict[str, int | None]:
    """module -> its position in `LAYERS`, for every module of the checkout at `root`."""
    return {name: layer_of(path, root) for name, path in modules(root).items()}


def unplaced(root: Path = ROOT) -> list[str]:
    """The modules no layer holds."""
    return sorted(name for name, layer in layers(root).items() if layer is None)


def upward_imports(graph: dict[str, set[str]], placed: dict[str, int | None]) -> list[str]:
    """ "module -> module (layer -> a layer above)" for every import of a layer above the importer's."""
    return [
        f"{module} -> {target} ({LAYERS[low][0]} -> {LAYERS[high][0]}, a layer above)"
        for module, targets in sorted(graph.items())
        if (low := placed.get(module)) is not None
        for target in sorted(targets)
        if (high := placed.get(target)) is not None and high < low
    ]


def is_cli(module: str) -> bool:
    return module == CLI or module.startswith(CLI + ".")


def imports_of_the_cli(graph: dict[str, set[str]]) -> list[str]:
    """ "module -> command module" for every import of `commands/` from outside it and the root command."""
    return [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        if not is_cli(module) and module not in CLI_SHELL
        for target in sorted(targets)
        if is_cli(target)
    ]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph`: its strongly connected components of more than one module (Tarjan's
    algorithm, iterative), each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, targets = work[-1]
            target = next((t for t in targets if t in graph), None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def paper_table_paths(readme: Path) -> list[list[list[Path]]]:
    """The README's paper table: for each paper, the files (backticked) of each column after the paper's name,
    as paths; library, trainer and command paths are relative to `sembed_cli/`, the examples' to the checkout."""
    match = PAPER_TABLE.search(readme.read_text(encoding="utf-8"))
    assert match, f"no paper table (<!-- BEGIN PAPER FILES --> ... <!-- END PAPER FILES -->) in {readme}"
    rows = [line for line in match.group(1).splitlines() if line.startswith("|")][2:]  # past header and rule
    bases = (readme.parent / PACKAGE,) * 3 + (readme.parent,)
    return [
        [
            [base / path for path in re.findall(r"`([^`\s]+)`", cell)]
            for base, cell in zip(bases, row.strip("|").split("|")[1:], strict=True)
        ]
        for row in rows
    ]


# --- tests ---------------------------------------------------------------------------------------------


def test_no_module_outside_commands_and_main_imports_the_commands():
    assert imports_of_the_cli(import_graph()) == []


def test_every_module_has_a_layer():
    assert unplaced() == [], "place each in LAYERS (tests/test_layers.py)"


def test_every_import_runs_down_the_layers():
    """An arrow up (models/ importing evaluation/, text/ importing models/) ties a lower layer to one above it: the
    code moves to the layer that owns what it uses, or the lower layer declares what it needs (a Protocol)."""
    found = upward_imports(import_graph(), layers())
    assert not found, f"{len(found)} import(s) up the layers: " + "; ".join(found)


def test_the_layers_name_each_upward_import(tmp_path):
    package = tmp_path / PACKAGE
    for name in ("__init__.py", "errors.py", "models/__init__.py", "text/__init__.py", "text/sets.py", "stray.py"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("")
    (package / "models/__init__.py").write_text("from ..text import sets\nfrom .. import errors\n")
    (package / "text/sets.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ..models import Model\n"
    )
    (package / "errors.py").write_text("def hint():\n    from .text import sets\n")
    assert upward_imports(import_graph(tmp_path), layers(tmp_path)) == [
        f"{PACKAGE}.errors -> {PACKAGE}.text.sets (root -> text, a layer above)",
        f"{PACKAGE}.text.sets -> {PACKAGE}.models (text -> models, a layer above)",
    ]
    assert unplaced(tmp_path) == [f"{PACKAGE}.stray"]


def test_the_longest_path_places_a_module(tmp_path):
    def layer(name: str) -> str | None:
        found = layer_of(tmp_path / PACKAGE / name, tmp_path)
        return None if found is None else LAYERS[found][0]

    assert layer("training/methods/cf.py") == "training.methods"
    assert layer("training/x.py") == "training"
    assert layer("io.py") is None  # the folder io/ is a layer; a module io.py is not in it


def test_no_import_circle_among_sembed_modules():
    """Layers import downwards only: a circle (two modules that import each other, or a longer loop) means two
    sources of truth held together by import order, as the trainers and the method registry once were."""
    found = [" <-> ".join(m.removeprefix(PACKAGE + ".") for m in circle) for circle in circles(import_graph())]
    assert not found, f"{len(found)} import circle(s): " + "; ".join(found)


def test_trainers_import_nothing_of_the_method_registry():
    """Settings flow one way: `training/methods/X.py` declares them and hands them to its trainer."""
    registry = f"{PACKAGE}.training.methods"
    offenders = [
        f"{module} -> {target}"
        for module, targets in sorted(import_graph().items())
        if module.startswith(f"{PACKAGE}.training.") and not module.startswith(registry)
        for target in sorted(targets)
        if target == registry or target.startswith(registry + ".")
    ]
    assert offenders == []


def test_circles_finds_every_loop_and_only_loops():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"g", "a"}}
    assert circles(graph) == [["a", "b", "c"], ["e", "f"]]


def test_the_graph_sees_imports_inside_functions(tmp_path):
    package = tmp_path / PACKAGE
    (package / "commands").mkdir(parents=True)
    for name in ("__init__.py", "io.py", "commands/__init__.py", "commands/spo.py"):
        (package / name).write_text("")
    (package / "lib.py").write_text("def late():\n    from .commands.spo import x\n    from . import io\n")
    assert import_graph(tmp_path)["sembed_cli.lib"] == {"sembed_cli.commands.spo", "sembed_cli.io"}


@pytest.mark.subprocess
def test_sentence_embedding_loads_no_typer():
    probe = (
        "import sys, sembed_cli.models.sentence_embedding; print(sorted(m for m in sys.modules if m == 'typer' "
        "or m.startswith(('typer.', 'sembed_cli.commands'))))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.stdout == "[]\n"


def test_every_path_in_the_readme_paper_table_exists():
    rows = paper_table_paths(ROOT / "README.md")
    assert len(rows) == 5  # the five papers of /work/shared/papers
    for row in rows:
        assert len(row) == 4 and all(row), row  # library, trainer, command and example paths in every row
    missing = sorted(
        {str(path.relative_to(ROOT)) for row in rows for cell in row for path in cell if not path.is_file()}
    )
    assert missing == []


# --- the script ----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description="Print the import graph between sembed modules.")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to read (default: this one)")
    root = parser.parse_args().root.resolve()
    graph = import_graph(root)
    for module, targets in sorted(graph.items()):
        print(f"{module} -> {', '.join(sorted(targets))}")
    edges = sum(len(targets) for targets in graph.values())
    offenders = imports_of_the_cli(graph)
    shell = ", ".join(sorted(CLI_SHELL))
    print(f"{len(graph)} modules, {edges} edges, {len(offenders)} into {CLI} from outside it and {shell}")
    for line in offenders:
        print(f"  {line}")
    loops = circles(graph)
    print(f"{len(loops)} import circle(s)")
    for circle in loops:
        print(f"  {' <-> '.join(circle)}")
    upward = upward_imports(graph, layers(root))
    print(f"{len(upward)} import(s) up the layers ({' > '.join(name for name, _ in LAYERS)})")
    for line in upward:
        print(f"  {line}")
    for module in unplaced(root):
        print(f"  {module}: in no layer")


if __name__ == "__main__":
    main()
