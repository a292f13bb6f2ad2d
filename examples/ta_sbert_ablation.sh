#!/usr/bin/env bash
# TA-SBERT (Seo et al. 2022) ablation, the paper's Table 3 and 4 rows, on the packaged all-MiniLM-L6-v2.
#
#   bash examples/ta_sbert_ablation.sh [DATA]     (DATA: SEMBED_DATA, else ../shared/data)
#
# Six models per seed, each trained with `sembed train --method ta` on the same NLI
# pairs (SICK train with its entailment labels + the SNLI part in DATA/nli) for the
# same steps from the packaged MiniLM:
#   mean                  --pooling mean --no-recon          (SBERT-NLI)
#   form                  the same on base-form text (`sembed normalize`)
#   att                   --pooling ta --no-recon            (Token Attention)
#   form_att              Token Attention on base-form text
#   att_recon             --pooling ta, reconstruction loss (eq. 7, 0.017)
#   form_att_recon        all three
# each evaluated on STS-B test and SICK-R test (Pearson / Spearman of the cosine,
# `sembed eval sts`) and, with TRANSFER=1, MR / SUBJ / CR (`sembed eval classify`,
# logistic regression, 10-fold). A "form" model sees base-form text at test time too.
# Prints mean and spread over the seeds next to the paper's SBERT-NLI-base rows and
# writes examples/results/ta_sbert.md (raw metrics: ta_sbert.json).
#
# Settings (environment): SEEDS ("1 2 3"), STEPS (max optimiser steps per model; all
# pairs for 1 epoch when empty), TRANSFER (1: also MR/SUBJ/CR; 0 on a busy CPU),
# DEVICE (auto), WORK (runs/ta_sbert; removed at the end unless KEEP=1).
# A model already trained in WORK is reused, so an interrupted run continues.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
DATA=${1:-${SEMBED_DATA:-../shared/data}}
SEEDS=${SEEDS:-1 2 3}
STEPS=${STEPS:-}
TRANSFER=${TRANSFER:-1}
DEVICE=${DEVICE:-auto}
WORK=${WORK:-runs/ta_sbert}
ROWS="mean form att form_att att_recon form_att_recon"

mkdir -p "$WORK/metrics" "$WORK/models"
start=$(date +%s)
say() { echo "== $*" >&2; }

# 1. Data: NLI pairs for training; the test sets; each also in base form.
if [ ! -s "$WORK/done-data" ]; then
  say "data"
  { sembed convert -q --from sick "$DATA/sick/SICK_train.txt"; sembed convert -q --from snli "$DATA/nli"; } \
    > "$WORK/nli.jsonl"
  sembed convert -q --from stsb "$DATA/stsb/sts-test.csv" > "$WORK/stsb.jsonl"
  sembed convert -q --from sick "$DATA/sick/SICK_test_annotated.txt" > "$WORK/sick.jsonl"
  sembed convert -q --from mr "$DATA/senteval/sentence_polarity" > "$WORK/mr.jsonl"
  sembed convert -q --from subj "$DATA/senteval/subjectivity" > "$WORK/subj.jsonl"
  sembed convert -q --from cr "$DATA/senteval/product_reviews_1" "$DATA/senteval/product_reviews_2" > "$WORK/cr.jsonl"
  for set in nli stsb sick; do
    sembed normalize -q -k text_a -k text_b "$WORK/$set.jsonl" > "$WORK/$set.form.jsonl"
  done
  for set in mr subj cr; do
    sembed normalize -q "$WORK/$set.jsonl" > "$WORK/$set.form.jsonl"
  done
  wc -l "$WORK"/*.jsonl >&2
  echo ok > "$WORK/done-data"
fi

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
    if [ ! -d "$model" ]; then
      say "train $row seed $seed"
      # shellcheck disable=SC2046
      sembed train -q "$WORK/nli$form.jsonl" --method ta $(options "$row") --epochs 1 \
        ${STEPS:+--max-steps "$STEPS"} --seed "$seed" --device "$DEVICE" -o "$model" --checkpoint-steps 200 \
        --resume --force
    fi
    say "evaluate $row seed $seed"
    for set in stsb sick; do
      out="$WORK/metrics/$row.$seed.$set.json"
      [ -s "$out" ] || sembed embed -q "$WORK/$set$form.jsonl" -m "$model" --device "$DEVICE" \
        | sembed eval sts -q > "$out"
    done
    if [ "$TRANSFER" = 1 ]; then
      for set in mr subj cr; do
        out="$WORK/metrics/$row.$seed.$set.json"
        [ -s "$out" ] || sembed embed -q "$WORK/$set$form.jsonl" -m "$model" --device "$DEVICE" \
          | sembed eval classify -q > "$out"
      done
    fi
  done
done

seconds=$(($(date +%s) - start))
python examples/ta_sbert_report.py ablation "$WORK" --seconds "$seconds" --steps "${STEPS:-all}" \
  --markdown examples/results/ta_sbert.md --json examples/results/ta_sbert.json
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
