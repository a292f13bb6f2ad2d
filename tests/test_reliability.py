"""Issue 37: an index searched while cron rewrites it, on a disk that fills up, with bytes that rot.

Readers never fail beside writers (a search loop beside 50 back-to-back updates: every answer is the index of one
commit); a full disk at any step of a build, an update or a merge leaves the index as it was, or reports success
when the commit was passed, with nothing left behind and one line naming the file (a small tmpfs in a mount
namespace of the test's own, the free space swept across the edge); a flipped byte in any file of an index or a
part is an error naming it; kill -9 at seeded random moments of a build, an update and a merge leaves the answers
of before or of after, and a re-run finishes the work (a part's: tests/test_parts_faults.py).

The vectors are given in the records (the tiny model's identity, no model run), so each sembed process costs its
start-up and little more (a part's full-disk test alone runs the tiny model): `-m reliability`, this file and the
part kill test of tests/test_parts_faults.py, took 3 min 22 s on the shared 2-core machine under a load average of
13 (64 s of CPU).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, TINY_DIM, jsonl, sembed, with_older_checks

from sembed_cli.indexes.directory import VectorIndex
from sembed_cli.models.model_identity import FIELD, of_sentence_model

pytest.importorskip("faiss")

pytestmark = [pytest.mark.reliability]

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "SEMBED_THREADS": "1", "OMP_NUM_THREADS": "1"}
SEMBED = [sys.executable, "-m", "sembed_cli"]
K = 8


def unit(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.standard_normal((count, TINY_DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def records(vectors: dict[str, np.ndarray], model: str) -> str:
    return jsonl(*({"id": key, "text": key, "embedding": v.tolist(), FIELD: model} for key, v in vectors.items()))


def answers(index: Path, queries: np.ndarray) -> list[list[str]]:
    """The ids of each query's K nearest rows in the index at `index`, best first."""
    with VectorIndex.load(index) as loaded:
        _, rows = loaded.search(queries, K)
        found = loaded.records(rows.ravel())
        return [[found[int(r)][0] for r in row if r >= 0] for row in rows]


def expected(vectors: dict[str, np.ndarray], queries: np.ndarray) -> list[list[str]]:
    keys = list(vectors)
    matrix = np.stack([vectors[key] for key in keys])
    order = np.argsort(-(queries @ matrix.T), axis=1, kind="stable")[:, :K]
    return [[keys[i] for i in row] for row in order]


@pytest.fixture(scope="module")
def model(tiny_model) -> str:
    return str(of_sentence_model(tiny_model))


def build(path: Path, vectors: dict[str, np.ndarray], model: str, *extra: str) -> None:
    run = sembed("index", "-q", "--type", "flat", *extra, "-o", str(path), input=records(vectors, model))
    assert run.exit_code == 0, run.stderr


def two_pieces(tmp_path: Path, model: str, rng: np.random.Generator, count: int, queries: int) -> tuple:
    """Two flat indexes of `count` random vectors each, `one` (ids a0...) and `two` (b0...), built under tmp_path
    for a merge, and the vectors of each and `queries` random queries."""
    one = {f"a{n}": v for n, v in enumerate(unit(rng, count))}
    two = {f"b{n}": v for n, v in enumerate(unit(rng, count))}
    asked = unit(rng, queries)
    build(tmp_path / "one", one, model)
    build(tmp_path / "two", two, model)
    return one, two, asked


# --- readers never fail beside writers (37.2) ---------------------------------------------------------------------

WRITER = """
import sys
from typer.testing import CliRunner
from sembed_cli.main import app
index, updates = sys.argv[1], sys.argv[2:]
for update in updates:
    run = CliRunner().invoke(app, ["index", "-q", "--update", index, update])
    if run.exit_code:
        sys.exit(f"{update}: {run.stderr}")
"""

READER = """
import json, sys, os
from typer.testing import CliRunner
from sembed_cli.main import app
index, queries, out, stop = sys.argv[1:]
with open(out, "w") as f:
    while not os.path.exists(stop):
        run = CliRunner().invoke(app, ["search", "-q", "--index", index, "-k", "%d", queries])
        f.write(json.dumps({"code": run.exit_code, "stdout": run.stdout, "stderr": run.stderr}) + "\\n")
        f.flush()
"""


