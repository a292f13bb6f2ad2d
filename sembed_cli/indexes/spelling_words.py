"""`search --spelling`'s index of the names' words, kept between processes in sembed's cache.

The re-rank (models/poi_lookup.SpellingReranker) looks a query's words up among every indexed name, and its
one-word names one edit away: it reads all the names, makes their keys, indexes their words and the hashes of
their deletions at its first query, 18-26 s at 2.2M POI names on the 2-core Xeon (texts 4.5 s, keys 3.5, words
9.8, deletions 3.5: issue 36's 10x lookup), which every `sembed search --spelling` process paid again. The first
one now keeps what it made in the cache (SEMBED_CACHE, else ~/.cache/sembed: the ONNX exports'), under a name made
of the index's path and its commit, and the later ones map it (the vocabulary's dict, 0.3-0.6 s at 2.2M, is the
most of what is left: bench/spelling_startup.py).

Kept by commit, never stale: the entry's name is a digest of the index's real path, the commit's data digest
(which every added, replaced or removed row changes), its row counts and checksum of sembed.json, and the text
key, so a search beside a committing update reads the entry of the commit it loaded, or makes one. Kept in the
user's cache, not the index: a read-only index volume, and an index an update rewrites, need nothing written
there; an update costs nothing more. An entry is written under a temporary name and renamed whole, its files'
checksums checked when it is read (a damaged or partial entry is made again, never an answer), and a new entry
removes the index's older ones and those of indexes no longer there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..io.checksums import file_checksum

if TYPE_CHECKING:
    from ..models.poi_lookup import EditNeighbours, Names, NameWords
    from .directory import VectorIndex

log = logging.getLogger(__name__)

FORMAT = 2  # what an entry holds and how: a change makes every entry's name new
FOLDER = "spelling"  # under the cache root
VOCABULARY = "vocabulary.txt"  # the words, in id order, one a line (a word holds no blank)
KEYS = "keys.bin"  # the names' keys, UTF-8, one after another (KEY_STARTS says where each begins)
KEY_STARTS = "key_starts.npy"
LENGTHS = "lengths.npy"  # each key's length in characters
SOURCE = "source.json"  # the index's path and the files' checksums
STALE_TEMPORARY_S = 3600  # a temporary entry older than this was left by a killed process


class CachedNameWords:
    """The kept names of one commit of one index (models/poi_lookup.KeptNames)."""

    def __init__(self, root: Path, source: Path, commit: str):
        self.root, self.source = root, source
        place = hashlib.sha256(str(source).encode()).hexdigest()[:16]
        self.prefix = f"{place}-"
        self.entry = root / (self.prefix + hashlib.sha256(commit.encode()).hexdigest()[:16])

    @classmethod
    def of(cls, index: VectorIndex, text_key: str) -> CachedNameWords | None:
        """The entry of `index` as loaded (its commit), None for an index without a store's state (sembed 0.1)."""
        from ..models.onnx_encoder import cache_root
        from .directory import METADATA_FILE, sum_key

        state = getattr(index.store, "state", None)
        if state is None:
            return None
        source = Path(index.path).resolve()
        commit = json.dumps(
            [
                FORMAT,
                str(source),
                text_key,
                state.get("data_sha256", ""),
                state.get(sum_key(METADATA_FILE), ""),
                index.row_count,
                index.count,
                hashlib.sha256(np.ascontiguousarray(index.removed, dtype=np.int64).tobytes()).hexdigest(),
            ]
        )
        return cls(cache_root() / FOLDER, source, commit)

    def load(self) -> Names | None:
        """The kept names, their arrays memory-mapped; None where there is no whole entry (it is made again)."""
        from ..models.poi_lookup import EditNeighbours, NameWords

        if not self.entry.is_dir():
            return None
        try:
            sums = json.loads((self.entry / SOURCE).read_text(encoding="utf-8"))["checksums"]
            for name, checksum in sums.items():
                if file_checksum(self.entry / name, algorithm=checksum.split(":")[0]) != checksum:
                    raise ValueError(f"{name} does not match its checksum")
            text = (self.entry / VOCABULARY).read_text(encoding="utf-8")
            vocabulary = text.split("\n") if text else []
            arrays = {name: mapped(self.entry / f"{name}.npy") for name in NameWords.SAVED}
            keys = KeyColumn.mapped(self.entry / KEYS, mapped(self.entry / KEY_STARTS))
            lengths = mapped(self.entry / LENGTHS)
            edits = {name: mapped(self.entry / f"edit_{name}.npy") for name in EditNeighbours.SAVED}
            if not len(lengths) == len(keys) == len(arrays["sizes"]) or len(arrays["starts"]) != len(vocabulary) + 1:
                raise ValueError("its arrays disagree in length")
        except (OSError, ValueError, KeyError) as e:
            log.info(f"--spelling's kept index of words at {self.entry} is not whole ({e}): made again")
            shutil.rmtree(self.entry, ignore_errors=True)
            return None
        log.debug(f"--spelling's index of words read from {self.entry}")
        return keys, NameWords.restored(vocabulary, arrays), lengths, EditNeighbours.restored(edits)

    def save(self, keys: Sequence[str], words: NameWords, lengths: np.ndarray, edits: EditNeighbours) -> None:
        """Keep the names made for this commit (nothing where the cache cannot be written: said with -v)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            made = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
        except OSError as e:
            log.debug(f"--spelling's index of words is not kept ({e})")
            return
        try:
            vocabulary, arrays = words.saved()
            (made / VOCABULARY).write_text("\n".join(vocabulary), encoding="utf-8")
            for name, array in arrays.items():
                np.save(made / f"{name}.npy", np.ascontiguousarray(array))
            encoded = [key.encode("utf-8") for key in keys]
            (made / KEYS).write_bytes(b"".join(encoded))
            starts = np.zeros(len(encoded) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=starts[1:])
            np.save(made / KEY_STARTS, starts)
            np.save(made / LENGTHS, np.ascontiguousarray(lengths, dtype=np.int64))
            for name, array in edits.saved().items():
                np.save(made / f"edit_{name}.npy", np.ascontiguousarray(array))
            sums = {file.name: file_checksum(file) for file in sorted(made.iterdir())}
            (made / SOURCE).write_text(json.dumps({"index": str(self.source), "checksums": sums}), encoding="utf-8")
            os.rename(made, self.entry)  # whole or not at all; another process's entry of this commit may be first
        except OSError as e:
            shutil.rmtree(made, ignore_errors=True)
            if not self.entry.is_dir():
                log.debug(f"--spelling's index of words is not kept ({e})")
            return
        log.debug(f"--spelling's index of words kept at {self.entry}")
        self.prune()

    def prune(self) -> None:
        """Remove this index's entries of other commits, entries of indexes no longer there, and temporary ones
        a killed process left (a search that maps an entry keeps it while it runs: its files stay open)."""
        for entry in self.root.iterdir():
            if entry == self.entry:
                continue
            try:
                if entry.name.startswith(".tmp-"):
                    stale = time.time() - entry.stat().st_mtime > STALE_TEMPORARY_S
                elif entry.name.startswith(self.prefix):
                    stale = True
                else:
                    stale = not Path(json.loads((entry / SOURCE).read_text(encoding="utf-8"))["index"]).exists()
            except FileNotFoundError:  # another process removed or renamed it meanwhile
                continue
            except (OSError, ValueError, KeyError):
                stale = True
            if stale:
                shutil.rmtree(entry, ignore_errors=True)


def mapped(path: Path) -> np.ndarray:
    """The array saved at `path`, memory-mapped, as a plain ndarray: numpy's memmap subclass costs microseconds
    at every slice, and a query takes hundreds (a fifth of the re-rank's time at 2.2M names)."""
    return np.load(path, mmap_mode="r").view(np.ndarray)


class KeyColumn(Sequence[str]):
    """The names' keys, read one at a time from the kept UTF-8 bytes (`data`: bytes or a memory map of them)."""

    def __init__(self, data, starts: np.ndarray):
        self.data, self.starts = data, starts

    @classmethod
    def mapped(cls, path: Path, starts: np.ndarray) -> KeyColumn:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            return cls(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b"", starts)

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, row):  # rows only, no slices
        start, end = self.starts[row : row + 2].tolist()
        return self.data[start:end].decode("utf-8")
