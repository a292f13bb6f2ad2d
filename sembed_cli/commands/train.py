"""sembed train: fine-tune a model with one of the papers' methods and write it as a model directory."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Literal, Optional

import typer

from .. import console, distributed
from ..artifacts import exclusive
from ..io import RecordSource
from ..options import Device, Force, Input, Quiet, Seed, SkipErrors, TextKeys, Verbose
from ..options import Threads
from ..models.sentence_models import DEFAULT_MODEL


class Method(str, Enum):
    """One per paper; each has its trainer module under sembed_cli/training."""

    sbert = "sbert"
    cf = "cf"
    ta = "ta"
    nws = "nws"
    mlm = "mlm"
    poi = "poi"
    syntax = "syntax"


@dataclass(frozen=True)
class Recipe:
    """A method's optimisation defaults: the paper's, or ours where the paper's cannot run here (see --help)."""

    epochs: int
    batch_size: int
    lr: float
    warmup: float


RECIPES = {
    Method.sbert: Recipe(4, 16, 2e-5, 0.1),
    Method.cf: Recipe(4, 16, 2e-5, 0.1),
    Method.ta: Recipe(1, 16, 2e-5, 0.1),
    Method.nws: Recipe(5, 128, 0.01, 0.0),
    Method.mlm: Recipe(1, 512, 1e-3, 0.05),
    Method.poi: Recipe(1, 128, 2e-4, 0.1),
    Method.syntax: Recipe(5, 500, 1e-3, 0.0),
}
MLM_ADAPTATION = Recipe(1, 32, 2e-4, 0.05)  # mlm without --from-scratch: a pretrained encoder fine-tuned (ours)


def recipe_for(method: Method, from_scratch: bool = False) -> Recipe:
    """The method's defaults; mlm's depend on its use: the POI paper's stage 1 from scratch, or adapting an encoder."""
    return MLM_ADAPTATION if method == Method.mlm and not from_scratch else RECIPES[method]

SENTENCE_ENCODERS = {Method.sbert, Method.cf, Method.ta}
STEPPED = SENTENCE_ENCODERS | {Method.mlm, Method.poi}  # a learning-rate schedule over optimiser steps
ONLY_FOR: dict[str, set[Method]] = {  # an option given on the command line to any other method is a usage error
    "cf_weight": {Method.cf},
    "score_range": {Method.sbert, Method.cf, Method.ta},
    "pooling": {Method.ta}, "no_recon": {Method.ta}, "recon_init": {Method.ta}, "objective": {Method.ta},
    "validation": {Method.ta},
    "vectors": {Method.nws}, "init": {Method.nws}, "save_epochs": {Method.nws},
    "from_scratch": {Method.mlm}, "layers": {Method.mlm}, "hidden": {Method.mlm}, "samples": {Method.mlm},
    "distance": {Method.poi}, "margin": {Method.poi}, "triplet_weight": {Method.poi},
    "variants": {Method.poi}, "variant_weight": {Method.poi}, "ngram_weight": {Method.poi},
    "random_init": {Method.syntax}, "dimension": {Method.syntax}, "pairs_per_set": {Method.syntax},
    "holdout": {Method.mlm}, "precision": {Method.mlm, Method.poi},
    "model": STEPPED | {Method.syntax},
    "warmup": STEPPED, "max_steps": STEPPED, "checkpoint_steps": STEPPED,
}


def _score_range(value: Optional[str]) -> Optional[str]:
    from ..training.scored_pairs import ScoreRange

    if value is not None:
        try:
            ScoreRange.parse(value)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
    return value


def _finite(value: Optional[float]) -> Optional[float]:
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter("must be a finite number")
    return value


MethodOption = Annotated[Method, typer.Option("--method", case_sensitive=False, metavar="sbert|cf|ta|nws|mlm|poi|syntax",
                                              show_default=False,
                                              help="sbert: Siamese cosine fine-tuning (SBERT); cf: CF-BERT; ta: "
                                                   "TA-SBERT; nws: Neural Word Saliency scores; mlm: masked-LM (an "
                                                   "encoder adapted, for gensets; POI stage 1 with --from-scratch); "
                                                   "poi: POI stage 2; syntax: the syntax-distillation map.")]
