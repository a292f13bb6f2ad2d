"""`search --where EXPR`: a filter on the indexed records' fields, applied before the nearest-neighbour search.

The expression is parsed here (never pasted into SQL) into a parameterised condition over each stored payload
(`json_extract`), which selects the allowed rows first; the search then looks only among them, so k results come
back whenever k records match (txtai applies its filters after the search, and a selective one returns nothing).

    expr       := term ('or' term)*
    term       := factor ('and' factor)*
    factor     := 'not' factor | '(' expr ')' | condition
    condition  := field OP value | field ['not'] 'in' '(' value (',' value)* ')'
                | field ['not'] 'like' 'pattern' | field 'is' ['not'] 'null'
    OP         := = | == | != | <> | < | <= | > | >=
    field      := name ('.' name)*  (a nested field: meta.year), or "any name" in double quotes
    value      := 'text' (a '' inside is one ') | number | true | false | null

Words (and, or, not, in, like, is, null, true, false) are case-insensitive. A record without the field meets no
comparison (SQL's NULL), `is null` finds it; a text and a number never compare equal (SQLite's types); `like` is
SQL's (% any run, _ one character, case-insensitive for ASCII).

Searching the selection: up to EXACT_LIMIT rows, exactly, against their vectors (read once per search); above it,
FAISS with an IDSelectorBitmap of the allowed rows in its SearchParameters (HNSW, IVF, flat alike), a graph's
efSearch and an IVF's probes widened by 1 / the allowed share (a walk meets allowed rows at that rate); a query that
still finds fewer than k (an IVF probe or a graph walk that met too few allowed rows) is answered exactly over the
selection, a chunk at a time.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SembedError

if TYPE_CHECKING:
    from .directory import VectorIndex

EXACT_LIMIT = 20_000  # allowed rows searched exactly rather than through FAISS's selector
EXACT_CHUNK = 50_000  # vectors read at a time by the exact fallback
MAX_EF_SEARCH = 4096  # the widest graph search a selective filter asks for
PAYLOAD = "json_extract(CAST(payload AS TEXT), ?)"
GRAMMAR_HINT = (
    "write field = 'text', field >= 2000, field in ('a', 'b'), field like 'a%', field is null, "
    "joined by and/or/not (see sembed search --help)"
)
OPERATORS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
WORDS = {"and", "or", "not", "in", "like", "is", "null", "true", "false"}
TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^']|'')*')
      | (?P<quoted>"[^"]+")
      | (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
      | (?P<op><=|>=|!=|<>|==|=|<|>|\(|\)|,)
      | (?P<name>[^\W\d][\w]*(?:\.[^\W\d][\w]*)*)
    )""",
    re.VERBOSE | re.UNICODE,
)


class FilterError(SembedError):
    def __init__(self, expression: str, problem: str):
        super().__init__(f"cannot parse --where {expression!r}: {problem}", GRAMMAR_HINT)


@dataclass
class Filter:
    """A parsed --where: the SQL condition on `rows` (with `?` for each parameter) and the fields it names."""

    expression: str
    sql: str
    parameters: list
    fields: list[str] = field(default_factory=list)


def json_path(name: str) -> str:
    """The JSON path of a field: each dotted part quoted (a "quoted" name is one part, dots and all)."""
    parts = [name[1:-1]] if name.startswith('"') else name.split(".")
    return "$" + "".join(f'."{part}"' for part in parts)


