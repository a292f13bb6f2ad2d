#!/usr/bin/env bash
# TA-SBERT (Seo et al. 2022) Fig. 9: does the reconstruction loss keep fine-tuning stable at higher learning rates?
#
#   bash examples/ta_sbert_stability.sh [DATA]     (DATA: SEMBED_DATA, else ../shared/data)
#
# SBERT (mean pooling) fine-tuned from the packaged all-MiniLM-L6-v2 on NLI pairs
# (SICK train + the SNLI dev part) with and without the reconstruction loss of eq. 5/7,
# at each learning rate of LRS, for each seed of SEEDS; held-out NLI accuracy and
# cross-entropy of the trained softmax classifier on the SNLI test part
# (`sembed train --validation`), and the training loss. Writes
# examples/results/ta_sbert_stability.md, .json and .png (the paper's Fig. 9 panels).
#
# Settings (environment): LRS ("2e-5 5e-5 1e-4"), SEEDS ("1 2 3"), STEPS (max
# optimiser steps per model; one epoch when empty), DEVICE (auto), WORK
# (runs/ta_sbert_stability; removed at the end unless KEEP=1). Models already
# trained in WORK are reused, so an interrupted run continues.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
DATA=${1:-${SEMBED_DATA:-../shared/data}}
LRS=${LRS:-2e-5 5e-5 1e-4}
SEEDS=${SEEDS:-1 2 3}
STEPS=${STEPS:-}
DEVICE=${DEVICE:-auto}
WORK=${WORK:-runs/ta_sbert_stability}
start=$(date +%s)
mkdir -p "$WORK/models"

if [ ! -s "$WORK/test.jsonl" ]; then
  { sembed convert -q --from sick "$DATA/sick/SICK_train.txt"
    sembed convert -q --from snli "$DATA/nli/snli_1.0_dev_part.jsonl"; } > "$WORK/train.jsonl"
  sembed convert -q --from snli "$DATA/nli/snli_1.0_test_part.jsonl" > "$WORK/test.jsonl"
fi
for lr in $LRS; do
  for recon in recon no_recon; do
    for seed in $SEEDS; do
      model="$WORK/models/$recon.$lr.$seed"
      [ -d "$model" ] && continue
      echo "== $recon lr $lr seed $seed" >&2
      flag=""
      [ "$recon" = no_recon ] && flag="--no-recon"
      # shellcheck disable=SC2086
      sembed train -q "$WORK/train.jsonl" --method ta --pooling mean $flag --lr "$lr" --epochs 1 \
        ${STEPS:+--max-steps "$STEPS"} --seed "$seed" --device "$DEVICE" --validation "$WORK/test.jsonl" \
        -o "$model" --checkpoint-steps 200 --resume --force
    done
  done
done
python examples/ta_sbert_report.py stability "$WORK" --seconds $(($(date +%s) - start)) --steps "${STEPS:-all}" \
  --markdown examples/results/ta_sbert_stability.md --json examples/results/ta_sbert_stability.json \
  --png examples/results/ta_sbert_stability.png
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