ModelDir = Annotated[Path, typer.Option("-o", "--output", metavar="DIR", show_default=False, resolve_path=False,
                                        help="The model directory to write (required). Checkpoints go to "
                                             "DIR.checkpoints until it is written.")]
StartModel = Annotated[str, typer.Option(
    "--model", "-m", metavar="MODEL",
    help="sentence-transformers model to start from: a directory or all-MiniLM-L6-v2, the packaged default (mlm: "
         "the BERT encoder to adapt, a sentence-transformers or Hugging Face directory; a masked-LM it wrote goes on "
         "training with its head). Never downloaded.")]
Epochs = Annotated[Optional[int], typer.Option("--epochs", min=1, metavar="N", show_default=False,
                                               help="Passes over the data. Default: the method's (see Defaults).")]
TrainBatchSize = Annotated[Optional[int], typer.Option(
    "--batch-size", "-b", min=1, metavar="N", show_default=False,
    help="Examples per optimiser step (pairs; names for mlm --from-scratch and poi, sentences for mlm). Default: "
         "the method's.")]
LearningRate = Annotated[Optional[float], typer.Option(
    "--lr", min=0.0, metavar="LR", show_default=False,
    help="Peak learning rate (AdamW; AdaGrad for nws; ta: the encoder's, Token Attention and the heads take "
         "3e-5; mlm adapting an encoder: the encoder's, its new head takes 25 times it). Default: the method's.")]
Warmup = Annotated[Optional[float], typer.Option(
    "--warmup", min=0.0, max=1.0, metavar="SHARE", show_default=False,
    help="Share of all steps for the linear learning-rate warm-up. Default: the method's.")]
MaxSteps = Annotated[Optional[int], typer.Option(
    "--max-steps", min=1, metavar="N", show_default=False,
    help="Stop after N optimiser steps (a trial run; the learning-rate schedule then spans N steps).")]
CfWeight = Annotated[Optional[float], typer.Option(
    "--cf-weight", metavar="W", callback=_finite, show_default=False,
    help="cf: W_cf of emb(text) + W_cf * emb(s_cf) in training, saved with the model for `embed` (default 0.2).")]
ScoreRangeOption = Annotated[Optional[str], typer.Option(
    "--score-range", metavar="LOW:HIGH", callback=_score_range, show_default=False,
    help="sbert, cf, ta --objective sts: scale of the gold scores, mapped onto [0, 1]: 0:5 for STS-B "
         "(score / 5, the default), 1:5 for SICK ((score - 1) / 4); a score outside it is an error.")]
CheckpointSteps = Annotated[int, typer.Option("--checkpoint-steps", min=0, metavar="N",
                                              help="Checkpoint every N steps (0: only at the end of each epoch).")]
FromScratch = Annotated[bool, typer.Option(
    "--from-scratch", help="mlm: a new small character-level BERT on POI names (the POI paper's stage 1) instead of "
                           "adapting --model.")]
Layers = Annotated[int, typer.Option("--layers", min=1, max=24, metavar="N",
                                     help="mlm: transformer layers of the --from-scratch BERT (the paper: 4 to 7).")]
Hidden = Annotated[int, typer.Option("--hidden", min=8, metavar="N",
                                     help="mlm: hidden size of the --from-scratch BERT (4 heads of N/4).")]
Samples = Annotated[int, typer.Option("--samples", min=1, metavar="N",
                                      help="mlm: samples of each name an epoch, one character masked at random in "
                                           "each (the paper: 10).")]
Holdout = Annotated[Optional[float], typer.Option(
    "--holdout", min=0.0, max=0.5, metavar="SHARE", show_default=False,
    help="mlm (adapting): share of the records never trained on, chosen by a hash of their text (the same for every "
         "seed), named in sembed.json so a benchmark measures the model on them (default 0.02).")]
Distance = Annotated[Literal["euclidean", "cosine", "manhattan"], typer.Option(
    "--distance", metavar="euclidean|cosine|manhattan", help="poi: distance of the batch-all triplet loss.")]