class Parser:
    """Recursive descent over the grammar in the module docstring, writing SQL and its parameters as it goes."""

    def __init__(self, expression: str):
        self.expression = expression
        self.tokens: list[tuple[str, str]] = []
        position = 0
        text = expression.rstrip()
        while position < len(text):
            match = TOKEN.match(text, position)
            if match is None or match.end() == position:
                raise FilterError(expression, f"unexpected {text[position:].strip()[:20]!r}")
            kind = match.lastgroup or ""
            value = match.group(kind)
            if kind == "name" and value.lower() in WORDS:
                kind, value = "word", value.lower()
            self.tokens.append((kind, value))
            position = match.end()
        self.at = 0
        self.parameters: list = []
        self.fields: list[str] = []

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self, kind: str, value: str | None = None) -> str:
        found = self.peek()
        if found[0] != kind or (value is not None and found[1] != value):
            wanted = value or kind
            raise FilterError(self.expression, f"expected {wanted} at {found[1] or 'the end'!r}")
        self.at += 1
        return found[1]

    def accept(self, kind: str, value: str) -> bool:
        if self.peek() == (kind, value):
            self.at += 1
            return True
        return False

    def parse(self) -> Filter:
        if not self.tokens:
            raise FilterError(self.expression, "it is empty")
        sql = self.disjunction()
        if self.peek()[0] != "end":
            raise FilterError(self.expression, f"unexpected {self.peek()[1]!r}")
        return Filter(self.expression, sql, self.parameters, list(dict.fromkeys(self.fields)))

    def disjunction(self) -> str:
        parts = [self.conjunction()]
        while self.accept("word", "or"):
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"

    def conjunction(self) -> str:
        parts = [self.factor()]
        while self.accept("word", "and"):
            parts.append(self.factor())
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"

    def factor(self) -> str:
        if self.accept("word", "not"):
            return f"(NOT {self.factor()})"
        if self.accept("op", "("):
            inner = self.disjunction()
            self.take("op", ")")
            return inner
        return self.condition()

    def field(self) -> str:
        kind, name = self.peek()
        if kind not in ("name", "quoted"):
            raise FilterError(self.expression, f"expected a field name at {name or 'the end'!r}")
        self.at += 1
        self.fields.append(name)
        self.parameters.append(json_path(name))
        return PAYLOAD

    def value(self) -> object:
        kind, text = self.peek()
        self.at += 1
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind == "number":
            number = float(text)
            return int(number) if re.fullmatch(r"-?\d+", text) else number
        if kind == "word" and text in ("true", "false"):
            return 1 if text == "true" else 0  # json_extract gives 1 and 0 for JSON's true and false
        self.at -= 1
        raise FilterError(self.expression, f"expected a value ('text', a number, true, false) at {text or 'the end'!r}")

    def condition(self) -> str:
        left = self.field()
        kind, text = self.peek()
        if kind == "op" and text in OPERATORS:
            self.at += 1
            if self.peek() == ("word", "null"):
                raise FilterError(self.expression, "compare with null by 'is null' or 'is not null'")
            self.parameters.append(self.value())
            return f"{left} {OPERATORS[text]} ?"
        if self.accept("word", "is"):
            negated = self.accept("word", "not")
            self.take("word", "null")
            return f"{left} IS {'NOT ' if negated else ''}NULL"
        negated = self.accept("word", "not")
        if self.accept("word", "in"):
            self.take("op", "(")
            values = [self.value()]
            while self.accept("op", ","):
                values.append(self.value())
            self.take("op", ")")
            self.parameters.extend(values)
            return f"{left} {'NOT ' if negated else ''}IN ({', '.join('?' * len(values))})"
        if self.accept("word", "like"):
            pattern = self.take("string")
            self.parameters.append(pattern[1:-1].replace("''", "'"))
            return f"{left} {'NOT ' if negated else ''}LIKE ?"
        raise FilterError(self.expression, f"expected a comparison after the field, at {text or 'the end'!r}")


def parse(expression: str) -> Filter:
    """The Filter of a --where expression; a FilterError (one line) where it does not follow the grammar."""
    return Parser(expression).parse()


def select(db: sqlite3.Connection, where: Filter) -> np.ndarray:
    """The rows (sorted, int64) whose payloads meet `where`, leaving out rows an update removed. Nothing matching,
    a field that no record has is an error naming it."""
    sql = f"SELECT row FROM rows WHERE ({where.sql}) AND row NOT IN (SELECT row FROM removed) ORDER BY row"
    rows = np.fromiter((row for (row,) in db.execute(sql, where.parameters)), dtype=np.int64)
    if not len(rows):
        for name in where.fields:
            sql = "SELECT 1 FROM rows WHERE json_type(CAST(payload AS TEXT), ?) IS NOT NULL LIMIT 1"
            if db.execute(sql, (json_path(name),)).fetchone() is None:
                raise SembedError(
                    f"--where names the field '{name.strip(chr(34))}', which no indexed record has",
                    "search --payload shows the fields a record has",
                )
    return rows


