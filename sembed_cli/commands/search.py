"""sembed search: the nearest indexed records of each query, from an index directory sembed index wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import console
from ..indexes.search import DEFAULT_K
from ..io import StreamOptions
from ..options import (
    BACKEND_HELP,
    QUANTIZE_HELP,
    BackendName,
    BatchSize,
    Device,
    Force,
    Input,
    Lines,
    LongText,
    Output,
    Quantization,
    Quiet,
    SkipErrors,
    Threads,
    Verbose,
    check_backend,
    flag,
    given_on_command_line,
)

IndexPath = Annotated[
    Path,
    typer.Option(
        "--index", "-i", metavar="DIR", show_default=False, help="The index directory `sembed index` wrote (required)."
    ),
]
QueryModel = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="MODEL",
        show_default=False,
        help="The model that embeds the query texts (another path to the index's model). Default: the index's own; "
        "another model is refused.",
    ),
]
QueryTexts = Annotated[
    list[str] | None,
    typer.Option(
        "--query",
        metavar="TEXT",
        show_default=False,
        help="A query text (repeatable), searched instead of reading query records: each is the record "
        '{"text": TEXT} (--text-key names the field).',
    ),
]


def _neighbour_count(value: str | int) -> int:
    """-k N, as FAISS and sentence-transformers users write it: a count, never a field name (that is --text-key)."""
    try:
        count = int(value)
    except ValueError:
        raise typer.BadParameter(
            f"'{value}' is not a count: in search -k is the number of neighbours; the query's text field is --text-key"
        ) from None
    if count < 1:
        raise typer.BadParameter(f"{count} is not in the range x>=1.")
    return count


K = Annotated[
    int,
    typer.Option(
        "-k",
        "--k",
        "-n",
        metavar="N",
        parser=_neighbour_count,
        help="Neighbours per query (the POI paper's 10). -k is this count here, as in FAISS; "
        "the text field is --text-key, which has no short form in search.",
    ),
]
TextKey = Annotated[
    str,
    typer.Option(
        "--text-key", metavar="KEY", help="The query text field (embedded when the record has no --embedding-key)."
    ),
]
EmbeddingKey = Annotated[
    str,
    typer.Option("--embedding-key", metavar="KEY", help="A field with the query's vector, used instead of its text."),
]
QueryBackend = Annotated[
    BackendName | None,
    typer.Option(
        "--backend",
        envvar="SEMBED_BACKEND",
        metavar="torch|onnx",
        show_default=False,
        help=BACKEND_HELP + " Default: the one the index was built with; where that was torch in fp32, onnx when it "
        "can run the model on the CPU (the same vectors to float rounding: --query starts in a sixth of the time), "
        "else torch.",
    ),
]
QueryQuantize = Annotated[
    Quantization | None,
    typer.Option(
        "--quantize",
        envvar="SEMBED_QUANTIZE",
        metavar="none|int8",
        show_default=False,
        help=QUANTIZE_HELP + " Default: the index's.",
    ),
]
Spelling = Annotated[
    bool,
    typer.Option(
        "--spelling",
        help="Re-rank the 10 K nearest by spelling, with the indexed names that hold the query's "
        "words: a name one edit from the query text, or holding its words in any order, however "
        "punctuated or abbreviated, moves up, by the share of the query's words it holds, each word "
        "weighted by its IDF over the indexed names ('Jackson' finds 'Jackson County', 'Springfield "
        "City' and 'st louis' find 'Springfield' and 'St. Louis'; place-name lookup, "
        "sembed_cli/models/poi_lookup.py). Searched as wide as finds the nearest name for --recall R (default: the "
        "index's target) of the queries the index measured at build, narrower than recall@10 R needs.",
    ),
]
KeywordSearch = Annotated[
    bool,
    typer.Option(
        "--keyword",
        help="Rank by BM25 alone over the indexed texts (SQLite FTS5; no model is loaded). The query is FTS5's "
        'syntax: words (all must match), "a phrase", prefix*, OR, NOT, NEAR(a b); score: -bm25, higher is better.',
    ),
]
HybridSearch = Annotated[
    bool,
    typer.Option(
        "--hybrid",
        help="Fuse the BM25 ranking and the vector ranking (100 candidates each) by reciprocal-rank fusion, "
        "score = sum of w / (60 + rank); --hybrid-weight sets w of the keyword side (the vectors get 1 - w).",
    ),
]
HybridWeight = Annotated[
    float,
    typer.Option(
        "--hybrid-weight",
        metavar="W",
        min=0.0,
        max=1.0,
        help="The keyword ranking's weight in --hybrid, 0-1 (0.5: plain reciprocal-rank fusion; 0: vectors only).",
    ),
]
AnyWord = Annotated[
    bool,
    typer.Option(
        "--any-word",
        help="Read the query as plain words, any of which may match (each quoted, joined by OR): BM25 over a "
        "sentence, as a search engine ranks it, with no FTS5 syntax to get wrong. Words in over 3% of the "
        "texts (and over 10,000) are left out as stop words, unless all are.",
    ),
]
Where = Annotated[
    str | None,
    typer.Option(
        "--where",
        metavar="EXPR",
        show_default=False,
        help="Search only the indexed records whose fields meet EXPR, selected before the search, so k come back "
        "whenever k match: field = 'text', year >= 2000, field != 3, field in ('a', 'b'), field like 'a%', "
        'field is [not] null, meta.year (nested), "odd name", joined by and/or/not and parentheses.',
    ),
]
RerankModel = Annotated[
    str | None,
    typer.Option(
        "--rerank-model",
        metavar="MODEL",
        show_default=False,
        help="A second model that re-embeds the query and the stored texts of the first stage's --rerank-depth "
        "candidates and orders them by its cosine (score: that cosine). Opened on --backend/--quantize.",
    ),
]
RerankDepth = Annotated[
    int,
    typer.Option(
        "--rerank-depth", metavar="N", min=1, help="Candidates per query the first stage finds for --rerank-model."
    ),
]
SearchRecall = Annotated[
    float | None,
    typer.Option(
        "--recall",
        min=0.0,
        max=1.0,
        metavar="R",
        show_default=False,
        help="Search as wide as the index measured for recall@10 R at build (the cheapest breadth of its curve that "
        "reached R; a warning when none did). Default: the breadth it was built for (-v prints its measured recall; "
        "--spelling's own).",
    ),
]
Payload = Annotated[
    bool,
    typer.Option(
        "--payload", help="Give each neighbour the whole indexed record (payload), not only its id, text and score."
    ),
]


def search_command(
    ctx: typer.Context,
    input: Input = "-",
    output: Output = "-",
    lines: Lines = None,
    force: Force = False,
    index: IndexPath = ...,  # type: ignore[assignment]  # typer: ... makes the option required
    model: QueryModel = None,
    query: QueryTexts = None,
    k: K = DEFAULT_K,
    text_key: TextKey = "text",
    embedding_key: EmbeddingKey = "embedding",
    payload: Payload = False,
    long_text: LongText = "truncate",
    spelling: Spelling = False,
    keyword: KeywordSearch = False,
    hybrid: HybridSearch = False,
    hybrid_weight: HybridWeight = 0.5,
    any_word: AnyWord = False,
    where: Where = None,
    rerank_model: RerankModel = None,
    rerank_depth: RerankDepth = 100,
    recall: SearchRecall = None,
    batch_size: BatchSize = 1000,
    device: Device = "auto",
    backend: QueryBackend = None,
    quantize: QueryQuantize = None,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """The k nearest indexed records of each query record, by cosine.

    -k N (or --k N) is the number of neighbours, as in FAISS and
    sentence-transformers; the query's text field is --text-key, which
    has no short form here (-k TEXT is refused, never read as a field).
    Reads query records with an embedding (--embedding-key) or a text
    (--text-key), or takes the texts of --query. A text is embedded as the
    index's vectors were (the model its sembed.json names in
    embedding_model, with the W_cf of CF-BERT vectors; --model for another
    path to the same model: another model is refused). An embedding must be
    of the index's model: one whose embedding_model names another model is
    refused, and so is one of another dimension; one without the field
    (vectors from elsewhere) is taken to be of the index's model, with a
    warning. Writes each record with neighbors: a list of {id, text, score}
    (score: the cosine), best first; --payload adds each neighbour's whole
    indexed record. Queries go to FAISS a batch at a time (--batch-size);
    output is flushed after each batch. --backend and --quantize
    default to those that embedded the index's texts. --spelling
    (place-name lookup) asks FAISS for 10 K candidates, adds the 10 K
    indexed names with the largest bonus for the query's words they hold
    (at the lowest cosine FAISS found) and, for a one-word query, every
    one-word name one edit from it (at its own cosine: found by the hashes
    of their deletions, not by FAISS), and keeps the K best after adding
    0.3 to the score of a name one edit from the query text and, to one
    that holds some of the query's words, share x (1 - 0.02 x the IDF of
    its other words), share being the part of the query words' IDF it
    holds: a word the name lacks costs it little when common among the
    names ("City"), much when rare (see sembed_cli/models/poi_lookup.py).
    Its index of the names' words and deletions is made by the first
    --spelling search of each commit of the index and kept under
    SEMBED_CACHE (default ~/.cache/sembed/spelling); later processes map
    it (200 queries over 2.2M names: 5.0 s instead of 28.3,
    bench/spelling_startup.py).

    --keyword ranks by BM25 over the indexed texts alone (SQLite FTS5 in
    the index's records.sqlite; score: -bm25, higher is better);
    --hybrid fuses the BM25 and vector rankings by reciprocal-rank fusion
    (score: the fused sum of w / (60 + rank)). --where EXPR picks the
    records a search may return before it searches, so k come back
    whenever k match; --rerank-model re-orders the first stage's
    candidates by a second model (score: its cosine). The docs' search
    page has the --where grammar and measured figures.

    \b
    Example:
      echo '{"text": "Springfeild"}' | sembed search --index poi-index --spelling
      sembed search --index poi-index --query Springfeild --query 'Lake Pleasant'
      sembed search --index poi-index -k 3 --query Springfeild
      sembed convert --from gazetteer | sembed taste -m poi-model \\
        | grep '"is_poi":true' | sembed search --index poi-index --k 10
      sembed search --index abc-index --keyword --query '"prime minister" OR wheat*'
      sembed search --index abc-index --hybrid --any-word --query 'wheat sales to Iraq'
      sembed search --index abc-index --where "doc_id like '%rural%'" -k 3 --query drought
      sembed search --index abc-index --rerank-model all-MiniLM-L6-v2 --rerank-depth 50 \\
        --query 'help for farmers in the drought'
    """
    from ..indexes.directory import VectorIndex
    from ..indexes.query_encoder import index_backend
    from ..indexes.search import SearchSettings, search_stream

    if query and "input" in given_on_command_line(ctx):
        raise typer.BadParameter(
            "either query records (INPUT) or --query texts, not both", param_hint=flag(ctx, "query")
        )
    if keyword and hybrid:
        raise typer.BadParameter("either --keyword (BM25 alone) or --hybrid (BM25 and vectors), not both")
    if spelling and (keyword or hybrid or rerank_model or where is not None):
        raise typer.BadParameter(
            "--spelling re-ranks the vector search: not with --keyword, --hybrid, --where or --rerank-model"
        )
    if any_word and not (keyword or hybrid):
        raise typer.BadParameter("--any-word reads keyword queries: give --keyword or --hybrid too")
    loaded = ctx.with_resource(VectorIndex.load(index))
    from ..indexes import auto
    from ..indexes import recall as measured_recall

    spelling_breadth = measured_recall.apply_target(loaded, recall, spelling)
    if verbose:
        console.say(measured_recall.describe(loaded.settings))
        if spelling_breadth:
            console.say(spelling_breadth)
        if chosen := auto.describe(loaded.settings):  # which type --type auto chose by measurement, where it did
            console.say(chosen)
    query_backend, query_quantize = index_backend(loaded, backend, quantize)
    check_backend(query_backend, query_quantize, device)
    settings = SearchSettings(
        k,
        text_key,
        embedding_key,
        payload,
        spelling,
        batch_size,
        model,
        device,
        query_backend,
        query_quantize,
        long_text,
        keyword,
        hybrid,
        hybrid_weight,
        any_word,
        where,
        rerank_model,
        rerank_depth,
    )
    stream = StreamOptions(input, output, lines=lines, force=force, skip_errors=skip_errors)
    search_stream(stream, loaded, settings, query or ())
