"""The files of a parts directory, and writing one part so that no reader ever sees half of it.

`sembed embed IN --shard I/N --parts DIR` writes part I of N as

    DIR/part-000I-of-000N.jsonl      the share's records, each with embedding_row (a row of the .npy)
    DIR/part-000I-of-000N.npy        their vectors, float32 (and .npy.json, the matrix's sidecar)
    DIR/part-000I-of-000N.json       the manifest, written last: the part is done when it is there

The data files are written under hidden names carrying the writer's process id (`.part-...jsonl.partial-PID`),
synced, renamed to their final names, and only then is the manifest written (synced, renamed). A process killed at
any point leaves either hidden files or final files without a manifest: the part counts as missing, and the next
run redoes it. The manifest holds what decides whether a finished part still answers a new run: the digest of the
whole input and of this share, the model's identity, the settings that change the vectors; and what a reader
needs: the counts, the dimension, and the share positions of records skipped as bad (--skip-errors), so the parts
interleave back into input order (`reassemble`); and each data file's size and checksum (io.checksums): a part is
done while its files have their sizes (a stat), its bytes are compared wherever they are read whole (`sembed index
PARTS`, `parts --cat`: `reassemble`) and by `sembed parts DIR --check` (`verify`). A manifest written before
checksums has sizes only.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from ..artifacts import process_alive
from ..errors import SembedError
from ..io import Rejects, Shard, display_name, loads, text_lines
from ..io.atomic_files import DiskFull, commit, disk_full_as_error, is_disk_full, sync_directory, sync_file
from ..io.checksums import file_checksum, mismatch

log = logging.getLogger(__name__)

FORMAT = 1  # the manifest's format: a reader refuses one it does not know
MANIFEST = re.compile(r"^part-(\d{4,})-of-(\d{4,})\.json$")
PARTIAL = ".partial-"  # in the hidden names of files being written: .NAME.partial-HOST-PID
# Manifests written before the settings came from `embed_part.PartSettings` kept embed's command-line parameters:
# those of its other modes too (a part is --method model's: they never changed its vectors), and --plain beside
# --explain (--plain is --explain, shown). `comparable_settings` reads them as today's.
OTHER_MODES = frozenset({"method", "vectors", "salience", "sif_component", "words", "syntax_map"})


def writer() -> str:
    """HOST-PID of this process, as the hidden names carry it (a function: a forked child has its own pid)."""
    return f"{socket.gethostname()}-{os.getpid()}"


def part_name(index: int, count: int) -> str:
    return f"part-{index:04d}-of-{count:04d}"


@dataclass(frozen=True)
class PartFiles:
    """Where part `index` of `count` lives in `directory`."""

    directory: Path
    index: int
    count: int

    @property
    def name(self) -> str:
        return part_name(self.index, self.count)

    @property
    def records(self) -> Path:
        return self.directory / f"{self.name}.jsonl"

    @property
    def vectors(self) -> Path:
        return self.directory / f"{self.name}.npy"

    @property
    def sidecar(self) -> Path:
        return self.directory / f"{self.name}.npy.json"

    @property
    def manifest(self) -> Path:
        return self.directory / f"{self.name}.json"

    def hidden(self, final: Path) -> Path:
        """The name a file is written under before its rename: hidden, and naming the writer's host and process."""
        return final.with_name(f".{final.name}{PARTIAL}{writer()}")

    def partials(self) -> list[Path]:
        """Hidden files of this part that an interrupted writer left (or a live one is writing)."""
        return sorted(self.directory.glob(f".*{self.name}.*{PARTIAL}*"))

    def remove_leftovers(self) -> None:
        """Remove the hidden files of writers of this part that died on this host (a killed run's); those of
        other hosts may be live writers on a shared file system, and stay (`sembed parts` names them)."""
        for path in self.partials():
            found = re.search(re.escape(PARTIAL) + r"(.+?)-(\d+)(?=\.|$)", path.name)
            if found and found.group(1) == socket.gethostname() and not process_alive(int(found.group(2))):
                path.unlink(missing_ok=True)

    def read_manifest(self) -> dict | None:
        """The manifest, None when there is none or it is not one (a stray file is a missing part, not a crash)."""
        try:
            manifest = orjson.loads(self.manifest.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None


@dataclass(frozen=True)
class InputShare:
    """What a part was made from: the whole input's non-blank lines and this share's, counted and hashed (the raw
    text of each line), so a finished part is known to answer the same input without embedding it again."""

    path: str
    sha256: str
    records: int
    share_sha256: str
    share_records: int

    def describe(self) -> dict:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "records": self.records,
            "share_sha256": self.share_sha256,
            "share_records": self.share_records,
        }


