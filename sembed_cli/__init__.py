"""sembed: composable command-line tools for sentence and word representations, and the functions they call.

    import sembed_cli as sembed
    vectors = sembed.embed(["A man plays a guitar.", "Someone plays music."])
    sembed.build_index([{"id": 1, "text": "..."}, ...], "docs-index")
    hits = sembed.search("docs-index", ["guitar music"], k=3)

The functions live in `sembed_cli.api` (docs/api.md); they are loaded on first use, so that importing the
package, as every command does, stays quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

__all__ = [
    "__version__",
    "build_index",
    "cluster",
    "dedup",
    "embed",
    "embed_records",
    "evaluate_sts",
    "load_model",
    "merge_indexes",
    "open_index",
    "search",
    "train",
    "update_index",
]
API = frozenset(__all__) - {"__version__"}

if TYPE_CHECKING:
    from .api import (
        build_index,
        cluster,
        dedup,
        embed,
        embed_records,
        evaluate_sts,
        load_model,
        merge_indexes,
        open_index,
        search,
        train,
        update_index,
    )


def __getattr__(name: str) -> Any:
    if name in API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'sembed_cli' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
