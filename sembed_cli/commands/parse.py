"""sembed parse: dependency-parse texts with spaCy into tokens and CF-BERT triples."""

from __future__ import annotations

from ..io import StreamOptions, TextFields
from ..options import (
    BatchSize,
    Force,
    Input,
    Lines,
    NProcess,
    Output,
    Quiet,
    ShardOption,
    SkipErrors,
    SpacyModel,
    TextKeys,
    Threads,
    Verbose,
)
from ..text import spacy_pipeline
from ..text.dependency import parse_records


def parse_command(
    input: Input = "-",
    output: Output = "-",
    lines: Lines = None,
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
    stream.run(
        fields.of, lambda records: parse_records(records, nlp, fields, batch_size, n_process), batch_size, "parsing"
    )