@pytest.mark.subprocess
def test_searches_beside_50_updates_never_fail_and_answer_as_one_commit(model, tmp_path):
    rng = np.random.default_rng(37)
    state = {f"b{n}": v for n, v in enumerate(unit(rng, 40))}
    queries = unit(rng, 3)
    index = tmp_path / "idx"
    build(index, state, model)
    states = [expected(state, queries)]
    updates = []
    for n in range(1, 51):  # each update adds an id and changes another's vector (a FAISS remove and add)
        change = {f"u{n}": unit(rng, 1)[0], f"b{n % 40}": unit(rng, 1)[0]}
        state = {**state, **change}
        states.append(expected(state, queries))
        updates.append(tmp_path / f"update-{n}.jsonl")
        updates[-1].write_text(records(change, model))
    (tmp_path / "queries.jsonl").write_text(jsonl(*({"embedding": q.tolist(), FIELD: model} for q in queries)))
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            READER % K,
            str(index),
            str(tmp_path / "queries.jsonl"),
            str(tmp_path / "in.jsonl"),
            str(stop),
        ],
        env=ENV,
    )
    shell = subprocess.Popen(  # real `sembed search` processes too, each a start-up beside the commits
        [
            "sh",
            "-c",
            f"n=0; while [ ! -e {stop} ]; do n=$((n+1)); {' '.join(SEMBED)} search -q --index {index} "
            f"-k {K} {tmp_path}/queries.jsonl > {tmp_path}/proc-$n.out 2> {tmp_path}/proc-$n.err; "
            f"echo $? > {tmp_path}/proc-$n.code; done",
        ],
        env=ENV,
    )
    try:
        writer = subprocess.run(
            [sys.executable, "-c", WRITER, str(index), *map(str, updates)], env=ENV, capture_output=True, text=True
        )
    finally:
        stop.touch()
        reader.wait(60)
        shell.wait(60)
    assert writer.returncode == 0, writer.stderr
    runs = [json.loads(line) for line in (tmp_path / "in.jsonl").read_text().splitlines()]
    for code in sorted(tmp_path.glob("proc-*.code")):
        out = code.with_suffix(".out")
        runs.append(
            {"code": int(code.read_text()), "stdout": out.read_text(), "stderr": code.with_suffix(".err").read_text()}
        )
    assert len(runs) >= 10
    seen = set()
    for run in runs:
        assert run["code"] == 0, run["stderr"]
        found = [[hit["id"] for hit in json.loads(line)["neighbors"]] for line in run["stdout"].splitlines()]
        matches = [n for n, answer in enumerate(states) if answer == found]
        assert matches, f"an answer of no commit: {found}"
        seen.add(matches[0])
    assert len(seen) >= 3  # the searches did run across commits
    assert answers(index, queries) == states[-1]
    with VectorIndex.load(index) as loaded:  # the commit's FAISS file and the one before it: no other is left
        state = loaded.store.state
    kept = sorted({state["faiss_file"], state["previous_faiss"]})
    assert sorted(p.name for p in index.iterdir() if p.name.endswith(".faiss")) == kept
    assert int(state["generation"]) < 50  # updates whose new row stayed fresh wrote no FAISS file (fresh.py)


# --- all or nothing on a full disk (37.3) -------------------------------------------------------------------------


