"""The files a reader works through: paths and folders expanded, lines decoded, bad lines reported.

A folder stands for every data file under it, in sorted order (README,
LICENSE and the like are left out), so a corpus folder converts in one call.
Each file keeps its own `Rejects`, so an error names the file and the
physical line, and --skip-errors counts per file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadRecord, SembedError
from ..io import AUTO_ENCODING, STDIN, LineDecoder, Rejects, display_name, text_lines
from ..text.spacy_pipeline import DEFAULT_MODEL

# Strict UTF-8, except that a line which is not UTF-8 is read as Windows-1252: old corpora
# (webtext, state_union, inaugural, abc) mix the two, even within one file.
AUTO = AUTO_ENCODING

# Files that document a data folder rather than hold data (NLTK, SemEval and SentEval layouts).
DOCUMENTATION_PREFIXES = ("license", "licence", "copying")
DOCUMENTATION_NAMES = ("contents", "cats.txt")
DOCUMENTATION_SUFFIXES = (".pdf", ".pl", ".py", ".sh", ".html", ".xml", ".md")


@dataclass
class InputFile:
    """One file to read: where it is, what to call it in doc_id, and its bad-line policy."""

    path: str
    label: str
    rejects: Rejects
    notes: list[str] = field(default_factory=list)  # information for stderr once the file is read
    warnings: list[str] = field(default_factory=list)  # skip summaries of companion files

    @property
    def name(self) -> str:
        return self.rejects.name

    @property
    def stem(self) -> str:
        """The file name without .gz and its last suffix: STS.input.headlines.txt -> STS.input.headlines."""
        name = Path(self.label).name.removesuffix(".gz")
        return name.rsplit(".", 1)[0] if "." in name else name

    def reject(self, line: int, message: str) -> None:
        self.rejects.reject(line, message)

    def note(self, message: str) -> None:
        self.notes.append(f"{self.name}: {message}")

    def companion(self, path: Path) -> InputFile:
        """A file read alongside this one (a gold-score file), under the same skip policy."""
        return InputFile(str(path), path.name, Rejects(str(path), self.rejects.skip_errors))

    def reports(self) -> tuple[list[str], list[str]]:
        """(warnings, notes) for stderr once reading is over."""
        own = self.rejects.summary()
        return ([own] if own else []) + self.warnings, self.notes


@dataclass
class ReadSettings:
    """How to read: the options of `sembed convert` that readers share."""

    encoding: str = AUTO
    doc_break: str | None = None  # 'blank' or 'file'; None: the format's own default
    wrapped: bool = False
    model: str = DEFAULT_MODEL
    batch_size: int = 1000
    n_process: int = 1


def is_data_file(path: Path) -> bool:
    name = path.name.lower()
    return not (
        "readme" in name
        or name.startswith(DOCUMENTATION_PREFIXES)
        or name in DOCUMENTATION_NAMES
        or name.endswith(DOCUMENTATION_SUFFIXES)
    )


def data_files(paths: Sequence[Path]) -> list[Path]:
    """The default choice of files in a folder: all but documentation."""
    return [p for p in paths if is_data_file(p)]


Picker = Callable[[Sequence[Path]], list[Path]]


def input_files(paths: Sequence[str], pick: Picker = data_files, skip_errors: bool = False) -> list[InputFile]:
    """Files for the given paths ('-' is stdin), folders expanded in sorted order; a missing path fails now."""
    files: list[InputFile] = []
    for path in paths or [STDIN]:
        if path == STDIN:
            files.append(InputFile(STDIN, "stdin", Rejects(display_name(STDIN), skip_errors)))
            continue
        given = Path(path)
        if given.is_dir():
            members = sorted(
                (
                    p
                    for p in given.rglob("*")
                    if p.is_file() and not any(part.startswith(".") for part in p.relative_to(given).parts)
                ),
                key=lambda p: p.relative_to(given).parts,
            )
            chosen = pick(members)
            if not chosen:
                raise SembedError(f"no input files in folder {path}", "pass the data files themselves")
            top = given.resolve().name
            files.extend(
                InputFile(str(p), f"{top}/{p.relative_to(given).as_posix()}", Rejects(str(p), skip_errors))
                for p in chosen
            )
        elif given.exists():
            files.append(InputFile(path, given.name, Rejects(path, skip_errors)))
        else:
            raise SembedError(f"cannot open {path}: No such file or directory", "check the path")
    return files


def lines(file: InputFile, encoding: str = AUTO) -> Iterator[tuple[int, str]]:
    """Physical lines as (line number, text without the newline), decoded as `encoding`."""
    decode = LineDecoder(encoding)
    yield from text_lines(file.path, file.rejects, decode)  # a byte-order mark at the start is dropped there
    if decode.fallbacks:
        file.note(
            f"{len(decode.fallbacks)} line(s) not UTF-8, read as Windows-1252 (first: line "
            f"{decode.fallbacks[0]}; --encoding sets another)"
        )


def line_records(file: InputFile, encoding: str, parse: Callable[[str], dict | None]) -> Iterator[dict]:
    """`parse(line)` for each non-blank line; None means 'not a record', BadRecord goes to the file's policy."""
    for number, line in lines(file, encoding):
        if not line.strip():
            continue
        try:
            record = parse(line)
        except BadRecord as e:
            file.reject(number, e.message)
            continue
        if record is not None:
            yield record


def number(value: str, what: str) -> float:
    """A finite float, or a BadRecord naming the field."""
    try:
        x = float(value)
    except ValueError:
        x = math.nan
    if not math.isfinite(x):
        raise BadRecord(f"{what} {value.strip()!r} is not a number")
    return x


def sentence(value: str, what: str) -> str:
    """A stripped, non-empty text, or a BadRecord naming the column."""
    text = value.strip()
    if not text:
        raise BadRecord(f"empty {what}")
    return text


def columns(line: str, names: Sequence[str]) -> list[str]:
    """Tab-separated cells, at least len(names) of them (later ones are extra and ignored by callers)."""
    cells = line.split("\t")
    if len(cells) < len(names):
        raise BadRecord(f"expected {len(names)} tab-separated columns ({', '.join(names)}), found {len(cells)}")
    return cells


FileReader = Callable[[InputFile, ReadSettings], Iterator[dict]]


def each_file(read: FileReader) -> Callable[[Sequence[InputFile], ReadSettings], Iterator[dict]]:
    """A reader of many files from a reader of one: the files one after another."""

    def read_all(files: Sequence[InputFile], settings: ReadSettings) -> Iterator[dict]:
        for file in files:
            yield from read(file, settings)

    read_all.__doc__ = read.__doc__
    return read_all
