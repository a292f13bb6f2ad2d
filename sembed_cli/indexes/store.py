"""An index's rows in SQLite: id, content hash and payload by row number, read only where they are needed.

simonw/llm keeps embeddings with a content hash in SQLite for the same reason: a corpus of millions of records is
never parsed whole at start-up, `search` fetches the payloads of the neighbours it returns, and an update finds
an id's row and hash by the id's index. WAL mode lets searches read while a nightly update writes; an update is
one transaction, and its commit (with the `state` that names the current FAISS file) is the moment it happens. A
new store (a build's or a merge's, in a directory no search reads until it is moved into place) is filled with
its rollback journal in memory and turns to WAL at its commit: WAL would write each of its pages twice, into the
log and again at the checkpoint (8.5 -> 5.7 CPU-s for 953,433 rows and their keyword index). A search reads the
store through a memory map (`mapped`), its rows' ids and hashes as bytes (`ROW_BYTES`).

    rows(row INTEGER PRIMARY KEY, id TEXT UNIQUE, hash TEXT, payload BLOB, crc INTEGER)
        id: the record's id as compact JSON; crc: the CRC-32 of the row's id, hash and payload (`row_check`)
    removed(row INTEGER PRIMARY KEY)    rows a graph index (or the fresh rows) still holds but no longer answers with
    state(key TEXT PRIMARY KEY, value TEXT)

Damage: SQLite finds a broken page structure itself (an error, which `damaged` words); a byte changed inside a
row's values it cannot see, so each row carries a CRC-32, written with it and compared whenever rows are read for
an answer (`records`): a changed payload is an error naming the file and row, never an altered hit. `verify`
reads every row and SQLite's own `PRAGMA integrity_check` (`sembed index --check`).

Stores written before 2026-11-28 keep each row's CRC in a table of its own, `checks(row INTEGER PRIMARY KEY, crc
INTEGER)`, and are read and updated in that layout: a second B-tree seek a row, which cost a search of 1,000 real
queries 4.7 of its 15 ms in SQLite (7,155 rows of 1M). A store written before checks has neither and is read as
before (`layout`).
"""

from __future__ import annotations

import os
import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

import numpy as np

from ..errors import SembedError
from . import keyword