def on_small_disks(tmp_path: Path, prepare: str, command: str, sizes: list[int]) -> list[dict]:
    """For each size (KiB): a tmpfs of that size at tmp_path/disk (a mount namespace of this test's own), `prepare`
    run there (copies in), then `command`; what it left is copied out to tmp_path/out-SIZE. Skips the test where no
    tmpfs can be mounted."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare to mount a small tmpfs with")
    disk = tmp_path / "disk"
    disk.mkdir(parents=True, exist_ok=True)
    script = "set -u\n"
    for size in sizes:
        out = tmp_path / f"out-{size}"
        script += textwrap.dedent(
            f"""
            mount -t tmpfs -o size={size}k tmpfs {disk} || exit 99
            if cd {disk} && {prepare}; then
                {command} > {out}.stdout 2> {out}.stderr; echo $? > {out}.code
            else
                echo 98 > {out}.code; : > {out}.stderr  # what the command needs does not fit: no run
            fi
            cd {tmp_path} && mkdir -p {out} && ls -A {disk} > {out}.listing && cp -a {disk}/. {out}/ 2>/dev/null
            umount {disk}
            """
        )
    run = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, env=ENV)
    if run.returncode == 99 or "unshare: " in run.stderr:
        pytest.skip(f"no tmpfs can be mounted here: {run.stderr.strip()[:200]}")
    assert run.returncode == 0, run.stderr
    results = []
    for size in sizes:
        out = tmp_path / f"out-{size}"
        results.append(
            {
                "size": size,
                "code": int((tmp_path / f"out-{size}.code").read_text()),
                "stderr": (tmp_path / f"out-{size}.stderr").read_text(),
                "listing": (tmp_path / f"out-{size}.listing").read_text().split(),
                "out": out,
            }
        )
    return results


def check_all_or_nothing(results: list[dict], before, after, queries, name: str, kept: list[str]) -> tuple[int, int]:
    """Each run either succeeded (the index answers as after) or failed in one line naming a file, leaving the
    index as before and nothing else. Returns (failures, successes)."""
    failed = succeeded = 0
    for result in results:
        lines = result["stderr"].splitlines()
        if result["code"] == 98:
            continue
        if result["code"] == 0:
            succeeded += 1
            assert answers(result["out"] / name, queries) == after
        else:
            failed += 1
            assert result["code"] == 1 and len(lines) == 1, result["stderr"]
            assert lines[0].startswith("error: no space left on device writing "), lines[0]
            assert " free)" in lines[0] and "internal error" not in lines[0]
            assert sorted(result["listing"]) == sorted(kept), (result["size"], result["listing"])
            if before is not None:
                assert answers(result["out"] / name, queries) == before
                index_files = sorted(p.name for p in (result["out"] / name).iterdir())
                assert not [f for f in index_files if f.startswith(".") or f.startswith("vectors.new")], index_files
                assert len([f for f in index_files if f.endswith(".faiss")]) == 1, index_files
    return failed, succeeded


def sweep(sizes_of, tmp_path, prepare, command) -> list[dict]:
    """A coarse sweep of disk sizes, then the gap between the largest that failed and the smallest that succeeded
    cut in eight: the steps of the commit are all crossed."""
    coarse = on_small_disks(tmp_path, prepare, command, sizes_of)
    failing = [r["size"] for r in coarse if r["code"] == 1]
    passing = [r["size"] for r in coarse if r["code"] == 0]
    assert failing and passing, [(r["size"], r["code"], r["stderr"]) for r in coarse]
    low, high = max(failing), min(s for s in passing if s > max(failing))
    fine = sorted({low + (high - low) * i // 8 for i in range(1, 8)} - {low, high})
    return coarse + (on_small_disks(tmp_path / "fine", prepare, command, fine) if fine else [])


@pytest.mark.subprocess
def test_a_full_disk_during_an_update_or_a_build_changes_nothing_and_says_so(model, tmp_path):
    rng = np.random.default_rng(3)
    base = {f"b{n}": v for n, v in enumerate(unit(rng, 3000))}
    more = {f"m{n}": v for n, v in enumerate(unit(rng, 3000))}
    more["b1"] = unit(rng, 1)[0]
    queries = unit(rng, 4)
    index = tmp_path / "idx"
    build(index, base, model)
    before, after = expected(base, queries), expected({**base, **more}, queries)
    (tmp_path / "more.jsonl").write_text(records(more, model))
    used = sum(p.stat().st_size for p in index.iterdir()) // 1024
    sembed_line = " ".join(SEMBED)
    results = sweep(
        [used + extra for extra in (0, 64, 256, 512, 768, 1024, 1536, 2048, 4096)],
        tmp_path,
        f"cp -a {index} idx",
        f"{sembed_line} index -q --update idx {tmp_path}/more.jsonl",
    )
    failed, succeeded = check_all_or_nothing(results, before, after, queries, "idx", ["idx"])
    assert failed >= 3 and succeeded >= 2
    first = next(r for r in results if r["code"] == 1)
    named = ("index.1.faiss", "records.sqlite", "vectors", "fresh.3000.f32")  # the new rows' vectors go first
    assert any(name in first["stderr"] for name in named), first["stderr"]

    (tmp_path / "base.jsonl").write_text(records(base, model))
    built = tmp_path / "b"
    built.mkdir()
    results = sweep(
        [64, 256, 512, 1024, 1536, 2048, 4096],
        built,
        "true",
        f"{sembed_line} index -q --type flat -o new {tmp_path}/base.jsonl",
    )
    failed, succeeded = check_all_or_nothing(results, None, before, queries, "new", [])
    assert failed >= 2 and succeeded >= 1
    assert any("writing new/" in r["stderr"] for r in results)  # the final name, not the hidden one


@pytest.mark.subprocess
def test_a_full_disk_during_a_merge_leaves_no_half_index(model, tmp_path):
    one, two, queries = two_pieces(tmp_path, model, np.random.default_rng(5), 2000, 3)
    used = sum(p.stat().st_size for d in ("one", "two") for p in (tmp_path / d).iterdir()) // 1024
    results = sweep(
        [used + extra for extra in (0, 256, 512, 1024, 2048, 4096)],
        tmp_path,
        f"cp -a {tmp_path}/one {tmp_path}/two .",
        f"{' '.join(SEMBED)} index merge -q one two -o merged",
    )
    failed, succeeded = check_all_or_nothing(
        results, None, expected({**one, **two}, queries), queries, "merged", ["one", "two"]
    )
    assert failed >= 2 and succeeded >= 1


@pytest.mark.subprocess
def test_a_store_opened_on_a_full_disk_says_the_disk_is_full(model, tmp_path):
    """SQLite opens a WAL store by making its shared-memory file, and words the failure to grow it on a full disk
    'disk I/O error' (SQLITE_IOERR_SHMSIZE): it is the disk-full error naming the store, not a damaged index (a
    build's store turns to WAL at its commit, so its reopening to seal it meets this on a disk filled by it)."""
    build(tmp_path / "idx", dict(enumerate(unit(np.random.default_rng(6), 50))), model)
    fill = "head -c 100000000 /dev/zero > filler 2>/dev/null; true"
    query = f"{' '.join(SEMBED)} search -i idx {tmp_path}/q.jsonl -k 1"
    (tmp_path / "q.jsonl").write_text(records({"q": unit(np.random.default_rng(7), 1)[0]}, model))
    (result,) = on_small_disks(tmp_path, f"cp -a {tmp_path}/idx . && {fill}", query, [2048])
    assert result["code"] == 1, result["stderr"]
    assert result["stderr"].startswith("error: no space left on device writing idx/records.sqlite"), result["stderr"]


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_full_disk_during_a_part_leaves_no_part(tiny_model, tmp_path):
    source = tmp_path / "corpus.jsonl"
    source.write_text(jsonl(*({"id": n, "text": f"sentence number {n} of a corpus"} for n in range(3000))))
    command = f"{' '.join(SEMBED)} embed -q {source} --shard 1/2 --parts parts -m {tiny_model}"
    results = on_small_disks(tmp_path, "true", command, [150, 4000])  # each run starts torch: two sizes only
    assert [r["code"] for r in results] == [1, 0], [r["stderr"] for r in results]
    for result in results[:1]:
        assert result["stderr"].startswith("error: no space left on device writing parts/part-0001-of-0002")
        assert len(result["stderr"].splitlines()) == 1 and list((result["out"] / "parts").iterdir()) == []
    assert sembed("parts", str(results[1]["out"] / "parts"), "--check").exit_code == 1  # one part of two: done


# --- damage is an error, never an answer (37.4) -------------------------------------------------------------------


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def lossy(model, tmp_path_factory) -> tuple[Path, np.ndarray]:
    """An IVF index of scalar-quantised codes, re-ranked from vectors.f16 kept beside it."""
    rng = np.random.default_rng(11)
    vectors = {f"r{n}": v for n, v in enumerate(unit(rng, 600))}
    path = tmp_path_factory.mktemp("lossy") / "idx"
    run = sembed("index", "-q", "--type", "IVF4,SQ8", "-o", str(path), input=records(vectors, model))
    assert run.exit_code == 0, run.stderr
    return path, unit(rng, 2)


def search_error(index: Path, queries: np.ndarray, model: str) -> str:
    run = sembed(
        "search",
        "-q",
        "--index",
        str(index),
        "-k",
        "3",
        input=jsonl(*({"embedding": q.tolist(), FIELD: model} for q in queries)),
    )
    assert run.exit_code == 1, run.stdout
    assert run.stdout == "" and len(run.stderr.splitlines()) == 1
    return run.stderr


@pytest.mark.parametrize("name", ["index.faiss", "vectors.f16", "sembed.json", "records.sqlite"])
def test_a_flipped_byte_in_any_file_of_an_index_is_an_error_naming_it(lossy, model, tmp_path, name):
    source, queries = lossy
    assert sembed("index", "--check", str(source)).exit_code == 0
    rng = random.Random(name)
    for trial in range(3):
        damaged = tmp_path / f"d{trial}"
        shutil.copytree(source, damaged)
        path = damaged / name
        if name == "records.sqlite":  # a byte of a stored payload: SQLite itself cannot tell
            offset = path.read_bytes().index(f'"r{rng.randrange(600)}"'.encode()) + 2
        else:
            offset = rng.randrange(path.stat().st_size)
        flip(path, offset)
        checked = sembed("index", "--check", str(damaged))
        assert checked.exit_code == 1 and len(checked.stderr.splitlines()) == 1, checked.stderr
        assert checked.stderr.startswith(f"error: damaged index at '{damaged}': {name}"), checked.stderr
        if name != "records.sqlite":  # a payload is checked when a search returns its row
            assert f"{name}" in search_error(damaged, queries, model)


def test_check_says_whole_and_an_index_without_checksums_still_loads(lossy, model, tmp_path):
    import sqlite3

    source, queries = lossy
    run = sembed("index", "--check", str(source))
    assert run.exit_code == 0
    assert "index.faiss, sembed.json, vectors.f16 match their checksums" in run.stderr
    old = tmp_path / "old"
    shutil.copytree(source, old)
    with sqlite3.connect(old / "records.sqlite") as db:
        db.execute("DELETE FROM state WHERE key LIKE 'sum:%' OR key = 'metadata'")
    db.close()
    with_older_checks(old, None)
    assert answers(old, queries) == answers(source, queries)
    run = sembed("index", "--check", str(old))
    assert run.exit_code == 0 and "has no checksums" in run.stderr
    flip(old / "index.faiss", 10)  # what an old index cannot tell: answers change, silently (as before)


def test_a_damaged_part_is_an_error_naming_the_file(tiny_model, tmp_path, one_torch_thread):
    source = tmp_path / "corpus.jsonl"
    source.write_text(jsonl(*({"id": n, "text": f"sentence number {n} of the corpus"} for n in range(40))))
    parts = tmp_path / "parts"
    for index in (1, 2):
        run = sembed("embed", str(source), "--shard", f"{index}/2", "--parts", str(parts), "-m", tiny_model)
        assert run.exit_code == 0, run.stderr
    assert sembed("parts", str(parts), "--check").exit_code == 0
    clean = tmp_path / "clean"
    shutil.copytree(parts, clean)
    for name, offset in (("part-0001-of-0002.npy", -7), ("part-0002-of-0002.jsonl", 30)):
        shutil.rmtree(parts)
        shutil.copytree(clean, parts)
        path = parts / name
        flip(path, offset % path.stat().st_size)
        checked = sembed("parts", str(parts), "--check")
        assert checked.exit_code == 1
        assert checked.stderr.splitlines()[-1].startswith(f"error: damaged part: {parts}/{name}")
        built = sembed("index", str(parts), "-o", str(tmp_path / "idx"))
        assert built.exit_code == 1 and len(built.stderr.splitlines()) == 1, built.stderr
        assert name in built.stderr and not (tmp_path / "idx").exists()
    shutil.rmtree(parts)
    shutil.copytree(clean, parts)
    lines = (parts / "part-0002-of-0002.jsonl").read_bytes().splitlines(keepends=True)
    lines[2] = b"x" + lines[2][1:]  # a broken JSON line of the same size
    (parts / "part-0002-of-0002.jsonl").write_bytes(b"".join(lines))
    built = sembed("index", str(parts), "-o", str(tmp_path / "idx"))
    assert built.exit_code == 1
    assert built.stderr.startswith(f"error: {parts}/part-0002-of-0002.jsonl:3: not JSON"), built.stderr


# --- kill -9 at random moments (37.6; a part's: tests/test_parts_faults.py) -------------------------------------


def killed_at_random(command: list[str], rng: random.Random, longest: float) -> bool:
    """Run `command` and SIGKILL it at a random moment of its run; whether it was killed (not finished first)."""
    process = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(0.2, longest))
    process.send_signal(signal.SIGKILL)
    process.wait()
    return process.returncode == -signal.SIGKILL