def scan_share(path: str, shard: Shard) -> InputShare:
    """Read INPUT once, as RecordSource numbers its records (blank lines and undecodable ones not counted)."""
    whole, share = hashlib.sha256(), hashlib.sha256()
    position = -1
    for _, text in text_lines(path, Rejects(display_name(path), skip_errors=True)):
        if not text.strip():
            continue
        position += 1
        raw = text.encode("utf-8", "surrogateescape") + b"\n"
        whole.update(raw)
        if shard.owns(position):
            share.update(raw)
    records = position + 1
    share_records = len(range(shard.index - 1, records, shard.count))
    return InputShare(str(Path(path).resolve()), whole.hexdigest(), records, share.hexdigest(), share_records)


def comparable_settings(settings: object) -> object:
    """A manifest's settings as today's parts write them (`embed_part.PartSettings.manifest_settings`): those of a
    manifest written by embed's parameter names (it has "plain") without the other modes', --plain folded into
    --explain; today's as they are."""
    if not isinstance(settings, dict) or "plain" not in settings:
        return settings
    kept = {key: value for key, value in settings.items() if key not in OTHER_MODES and key != "plain"}
    kept["explain"] = bool(settings.get("explain")) or bool(settings.get("plain"))
    if kept.get("lines") is False:  # no --lines then: read as the file's name says, today's None (--jsonl is False)
        kept["lines"] = None
    return kept


def request_of(manifest: dict) -> tuple:
    """What a part was asked to be: equal requests make equal parts."""
    source = manifest.get("input", {})
    return (
        manifest.get("part"),
        manifest.get("of"),
        source.get("sha256"),
        source.get("share_sha256"),
        manifest.get("model"),
        orjson.dumps(comparable_settings(manifest.get("settings")), option=orjson.OPT_SORT_KEYS),
    )


def damage(files: PartFiles, manifest: dict) -> str | None:
    """Why a part's data no longer answers its manifest (a file gone or of another size), None when it does."""
    for path, key in ((files.records, "jsonl_bytes"), (files.vectors, "npy_bytes")):
        try:
            size = path.stat().st_size
        except OSError:
            return f"{path.name} is gone"
        if size != manifest.get("files", {}).get(key):
            return f"{path.name} has {size} bytes, its manifest says {manifest.get('files', {}).get(key)}"
    return None


CHECKSUMS = (("jsonl_bytes", "jsonl_checksum"), ("npy_bytes", "npy_checksum"))


def verify(files: PartFiles, manifest: dict) -> str | None:
    """Why a done part's data is damaged (a file's bytes against its manifest's checksum, a line that is not a
    JSON object), None when it is whole: `sembed parts DIR --check`."""
    problem = damage(files, manifest)
    if problem is not None:
        return problem
    recorded = manifest.get("files", {})
    for path, key in ((files.records, "jsonl_checksum"), (files.vectors, "npy_checksum")):
        if key in recorded:
            problem = mismatch(path, recorded[key])
            if problem is not None:
                return problem
    with open(files.records, "rb") as f:
        for number, line in enumerate(f, 1):
            try:
                record = loads(line)
            except ValueError as e:
                return f"{files.records.name}:{number}: not JSON ({e})"
            if not isinstance(record, dict):
                return f"{files.records.name}:{number}: not a JSON object"
    return None