Margin = Annotated[Optional[float], typer.Option("--margin", min=0.0, metavar="M", show_default=False,
                                                 help="poi: triplet margin on the unit-length embeddings "
                                                      "(default 0.5).")]
TripletWeight = Annotated[float, typer.Option("--triplet-weight", min=0.0, metavar="W",
                                              help="poi: L = L_mlm + W * L_triplet.")]
Variants = Annotated[int, typer.Option(
    "--variants", min=0, metavar="N",
    help="poi: N generated variants of each POI name of a batch (a typo, a word or suffix dropped, accents or case "
         "changed) as its positives, every other name a negative: the paper's triplets only part POI names from "
         "other text, these teach the embedding to find a place from a misspelt or shortened query (0: off).")]
NgramWeight = Annotated[float, typer.Option(
    "--ngram-weight", min=0.0, max=1.0, metavar="W",
    help="poi: W > 0 also saves hashed character n-grams with the model: embed, index and search then write "
         "[sqrt(1 - W) e_stage2, sqrt(W) e_ngrams], whose inner product is (1 - W) cos(stage 2) + W cos(n-grams); "
         "the spelling a short name's typo leaves is what finds it (sembed_cli/models/poi_lookup.py). 0: the stage-2 "
         "embedding alone.")]
VariantWeight = Annotated[float, typer.Option("--variant-weight", min=0.0, metavar="W",
                                              help="poi: weight of the variants' triplet loss (with --variants).")]
NwsVectors = Annotated[str, typer.Option(
    "--vectors", metavar="SPEC", envvar="SEMBED_VECTORS",
    help="nws: the frozen word vectors: glove-6b-50d (packaged, the default), spacy:NAME|PATH (e.g. "
         "spacy:en_core_web_md), glove:FILE, word2vec:FILE, word2vec-bin:FILE, or a FILE of any of the three.")]
NwsInit = Annotated[Literal["isf", "random", "ones"], typer.Option("--init", metavar="isf|random|ones",
                                      help="nws: initial scores: ISF (eq. 13, the paper's best), uniform in [0, 1) "
                                           "by --seed, or 1.")]
SaveEpochs = Annotated[bool, typer.Option("--save-epochs", help="nws: also keep the scores after every epoch as "
                                                                "salience tables DIR/epochs/N (0: the initial ones).")]
Pooling = Annotated[Literal["ta", "mean"], typer.Option(
    "--pooling", metavar="ta|mean", help="ta: Token Attention pooling (eq. 1-4); mean: the encoder's tokens averaged "
                                         "(the ablation's SBERT row).")]
NoRecon = Annotated[bool, typer.Option("--no-recon", help="ta: leave out the reconstruction head and loss (eq. 5, 7).")]
ReconInit = Annotated[Literal["uniform", "embeddings"], typer.Option(
    "--recon-init", metavar="uniform|embeddings",
    help="ta: initial W_r of the reconstruction head (the paper does not say): uniform like Token Attention, or a "
         "copy of the encoder's word-piece embeddings (as BERT's tied masked-LM decoder).")]
Objective = Annotated[Literal["nli", "sts"], typer.Option(
    "--objective", metavar="nli|sts", help="ta: nli: softmax classifier over (u, v, |u - v|) on the pairs' label "
                                           "(eq. 6); sts: cosine similarity against the scaled score, MSE.")]
Validation = Annotated[Optional[str], typer.Option(
    "--validation", metavar="FILE", show_default=False,
    help="ta --objective nli: held-out labelled pairs; the trained classifier's accuracy and cross-entropy on them "
         "go to stderr and into sembed.json (the paper's Fig. 9).")]
RandomInit = Annotated[bool, typer.Option(
    "--random-init", help="syntax: train the map on vectors of --model with its weights re-initialised at random "
                          "(by --seed): the paper's control.")]
Dimension = Annotated[int, typer.Option("--dimension", min=1, metavar="N",
                                        help="syntax: dimensions of the map's output (the paper: 75).")]