@pytest.mark.subprocess
@pytest.mark.slow
def test_kill_9_at_random_moments_of_a_build_an_update_and_a_merge(model, tmp_path):
    rng = np.random.default_rng(9)
    chance = random.Random(37)
    base = {f"b{n}": v for n, v in enumerate(unit(rng, 4000))}
    more = {f"m{n}": v for n, v in enumerate(unit(rng, 4000))}
    queries = unit(rng, 3)
    (tmp_path / "base.jsonl").write_text(records(base, model))
    (tmp_path / "more.jsonl").write_text(records(more, model))
    before, after = expected(base, queries), expected({**base, **more}, queries)
    start = time.monotonic()
    build(tmp_path / "piece", more, model)
    longest = max(2.0, 3 * (time.monotonic() - start))

    index = tmp_path / "idx"
    build_command = [*SEMBED, "index", "-q", "--type", "flat", "-o", str(index), str(tmp_path / "base.jsonl")]
    for _ in range(3):
        shutil.rmtree(index, ignore_errors=True)
        killed_at_random(build_command, chance, longest)
        if index.exists():
            assert answers(index, queries) == before  # whole, or not there at all
    shutil.rmtree(index, ignore_errors=True)
    started = time.monotonic()
    assert subprocess.run(build_command, env=ENV).returncode == 0
    whole_run = time.monotonic() - started  # a process's whole build: the update's kills land inside a run that long
    assert answers(index, queries) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".idx")) == []  # the killed runs' folders

    update = [*SEMBED, "index", "-q", "--update", str(index), str(tmp_path / "more.jsonl")]
    killed = 0
    for _ in range(4):
        killed += killed_at_random(update, chance, max(0.3, 0.8 * whole_run))
        assert answers(index, queries) in (before, after)
    assert killed >= 1  # at least one kill landed before the update ended
    assert subprocess.run(update, env=ENV).returncode == 0
    assert answers(index, queries) == after
    assert sembed("index", "--check", str(index)).exit_code == 0

    one = tmp_path / "one"
    build(one, base, model)
    merged = tmp_path / "merged"
    merge = [*SEMBED, "index", "merge", "-q", str(one), str(tmp_path / "piece"), "-o", str(merged)]
    for _ in range(3):
        killed_at_random(merge, chance, longest)
        if merged.exists():
            assert answers(merged, queries) == after
    if merged.exists():
        shutil.rmtree(merged)
    assert subprocess.run(merge, env=ENV).returncode == 0
    assert answers(merged, queries) == after
    assert sembed("index", "--check", str(merged)).exit_code == 0
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name or ".old-" in p.name] == []


