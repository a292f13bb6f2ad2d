"""Windows start small and grow, so the first record comes out at once (issue 41.5): `... | sembed embed | head -1`
no longer waits for a whole --batch-size window. Nothing here is timed: the sizes and the flushes are checked."""

from __future__ import annotations

import itertools
import os
import select
import subprocess

import pytest
from conftest import ROOT

from sembed_cli.errors import SembedError
from sembed_cli.io import RecordSink, TextFields, batched, map_texts
from sembed_cli.io.batches import window_sizes


@pytest.mark.parametrize(
    "size, sizes",
    [
        (1, [1, 1, 1, 1]),
        (2, [1, 1, 2, 2]),
        (3, [1, 2, 3, 3]),
        (8, [1, 2, 4, 1, 8, 8]),
        (1000, [1, 2, 4, 8, 16, 32, 64, 128, 256, 489, 1000, 1000]),
    ],
)
def test_windows_double_from_one_and_end_on_the_first_full_window(size, sizes):
    assert list(itertools.islice(window_sizes(size), len(sizes))) == sizes
    assert sum(sizes[: sizes.index(size) if size > 1 else 1]) == size  # later windows are the ones cut before


def test_batched_grows_to_the_batch_size_and_keeps_the_later_windows():
    windows = [len(batch) for batch in batched(range(2600), 1000)]
    assert windows == [1, 2, 4, 8, 16, 32, 64, 128, 256, 489, 1000, 600]
    assert windows[0] == 1  # the first record is out as soon as it is processed


def test_the_partial_window_before_an_error_still_comes_out():
    def items():
        yield from range(5)
        raise SembedError("bad input")

    windows = []
    with pytest.raises(SembedError):
        for batch in batched(items(), 8):
            windows.append(batch)
    assert windows == [[0], [1, 2], [3, 4]]


class Flushes:
    """A sink's progress: the count written at each flush."""

    def __init__(self) -> None:
        self.counts: list[int] = []

    def written(self, count: int) -> None:
        self.counts.append(count)


def test_each_window_is_written_before_the_next_record_is_read(tmp_path):
    flushes, sizes, out_at_read = Flushes(), [], []

    def records():
        for n in range(20):
            out_at_read.append(flushes.counts[-1] if flushes.counts else 0)
            yield {"text": f"text {n}"}

    def process(texts: list[str]) -> list[str]:
        sizes.append(len(texts))
        return [text.upper() for text in texts]

    def store(record: dict, key: str, value: str) -> None:
        record["upper"] = value

    out = tmp_path / "out.jsonl"
    with RecordSink(str(out), flush_every=8, progress=flushes) as sink:
        sink.write_all(map_texts(records(), TextFields(), 8, process, store))
    assert sizes == [1, 2, 4, 1, 8, 4]
    assert flushes.counts == [1, 3, 7, 8, 16, 20]
    assert out_at_read[:2] == [0, 1]  # the first record is written before the second is read
    assert out.read_text().splitlines()[0] == '{"text":"text 0","upper":"TEXT 0"}'


@pytest.mark.subprocess
def test_a_pipe_gets_the_first_record_while_the_input_is_still_open(tmp_path):
    """One line in, the input left open: the first record comes out (before, it waited for 1,000 lines or EOF)."""
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", "SEMBED_THREADS": "1"}
    command = [str(ROOT / ".venv" / "bin" / "sembed"), "normalize", "--lines", "--batch-size", "1000"]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=ROOT) as run:
        assert run.stdin is not None and run.stdout is not None
        run.stdin.write(b"I can't wait.\n")
        run.stdin.flush()
        ready, _, _ = select.select([run.stdout], [], [], 300)  # a guard against a hang, not a timing
        first = run.stdout.readline() if ready else b""
        run.stdin.close()
        rest = run.stdout.read()
    assert first == b'{"text":"I can not wait.","text_raw":"I can\'t wait."}\n' and rest == b""