PairsPerSet = Annotated[int, typer.Option("--pairs-per-set", min=1, metavar="N",
                                          help="syntax: samples (two sentences, two word indices) drawn from each "
                                               "set an epoch (the paper: about 11).")]
TrainPrecision = Annotated[Literal["fp32", "bf16", "auto"], typer.Option(
    "--precision", metavar="fp32|bf16|auto",
    help="mlm, poi: the forward pass's arithmetic; bf16 runs it under bf16 autocast (weights and optimiser stay "
         "fp32): 1.7x faster on a CPU with AVX512-BF16 (bench/mlm_train_speed.py), and on recent GPUs; auto is bf16 "
         "where the device does it natively, else fp32. fp32 (the default) gives the same model on every machine.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue an interrupted run from its newest checkpoint "
                                                       "(repeat its command, with --resume; with --force too, start "
                                                       "over when the checkpoints are of another run). A DIR already "
                                                       "complete is left as it is, exit 0.")]


def train_command(
    ctx: typer.Context,
    input: Input = "-",
    method: MethodOption = ...,
    output: ModelDir = ...,
    model: StartModel = DEFAULT_MODEL,
    epochs: Epochs = None,
    batch_size: TrainBatchSize = None,
    lr: LearningRate = None,
    warmup: Warmup = None,
    max_steps: MaxSteps = None,
    cf_weight: CfWeight = None,
    score_range: ScoreRangeOption = None,
    pooling: Pooling = "ta",
    no_recon: NoRecon = False,
    recon_init: ReconInit = "uniform",
    objective: Objective = "nli",
    validation: Validation = None,
    vectors: NwsVectors = "glove-6b-50d",
    init: NwsInit = "isf",
    save_epochs: SaveEpochs = False,
    from_scratch: FromScratch = False,
    layers: Layers = 4,
    hidden: Hidden = 128,
    samples: Samples = 10,
    holdout: Holdout = None,
    distance: Distance = "euclidean",
    margin: Margin = None,
    triplet_weight: TripletWeight = 1.0,
    variants: Variants = 0,
    variant_weight: VariantWeight = 1.0,
    ngram_weight: NgramWeight = 0.0,
    random_init: RandomInit = False,
    dimension: Dimension = 75,
    pairs_per_set: PairsPerSet = 11,
    text_keys: TextKeys = None,
    checkpoint_steps: CheckpointSteps = 500,
    precision: TrainPrecision = "fp32",
    resume: Resume = False,
    force: Force = False,
    seed: Seed = 42,
    device: Device = "auto",
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Train a model with one of the papers' methods and write it as a model directory.

    Reads records (what each method needs is below) and writes nothing to
    stdout: the model goes to DIR with sembed.json: the method, base model,
    the data (input, record count, SHA-256), every setting, the seed and
    package versions. Training sees the whole input before the first step,
    so all of it is read into memory first.

    \b
    Methods:
      sbert  SBERT: text_a, text_b, score; both texts through one encoder,
             cosine of the two embeddings, mean squared error against the
             score scaled by --score-range.
      cf     CF-BERT (Yin et al. 2020, eq. 1): as sbert, each side embedded
             as emb(text) + W_cf * emb(s_cf) before the cosine; reads
             s_cf_a / s_cf_b, built as `sembed spo` does where missing.
             W_cf = 0 is sbert. `sembed embed --model DIR` applies W_cf.
      ta     TA-SBERT (Seo et al. 2022): the encoder's pooling replaced by
             Token Attention (eq. 1-4; --pooling mean for the ablation)
             with the reconstruction head (eq. 5; --no-recon drops it);
             loss L_sen + 0.017 (L_rec(a) + L_rec(b)) (eq. 7), L_sen the
             softmax classifier over (u, v, |u - v|) on text_a, text_b,
             label (entailment, neutral, contradiction: eq. 6), or with
             --objective sts the sbert loss on scores. Encoder at --lr,
             Token Attention and the heads at 3e-5, initialised uniform
             with mean 0 and variance 0.02 (section IV-A). The base
             model's normalisation is dropped. Base-form input is
             `sembed normalize` before training and before embedding.
             SentenceTransformer(DIR, trust_remote_code=True) loads the
             model where sembed is installed (sentence-transformers 6
             asks for it for any module class of another package).
      nws    Neural Word Saliency (Samardzhiev et al. 2018): one score
             q(w) per word with frozen word vectors (--vectors),
             s = sum q(w) w over a sentence's distinct words (eq. 1);
             reads doc_id and text of a sentence-ordered corpus (sembed
             convert --from lines|prose|brown); each sentence's neighbours
             in its document are positives, K = 2 negatives are drawn
             uniformly from the corpus; softmax cross-entropy over the
             inner products; AdaGrad. DIR is a salience table:
             salience.tsv (word, score, sentences, tokens; highest
             first), sif_component.npy, sembed.json; it carries the
             corpus counts `sembed embed --method isf|sif` use.
             One-sentence documents give no pair, sentences without a
             known word are left out, words never in a pair keep their
             initial score: all counted on stderr. An empty corpus is an
             error.
      mlm    Masked-LM training. --from-scratch: the POI paper's stage 1
             (Zhang et al., section 4): a new character-level BERT
             (--layers, --hidden) on the text of the records with is_poi
             true (or absent) and split train (or absent), each name
             --samples times an epoch with one character masked at
             random. Without --from-scratch: --model, a BERT encoder
             without a prediction head (all-MiniLM-L6-v2 by default),
             becomes an English masked-LM on prose records (text; e.g.
             sembed convert --from prose), the default of gensets
             (examples/build_mlm.sh): BERT's head (dense + GELU +
             LayerNorm, decoder tied to the word-piece embeddings, bias
             from the word-piece frequencies) is trained at 25 x --lr
             while the encoder is fine-tuned at --lr; [MASK], never
             seen by such an encoder, starts as the average word piece;
             BERT's masking over whole words, but of 40% of a
             sentence's words (at least one; as Wettig et al. 2023: more
             learnt a step): [MASK] 80%, random pieces 10%, kept 10%;
             the loss at those pieces only; no dropout; sentences cut at
             128 word pieces. --holdout (2%) of the records, chosen by a
             hash of the text, are never trained on; sembed.json names
             the rule (bench/mlm_recovery.py measures on them).
      poi    The POI paper's stage 2: --model, a stage-1 directory, goes
             on with batch-all online triplet mining (POI names against
             non-POI queries, one class; --distance, --margin) plus the
             masked-LM loss on the POI names: L = L_mlm + W * L_triplet.
             Reads text and is_poi of the train split (all records
             without split). For looking places up: --variants N adds
             N generated variants of each POI name as its positives
             (+ --variant-weight * their batch-all triplet loss), and
             --ngram-weight W saves hashed character n-grams beside the
             encoder, which embed / index / search then concatenate.
      syntax The syntax-distillation map (section 3): reads `sembed
             gensets` records (aligned `words` of a set of structurally
             equivalent sentences); each word's vector from --model,
             frozen (mean of all layers + the layer two thirds up, mean
             over word pieces: `sembed embed --words`); f, one linear
             layer to --dimension (75), learnt with the softmax triplet
             loss (eq. 4) on word-pair differences f(x_i1) - f(x_i2) of
             two sentences of a set (eq. 1-2), the negative the closest
             pair of the batch from another set (eq. 5), both orders;
             Adam. 5% of the sets are held out: their loss and triplet
             accuracy go to stderr each epoch and into sembed.json.
             --random-init: the same on a randomly initialised encoder.
             DIR is applied by `sembed embed --words --syntax-map DIR`.
      mlm and poi write a Hugging Face masked-LM directory
      (AutoModelForMaskedLM, AutoTokenizer) that is also a
      sentence-transformers one (mean pooling, normalised), for
      `sembed taste`, `sembed embed` and `sembed index`.

    \b
    Defaults (--epochs, --batch-size, --lr, --warmup):
      sbert, cf  4 epochs, batch 16, AdamW 2e-5, 10% warm-up (the papers')
      ta         1 epoch, batch 16, AdamW 2e-5 / 3e-5, 10% (the paper's)
      nws        5 epochs (its curves flatten after 5 or 6), batch 128
                 pairs, AdaGrad 0.01 (the paper's)
      mlm        --from-scratch: 1 epoch, batch 512 (the paper's), AdamW
                 1e-3, 5% (ours: the paper's 2.5e-6 is for 5 hours on 8
                 GPUs); adapting an encoder: 1 epoch, batch 32
                 sentences, AdamW 2e-4 (the new head 5e-3), 5% (ours; on
                 a CPU an epoch of the shared corpora is hours:
                 build_mlm.sh stops at --max-steps 2000)
      poi        1 epoch, batch 128, AdamW 2e-4, 10%
      syntax     5 epochs, batch 500 samples, Adam 1e-3 (the paper's
                 epochs and batch; it gives no rate), no warm-up
    AdamW has weight decay 0.01 and gradients clipped at norm 1; the
    learning rate decays linearly to 0 after the warm-up; data is shuffled
    each epoch by --seed. On a CPU, fewer epochs or --max-steps give a
    quick model.

    Progress and one line per epoch go to stderr. Checkpoints go to
    DIR.checkpoints every --checkpoint-steps steps (nws: every epoch) and
    at each epoch's end; after an interruption the same command with
    --resume continues from the newest one and ends with the weights an
    uninterrupted run would have (same data and settings required;
    --device and --precision may change). An
    existing DIR, or checkpoints of an unfinished run, are replaced only
    with --force. DIR appears complete or not at all; a second run writing
    it meanwhile refuses; --resume on a complete DIR leaves it as it is.
    SIGTERM and SIGHUP stop a run as Ctrl-C does, with a checkpoint.
    sbert, cf and ta run under torchrun / accelerate launch for several
    GPUs (--batch-size per process); the other methods refuse to. An
    option of another method is a usage error.

    Bad input stops with 'error: FILE:LINE: what is wrong' (missing or empty
    text, missing, non-numeric or out-of-range score, unknown label), exit
    1; --skip-errors trains on the rest and reports what it skipped.

    \b
    Example:
      sembed convert --from stsb sts-train.csv | sembed parse | sembed spo \\
        | sembed train --method cf -o stsb-cf --epochs 4
      sembed convert --from sick SICK_train.txt | sembed normalize \\
          -k text_a -k text_b | sembed train --method ta -o sick-ta
      sembed convert --from prose --doc-break blank corpora/abc \\
        | sembed train --method nws -o abc-nws
      sembed convert --from prose --doc-break blank corpora/abc \\
        | sembed train --method mlm --max-steps 2000 -o abc-mlm
    """
    for name, methods in ONLY_FOR.items():
        source = ctx.get_parameter_source(name)  # typer carries its own click: compare the source by name
        if method not in methods and source is not None and source.name == "COMMANDLINE":
            flag = next(p.opts for p in ctx.command.params if p.name == name)[-1]
            raise typer.BadParameter(f"only for --method {'|'.join(m.value for m in Method if m in methods)}",
                                     param_hint=f"'{flag}'")
    from ..training import checkpoints

    if method not in SENTENCE_ENCODERS:
        distributed.refuse(f"train --method {method.value}")
    recipe = recipe_for(method, from_scratch)
    epochs, batch_size = epochs or recipe.epochs, batch_size or recipe.batch_size
    lr = recipe.lr if lr is None else lr
    warmup = recipe.warmup if warmup is None else warmup
    if distributed.is_main_process():  # rank 0 alone logs, writes DIR and its checkpoints
        ctx.with_resource(exclusive(output))  # until the command ends: a second run writing DIR refuses
        if resume and not force and checkpoints.finished(output):
            console.say(f"{output} is complete: nothing to resume (--force trains it again)")
            return
    else:
        console.set_quiet(True)
        warnings.simplefilter("ignore")  # the libraries' notices too: rank 0 shows them once
    source = RecordSource(input, skip_errors=skip_errors)
    if method in SENTENCE_ENCODERS:
        _train_sentence_encoder(source, method, output, model, epochs, batch_size, lr, warmup, max_steps, cf_weight,
                                score_range, pooling, not no_recon, recon_init, objective, validation, text_keys,
                                checkpoint_steps, resume, force, seed, device)
    elif method == Method.nws:
        _train_nws(source, output, vectors, init, save_epochs, epochs, batch_size, lr, text_keys, resume, force, seed,
                   device)
    elif method == Method.syntax:
        _train_syntax(source, output, model, random_init, dimension, pairs_per_set, epochs, batch_size, lr, text_keys,
                      resume, force, seed, device)
    elif method == Method.mlm and not from_scratch:
        _adapt_encoder(ctx, source, output, model, epochs, batch_size, lr, warmup, max_steps, text_keys,
                       checkpoint_steps, holdout, precision, resume, force, seed, device)
    else:
        _train_poi_stage(ctx, source, method, output, model, epochs, batch_size, lr, warmup, max_steps, text_keys,
                         checkpoint_steps, from_scratch, layers, hidden, samples, distance, margin, triplet_weight,
                         variants, variant_weight, ngram_weight, precision, resume, force, seed, device)


def _train_sentence_encoder(source, method, output, model, epochs, batch_size, lr, warmup, max_steps, cf_weight,
                            score_range, pooling, reconstruction, recon_init, objective, validation, text_keys,
                            checkpoint_steps, resume, force, seed, device) -> None:
    """sbert, cf and ta: a sentence-transformers encoder fine-tuned on pairs (training/siamese.py, ta_sbert.py)."""
    from ..training.scored_pairs import PairFields, ScoreRange
    from ..training.sentence_trainer import Schedule

    if text_keys is not None and len(text_keys) != 2:
        raise typer.BadParameter("give it twice, for the two texts of a pair", param_hint="'--text-key'")
    fields = PairFields(*text_keys) if text_keys else PairFields()
    schedule = Schedule(epochs=epochs, batch_size=batch_size, learning_rate=lr, warmup_ratio=warmup,
                        max_steps=max_steps, seed=seed)
    scores = ScoreRange.parse(score_range) if score_range else ScoreRange()
    common = {"base_model": model, "schedule": schedule, "score_range": scores, "fields": fields, "device": device,
              "checkpoint_steps": checkpoint_steps, "resume": resume, "force": force}
    if method == Method.ta:
        from ..training import ta_sbert

        if score_range is not None and objective != "sts":
            raise typer.BadParameter("only with --objective sts", param_hint="'--score-range'")
        if validation is not None and objective != "nli":
            raise typer.BadParameter("only with --objective nli", param_hint="'--validation'")
        ta_sbert.train_ta(source, output, pooling=pooling, reconstruction=reconstruction,
                          reconstruction_init=recon_init, objective=objective,
                          validation=RecordSource(validation) if validation else None, **common)
    else:
        from ..training import siamese

        siamese.train_siamese(source, output, method=method.value,
                              cf_weight=siamese.DEFAULT_CF_WEIGHT if cf_weight is None else cf_weight, **common)


def _train_nws(source, output, vectors, init, save_epochs, epochs, batch_size, lr, text_keys, resume, force, seed,
               device) -> None:
    """nws: Neural Word Saliency scores (training/word_saliency.py)."""
    from ..models import word_vectors
    from ..training.word_saliency import Settings, train_nws

    if text_keys is not None and len(text_keys) != 1:
        raise typer.BadParameter("nws reads one text field", param_hint="'--text-key'")
    settings = Settings(epochs=epochs, batch_size=batch_size, learning_rate=lr, init=init, seed=seed,
                        save_epochs=save_epochs)
    train_nws(source, output, word_vectors.load(vectors), settings, device=device,
              text_key=text_keys[0] if text_keys else "text", resume=resume, force=force)


def _train_syntax(source, output, model, random_init, dimension, pairs_per_set, epochs, batch_size, lr, text_keys,
                  resume, force, seed, device) -> None:
    """syntax: the syntax-distillation map (training/syntax.py)."""
    from ..training.syntax import Settings, train_syntax

    if text_keys is not None:
        raise typer.BadParameter("syntax reads the aligned `words` of gensets records", param_hint="'--text-key'")
    settings = Settings(epochs=epochs, batch_size=batch_size, learning_rate=lr, pairs_per_set=pairs_per_set,
                        dimension=dimension, seed=seed)
    train_syntax(source, output, model=model, random_init=random_init, settings=settings, device=device,
                 resume=resume, force=force)


def _train_poi_stage(ctx, source, method, output, model, epochs, batch_size, lr, warmup, max_steps, text_keys,
                     checkpoint_steps, from_scratch, layers, hidden, samples, distance, margin, triplet_weight,
                     variants, variant_weight, ngram_weight, precision, resume, force, seed, device) -> None:
    """mlm and poi: the POI paper's two stages, on sembed's plain torch loop (see training/masked_lm.py)."""
    from ..training.masked_lm import CharBertShape, LoopSchedule, train_from_scratch
    from ..training.poi_triplet import DEFAULT_MARGIN, train_poi

    if text_keys is not None and len(text_keys) != 1:
        raise typer.BadParameter(f"{method.value} reads one text field", param_hint="'--text-key'")
    if method == Method.mlm:
        _refuse_options(ctx, ("model", "holdout"), "only without --from-scratch")
    if method == Method.poi and ctx.get_parameter_source("model").name == "DEFAULT":
        raise typer.BadParameter("poi continues a stage-1 model: give the directory `sembed train --method mlm "
                                 "--from-scratch` wrote", param_hint="'--model'")
    if hidden % 4:
        raise typer.BadParameter("must be a multiple of 4 (4 attention heads)", param_hint="'--hidden'")
    schedule = LoopSchedule(epochs=epochs, batch_size=batch_size, learning_rate=lr, warmup_ratio=warmup,
                            max_steps=max_steps, checkpoint_steps=checkpoint_steps, seed=seed)
    text_key = text_keys[0] if text_keys else "text"
    if method == Method.mlm:
        train_from_scratch(source, output, shape=CharBertShape(layers=layers, hidden=hidden), schedule=schedule,
                           samples=samples, text_key=text_key, device=device, precision=precision, resume=resume,
                           force=force)
    else:
        train_poi(source, output, base_model=model, schedule=schedule, distance=distance,
                  margin=DEFAULT_MARGIN if margin is None else margin, triplet_weight=triplet_weight,
                  variants=variants, variant_weight=variant_weight, ngram_weight=ngram_weight, text_key=text_key,
                  device=device, precision=precision, resume=resume, force=force)


def _refuse_options(ctx, names: tuple[str, ...], why: str) -> None:
    """A usage error for any of the options `names` given on the command line."""
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name == "COMMANDLINE":
            flag = max(next(p.opts for p in ctx.command.params if p.name == name), key=len)
            raise typer.BadParameter(why, param_hint=f"'{flag}'")


def _adapt_encoder(ctx, source, output, model, epochs, batch_size, lr, warmup, max_steps, text_keys,
                   checkpoint_steps, holdout, precision, resume, force, seed, device) -> None:
    """mlm without --from-scratch: an encoder adapted into an English masked-LM (training/mlm_adaptation.py)."""
    from ..training.masked_lm import LoopSchedule
    from ..training.mlm_adaptation import DEFAULT_HOLDOUT, adapt_encoder

    if text_keys is not None and len(text_keys) != 1:
        raise typer.BadParameter("mlm reads one text field", param_hint="'--text-key'")
    _refuse_options(ctx, ("layers", "hidden", "samples"), "only with --from-scratch")
    schedule = LoopSchedule(epochs=epochs, batch_size=batch_size, learning_rate=lr, warmup_ratio=warmup,
                            max_steps=max_steps, checkpoint_steps=checkpoint_steps, seed=seed)
    adapt_encoder(source, output, base_model=model, schedule=schedule,
                  holdout=DEFAULT_HOLDOUT if holdout is None else holdout,
                  text_key=text_keys[0] if text_keys else "text", device=device, precision=precision, resume=resume,
                  force=force)
