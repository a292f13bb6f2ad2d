"""sembed normalize: TA-SBERT's base-form conversion (paper 001, section III-A): contractions expanded."""

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
from ..text.base_form import normalize_records


def normalize_command(
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
    """Expand contractions and remove apostrophes (TA-SBERT base-form conversion).

    Reads text (or text_a / text_b, or --text-key) and replaces it in place by
    its base form; the original goes to text_raw (text_a -> text_raw_a). A
    text_raw already in the record is kept, so it always holds the original.

    Fixed expansions: "won't" -> "will not", "can't" -> "can not", "isn't" ->
    "is not", "I'm" -> "I am", "they're" -> "they are", "we've" -> "we have",
    "'ll" -> "will", "let's" -> "let us", "ain't" -> "am/is/are not" by its
    subject ("have/has not" before a participle), and spaCy's own norms
    ("goin'" -> "going", "'em" -> "them", "ma'am" -> "madam"). spaCy's tagger
    (with rules on the next word) decides the rest: "'s" is "has" before a
    perfect participle ("he's gone", "she's finished it"), "is" otherwise
    ("he's tall", "it's finished", "the man's in the car"), and dropped as a
    possessive ("John's car" -> "John car", "the dogs' bowl" -> "the dogs
    bowl"); "the 90's" -> "the 90s", "in it's mouth" -> "in its mouth". "'d"
    is "had" before a participle or "better" ("she'd gone", "she'd better"),
    "would" otherwise ("she'd go", "I'd've known").

    Straight, curly (’ ‘) and modifier-letter (ʼ) apostrophes all count. Case
    is kept: "Won't" -> "Will not", "WON'T" -> "WILL NOT". Apostrophes that
    belong to a word or name (O'Brien, o'clock, rock 'n' roll, '90s) and
    single quotation marks ('like this') are kept: removing them would make
    words no vocabulary has. Every other character (spacing, punctuation) is
    copied; a text without an apostrophe comes back unchanged without
    running spaCy. Only spaCy's tagger and attribute ruler run.

    \b
    Example:
      sembed convert --from stsb sts-test.csv | sembed normalize | sembed embed
    """
    fields = TextFields(text_keys, spacy_pipeline.LIMIT)
    nlp = spacy_pipeline.load(model, spacy_pipeline.TAG)
    stream = StreamOptions(input, output, lines=lines, force=force, shard=shard, skip_errors=skip_errors)
    stream.run(
        fields.of, lambda records: normalize_records(records, nlp, fields, batch_size), batch_size, "normalizing"
    )
