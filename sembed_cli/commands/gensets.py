"""sembed gensets: sets of structurally equivalent sentences (syntax-distillation paper, section 3.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import SembedError
from ..io import StreamOptions
from ..options import (
    BatchSize,
    Device,
    Force,
    Input,
    Lines,
    MaskedLMPrecision,
    Output,
    Quiet,
    Seed,
    ShardOption,
    SkipErrors,
    Threads,
    Verbose,
)
from ..text import spacy_pipeline
from ..text.structural_sets import MLM_HINT, TOP, K, SetGenerator, default_mlm

MaskedLMDir = Annotated[
    Path | None,
    typer.Option(
        "--mlm",
        envvar="SEMBED_MLM",
        metavar="DIR",
        show_default=False,
        help="Hugging Face masked-LM directory (bert-base-uncased, bert-large-uncased-whole-word-masking, one "
        "`sembed train --method mlm` wrote, ...). Never downloaded. Default: $XDG_DATA_HOME/sembed/minilm-mlm "
        "(~/.local/share/sembed/minilm-mlm), which examples/build_mlm.sh builds from the packaged "
        "all-MiniLM-L6-v2.",
    ),
]
Variants = Annotated[
    int, typer.Option("--k", min=1, metavar="K", help="Variants made for each sentence (the paper: 6).")
]
Top = Annotated[
    int,
    typer.Option(
        "--top", min=1, metavar="N", help="Whole-word predictions a replacement is drawn from (the paper: 30)."
    ),
]
TextKey = Annotated[
    str, typer.Option("--text-key", metavar="KEY", help="Text field to read; its tokens field (tokens_KEY) likewise.")
]
TaggerModel = Annotated[
    str,
    typer.Option(
        "--spacy-model",
        envvar="SEMBED_SPACY_MODEL",
        metavar="NAME",
        help="spaCy pipeline that tokenises and tags: an installed package name or a path.",
    ),
]


def resolve_mlm(mlm: Path | None) -> Path:
    """The masked-LM directory to use; a missing one is a one-line error with the fix."""
    path = (mlm or default_mlm()).expanduser()
    if (path / "config.json").exists():
        return path
    if mlm is None:
        raise SembedError(f"no masked-LM at {path} (the default --mlm)", MLM_HINT)
    raise SembedError(
        f"no masked-LM directory at '{mlm}' (no config.json)",
        "pass --mlm with a Hugging Face masked-LM directory such as bert-base-uncased",
    )


def gensets_command(
    input: Input = "-",
    output: Output = "-",
    lines: Lines = None,
    force: Force = False,
    mlm: MaskedLMDir = None,
    k: Variants = K,
    top: Top = TOP,
    seed: Seed = 42,
    text_key: TextKey = "text",
    spacy_model: TaggerModel = spacy_pipeline.DEFAULT_MODEL,
    batch_size: BatchSize = 32,
    device: Device = "auto",
    precision: MaskedLMPrecision = "auto",
    shard: ShardOption = None,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Make sets of structurally equivalent sentences (syntax-distillation paper, section 3.1).

    Reads text (or --text-key), or its tokens as `sembed parse` writes them
    when the record has them (their words, and their tags as the original's
    tags). For each sentence, --k variants: going over the words left to
    right, word i is masked, one of the masked-LM's --top best whole-word
    predictions that spaCy tags (tag_, in context) as the original word is
    drawn at random and written in place, and word i + 1 is guessed from the
    sentence so changed. Writes one record per input record, its fields
    passed through, plus set_id (the record's id field, else its position in
    the input from 0), sentences (the original first, then the variants,
    each written from its words, a run of blanks as one space), words (a
    token list per sentence, aligned: word i corresponds across the set) and
    pos (the original's tags).

    Words are spaCy tokens; punctuation, numbers, words that are not
    alphabetic and a closed list of function words (articles, determiners,
    pronouns, auxiliaries, modals, prepositions, conjunctions, not, there)
    are never replaced. A word of several word pieces is masked as one
    [MASK]; candidates are whole words (no ##pieces, special tokens,
    punctuation or numbers), never the word itself or a function word. When
    no candidate keeps the tag, the word stays. An uncased masked-LM's word
    takes the original's capitalisation. The variants of a batch of
    sentences go through the masked-LM together; candidates are tagged
    lazily, in the drawn order, until one keeps the tag.

    The same input, seed, options and masked-LM give the same sets. Each
    set's draws depend on the seed, its set_id and its text only, so in
    fp32 a set does not depend on the batch or --shard it is made in (in
    bf16 or fp16 the rounding moves with a batch's padding, and a near-tie
    between two candidates can fall the other way).

    A sentence longer than the masked-LM takes (its word pieces, [CLS] and
    [SEP] included) is bad input: an error naming its line, or, with
    --skip-errors, left out and counted.

    \b
    Example:
      sembed convert --from prose corpus.txt | sembed gensets --seed 1 > sets.jsonl
      sembed train sets.jsonl --method syntax -o syntax-map
    """
    from ..models import sentence_models
    from ..models.masked_lm import MaskedLM
    from ..models.precision import resolve
    from ..text.structural_sets import Tagger

    path = resolve_mlm(mlm)
    resolved = sentence_models.resolve_device(device)
    precision = resolve(precision, resolved, cpu_bf16=True)
    nlp = spacy_pipeline.load(spacy_model, ("tagger",))
    stream = StreamOptions(input, output, lines=lines, force=force, shard=shard, skip_errors=skip_errors)
    source = stream.source()
    generator = SetGenerator(
        MaskedLM.load(path, resolved, precision),
        Tagger(nlp),
        nlp.tokenizer,
        k=k,
        top=top,
        seed=seed,
        batch_size=batch_size,
        text_key=text_key,
        shard=shard,
        skipped=lambda: len(source.rejects.skipped),
    )
    stream.run(generator.check, generator.generate, batch_size, "generating sets", source)
