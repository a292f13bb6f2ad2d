#!/usr/bin/env bash
# CF-BERT (Yin et al. 2020) reproduced on the CPU: SBERT against CF fine-tuning, paired over seeds, from two starts.
#
#   bash examples/cf_bert_reproduction.sh [DATA]     (DATA: SEMBED_DATA, else ../shared/data)
#
# For each seed in SEEDS, from the start model START, the same pipeline per model:
#   sembed train --method sbert (W_cf = 0) and --method cf (W_cf = 0.2), with that seed (so the same
#   initialisation and the same data order for both), once on STS-B train (evaluated on STS-B test) and once on
#   SICK train (evaluated on SICK-R test, and on SICK-E: `sembed eval entailment`, logistic regression on
#   |u - v|, 10-fold cross-validation over SICK test); and the start model itself, zero-shot.
# START: minilm, the packaged all-MiniLM-L6-v2 (a trained sentence encoder), or mlm, the MiniLM encoder after
# `sembed train --method mlm` (examples/build_mlm.sh, its default 2,000-step build; the directory it writes
# already holds the encoder with mean pooling, so `train --model` and `embed -m` take it as it is): the
# nearest thing to the paper's BERT-base masked-LM start we can make here. The masked-LM is MLM (default:
# SEMBED_MLM, else ~/.local/share/sembed/minilm-mlm); when missing it is built there first (MLM_STEPS: 2000).
#
# Each model is one directory, WORK/START/models/DATA-METHOD.SEED, and its metrics files
# WORK/START/metrics/...; a finished model and a written metrics file are skipped, so the whole table can be
# built over several sittings (run again: it goes on where it stopped, an interrupted training from its
# last checkpoint). After each sitting the report (examples/cf_bert_report.py) adds this start's per-seed
# figures to RESULTS/cf_bert.json and rewrites RESULTS/cf_bert.md from that file: for each measure the mean over
# seeds of each row and the mean paired difference CF - SBERT (same seed) with its 95% t interval over seeds,
# and a verdict per claim against the paper's Tables 5 and 6.
#
# Time: on 2 free CPU cores one seed of the four models takes about 33 minutes (the single-seed run of
# 2026-11: 29.5 min training, 1,284 steps, and 3 min evaluating), so 5 seeds x 2 starts about 5.5 hours, plus
# the 2,000-step masked-LM build (about 18 minutes). A sitting can take part of it (SEEDS="1 2", one START).
# Settings (environment): SEEDS ("1 2 3 4 5"), START (minilm), MLM, MLM_STEPS (2000), EPOCHS (1; the paper: 4),
# TRAIN_PAIRS (all; else a random subsample of that many pairs of each training set, the same for every seed,
# drawn with SAMPLE_SEED, 42), WORK (runs/cf_bert), RESULTS (examples/results). On a machine shared with other
# jobs, OMP_NUM_THREADS=1 avoids torch's threads waiting on each other.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
DATA=${1:-${SEMBED_DATA:-../shared/data}}
SEEDS=${SEEDS:-1 2 3 4 5}
START=${START:-minilm}
MLM=${MLM:-${SEMBED_MLM:-${XDG_DATA_HOME:-$HOME/.local/share}/sembed/minilm-mlm}}
MLM_STEPS=${MLM_STEPS:-2000}
EPOCHS=${EPOCHS:-1}
TRAIN_PAIRS=${TRAIN_PAIRS:-all}
SAMPLE_SEED=${SAMPLE_SEED:-42}
RESULTS=${RESULTS:-examples/results}
ROOT=${WORK:-runs/cf_bert}
WORK=$ROOT/$START  # stages.sh logs here
report="python examples/cf_bert_report.py"

mkdir -p "$WORK/metrics" "$WORK/models"
export STAGE_CPU_LOG=$WORK/cpu.tsv
source examples/stages.sh  # stage NAME COMMAND...: run it, note its seconds
BASE=$(start_model "$START") || exit 2

