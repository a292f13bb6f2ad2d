"""sembed parse: dependency-parse texts with spaCy into tokens and CF-BERT triples."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..text import spacy_pipeline
from ..text.dependency import doc_tokens, doc_triples
from ..io import StreamOptions, TextFields, derived_key, map_texts
from ..options import (BatchSize, Force, Input, Lines, NProcess, Output, Quiet, ShardOption, SkipErrors, SpacyModel,
                       TextKeys, Threads, Verbose)

SPACY_BATCH = 256


def parse_records(records: Iterable[dict], nlp, fields: TextFields = TextFields(), batch_size: int = 1000,
                  n_process: int = 1) -> Iterator[dict]:
    """Add `tokens` and `triples` (suffixed like the text field) to every record."""

    def store(record: dict, key: str, doc) -> None:
        record[derived_key(key, "tokens")] = doc_tokens(doc)
        record[derived_key(key, "triples")] = doc_triples(doc)

    return map_texts(records, fields, batch_size,
                     lambda texts: nlp.pipe(texts, batch_size=SPACY_BATCH, n_process=n_process), store)


def parse_command(
    input: Input = "-",
    output: Output = "-",
    lines: Lines = False,
    force: Force = False,
    text_keys: TextKeys = None,
    model: SpacyModel = spacy_pipeline.DEFAULT_MODEL,
    batch_size: BatchSize = 1000,
    n_process: NProcess = 1,
    shard: ShardOption = None,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Dependency-parse each text with spaCy.

    Reads text (or text_a / text_b, or --text-key). Writes tokens (a list of
    {i, text, lemma, pos, tag, dep, head}, head being the index of the head
    token; the root is its own head) and triples in the shape of the CF-BERT
    paper's Table 3: [[head, head_tag], dep, [child, child_tag]] for every
    token but the root. A field text_a gives tokens_a and triples_a. Only the
    tagger, attribute ruler, lemmatizer and parser run.

    \b
    Example:
      sembed convert --from stsb sts-test.csv | sembed parse | sembed spo
    """
    fields = TextFields(text_keys, spacy_pipeline.LIMIT)
    nlp = spacy_pipeline.load(model, spacy_pipeline.PARSE)
    stream = StreamOptions(input, output, lines=lines, force=force, shard=shard, skip_errors=skip_errors)
    stream.run(fields.of, lambda records: parse_records(records, nlp, fields, batch_size, n_process), batch_size,
               "parsing")
