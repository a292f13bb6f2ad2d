"""Keyword search over an index's texts: SQLite FTS5 ranked by BM25, and its fusion with the vectors.

The full-text index lives in the index's own records.sqlite, as an FTS5 table with external content: the text of
each row is read from its stored payload (a view, `keyword_texts`), and triggers on the `rows` table keep the
FTS index in step with whatever writes rows (a build, `--update`, `--sync`, `index merge`), so no writer needs to
know it is there. An index built before it has no FTS table: `install` adds one (filled from the stored rows) at
its next `--update`; until then `--keyword` on it is an error saying so.

The keyword index is the user's to decline (`sembed index --no-keywords`, sembed.json's settings.keywords false):
a vector-only search of 11.3M windows would pay for it with 2.5 us a record of the build (29 of its 490 CPU-s,
one thread: the FTS5 fill tokenises and stems every text; bench/keyword_fill.py), 0.59 GB of the store's 4.7 GB,
and every later insert with its trigger's work. Such an index has no table and gets none at `--update`;
`--update DIR --keywords` adds it afterwards (a pass over the stored rows, run apart from the build) and `--update
DIR --no-keywords` drops it (`keep`).

    keyword_texts   VIEW (row, text): the text field of each stored payload
    keyword         fts5(text, content='keyword_texts', content_rowid='row'), tokenised by Porter's stemmer over
                    unicode61 (case and diacritics folded), so 'speeches' finds 'speech'

Ranking is FTS5's `bm25()` (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
2009; k1 = 1.2, b = 0.75), negated so that a higher score is better, as the cosines are. Hybrid search fuses the
two rankings by reciprocal-rank fusion (Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms
Condorcet and individual Rank Learning Methods", SIGIR 2009): score(d) = sum over rankings r of w_r / (60 +
rank_r(d)), rank counted from 1, with the keyword ranking weighted w and the vector ranking 1 - w (w = 0.5:
plain RRF, halved).
"""

from __future__ import annotations

import contextlib
import logging
import re
import sqlite3
from collections.abc import Sequence

import numpy as np

from ..errors import BadRecord, SembedError

log = logging.getLogger(__name__)

TABLE = "keyword"
VIEW = "keyword_texts"
TOKENIZE = "porter unicode61 remove_diacritics 2"
STATE_KEY = "keyword_text_key"  # the payload field the FTS table indexes, in the store's state
RRF_K = 60  # Cormack et al. 2009's constant
DEFAULT_WEIGHT = 0.5  # the keyword ranking's share in the fusion
HYBRID_DEPTH = 100  # each ranking's candidates fused into a hybrid answer (at least k)
COMMON_SHARE = 0.03  # --any-word leaves out words in more of the texts than this share (stop words)...
COMMON_FLOOR = 10_000  # ... and than this many texts: ranking that many matches takes milliseconds
WORD = re.compile(r"\w+", re.UNICODE)
HASH_SIZE = 16 << 20  # bytes of terms FTS5 holds in memory before writing a segment (`pending_terms`)
SETTING = "keywords"  # sembed.json's settings: false where the user declined the keyword index
ADD_HINT = "add it with sembed index --update DIR --keywords < /dev/null"


def json_path(key: str) -> str:
    """SQLite's JSON path of the top-level field `key` (quoted, so dots and spaces in a key are the key's)."""
    if '"' in key:
        raise SembedError(f"the text field '{key}' has a double quote: SQLite's JSON paths cannot name it")
    return f'$."{key}"'


def sql_text(value: str) -> str:
    """`value` as an SQL string literal (a trigger cannot take parameters: the path is written into it)."""
    return "'" + value.replace("'", "''") + "'"


def present(db: sqlite3.Connection) -> bool:
    """Whether the store has the FTS table (an index built before keyword search has none)."""
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchone() is not None


