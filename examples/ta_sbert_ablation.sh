#!/usr/bin/env bash
# TA-SBERT (Seo et al. 2022) ablation, the paper's Table 3 (and 4) rows, paired over seeds, from two starts, on the CPU.
#
#   bash examples/ta_sbert_ablation.sh [DATA]     (DATA: SEMBED_DATA, else ../shared/data)
#
# Six models per seed, each trained with `sembed train --method ta` on the same NLI pairs (SICK train with its
# entailment labels + every SNLI file in DATA/nli: 7,027 pairs, 440 steps of 16) for one full epoch, with that
# seed (the same initialisation and data order for every row), from the start model START:
#   mean                  --pooling mean --no-recon          (SBERT-NLI)
#   form                  the same on base-form text (`sembed normalize`)
#   att                   --pooling ta --no-recon            (Token Attention)
#   form_att              Token Attention on base-form text
#   att_recon             --pooling ta, reconstruction loss (eq. 7, 0.017)
#   form_att_recon        all three
# each evaluated on STS-B test and SICK-R test (Pearson / Spearman of the cosine, `sembed eval sts`) and, with
# TRANSFER=1, MR / SUBJ / CR (`sembed eval classify`, logistic regression, 10-fold). A "form" model sees
# base-form text at test time too. The start model itself is evaluated zero-shot the same way.
# START: minilm, the packaged all-MiniLM-L6-v2 (a trained sentence encoder), or mlm, the MiniLM encoder after
# `sembed train --method mlm` (examples/build_mlm.sh, its default 2,000-step build, which already holds the encoder
# with mean pooling): the nearest thing to the paper's BERT-base start. The masked-LM is MLM (default: SEMBED_MLM,
# else ~/.local/share/sembed/minilm-mlm); when missing it is built there first (MLM_STEPS: 2000).
#
# Each model is one directory, WORK/START/models/ROW.SEED; a finished model and a written metrics file are
# skipped, so the table can be built over several sittings. After each sitting the report
# (examples/ta_sbert_report.py) adds this start's per-seed figures to RESULTS/ta_sbert.json and rewrites
# RESULTS/ta_sbert.md from that file: the mean over seeds of each row, the mean paired difference of each TA row
# minus mean pooling (same seed) with its 95% t interval over seeds, and a verdict per claim against Table 3.
#
# Time, measured (2026-11-24, 1 thread, beside another job): one seed of the six rows at 440 steps took 57 CPU
# minutes (1.3 h wall), so 3 seeds x 2 starts are about 5.7 CPU-hours (TRANSFER=1 adds embedding 24k more
# sentences per model).
# Settings (environment): SEEDS ("1 2 3"), START (minilm), MLM, MLM_STEPS (2000), STEPS (max optimiser steps per
# model; empty: one full epoch), TRANSFER (0; 1: also MR/SUBJ/CR), DEVICE (auto), WORK (runs/ta_sbert),
# RESULTS (examples/results). On a machine shared with other jobs, OMP_NUM_THREADS=1 avoids torch's threads
# waiting on each other.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
DATA=${1:-${SEMBED_DATA:-../shared/data}}
SEEDS=${SEEDS:-1 2 3}
START=${START:-minilm}
MLM=${MLM:-${SEMBED_MLM:-${XDG_DATA_HOME:-$HOME/.local/share}/sembed/minilm-mlm}}
MLM_STEPS=${MLM_STEPS:-2000}
STEPS=${STEPS:-}
TRANSFER=${TRANSFER:-0}
DEVICE=${DEVICE:-auto}
RESULTS=${RESULTS:-examples/results}
ROOT=${WORK:-runs/ta_sbert}
WORK=$ROOT/$START  # stages.sh logs here
ROWS="mean form att form_att att_recon form_att_recon"

mkdir -p "$WORK/metrics" "$WORK/models"
export STAGE_CPU_LOG=$WORK/cpu.tsv
source examples/stages.sh  # stage NAME COMMAND...: run it, note its seconds
BASE=$(start_model "$START") || exit 2

