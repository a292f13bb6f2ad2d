"""sembed taste: the POI paper's "let BERT taste": is a name a point of interest, by how well a masked-LM guesses it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..models import sentence_models
from ..io import StreamOptions, TextFields
from ..options import (BatchSize, Device, Force, Input, Lines, MaskedLM, MaskedLMPrecision, Output, Quiet, SkipErrors,
                       TextKeys, Threads, Verbose, finite, flag, given_on_command_line)

TopK = Annotated[int, typer.Option("--top-k", min=1, metavar="K", help="A hit: the true token among the top K "
                                                                      "predictions (the paper: 10).")]
Threshold = Annotated[float, typer.Option("--threshold", min=0.0, max=1.0, metavar="T", callback=finite,
                                          help="is_poi = taste_score >= T (the paper: 0.5); with --neighbours, "
                                               "is_poi = poi_score >= T.")]
Neighbours = Annotated[Optional[list[Path]], typer.Option(
    "--neighbours", metavar="DIR", show_default=False,
    help="An index (sembed index) of labelled names (records with is_poi, e.g. train records of convert --from "
         "gazetteer), built with the stage-2 model; given again, an index of the same names built with another "
         "model (e.g. the default all-MiniLM-L6-v2, which knows English words and well-known places, as a model of "
         "spelling cannot). Adds poi_vote, the share of POI names among the text's --vote-k nearest, each weighted "
         "by its cosine to the power --vote-power, averaged over the indexes (the paper's route for English "
         "names; the taste alone cannot tell a city from a word when ~40 letters make almost any character a "
         "top-10 guess), poi_ngram, the probability of a logistic regression over character n-grams of the first "
         "index's names, and poi_score, their mix (--vote-weight); is_poi follows poi_score.")]
VoteK = Annotated[int, typer.Option("--vote-k", min=1, metavar="K", help="Labelled neighbours of a --neighbours "
                                                                         "vote.")]
VotePower = Annotated[float, typer.Option("--vote-power", min=0.0, metavar="P", callback=finite,
                                          help="A neighbour's weight in the vote: its cosine to the power P (1: by "
                                               "similarity; larger: the closest decide; 0: a plain count).")]
VoteWeight = Annotated[Optional[float], typer.Option(
    "--vote-weight", min=0.0, max=1.0, metavar="W", callback=finite, show_default=False,
    help="poi_score = W poi_vote + (1 - W) poi_ngram (1: the vote alone, 0: the n-gram regression alone). "
         "[default: 0.3 with one --neighbours index, 0.5 with two or more]")]

# Chosen on dev records only (issue 15; 5,000 dev records of convert --from gazetteer, the threshold tuned on one
# half and F0.5 read on the other, both ways, the vote over all 350,205 train records): k = 20, p = 4 scored 0.903
# against 0.897 for the plain similarity-weighted vote of the 10 nearest (k = 10, p = 1).
DEFAULT_VOTE_K = 20
DEFAULT_VOTE_POWER = 4.0


def default_vote_weight(indexes: int) -> float:
    """W of poi_score by the number of --neighbours indexes, chosen the same way on the dev records of three runs
    (session 12; seeds 42, 1 and 2, W = 0 to 1 by 0.1, F0.5 averaged over the runs): with the stage-2 index alone
    W = 0.3 scored 0.9180 (0.9170 at 0.2, 0.9150 for the regression alone); with it and an all-MiniLM-L6-v2 index
    of the same names, W = 0.5 scored 0.9189 (0.9185 and 0.9184 at 0.3 and 0.4)."""
    return 0.3 if indexes == 1 else 0.5


def taste_command(
    ctx: typer.Context,
    input: Input = "-",
    output: Output = "-",
    lines: Lines = False,
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
    that tells a city from a word here (the taste alone hardly can: with
    about 40 letters the true character is nearly always a top-10 guess;
    examples/results/poi.md). Beside it, poi_ngram: the probability of a
    logistic regression over TF-IDF of the character 1-4-grams of the same
    labelled names (accents kept), which `sembed index` fits and saves with
    an index of labelled names (fitted here for an index built without it).
    Alone the vote scores below such a regression on the English gazetteer
    (test F0.5 0.890 against 0.905), but they err on different names:
    poi_score = W poi_vote + (1 - W) poi_ngram (--vote-weight), and is_poi =
    poi_score >= --threshold. A second --neighbours index of the same names,
    built with an English sentence encoder (`sembed index` with its default
    all-MiniLM-L6-v2; with `--backend onnx --quantize int8`, 4x faster on
    these short names), votes too (poi_vote is the two votes' mean; each
    index's names are embedded as its own were: its model, backend and
    quantization): it knows something of words and places where a model of
    spelling can only guess (for the London suburb Sidcup its vote is 0.64,
    the stage-2 model's 0.18). With both, poi_score beat the regression on
    each of three seeds (+0.003, +0.007 and +0.004 F0.5 on the test split,
    each run's paired 95% interval above 0; examples/poi_reproduction.sh at
    its defaults).

    All masked copies of a batch of records (--batch-size) go through the
    model together, in chunks of about 32k tokens; output is flushed after
    each batch. Texts longer than the model's positions are cut. Where the
    encoder runs in bf16 (--precision auto on a CPU with native bf16), the
    prediction head still runs in fp32; bench/taste_speed.py reports how
    often its hits differ from fp32's.

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
    from ..models.precision import resolve
    from ..models.taste import Taster, taste_records
    from ..models.masked_lm import load_masked_lm

    if model is None:
        raise SembedError("taste needs a masked-LM", "pass --model DIR, e.g. from sembed train --method mlm "
                                                       "--from-scratch")
    if neighbours and len({directory.resolve() for directory in neighbours}) < len(neighbours):
        raise typer.BadParameter("the same index twice: a second index is of the same names built with another "
                                 "model", param_hint="'--neighbours'")
    for name in ("vote_k", "vote_power", "vote_weight"):  # they shape a --neighbours vote; alone they would change nothing
        if not neighbours and name in given_on_command_line(ctx):
            raise typer.BadParameter("only with --neighbours DIR", param_hint=flag(ctx, name))
    resolved = sentence_models.resolve_device(device)
    lm, tokenizer = load_masked_lm(model, resolved, resolve(precision, resolved, cpu_bf16=True))
    taster = Taster(lm, tokenizer, top_k)
    identification = None
    if neighbours:
        from ..models import ngram_classifier
        from ..models.query_encoder import QueryEncoder, index_backend
        from ..models.taste import Identification, NeighbourVote
        from ..indexes.directory import VectorIndex

        voters = []
        for directory in neighbours:  # each index's names embedded as its own were: its model, backend, quantization
            labelled = VectorIndex.load(directory)
            ctx.with_resource(labelled)
            encoder = QueryEncoder(labelled, None, resolved, "text", "truncate", *index_backend(labelled))
            encoder.check()
            voters.append(NeighbourVote(labelled, encoder, vote_k, vote_power))
        regression = ngram_classifier.for_index(voters[0].index)
        if regression is None:
            raise SembedError(f"the index at '{neighbours[0]}' holds names of one kind only: telling POI names from "
                              f"others needs both", "index train records of sembed convert --from gazetteer, POI "
                              "and non-POI")
        weight = default_vote_weight(len(voters)) if vote_weight is None else vote_weight
        identification = Identification(voters, regression, weight)
    fields = TextFields(text_keys)
    stream = StreamOptions(input, output, lines=lines, force=force, skip_errors=skip_errors)
    stream.run(fields.of, lambda records: taste_records(records, taster, fields, batch_size, threshold, identification),
               batch_size, "tasting")
