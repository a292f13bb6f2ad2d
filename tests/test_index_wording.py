"""What `sembed index` tells the user is true (issue 39, item 5): the costs and defaults its help states are the
ones the code builds, and the error for an input where every record was bad says how many were skipped.

The expected help text is derived from indexes/kinds.py's functions, so changing the code without the help (or
the help without the code) fails here.
"""

from __future__ import annotations

import re

import typer
from conftest import jsonl, sembed

from sembed_cli.commands import index_options
from sembed_cli.indexes import kinds


def option_help(declaration) -> str:
    """The help string of an `Annotated[..., typer.Option(...)]` declaration."""
    option = next(m for m in declaration.__metadata__ if isinstance(m, typer.models.OptionInfo))
    return option.help


def test_the_type_help_gives_the_bytes_an_ivfpq_vector_costs():
    dim = 384
    code_bytes = kinds.pq_bytes(dim)
    built = kinds.bytes_per_vector(kinds.choose("ivfpq", 100_000, dim), dim, rerank_bytes=0) - 8  # less its id
    assert built == code_bytes  # the FAISS index really holds pq_bytes(dim) bytes of codes a vector
    expected = f"one byte per {dim // code_bytes} dimensions ({code_bytes} bytes at {dim}-d)"
    assert expected in option_help(index_options.IndexType)
    assert f"+ {kinds.bytes_per_vector(kinds.choose('hnsw', 1, dim), dim, 0) - 4 * dim} bytes a vector" in (
        option_help(index_options.IndexType)
    )


def test_the_nprobe_help_gives_the_default_the_code_picks():
    counts = [2**n for n in range(25)]
    picked = {count: kinds.nprobe(count) for count in counts}
    floor, ceiling = picked[2**24], max(picked.values())
    least = min(picked[count] for count in counts if picked[count] < count)
    shares = {count // picked[count] for count in counts if least < picked[count] < ceiling}
    assert floor == ceiling and len(shares) == 1
    share = shares.pop()
    for count in counts:  # the rule the help states gives what the code picks, for every cell count
        assert picked[count] == min(count, max(least, min(ceiling, count // share))), count
    words = re.sub(r"\s+", " ", option_help(index_options.NProbe))
    assert f"Default: 1/{share} of the cells, at least {least} (all of them when fewer) and at most {ceiling}." in (
        words
    )


def test_an_input_of_only_bad_records_says_how_many_were_skipped(tmp_path):
    bad = jsonl({"text": ""}, {"title": "no text"}) + "not json\n"
    run = sembed("index", "-q", "--skip-errors", "-o", str(tmp_path / "index"), input=bad)
    assert run.exit_code == 1
    assert run.stderr.strip() == "error: no records to index in <stdin> (3 skipped as bad records)"
    assert not (tmp_path / "index").exists()
    run = sembed("index", "-q", "--skip-errors", "-o", str(tmp_path / "index"), input="")  # nothing skipped
    assert run.exit_code == 1 and run.stderr.strip() == "error: no records to index in <stdin>"