# 0. The masked-LM start, when it is not there yet.
build_start "$START"

# 1. Data, shared by both starts: NLI pairs for training; the test sets; each also in base form.
data() {
  { sembed convert -q --from sick "$DATA/sick/SICK_train.txt"; sembed convert -q --from snli "$DATA/nli"; } \
    > "$ROOT/nli.jsonl"
  sembed convert -q --from stsb "$DATA/stsb/sts-test.csv" > "$ROOT/stsb.jsonl"
  sembed convert -q --from sick "$DATA/sick/SICK_test_annotated.txt" > "$ROOT/sick.jsonl"
  for set in nli stsb sick; do
    sembed normalize -q -k text_a -k text_b "$ROOT/$set.jsonl" > "$ROOT/$set.form.jsonl"
  done
  echo ok > "$ROOT/data-done"
}
transfer_data() {
  sembed convert -q --from mr "$DATA/senteval/sentence_polarity" > "$ROOT/mr.jsonl"
  sembed convert -q --from subj "$DATA/senteval/subjectivity" > "$ROOT/subj.jsonl"
  sembed convert -q --from cr "$DATA/senteval/product_reviews_1" "$DATA/senteval/product_reviews_2" > "$ROOT/cr.jsonl"
  for set in mr subj cr; do
    sembed normalize -q "$ROOT/$set.jsonl" > "$ROOT/$set.form.jsonl"
  done
  echo ok > "$ROOT/transfer-done"
}
[ -s "$ROOT/data-done" ] || stage data data
[ "$TRANSFER" != 1 ] || [ -s "$ROOT/transfer-done" ] || stage "transfer data" transfer_data

evaluate() {  # evaluate NAME FORM MODEL: the metrics of one model (FORM: "" or ".form"), each file written once
  local name=$1 form=$2 model=$3 set sets="stsb sick"
  [ "$TRANSFER" = 1 ] && sets="stsb sick mr subj cr"
  for set in $sets; do
    local out="$WORK/metrics/$name.$set.json" task=sts
    [[ $set == stsb || $set == sick ]] || task=classify
    [ -s "$out" ] && continue
    sembed embed -q "$ROOT/$set$form.jsonl" -m "$model" --device "$DEVICE" | sembed eval $task -q > "$out.part"
    mv "$out.part" "$out"
  done
}
stage "zero-shot" evaluate zeroshot.none "" "$BASE"

options() {  # the train options of a row
  case $1 in
    mean|form) echo "--pooling mean --no-recon" ;;
    att|form_att) echo "--pooling ta --no-recon" ;;
    att_recon|form_att_recon) echo "--pooling ta" ;;
  esac
}

for seed in $SEEDS; do
  for row in $ROWS; do
    form=""
    [[ $row == form* ]] && form=".form"
    model="$WORK/models/$row.$seed"
    if [ ! -d "$model" ]; then  # train writes the directory whole, at the end
      # shellcheck disable=SC2046
      stage "train $row seed $seed" sembed train -q "$ROOT/nli$form.jsonl" --method ta $(options "$row") \
        --model "$BASE" --epochs 1 ${STEPS:+--max-steps "$STEPS"} --seed "$seed" --device "$DEVICE" -o "$model" \
        --checkpoint-steps 200 --resume
    fi
    stage "evaluate $row seed $seed" evaluate "$row.$seed" "$form" "$model"
  done
done

# This start's per-seed figures into RESULTS/ta_sbert.json, and the table of both starts from that file.
# shellcheck disable=SC2086
python examples/ta_sbert_report.py collect "$WORK" --start "$START" --base-model "$BASE" --seeds $SEEDS \
  --steps "${STEPS:-all}" --json "$RESULTS/ta_sbert.json"
python examples/ta_sbert_report.py table "$RESULTS/ta_sbert.json" --markdown "$RESULTS/ta_sbert.md"