class Selection:
    """The allowed rows of a --where, searched by nearest neighbours among them only."""

    def __init__(self, index: VectorIndex, rows: np.ndarray, where: Filter | None = None):
        self.index, self.rows, self.filter = index, rows, where
        self._vectors: np.ndarray | None = None
        self._selector: Any = None

    @classmethod
    def of(cls, index: VectorIndex, expression: str) -> Selection:
        from .store import RecordStore

        where = parse(expression)
        if not isinstance(index.store, RecordStore):
            raise SembedError(
                f"the index at '{index.path}' was written by sembed 0.1: --where needs its records in SQLite",
                "convert it with sembed index --update DIR < /dev/null",
            )
        return cls(index, select(index.store.db, where), where)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def exact(self) -> bool:
        return len(self.rows) <= EXACT_LIMIT

    def vectors(self) -> np.ndarray:
        if self._vectors is None:
            self._vectors = self.index.vectors_of(self.rows).astype(np.float32, copy=False)
        return self._vectors

    def selector(self):
        """A FAISS IDSelectorBitmap of the allowed rows (one bit a row: cheaper to test than a hash set)."""
        import faiss

        if self._selector is None:
            size = int(max(self.index.row_count, int(self.rows[-1]) + 1 if len(self.rows) else 0))
            bits = np.zeros(size, dtype=bool)
            bits[self.rows] = True
            self._bitmap = np.packbits(bits, bitorder="little")  # kept alive: FAISS reads it, never copies it
            self._selector = faiss.IDSelectorBitmap(size, faiss.swig_ptr(self._bitmap))
        return self._selector

    def breadth(self, k: int) -> dict:
        """A graph's efSearch and the lists an IVF probes, widened by 1 / the allowed share of the rows: a walk
        or a probe meets allowed rows at that share, so it must look that much further to find as many (capped
        at MAX_EF_SEARCH and at every list)."""
        from . import kinds

        share = max(len(self.rows) / max(self.index.count, 1), 1e-9)
        graph = kinds.hnsw_of(self.index.index)
        if graph is not None:
            return {"ef_search": int(min(MAX_EF_SEARCH, max(k, np.ceil(graph.hnsw.efSearch / share))))}
        ivf = kinds.ivf_of(self.index.index)
        if ivf is not None:
            return {"nprobe": int(min(ivf.nlist, np.ceil(ivf.nprobe / share)))}
        return {}

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(cosines, rows) of the k nearest allowed rows of each (unit) query, best first; row -1 where fewer."""
        from .entries import unit_rows

        queries = unit_rows(queries)
        if not len(self.rows):
            return np.full((len(queries), k), -np.inf, np.float32), np.full((len(queries), k), -1, np.int64)
        if self.exact:
            return top_k(queries @ self.vectors().T, self.rows, k)
        scores, rows = self.index.search(queries, k, selector=self.selector(), **self.breadth(k))
        short = np.flatnonzero((rows >= 0).sum(axis=1) < min(k, len(self.rows)))
        if len(short):
            scores[short], rows[short] = self.scan(queries[short], k)
        return scores, rows

    def scan(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact search over the whole selection, EXACT_CHUNK vectors at a time."""
        best_scores = np.full((len(queries), 0), -np.inf, np.float32)
        best_rows = np.full((len(queries), 0), -1, np.int64)
        for start in range(0, len(self.rows), EXACT_CHUNK):
            rows = self.rows[start : start + EXACT_CHUNK]
            scores, found = top_k(queries @ self.index.vectors_of(rows).astype(np.float32).T, rows, k)
            merged_scores = np.concatenate([best_scores, scores], axis=1)
            merged_rows = np.concatenate([best_rows, found], axis=1)
            order = np.argsort(-merged_scores, axis=1, kind="stable")[:, :k]
            best_scores = np.take_along_axis(merged_scores, order, 1)
            best_rows = np.take_along_axis(merged_rows, order, 1)
        return best_scores, best_rows


def top_k(scores: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best columns of each row of `scores` (columns named by `rows`), best first, padded with -1."""
    count = scores.shape[1]
    take = min(k, count)
    part = (
        np.argpartition(-scores, take - 1, axis=1)[:, :take]
        if take < count
        else np.tile(np.arange(count), (len(scores), 1))
    )
    picked = np.take_along_axis(scores, part, 1)
    order = np.argsort(-picked, axis=1, kind="stable")
    index = np.take_along_axis(part, order, 1)
    out_scores = np.full((len(scores), k), -np.inf, np.float32)
    out_rows = np.full((len(scores), k), -1, np.int64)
    out_scores[:, :take] = np.take_along_axis(scores, index, 1)
    out_rows[:, :take] = rows[index]
    return out_scores, out_rows
