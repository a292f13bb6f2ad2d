"""sembed spo: S_cf, the subject-predicate-object part of CF-BERT (section 3.3), for every text."""

from __future__ import annotations

from ..io import StreamOptions, TextFields
from ..options import (
    BatchSize,
    Force,
    Input,
    Lines,
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
from ..text.component_focus import spo_records
from ..text.dependency import check_parse_source


def check_record(fields: TextFields):
    """The per-record check: usable text fields, and a usable `tokens` field wherever there is one (else a text
    spaCy can parse)."""

    def check(record: dict) -> None:
        for key in fields.of(record):
            check_parse_source(record, key)

    return check


def spo_command(
    input: Input = "-",
    output: Output = "-",
    lines: Lines = None,
    force: Force = False,
    text_keys: TextKeys = None,
    model: SpacyModel = spacy_pipeline.DEFAULT_MODEL,
    batch_size: BatchSize = 1000,
    shard: ShardOption = None,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Build S_cf, the subject-predicate-object part of CF-BERT (paper section 3.3).

    Reads text (or text_a / text_b, or --text-key) and its parse from tokens
    (tokens_a, ...) as `sembed parse` writes it; a text without one is parsed
    here (--model, loaded only then). Writes s_cf (s_cf_a, s_cf_b, ...): the
    words of the subjects (relations containing subj), the predicates (their
    heads and the heads of objects) and the objects (relations containing obj,
    and spaCy's dative), with the negation words not, no, n't (written "not")
    and never, in subject-predicate-object order, one group per clause.

    Choices where the paper is silent: a pobj counts when its preposition
    hangs on a verb or a predicate, and the preposition is kept ("He sat on
    the chair" -> "He sat on chair"); a pobj inside a noun phrase does not
    ("An Asian woman in a crowd is not carrying a black bag" -> "woman not
    carrying bag"). Auxiliaries are dropped, and a copula gives way to its
    complement ("She is not happy" -> "She not happy"); the noun after
    "there is" is the subject; conjuncts share their role. A token is
    written once. A sentence without subject or object gives its nouns (NN*),
    verbs (VB*) and negation words in order; a text that gives no word at
    all keeps its own text, so s_cf is never empty.

    \b
    Example:
      sembed convert --from stsb sts-test.csv | sembed parse | sembed spo \\
        | sembed embed --cf-weight 0.2
    """
    fields = TextFields(text_keys)
    stream = StreamOptions(input, output, lines=lines, force=force, shard=shard, skip_errors=skip_errors)
    stream.run(
        check_record(fields),
        lambda records: spo_records(records, None, fields, batch_size, model),
        batch_size,
        "building S_cf",
    )
