"""The docs site's generated and runnable parts: the architecture page's import graph is current, the Python API
page runs, and the README's links into docs/ lead somewhere. (`mkdocs build --strict` in .ci/run checks the links
and the navigation of the site itself.)

Run as a script, this file redraws the import graph on docs/architecture.md:

    python tests/test_docs_site.py
"""

from __future__ import annotations

import re
import sys
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script, for test_layers

from test_layers import LAYERS, PACKAGE, import_graph, layers  # noqa: E402

ARCHITECTURE = ROOT / "docs" / "architecture.md"
API = ROOT / "docs" / "api.md"
GRAPH = re.compile(r"(<!-- BEGIN IMPORT GRAPH -->\n).*?(<!-- END IMPORT GRAPH -->)", re.S)


def package_of(module: str, root: Path = ROOT, placed: dict[str, int | None] | None = None) -> str:
    """The box a module is drawn in: its layer (`test_layers.LAYERS`: a package, training/methods on its own, the
    CLI shell `main`, the root's modules in the layer that holds them), `root` for a module no layer holds."""
    layer = (layers(root) if placed is None else placed).get(module)
    return "root" if layer is None else LAYERS[layer][0]


def package_edges(graph: dict[str, set[str]], root: Path = ROOT) -> list[tuple[str, str]]:
    """(A, B) for each pair of boxes where some module of A imports some module of B."""
    placed = layers(root)
    boxes = {module: package_of(module, root, placed) for module in graph}
    return sorted({(boxes[a], boxes[b]) for a, targets in graph.items() for b in targets if boxes[a] != boxes[b]})


SUFFIX = {"main": ": the CLI shell", "root": ": the base"}
LABELS = {name: ", ".join(entries) + SUFFIX.get(name, "") for name, entries in LAYERS}


def mermaid(edges: list[tuple[str, str]]) -> str:
    """A Mermaid flowchart of the edges: each box once with its label (what its layer holds), top layer first, then
    the arrows."""
    order = [name for name, _ in LAYERS]
    names = sorted({name for edge in edges for name in edge}, key=lambda n: (order.index(n) if n in order else 0, n))
    ident = {name: name.replace(".", "_") for name in names}
    boxes = "".join(f'    {ident[n]}["{LABELS.get(n, n)}"]\n' for n in names)
    arrows = "".join(f"    {ident[a]} --> {ident[b]}\n" for a, b in edges)
    return f"```mermaid\nflowchart TD\n{boxes}{arrows}```\n"


def architecture_page(root: Path = ROOT) -> str:
    """docs/architecture.md with the import graph of the checkout at `root` drawn between its markers."""
    text = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert GRAPH.search(text), "no <!-- BEGIN IMPORT GRAPH --> ... <!-- END IMPORT GRAPH --> in docs/architecture.md"
    drawing = mermaid(package_edges(import_graph(root), root))
    return GRAPH.sub(lambda m: m.group(1) + drawing + m.group(2), text)


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", page.read_text(encoding="utf-8"), re.S | re.M)


# --- tests ---------------------------------------------------------------------------------------------


def test_the_architecture_import_graph_is_current():
    current = ARCHITECTURE.read_text(encoding="utf-8")
    assert current == architecture_page(), "redraw it with: python tests/test_docs_site.py"


def test_the_graph_draws_packages_and_keeps_the_shell_apart(tmp_path):
    package = tmp_path / PACKAGE
    for name in (
        "__init__.py",
        "main.py",
        "io.py",
        "commands/__init__.py",
        "commands/spo.py",
        "text/__init__.py",
        "text/spo.py",
        "training/__init__.py",
        "training/methods/__init__.py",
    ):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("")
    (package / "main.py").write_text("from .commands import spo\n")
    (package / "commands/spo.py").write_text("from ..text import spo\nfrom .. import io\n")
    (package / "text/spo.py").write_text("from .. import io\n")
    (package / "training/methods/__init__.py").write_text("def run():\n    from ... import io\n")
    assert package_edges(import_graph(tmp_path), tmp_path) == [
        ("commands", "root"),
        ("commands", "text"),
        ("main", "commands"),
        ("text", "root"),
        ("training.methods", "root"),
    ]


def test_readme_links_into_docs_lead_to_pages():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert local, "the README links into docs/"
    assert [link for link in local if not (ROOT / link).is_file()] == []


@pytest.mark.e2e
def test_the_python_api_page_runs(tmp_path, monkeypatch):
    """docs/api.md's Python blocks, in order, in one namespace, in an empty folder (the packaged models only:
    conftest keeps the model hubs offline)."""
    blocks = python_blocks(API)
    assert blocks, "docs/api.md has ```python blocks"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__api_page__"}
    for number, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"docs/api.md, block {number}", "exec"), namespace)
        except Exception:
            pytest.fail(f"docs/api.md, block {number} of {len(blocks)} fails:\n{traceback.format_exc()}")


if __name__ == "__main__":
    ARCHITECTURE.write_text(architecture_page(), encoding="utf-8")
    print(f"wrote {ARCHITECTURE.relative_to(ROOT)}", file=sys.stderr)
