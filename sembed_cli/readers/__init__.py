"""Readers for the files users have, one module per family of formats, and the registry by format name.

    pairs      stsb, sick, semeval-sts, snli
    corpora    lines, prose, brown
    conll      conll
    senteval   mr, subj, cr
    gazetteer  gazetteer (installed packages; PATHs: optional word lists)

A reader takes the input files and the shared settings and yields records
lazily, so `sembed convert` streams whatever the size of a corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from . import conll, corpora, gazetteer, pairs, senteval
from .inputs import InputFile, Picker, ReadSettings, data_files, each_file, input_files

__all__ = ["FORMATS", "Format", "InputFile", "ReadSettings", "input_files"]


@dataclass(frozen=True)
class Format:
    name: str
    read: Callable[[Sequence[InputFile], ReadSettings], Iterator[dict]]
    pick: Picker = data_files  # which files of a folder it reads


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("stsb", each_file(pairs.read_stsb)),
        Format("sick", each_file(pairs.read_sick)),
        Format("semeval-sts", each_file(pairs.read_semeval_sts), pairs.semeval_files),
        Format("snli", each_file(pairs.read_snli)),
        Format("lines", each_file(corpora.read_lines)),
        Format("prose", corpora.read_prose),
        Format("brown", each_file(corpora.read_brown)),
        Format("conll", each_file(conll.read_conll)),
        Format("mr", each_file(senteval.read_mr)),
        Format("subj", each_file(senteval.read_subj)),
        Format("cr", each_file(senteval.read_cr)),
        Format("gazetteer", gazetteer.read_gazetteer),
    )
}