class Part:
    """One part to write: planned (is it done already?), then written through `writing()`.

    `plan` reads INPUT's share and hashes the model's files; it loads no model, so a re-run of a finished part costs
    one read of the input."""

    def __init__(self, files: PartFiles, share: InputShare, model: str, settings: dict):
        self.files, self.share, self.model, self.settings = files, share, model, settings
        self.expected = {
            "part": files.index,
            "of": files.count,
            "input": share.describe(),
            "model": model,
            "settings": settings,
        }

    @classmethod
    def plan(cls, directory: str | Path, input: str, shard: Shard | None, model: str, settings: dict) -> Part:
        """Part `shard` of `input` in `directory`, of `model` and the `settings` that decide its records and
        vectors (`embed_part.PartSettings.manifest_settings`)."""
        from ..models import model_identity

        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise SembedError(f"--parts {directory} is a file", "give --parts a directory (it is made when missing)")
        shard = shard or Shard(1, 1)
        files = PartFiles(directory, shard.index, shard.count)
        return cls(files, scan_share(input, shard), str(model_identity.of_sentence_model(model)), settings)

    @property
    def name(self) -> str:
        return self.files.name

    def done(self) -> str | None:
        """Why the part needs no work (its manifest matches this run and its files are whole), else None."""
        manifest = self.files.read_manifest()
        if manifest is None or request_of(manifest) != request_of(self.expected):
            return None
        if damage(self.files, manifest) is not None:
            return None
        return f"{self.name} is done ({manifest.get('count')} records, {manifest.get('created')})"

    @contextmanager
    def writing(self) -> Iterator[tuple[str, str]]:
        """The hidden names to write the records and vectors to; on leaving without an error they are synced and
        renamed, then the manifest is written. An old manifest goes first, so the part is never 'done' with other
        data; on an error or an interrupt the hidden files go."""
        files = self.files
        try:
            files.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SembedError(f"cannot make the parts directory {files.directory}: {e.strerror or e}") from None
        files.manifest.unlink(missing_ok=True)
        records, vectors = files.hidden(files.records), files.hidden(files.vectors)
        written = (records, vectors, vectors.with_name(vectors.name + ".json"))
        try:
            with disk_full_as_error(files.directory / files.name):
                yield str(records), str(vectors)
                self._commit(*written)
        except DiskFull as e:  # named by the file's final name, not the hidden one it was written under
            name = e.path.name
            if name.startswith(".") and PARTIAL in name:
                raise e.shown_as(e.path.with_name(name[1 : name.index(PARTIAL)])) from None
            raise
        except SembedError as e:  # the record sink's own words for a full disk: the part's, here
            if e.__context__ is not None and is_disk_full(e.__context__):
                raise DiskFull(files.records) from None
            raise
        finally:
            for path in written:
                path.unlink(missing_ok=True)

    def _commit(self, records: Path, vectors: Path, sidecar: Path) -> None:
        files = self.files
        try:
            matrix = orjson.loads(sidecar.read_bytes())
        except (OSError, orjson.JSONDecodeError) as e:
            raise SembedError(f"the vectors of {self.name} were not finished: {e}") from None
        count = count_lines(records)
        skipped = (
            []
            if count == self.share.share_records
            else skipped_positions(self.share.path, Shard(files.index, files.count), records)
        )
        with disk_full_as_error(files.directory):
            for path in (records, vectors, sidecar):
                sync_file(path)
        commit(sidecar, files.sidecar)  # the matrix never lacks its own description
        commit(vectors, files.vectors)
        commit(records, files.records)
        sync_directory(files.directory)
        manifest = {
            "format": FORMAT,
            **self.expected,
            "embedding_model": matrix.get("embedding_model"),
            "dimension": matrix.get("dim"),
            "rows": matrix.get("rows"),
            "count": count,
            "skipped": skipped,
            "files": {
                "jsonl_bytes": files.records.stat().st_size,
                "npy_bytes": files.vectors.stat().st_size,
                "jsonl_checksum": file_checksum(files.records),
                "npy_checksum": file_checksum(files.vectors),
            },
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
        write_synced(files.manifest, manifest)
        files.remove_leftovers()
        log.info(
            f"wrote {self.name}: {count} records, {matrix.get('rows')} vectors of {matrix.get('dim')} "
            f"dimensions" + (f", {len(skipped)} bad record(s) skipped" if skipped else "")
        )


def count_lines(path: Path) -> int:
    count = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            count += block.count(b"\n")
    return count


def skipped_positions(input: str, shard: Shard, written: Path) -> list[int]:
    """The share positions (0, 1, ... within the share) of records the part left out as bad (--skip-errors).

    The written records are the share's records in order, less the bad ones, each with its input fields as they
    came plus embed's own (embedding...): walk both, and an input record that is not the next written one was
    skipped."""
    skipped = []
    position = -1
    with open(written, "rb") as out:
        pending = out.readline()
        for _, text in text_lines(input, Rejects(display_name(input), skip_errors=True)):
            if not text.strip():
                continue
            position += 1
            if not shard.owns(position):
                continue
            share_position = position // shard.count
            written_record = loads(pending) if pending else None
            if isinstance(written_record, dict) and _same_record(text, written_record):
                pending = out.readline()
            else:
                skipped.append(share_position)
    return skipped


def _same_record(text: str, written: dict) -> bool:
    try:
        record = loads(text)
    except orjson.JSONDecodeError:
        record = None
    if not isinstance(record, dict):  # plain text lines are records {"text": line}
        return written.get("text") == text and not isinstance(record, dict)
    return all(written.get(key) == value for key, value in record.items() if not key.startswith("embedding"))


def write_synced(path: Path, data: dict) -> None:
    """`data` as JSON at `path`, durably (io.atomic_files), under the hidden name of this writer, which a later run
    removes if it is left behind."""
    hidden = path.with_name(f".{path.name}{PARTIAL}{writer()}")
    try:
        with disk_full_as_error(path):
            hidden.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
            commit(hidden, path, durable=True)
    finally:
        hidden.unlink(missing_ok=True)


# --- a directory's parts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartState:
    """One part of a directory: done, missing or stale, and why (a line for the user)."""

    index: int
    count: int
    state: str
    reason: str = ""
    manifest: dict | None = None

    def describe(self) -> dict:
        described = {"part": self.index, "of": self.count, "state": self.state}
        if self.manifest is not None and self.state == "done":
            described.update(
                records=self.manifest.get("count"),
                skipped=len(self.manifest.get("skipped", [])),
                embedding_model=self.manifest.get("embedding_model"),
                created=self.manifest.get("created"),
                host=self.manifest.get("host"),
            )
        if self.reason:
            described["reason"] = self.reason
        return described


def split_count(directory: Path) -> int:
    """N, from the names of the parts in `directory` (manifests, data or hidden files); one N only."""
    if not directory.is_dir():
        raise SembedError(f"{directory} is not a directory", "give the DIR that `sembed embed --parts DIR` wrote")
    counts = set()
    for path in directory.iterdir():
        found = re.match(r"^\.?part-\d{4,}-of-(\d{4,})\.", path.name)
        if found:
            counts.add(int(found.group(1)))
    if not counts:
        raise SembedError(f"no parts in {directory}", "write them with `sembed embed IN --shard I/N --parts DIR`")
    if len(counts) > 1:
        shown = " and ".join(str(count) for count in sorted(counts))
        raise SembedError(
            f"{directory} holds parts of {shown} shares", "keep one split per directory: move the others' files away"
        )
    return counts.pop()


def survey(directory: str | Path) -> list[PartState]:
    """Every part of the directory's split, 1 to N, each done, missing or stale. A part is stale when its files no
    longer match its manifest, or when its manifest asks for another input, model or settings than the newest
    manifest of the directory (the run the user made last)."""
    directory = Path(directory)
    count = split_count(directory)
    manifests = {index: PartFiles(directory, index, count).read_manifest() for index in range(1, count + 1)}
    written = [
        (_written_at(PartFiles(directory, index, count).manifest), index)
        for index, manifest in manifests.items()
        if manifest is not None
    ]
    newest = manifests[max(written)[1]] if written else None
    states = []
    for index, manifest in manifests.items():
        files = PartFiles(directory, index, count)
        if manifest is None:
            partial = files.partials()
            reason = (
                "interrupted: " + ", ".join(p.name for p in partial)
                if partial
                else ("interrupted before its manifest" if files.records.exists() or files.vectors.exists() else "")
            )
            states.append(PartState(index, count, "missing", reason))
            continue
        broken = damage(files, manifest)
        differs = _difference(manifest, newest) if newest is not None else None  # a manifest exists: newest too
        if broken or differs:
            states.append(PartState(index, count, "stale", broken or differs or "", manifest))
        else:
            states.append(PartState(index, count, "done", "", manifest))
    return states


def _written_at(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _difference(manifest: dict, newest: dict) -> str | None:
    source, reference = manifest.get("input", {}), newest.get("input", {})
    if source.get("sha256") != reference.get("sha256"):
        return f"made from another input ({source.get('path')}, {source.get('records')} records)"
    if manifest.get("model") != newest.get("model"):
        return f"made with another model ({manifest.get('model')})"
    mine, theirs = comparable_settings(manifest.get("settings", {})), comparable_settings(newest.get("settings", {}))
    if mine != theirs:
        mine, theirs = (value if isinstance(value, dict) else {} for value in (mine, theirs))
        changed = sorted(key for key in set(mine) | set(theirs) if mine.get(key) != theirs.get(key))
        return "made with other settings (" + ", ".join(changed) + ")"
    return None


def summary(states: list[PartState]) -> str:
    """One line: how many parts are done, and which are not."""
    done = sum(state.state == "done" for state in states)
    line = f"{done} of {len(states)} parts done"
    for kind in ("missing", "stale"):
        numbers = [str(state.index) for state in states if state.state == kind]
        if numbers:
            line += (
                f"; {kind}: "
                + ", ".join(numbers[:20])
                + (f" and {len(numbers) - 20} more" if len(numbers) > 20 else "")
            )
    return line


def finished(directory: str | Path) -> list[dict]:
    """The manifests of every part, in order, when all are done and of one model; else the one-line error naming
    the parts that are not."""
    states = survey(directory)
    if any(state.state != "done" for state in states):
        raise SembedError(
            f"{directory}: {summary(states)}", "run the missing parts again (`sembed parts DIR` lists them)"
        )
    manifests = [state.manifest for state in states if state.manifest is not None]  # done: each has one
    models = {manifest.get("embedding_model") for manifest in manifests}
    if len(models) > 1:
        raise SembedError(
            f"{directory}: parts of {len(models)} models: " + ", ".join(sorted(map(str, models))),
            "embed every part with one model",
        )
    return manifests
