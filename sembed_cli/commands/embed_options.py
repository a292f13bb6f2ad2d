"""The options of `sembed embed` and which of its three modes each belongs to (options.Mode, options.Only)."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from ..models.embedder import CPU_ENCODE_BATCH, CUDA_ENCODE_BATCH
from ..options import (
    Mode,
    Only,
    finite,
    mode_rules,
)

CfWeight = Annotated[
    float | None,
    typer.Option(
        "--cf-weight",
        metavar="W",
        callback=finite,
        show_default=False,
        help="CF-BERT eq. 1: embedding = emb(text) + W * emb(s_cf). Default: the W_cf a `sembed train --method cf` "
        "model saved, else 0 (plain embeddings).",
    ),
]
KeepParts = Annotated[
    bool,
    typer.Option(
        "--keep-parts",
        help="Also write embedding_basic = emb(text) and embedding_cf = emb(s_cf), so `sembed eval sts "
        "--cf-grid` can sweep W without embedding again.",
    ),
]
Npy = Annotated[
    str | None,
    typer.Option(
        "--npy",
        metavar="FILE",
        show_default=False,
        help="Write the vectors as rows of a float32 .npy matrix instead of into the JSONL; each record gets the row "
        "number in embedding_row (embedding_row_a, embedding_basic_row, ...).",
    ),
]
EmbedMethod = Annotated[
    Literal["model", "avg", "isf", "sif", "nws"],
    typer.Option(
        "--method",
        metavar="model|avg|isf|sif|nws",
        help="model: the sentence-transformers --model (the default); avg, isf, sif, nws: word-vector sentence "
        "embeddings (see below).",
    ),
]
WordVectorsOption = Annotated[
    str | None,
    typer.Option(
        "--vectors",
        metavar="SPEC",
        envvar="SEMBED_VECTORS",
        show_default=False,
        help="avg, isf, sif, nws: word vectors: glove-6b-50d (packaged), spacy:NAME|PATH, glove:FILE, word2vec:FILE, "
        "word2vec-bin:FILE or a FILE. Default: those the --salience table was learnt on, else glove-6b-50d.",
    ),
]
SalienceDir = Annotated[
    str | None,
    typer.Option(
        "--salience",
        metavar="DIR",
        show_default=False,
        help="isf, sif, nws: the salience table `sembed train --method nws` wrote (its scores, and its corpus "
        "counts for ISF and SIF).",
    ),
]
SifComponent = Annotated[
    Literal["corpus", "batch"],
    typer.Option(
        "--sif-component",
        metavar="corpus|batch",
        help="sif: remove the first principal component of the training corpus's SIF vectors (stored with the "
        "table; streams, and the same for every input), or of each --batch-size batch's own vectors (Arora "
        "et al. on a whole test set: give a batch size above the record count).",
    ),
]
Explain = Annotated[
    bool,
    typer.Option(
        "--explain",
        help="With a TA-SBERT model (`sembed train --method ta`): also write token_weights (token_weights_a, "
        "...), each word of the text with its Token Attention weight, [[word, weight], ...].",
    ),
]
Plain = Annotated[
    bool,
    typer.Option(
        "--plain",
        help="With a TA-SBERT model: show each text on stderr with its words shaded by their Token Attention "
        "weight (where stderr is not a terminal: word(weight)); implies --explain.",
    ),
]
Words = Annotated[
    bool,
    typer.Option("--words", help="One record per word instead, with its parse and contextualised vector (see below)."),
]
SyntaxMapDir = Annotated[
    str | None,
    typer.Option(
        "--syntax-map",
        metavar="DIR",
        show_default=False,
        help="--words: write f(x), the syntactic transformation `sembed train --method syntax` saved in DIR, on the "
        "vectors of the word encoder it was trained on (which replaces --model).",
    ),
]
EncodeBatchSize = Annotated[
    int | None,
    typer.Option(
        "--encode-batch-size",
        min=1,
        metavar="N",
        show_default=False,
        help=f"Texts per forward pass within a batch of records. Default: {CPU_ENCODE_BATCH} on the CPU, "
        f"{CUDA_ENCODE_BATCH} on CUDA.",
    ),
]
PartsDir = Annotated[
    str | None,
    typer.Option(
        "--parts",
        metavar="DIR",
        show_default=False,
        help="Write share --shard I/N of INPUT (a file) as DIR/part-000I-of-000N.{jsonl,npy}, then its manifest; a "
        "re-run skips a part whose manifest matches. `sembed parts DIR` lists the parts, `sembed index DIR` indexes "
        "them.",
    ),
]


# Each of embed's three ways of making vectors and the options it takes; an option of another mode given on the
# command line is a usage error. Every mode takes the COMMON ones.
COMMON = frozenset(
    {
        "input",
        "output",
        "lines",
        "text_keys",
        "force",
        "batch_size",
        "shard",
        "skip_errors",
        "threads",
        "quiet",
        "verbose",
    }
)
MODEL = Mode(
    "for --method model",
    frozenset(
        {
            "method",
            "model",
            "cf_weight",
            "keep_parts",
            "explain",
            "plain",
            "npy",
            "long_text",
            "encode_batch_size",
            "device",
            "precision",
            "backend",
            "quantize",
            "parts",
        }
    ),
)
WORD_VECTORS = Mode("for --method avg|isf|sif|nws", frozenset({"method", "vectors", "salience", "sif_component"}))
WORDS = Mode(
    "with --words",
    frozenset({"words", "model", "syntax_map", "npy", "encode_batch_size", "device", "precision"}),
    refusal="not with --words (word vectors come from the encoder, in fp32)",
    refusals={
        "long_text": "not with --words (a long text is always encoded in windows there)",
        "parts": "not with --words (parts hold sentence vectors of --method model)",
    },
)
MODES = (MODEL, WORD_VECTORS, WORDS)


def mode_of(values) -> Mode:
    return WORDS if values["words"] else MODEL if values["method"] == "model" else WORD_VECTORS


ONLY = mode_rules(MODES, mode_of) + (
    Only(
        "precision",
        when=lambda values: not values["words"] or values["precision"] in ("auto", "fp32"),
        message=WORDS.refusal or "",
    ),
    Only("salience", when=lambda values: values["method"] != "avg", message="avg weighs no word: leave it out"),
)