FILE = "records.sqlite"
FORMAT = 2  # sembed 0.1 kept records.jsonl
# rows or ids a lookup asks for in one statement, or SQLite's limit of host parameters where that is lower (999
# before 3.32): 1,000 real queries' 7,155 neighbours (1M windows) read 15 statements of 500 in 34 ms, 1 in 30
LOOKUP = 10_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS rows (row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, hash TEXT NOT NULL,
                                 payload BLOB NOT NULL, crc INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS removed (row INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
IN_ROWS, IN_TABLE = "rows", "table"  # where a store keeps its rows' checks (`layout`)
# a row's values as a read takes them: id and hash as bytes (`stored_check`); Python's strings of them cost 1.7 of
# the 15 ms of SQLite's reads for 1,000 real queries' 7,135 neighbours
ROW_BYTES = "row, CAST(id AS BLOB), CAST(hash AS BLOB), payload"
# a read-only connection reads the store through a memory map of up to this many bytes (SQLite caps it at its
# compiled limit, 2 GB by default), not a system call a page: 15.0 -> 9.2 ms for those 7,135 rows
MAPPED = 1 << 40


def row_check(key: str, digest: str, payload: bytes) -> int:
    """The CRC-32 of one row's values, as the store keeps it."""
    return stored_check(key.encode(), digest.encode(), payload)


def stored_check(key: bytes, digest: bytes, payload: bytes) -> int:
    """`row_check` of a row as read (`ROW_BYTES`): its id and hash as SQLite's UTF-8 bytes, no text decoded to be
    encoded again."""
    return zlib.crc32(payload, zlib.crc32(b"%s\0%s\0" % (key, digest)))


def layout(db: sqlite3.Connection) -> str | None:
    """Where the store open in `db` keeps its rows' checks: IN_ROWS (a crc column), IN_TABLE (the `checks` table
    of stores written before 2026-11-28), None (a store written before checks)."""
    if any(column == "crc" for _, column, *_ in db.execute("PRAGMA table_info(rows)")):
        return IN_ROWS
    if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checks'").fetchall():
        return IN_TABLE
    return None


def damaged(path: Path, error: Exception) -> SembedError:
    """A SQLite error met while reading the store at `path`, as the one-line error naming the file."""
    return SembedError(
        f"damaged index at '{path.parent}': {path.name}: {error}", "rebuild it with sembed index -o DIR --force"
    )


def uri_of(path: Path) -> str:
    return f"file:{quote(str(path.resolve()))}"


def connect(uri: str) -> sqlite3.Connection:
    """A connection to the database at the SQLite URI `uri` (URIs also in ATTACH: merge attaches its pieces)."""
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def connect_readonly(path: Path) -> tuple[sqlite3.Connection, str]:
    """A connection that writes nothing to the index (search, merge's pieces): read-only, taking part in WAL's locks
    so that it reads beside an update; where the directory cannot be written (a read-only mount, a shared copy
    the user may not write), SQLite cannot make the WAL's shared-memory file, and the database is read as immutable,
    which is sound there since no writer can change it either. A WAL file still holding committed pages (a writer
    that died before its checkpoint) cannot be read without writing: that is an error saying so."""
    uri = uri_of(path) + "?mode=ro"
    try:
        db = connect(uri)
        db.execute("SELECT 1 FROM state LIMIT 1").fetchall()  # a WAL database opens its -shm file here
        return mapped(db), uri
    except sqlite3.OperationalError:
        if os.access(path.parent, os.W_OK):
            raise
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size:
        raise SembedError(
            f"the index at '{path.parent}' cannot be written, and {wal.name} holds changes not yet in {path.name}",
            "open it once where it can be written (any sembed search there folds them in), then copy it",
        )
    return mapped(connect(uri + "&immutable=1")), uri + "&immutable=1"


def mapped(db: sqlite3.Connection) -> sqlite3.Connection:
    """`db`, reading its pages through a memory map (`MAPPED`). Sound beside an update: SQLite writes the file it
    maps and sees its own writes there, and sembed never makes a store's file shorter (no VACUUM), so no mapped page
    ends past its end. An I/O error under a map is a signal rather than an error, as it already was for a search's
    FAISS lists and kept vectors (both read through maps)."""
    db.execute(f"PRAGMA mmap_size={MAPPED}")
    return db


class RecordStore:
    """The SQLite database of an index directory; writes happen inside one transaction until `commit`."""

    def __init__(
        self, path: Path, create: bool = False, readonly: bool = False, text_key: str = "text", fts: bool = True
    ):
        """`fts`: with `create`, add the keyword index now (else the caller installs it once the rows are in: a
        build, whose one FTS5 'rebuild' costs a third of keeping it in step row by row)."""
        self.path = Path(path)
        if not create and not self.path.exists():
            raise SembedError(f"no {FILE} in '{self.path.parent}'", "build the index with sembed index -o DIR")
        try:
            if readonly:
                self.db, self.uri = connect_readonly(self.path)
            else:
                self.uri = uri_of(self.path)
                self.db = connect(self.uri)
                self.db.execute(f"PRAGMA journal_mode={'MEMORY' if create else 'WAL'}")  # WAL once committed
                self.db.execute("PRAGMA synchronous=NORMAL")
            self.new = create and not readonly
            self.chunk = min(LOOKUP, self.db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
            if create:
                self.db.executescript(SCHEMA)
                self.set_state(format=FORMAT, next_row=0, count=0)
                if fts:
                    keyword.install(self.db, text_key)  # the FTS5 table of the texts, kept in step by triggers
            self.state = dict(self.db.execute("SELECT key, value FROM state").fetchall())
            self.checks = layout(self.db)
        except sqlite3.DatabaseError as e:
            from ..io.atomic_files import DiskFull, is_disk_full

            if is_disk_full(e):
                raise DiskFull(self.path) from None
            raise SembedError(
                f"unreadable index at '{self.path.parent}': {FILE}: {e}", "rebuild it with sembed index -o DIR --force"
            ) from None
        self.writing = False

    @property
    def checked(self) -> bool:
        """Whether the rows carry checks (stores written before them do not)."""
        return self.checks is not None

    def check_of(self, schema: str = "") -> str:
        """The SQL expression of a row's check in this store's layout, its tables named with `schema` before them
        ("piece." in a merge, which attaches the store); NULL where the rows carry none."""
        if self.checks == IN_ROWS:
            return f"{schema}rows.crc"
        if self.checks == IN_TABLE:
            return f"(SELECT crc FROM {schema}checks WHERE {schema}checks.row = {schema}rows.row)"
        return "NULL"

    # --- state -------------------------------------------------------------------------------------------

    def set_state(self, **values: object) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)",
            [(key, str(value)) for key, value in values.items()],
        )
        self.state = dict(self.db.execute("SELECT key, value FROM state").fetchall())

    def forget_state(self, prefix: str) -> None:
        """Remove the state's keys that begin with `prefix`."""
        self.db.execute("DELETE FROM state WHERE substr(key, 1, ?) = ?", (len(prefix), prefix))
        self.state = dict(self.db.execute("SELECT key, value FROM state").fetchall())

    def number(self, key: str, default: int = 0) -> int:
        return int(self.state.get(key, default))

    @property
    def next_row(self) -> int:
        """One past the highest row number ever given (rows are never reused)."""
        return self.number("next_row")

    @property
    def count(self) -> int:
        """Rows that answer queries."""
        return self.number("count")

    # --- transactions ----------------------------------------------------------------------------------------

    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.writing = True

    def commit(self) -> None:
        """The moment the transaction happens; a failed COMMIT (a full disk) leaves it undone, and raises."""
        from ..io.atomic_files import disk_full_as_error

        with disk_full_as_error(self.path):
            self.db.execute("COMMIT")
            if self.new:  # filled: WAL from now on (module doc)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.new = False
        self.writing = False

    def rollback(self) -> None:
        """Undo the open transaction, if SQLite has not undone it already (a failed COMMIT may have): the error
        that led here is the one reported, never 'cannot rollback - no transaction is active'."""
        if self.writing and self.db.in_transaction:
            self.db.execute("ROLLBACK")
        self.writing = False

    def snapshot(self) -> None:
        """Read from one moment on (a search beside an update sees the index as it was when it began): the state
        is read again inside the read transaction, so it is the state of the commit every later read sees."""
        self.db.execute("BEGIN")
        self.state = dict(self.db.execute("SELECT key, value FROM state").fetchall())

    def close(self) -> None:
        try:
            self.rollback()
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # closing undoes what is open anyway
        self.db.close()

    # --- rows ------------------------------------------------------------------------------------------------

    def insert(self, rows: Iterable[tuple[int, str, str, bytes]]) -> None:
        """(row, id, hash, payload) rows; an id already there raises sqlite3.IntegrityError."""
        rows = list(rows)
        if self.checks == IN_ROWS:
            self.db.executemany(
                "INSERT INTO rows (row, id, hash, payload, crc) VALUES (?, ?, ?, ?, ?)",
                [(row, key, digest, payload, row_check(key, digest, payload)) for row, key, digest, payload in rows],
            )
            return
        self.db.executemany("INSERT INTO rows (row, id, hash, payload) VALUES (?, ?, ?, ?)", rows)
        if self.checks == IN_TABLE:
            self.db.executemany(
                "INSERT OR REPLACE INTO checks (row, crc) VALUES (?, ?)",
                [(row, row_check(key, digest, payload)) for row, key, digest, payload in rows],
            )

    def insert_new(self, rows: list[tuple[int, str, str, bytes]]) -> bool:
        """`insert` rows whose ids are believed new, without looking them up first (SQLite's unique index checks
        each as it goes in): False, and nothing inserted, where one was stored already."""
        self.db.execute("SAVEPOINT insert_new")
        try:
            self.insert(rows)
        except sqlite3.IntegrityError:
            self.db.execute("ROLLBACK TO insert_new")
            self.db.execute("RELEASE insert_new")
            return False
        # any other error (a full disk) goes up as it is: SQLite may have undone the transaction, savepoint and all
        self.db.execute("RELEASE insert_new")
        return True

    def delete(self, rows: list[int]) -> None:
        self.db.executemany("DELETE FROM rows WHERE row = ?", [(row,) for row in rows])
        if self.checks == IN_TABLE:
            self.db.executemany("DELETE FROM checks WHERE row = ?", [(row,) for row in rows])

    def mark_removed(self, rows: list[int]) -> None:
        self.db.executemany("INSERT OR IGNORE INTO removed (row) VALUES (?)", [(row,) for row in rows])

    def removed(self) -> list[int]:
        return [row for (row,) in self.db.execute("SELECT row FROM removed ORDER BY row")]

    def clear_removed(self, from_row: int = 0) -> None:
        """Forget the removed rows from `from_row` on: the graph holds none of them (compacted:
        indexes/compaction.py), or they were fresh rows that never reached FAISS (indexes/fresh.py)."""
        self.db.execute("DELETE FROM removed WHERE row >= ?", (from_row,))

    def set_payload(self, row: int, payload: bytes) -> None:
        self.db.execute("UPDATE rows SET payload = ? WHERE row = ?", (payload, row))
        if self.checks is None:
            return
        key, digest = self.db.execute("SELECT id, hash FROM rows WHERE row = ?", (row,)).fetchone()
        crc = row_check(key, digest, payload)
        if self.checks == IN_ROWS:
            self.db.execute("UPDATE rows SET crc = ? WHERE row = ?", (crc, row))
        else:
            self.db.execute("INSERT OR REPLACE INTO checks (row, crc) VALUES (?, ?)", (row, crc))

    def find(self, ids: list[str]) -> dict[str, tuple[int, str, bytes]]:
        """id -> (row, hash, payload) of those `ids` (compact JSON) that are stored."""
        found: dict[str, tuple[int, str, bytes]] = {}
        for start in range(0, len(ids), self.chunk):
            chunk = ids[start : start + self.chunk]
            marks = ",".join("?" * len(chunk))
            for row, key, digest, payload in self.db.execute(
                f"SELECT row, id, hash, payload FROM rows WHERE id IN ({marks})", chunk
            ):
                found[key] = (row, digest, payload)
        return found

    def records(self, rows: Sequence[int] | np.ndarray) -> dict[int, tuple[bytes, bytes]]:
        """row -> (id, payload) of the stored `rows`, as JSON bytes, each compared with its check (a mismatch is an
        error)."""
        numbers = np.asarray(rows, dtype=np.int64).ravel()
        wanted = np.unique(numbers[numbers >= 0]).tolist()
        found: dict[int, tuple[bytes, bytes]] = {}
        check = self.check_of()
        try:
            for start in range(0, len(wanted), self.chunk):
                chunk = wanted[start : start + self.chunk]
                marks = ",".join("?" * len(chunk))
                for row, key, digest, payload, crc in self.db.execute(
                    f"SELECT {ROW_BYTES}, {check} FROM rows WHERE row IN ({marks})", chunk
                ):
                    if crc is not None and stored_check(key, digest, payload) != crc:
                        raise SembedError(
                            f"damaged index at '{self.path.parent}': {FILE}: row {row} does not match its check "
                            "(its bytes changed after they were written)",
                            "rebuild it with sembed index -o DIR --force",
                        )
                    found[row] = (key, payload)
        except sqlite3.DatabaseError as e:
            raise damaged(self.path, e) from None
        return found

    def verify(self) -> list[str]:
        """Every problem of the store, read whole: SQLite's integrity check, then each row against its check."""
        try:
            problems = [
                f"{FILE}: {line}"
                for (line,) in self.db.execute("PRAGMA integrity_check(10)").fetchall()
                if line != "ok"
            ]
            if problems or not self.checked:
                return problems
            query = f"SELECT {ROW_BYTES}, {self.check_of()} FROM rows"
            for row, key, digest, payload, crc in self.db.execute(query):
                if crc is not None and stored_check(key, digest, payload) != crc:
                    problems.append(f"{FILE}: row {row} does not match its check")
                    if len(problems) >= 10:
                        break
            return problems
        except sqlite3.DatabaseError as e:
            return [f"{FILE}: {e}"]

    def rows(self, below: int | None = None) -> Iterator[tuple[int, str, str, bytes]]:
        """Every stored (row, id, hash, payload) in row order (below a row number, if given)."""
        query = (
            "SELECT row, id, hash, payload FROM rows"
            + (" WHERE row < ?" if below is not None else "")
            + " ORDER BY row"
        )
        yield from self.db.execute(query, (below,) if below is not None else ())

    def row_numbers(self, below: int | None = None) -> Iterator[int]:
        query = "SELECT row FROM rows" + (" WHERE row < ?" if below is not None else "") + " ORDER BY row"
        for (row,) in self.db.execute(query, (below,) if below is not None else ()):
            yield row

    def stored_from(self, row: int) -> int:
        """Rows numbered `row` or higher."""
        return int(self.db.execute("SELECT COUNT(*) FROM rows WHERE row >= ?", (row,)).fetchone()[0])

    def stored(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM rows").fetchone()[0])