def test_a_store_with_its_checks_in_a_table_of_their_own_is_read_updated_checked_and_merged(model, tmp_path):
    """Stores written before 2026-11-28 keep each row's check in a `checks` table (store.layout): they answer as
    before, an update keeps their layout (rows added, removed, a payload changed), damage is still found, and a
    merge with a store of today's layout (the check in the row) writes today's."""
    from sembed_cli.indexes import store

    rng = np.random.default_rng(21)
    one, two, queries = two_pieces(tmp_path, model, rng, 300, 4)
    with VectorIndex.load(tmp_path / "two") as loaded:
        assert loaded.store.checks == store.IN_ROWS
    before = answers(tmp_path / "two", queries)
    with_older_checks(tmp_path / "two", "table")
    assert answers(tmp_path / "two", queries) == before == expected(two, queries)

    two = {key: v for key, v in two.items() if key != "b3"} | {f"c{n}": v for n, v in enumerate(unit(rng, 20))}
    lines = [{"id": key, "text": key, "embedding": v.tolist(), FIELD: model} for key, v in two.items()]
    lines[0]["note"] = "changed"  # the same vector and text, another payload
    run = sembed("index", "-q", "--update", str(tmp_path / "two"), "--sync", input=jsonl(*lines))
    assert run.exit_code == 0, run.stderr
    with VectorIndex.load(tmp_path / "two") as loaded:
        assert loaded.store.checks == store.IN_TABLE and loaded.count == 319
        row = next(row for row, key, _ in loaded.rows() if key == "b0")
        assert loaded.records([row])[row][1]["note"] == "changed"
    assert answers(tmp_path / "two", queries) == expected(two, queries)
    assert sembed("index", "--check", str(tmp_path / "two")).exit_code == 0

    run = sembed("index", "merge", "-q", str(tmp_path / "one"), str(tmp_path / "two"), "-o", str(tmp_path / "both"))
    assert run.exit_code == 0, run.stderr
    with VectorIndex.load(tmp_path / "both") as loaded:
        assert loaded.store.checks == store.IN_ROWS and loaded.count == 619
    assert answers(tmp_path / "both", queries) == expected({**one, **two}, queries)
    assert sembed("index", "--check", str(tmp_path / "both")).exit_code == 0

    damaged = tmp_path / "damaged"
    shutil.copytree(tmp_path / "two", damaged)
    flip(damaged / "records.sqlite", (damaged / "records.sqlite").read_bytes().index(b'"c7"') + 2)
    checked = sembed("index", "--check", str(damaged))
    assert checked.exit_code == 1 and "records.sqlite: row" in checked.stderr, checked.stderr
