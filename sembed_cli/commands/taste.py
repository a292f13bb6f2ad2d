"""sembed taste: the POI paper's "let BERT taste": is a name a point of interest, by how well a masked-LM guesses it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..indexes.neighbour_vote import DEFAULT_VOTE_K, DEFAULT_VOTE_POWER, VoteSettings
from ..io import StreamOptions, TextFields
from ..options import (
    BatchSize,
    Device,
    Force,
    Input,
    Lines,
    MaskedLM,
    MaskedLMPrecision,
    Only,
    Output,
    Quiet,
    SkipErrors,
    TextKeys,
    Threads,
    Verbose,
    check_only,
    finite,
)

TopK = Annotated[
    int,
    typer.Option(
        "--top-k", min=1, metavar="K", help="A hit: the true token among the top K predictions (the paper: 10)."
    ),
]
Threshold = Annotated[
    float,
    typer.Option(
        "--threshold",
        min=0.0,
        max=1.0,
        metavar="T",
        callback=finite,
        help="is_poi = taste_score >= T (the paper: 0.5); with --neighbours, is_poi = poi_score >= T.",
    ),
]
Neighbours = Annotated[
    list[Path] | None,
    typer.Option(
        "--neighbours",
        metavar="DIR",
        show_default=False,
        help="An index (sembed index) of labelled names (records with is_poi, e.g. train records of convert --from "
        "gazetteer), built with the stage-2 model; given again, an index of the same names built with another "
        "model (e.g. the default all-MiniLM-L6-v2, which knows English words and well-known places, as a model of "
        "spelling cannot). Adds poi_vote, the share of POI names among the text's --vote-k nearest, each weighted "
        "by its cosine to the power --vote-power, averaged over the indexes (the paper's route for English "
        "names, where the taste alone cannot tell a city from a word), poi_ngram, the probability of a logistic "
        "regression over character n-grams of the first index's names, and poi_score, their mix (--vote-weight); "
        "is_poi follows poi_score.",
    ),
]
VoteK = Annotated[int, typer.Option("--vote-k", min=1, metavar="K", help="Labelled neighbours of a --neighbours vote.")]
VotePower = Annotated[
    float,
    typer.Option(
        "--vote-power",
        min=0.0,
        metavar="P",
        callback=finite,
        help="A neighbour's weight in the vote: its cosine to the power P (1: by "
        "similarity; larger: the closest decide; 0: a plain count).",
    ),
]
VoteWeight = Annotated[
    float | None,
    typer.Option(
        "--vote-weight",
        min=0.0,
        max=1.0,
        metavar="W",
        callback=finite,
        show_default=False,
        help="poi_score = W poi_vote + (1 - W) poi_ngram (1: the vote alone, 0: the n-gram regression alone). "
        "[default: 0.3 with one --neighbours index, 0.5 with two or more]",
    ),
]

# They shape a --neighbours vote; alone they would change nothing.
ONLY = tuple(
    Only(name, with_="neighbours", message="only with --neighbours DIR")
    for name in ("vote_k", "vote_power", "vote_weight")
)


def taste_command(
    ctx: typer.Context,
    input: Input = "-",
    output: Output = "-",
    lines: Lines = None,
    force: Force = False,
    model: MaskedLM = None,
    text_keys: TextKeys = None,
    top_k: TopK = 10,
    threshold: Threshold = 0.5,
    neighbours: Neighbours = None,
    vote_k: VoteK = DEFAULT_VOTE_K,
    vote_power: VotePower = DEFAULT_VOTE_POWER,
    vote_weight: VoteWeight = None,
    batch_size: BatchSize = 256,
    device: Device = "auto",
    precision: MaskedLMPrecision = "auto",
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Tell POI names from other text by how well a masked-LM trained on POI names guesses them back.

    The POI paper's "let BERT taste" (Zhang et al., section 4): each token
    of the text (a character for the character model of `sembed train
    --method mlm --from-scratch`, a word-piece for a word-piece model) is
    masked in turn; a hit is the true token among the model's top --top-k
    predictions at the masked position. Reads text (or --text-key). Writes
    taste_hits, taste_length (tokens tasted), taste_score = hits / length
    and is_poi = taste_score >= --threshold (false for a text with no
    token). Also taste_prob, the geometric mean of the probabilities the
    model gives each true token at its masked position (0 to 1): how sure
    the guesses are (`sembed eval poi --score-key taste_prob` tunes its
    threshold; on the English gazetteer neither score tells a city from a
    word, see --neighbours). An is_poi already in the record (the gold
    label of `sembed convert --from gazetteer`) is kept as is_poi_gold, for
    `sembed eval poi`.
    For another key K the fields are taste_score_K ... (text_a: taste_score_a).

    With --neighbours DIR (an index of labelled names, built with the
    stage-2 model) each text also gets poi_vote, the share of POI names
    among its --vote-k nearest there, each weighted by its cosine to the
    power --vote-power: the paper's route for English names, and the one
    that tells a city from a word (the taste alone hardly can: with about
    40 letters the true character is nearly always a top-10 guess).
    Beside it, poi_ngram: the probability of a logistic regression over
    TF-IDF of the character 1-4-grams of the same labelled names (accents
    kept), fitted on the first index's records at the first run over it
    and kept in its directory for the next runs. The two err on
    different names, so they are mixed: poi_score = W poi_vote + (1 - W)
    poi_ngram (--vote-weight), and is_poi = poi_score >= --threshold. A
    second --neighbours index of the same names, built with an English
    sentence encoder (`sembed index` with its default all-MiniLM-L6-v2;
    `--backend onnx --quantize int8` builds it faster), votes too
    (poi_vote is the two votes' mean; each index's names are embedded as
    its own were: its model, backend and quantization): it knows words
    and places where a model of spelling can only guess. The defaults of
    --vote-k, --vote-power and --vote-weight were chosen on dev records
    (the figures: the POI results in the docs).

    All masked copies of a batch of records (--batch-size) go through the
    model together, in chunks of about 32k tokens; output is flushed after
    each batch. Texts longer than the model's positions are cut. Where the
    encoder runs in bf16 (--precision auto on a CPU with native bf16), the
    prediction head still runs in fp32, so near-tied guesses are not left to
    bf16's rounding.

    \b
    Example:
      sembed convert --from gazetteer | sembed taste -m poi-model \\
        | sembed eval poi --tune-split dev --test-split test
      sembed convert --from gazetteer | grep '"split":"train"' \\
        | sembed index -m poi-model -o labelled
      sembed convert --from gazetteer | grep '"split":"train"' \\
        | sembed index --backend onnx --quantize int8 -o words
      sembed convert --from gazetteer \\
        | sembed taste -m poi-model --neighbours labelled --neighbours words \\
        | sembed eval poi --score-key poi_score --tune-split dev --test-split test
    """
    from ..errors import SembedError
    from ..indexes.taste_vote import TasteSettings, taste_stream

    if model is None:
        raise SembedError(
            "taste needs a masked-LM", "pass --model DIR, e.g. from sembed train --method mlm --from-scratch"
        )
    if neighbours and len({directory.resolve() for directory in neighbours}) < len(neighbours):
        raise typer.BadParameter(
            "the same index twice: a second index is of the same names built with another model",
            param_hint="'--neighbours'",
        )
    check_only(ctx, ONLY)
    settings = TasteSettings(
        model,
        device,
        precision,
        top_k,
        threshold,
        batch_size,
        tuple(neighbours or ()),
        VoteSettings(vote_k, vote_power, vote_weight),
    )
    stream = StreamOptions(input, output, lines=lines, force=force, skip_errors=skip_errors)
    taste_stream(stream, TextFields(text_keys), settings)