def install(db: sqlite3.Connection, text_key: str = "text", announce: bool = True) -> bool:
    """Add the FTS table, its view and the triggers that keep it in step to the store `db`, filled from the rows
    already stored; nothing when it is there. Returns whether it was added. Runs inside the caller's transaction
    where there is one (an update's: a failure rolls it back with the rest). `announce`: log the filling (not for
    a build's own rows)."""
    if present(db):
        return False
    text = f"json_extract(CAST({{}}.payload AS TEXT), {sql_text(json_path(text_key))})"
    for statement in (  # one by one: executescript would commit the caller's transaction first
        f"CREATE VIEW IF NOT EXISTS {VIEW} AS SELECT row, {text.format('rows')} AS text FROM rows",
        f"CREATE VIRTUAL TABLE {TABLE} USING fts5(text, content='{VIEW}', content_rowid='row', tokenize='{TOKENIZE}')",
        f"CREATE TRIGGER IF NOT EXISTS {TABLE}_insert AFTER INSERT ON rows BEGIN "
        f"INSERT INTO {TABLE} (rowid, text) VALUES (new.row, {text.format('new')}); END",
        f"CREATE TRIGGER IF NOT EXISTS {TABLE}_delete AFTER DELETE ON rows BEGIN "
        f"INSERT INTO {TABLE} ({TABLE}, rowid, text) VALUES ('delete', old.row, {text.format('old')}); END",
        f"CREATE TRIGGER IF NOT EXISTS {TABLE}_update AFTER UPDATE OF payload ON rows BEGIN "
        f"INSERT INTO {TABLE} ({TABLE}, rowid, text) VALUES ('delete', old.row, {text.format('old')}); "
        f"INSERT INTO {TABLE} (rowid, text) VALUES (new.row, {text.format('new')}); END",
    ):
        db.execute(statement)
    if db.execute("SELECT 1 FROM rows LIMIT 1").fetchone() is not None:
        if announce:
            log.info("adding the keyword index (FTS5) of the texts already stored, once")
        pending_terms(db)
        db.execute(f"INSERT INTO {TABLE} ({TABLE}) VALUES ('rebuild')")
    db.execute("INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)", (STATE_KEY, text_key))
    return True


def wanted(settings: dict) -> bool:
    """Whether the index whose sembed.json settings are `settings` keeps a keyword index: unless declined (an
    index built before the choice existed has none recorded, and gets one at its next update as before)."""
    return settings.get(SETTING, True) is not False


def keep(db: sqlite3.Connection, text_key: str, keywords: bool) -> None:
    """Give the store `db` its keyword index (`install`, filled from its rows) or take it away (`drop`), as
    `keywords` says, inside the caller's transaction."""
    if keywords:
        install(db, text_key)
    else:
        drop(db)


def drop(db: sqlite3.Connection) -> None:
    """Remove the FTS table, its view and triggers from the store `db`, if it has them (the pages they held are
    reused by later rows: sembed never makes a store's file shorter)."""
    if not present(db):
        return
    for name in ("insert", "delete", "update"):
        db.execute(f"DROP TRIGGER IF EXISTS {TABLE}_{name}")
    db.execute(f"DROP TABLE {TABLE}")
    db.execute(f"DROP VIEW IF EXISTS {VIEW}")
    db.execute("DELETE FROM state WHERE key = ?", (STATE_KEY,))
    log.info("dropped the keyword index (FTS5): sembed index --update DIR --keywords adds it again")


def pending_terms(db: sqlite3.Connection) -> None:
    """Let FTS5 gather up to HASH_SIZE bytes of terms in memory before it writes them out as a segment (1 MB by
    default): a fill from stored rows writes fewer, larger segments and merges them less (953,433 windows' texts
    2.42 -> 1.89 s, the same index content: only how it is cut into segments differs). A SQLite whose FTS5 has no
    such setting fills as before."""
    with contextlib.suppress(sqlite3.OperationalError):
        db.execute(f"INSERT INTO {TABLE} ({TABLE}, rank) VALUES ('hashsize', ?)", (HASH_SIZE,))