# 0. The masked-LM start, when it is not there yet.
build_start "$START"

# 1. Records with S_cf, built once by the packaged parser and shared by every start, seed, training and embedding.
prepare() {
  sembed convert -q --from stsb "$DATA/stsb/sts-train.csv" | $report sample "$TRAIN_PAIRS" "$SAMPLE_SEED" \
    | sembed spo -q > "$ROOT/stsb-train.jsonl.part"
  sembed convert -q --from sick "$DATA/sick/SICK_train.txt" | $report sample "$TRAIN_PAIRS" "$SAMPLE_SEED" \
    | sembed spo -q > "$ROOT/sick-train.jsonl.part"
  sembed convert -q --from stsb "$DATA/stsb/sts-test.csv" | sembed spo -q > "$ROOT/stsb-test.jsonl.part"
  sembed convert -q --from sick "$DATA/sick/SICK_test_annotated.txt" | sembed spo -q > "$ROOT/sick-test.jsonl.part"
  for part in "$ROOT"/*.jsonl.part; do mv "$part" "${part%.part}"; done
  echo "$TRAIN_PAIRS $SAMPLE_SEED" > "$ROOT/data-done"
}
if [ "$(cat "$ROOT/data-done" 2>/dev/null)" != "$TRAIN_PAIRS $SAMPLE_SEED" ]; then
  stage prepare prepare
fi

# 2. The metrics of one model on one test set, each file written once: STS (and SICK-E on SICK).
evaluate() {  # evaluate NAME DATA [embed options]
  local name=$1 data=$2 file="$WORK/$1.$2-test.jsonl" metrics="$WORK/metrics/$1.$2"
  shift 2
  if [ -s "$metrics.sts.json" ] && { [ "$data" != sick ] || [ -s "$metrics.sick-e.json" ]; }; then
    return
  fi
  sembed embed -q "$ROOT/$data-test.jsonl" --device cpu "$@" -o "$file"
  sembed eval sts -q "$file" > "$metrics.sts.json.part"
  mv "$metrics.sts.json.part" "$metrics.sts.json"
  if [ "$data" = sick ]; then
    sembed eval entailment -q "$file" > "$metrics.sick-e.json.part"
    mv "$metrics.sick-e.json.part" "$metrics.sick-e.json"
  fi
  rm -f "$file"
}
for data in stsb sick; do
  stage "zero-shot $data" evaluate zeroshot.none "$data" -m "$BASE" --cf-weight 0
done

# 3. Per seed: fine-tuning with the paper's recipe (batch 16, AdamW 2e-5, 10% warm-up; SICK's 1-5 scores mapped
#    by (s - 1) / 4), then the metrics.
for seed in $SEEDS; do
  for data in stsb sick; do
    range=0:5
    [ "$data" = sick ] && range=1:5
    for method in sbert cf; do
      model="$WORK/models/$data-$method.$seed"
      if [ ! -d "$model" ]; then  # train writes the directory whole, at the end
        stage "train $data $method seed $seed" sembed train -q "$ROOT/$data-train.jsonl" --method "$method" \
          --model "$BASE" --score-range "$range" --epochs "$EPOCHS" --seed "$seed" --device cpu -o "$model" \
          --checkpoint-steps 100 --resume
      fi
      stage "embed+eval $data $method seed $seed" evaluate "$method.$seed" "$data" -m "$model"
    done
  done
done

# 4. This start's per-seed figures into RESULTS/cf_bert.json, and the table of both starts from that file.
# shellcheck disable=SC2086
$report collect "$WORK" --start "$START" --base-model "$BASE" --seeds $SEEDS --epochs "$EPOCHS" \
  --train-pairs "$TRAIN_PAIRS" --json "$RESULTS/cf_bert.json"
$report table "$RESULTS/cf_bert.json" --markdown "$RESULTS/cf_bert.md"