class KeywordIndex:
    """The FTS table of an opened store, searched by BM25 (a connection that may be read-only)."""

    def __init__(self, db: sqlite3.Connection, where: str = "", count: int | None = None):
        self.db, self.where = db, where
        self.count = count if count is not None else db.execute("SELECT COUNT(*) FROM rows").fetchone()[0]
        self._frequency: dict[str, int] = {}
        self._allowed: np.ndarray | None = None
        self._mask = np.zeros(0, dtype=bool)

    def frequency(self, word: str) -> int:
        """How many texts hold `word` (as FTS5 tokenises it), counted once per word and kept."""
        key = word.lower()
        if key not in self._frequency:
            query = '"' + key.replace('"', '""') + '"'
            self._frequency[key] = self.db.execute(
                f"SELECT COUNT(*) FROM {TABLE} WHERE {TABLE} MATCH ?", (query,)
            ).fetchone()[0]
        return self._frequency[key]

    def words_query(self, text: str) -> str:
        """--any-word: `text` as an FTS5 query matching any of its words, leaving out the words in more than
        COMMON_SHARE of the texts and more than COMMON_FLOOR texts (stop words: BM25 gives them little weight,
        IDF <= ln 32 = 3.5 against ~12 for a word in a few of a million texts, and ranking the half of a
        corpus that they match took 1-3 s a query at a million texts) unless every word is that common, when
        the rarest is kept; empty when no word is indexed."""
        words = list(dict.fromkeys(word.lower() for word in WORD.findall(text)))
        counted = [(self.frequency(word), word) for word in words]
        counted = [(count, word) for count, word in counted if count]
        limit = max(COMMON_SHARE * self.count, COMMON_FLOOR)
        kept = [word for count, word in counted if count <= limit]
        if not kept and counted:
            kept = [min(counted)[1]]
        return " OR ".join('"' + word.replace('"', '""') + '"' for word in kept)

    @classmethod
    def of(cls, index) -> KeywordIndex:
        """The keyword index of the loaded VectorIndex `index`; an error where it has none."""
        db = getattr(index.store, "db", None)  # a RecordStore's; sembed 0.1's records.jsonl has none
        if db is None:
            raise SembedError(
                f"the index at '{index.path}' was written by sembed 0.1 and has no keyword index", ADD_HINT
            )
        if not present(db):
            why = "was built before keyword search" if wanted(index.settings) else "keeps none (--no-keywords)"
            raise SembedError(f"the index at '{index.path}' {why}: it has no keyword index", ADD_HINT)
        return cls(db, str(index.path), index.count)

    def check(self, query: str) -> None:
        """A query FTS5 cannot parse is a bad query record (one line, naming FTS5's reason)."""
        if not query.strip():
            raise BadRecord("the keyword query is empty")
        try:
            self.db.execute(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ? LIMIT 1", (query,)).fetchall()
        except sqlite3.OperationalError as e:
            reason = str(e).removeprefix("fts5: ")
            raise BadRecord(
                f'cannot parse keyword query {query!r}: {reason} (FTS5 syntax: words, "a phrase", prefix*, '
                "AND, OR, NOT, NEAR(a b); --any-word reads plain words)"
            ) from None

    def search(
        self, queries: Sequence[str], k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of the `k` best rows of each FTS5 query by BM25 (score: -bm25, higher is better; row -1
        where fewer match); `allowed`: the only rows it may return (a --where selection). FTS5 scores every
        match before it sorts them whatever the LIMIT, so with a selection the sorted matches are read until k
        allowed ones are found (a condition on rowid in the SQL made SQLite look each allowed row up in the FTS
        index instead: minutes a query at a million rows)."""
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        rows = np.full((len(queries), k), -1, dtype=np.int64)
        sql = f"SELECT rowid, bm25({TABLE}) FROM {TABLE} WHERE {TABLE} MATCH ? ORDER BY rank"
        mask = self.mask(allowed) if allowed is not None else None
        for i, query in enumerate(queries):
            if not query:
                continue
            if mask is None:
                found = self.db.execute(sql + " LIMIT ?", (query, k)).fetchall()
            else:
                found = []
                for row, score in self.db.execute(sql, (query,)):
                    if row < len(mask) and mask[row]:
                        found.append((row, score))
                        if len(found) == k:
                            break
            if found:
                rows[i, : len(found)] = [row for row, _ in found]
                scores[i, : len(found)] = [-score for _, score in found]
        return scores, rows

    def mask(self, allowed: np.ndarray) -> np.ndarray:
        """The allowed rows as a boolean array by row number, made once per selection."""
        if self._allowed is not allowed:
            self._mask = np.zeros(int(allowed.max()) + 1 if len(allowed) else 0, dtype=bool)
            self._mask[allowed] = True
            self._allowed = allowed
        return self._mask


def fuse(
    dense: tuple[np.ndarray, np.ndarray],
    keyword: tuple[np.ndarray, np.ndarray],
    k: int,
    weight: float = DEFAULT_WEIGHT,
    constant: int = RRF_K,
) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal-rank fusion of two rankings (scores, rows; row -1 for none) into the `k` best rows of each
    query: sum of w / (constant + rank), the keyword ranking weighted `weight`, the dense 1 - weight. Equal sums
    (common: rank r in one ranking alone against rank r in the other) go to the row the heavier ranking gives
    (the vectors' at equal weights), then by rank, not by row number, which says nothing."""
    count = dense[1].shape[0]
    scores = np.full((count, k), -np.inf, dtype=np.float32)
    rows = np.full((count, k), -1, dtype=np.int64)
    sides = [(1.0 - weight, dense[1]), (weight, keyword[1])]
    sides.sort(key=lambda side: -side[0])  # stable: the vectors first at equal weights
    for q in range(count):
        fused: dict[int, float] = {}
        for share, ranked in sides:
            if share <= 0:
                continue
            for rank, row in enumerate(ranked[q].tolist(), 1):
                if row >= 0:
                    fused[row] = fused.get(row, 0.0) + share / (constant + rank)
        # dicts keep the order rows were first met in: the heavier ranking's, best first, then the other's
        order = sorted(enumerate(fused.items()), key=lambda item: (-item[1][1], item[0]))[:k]
        if order:
            rows[q, : len(order)] = [row for _, (row, _) in order]
            scores[q, : len(order)] = [score for _, (_, score) in order]
    return scores, rows
