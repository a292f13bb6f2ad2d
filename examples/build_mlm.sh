#!/usr/bin/env bash
# The default masked-LM of `sembed gensets`: the packaged all-MiniLM-L6-v2 encoder adapted into an English masked-LM
# on all the shared corpora (`sembed train --method mlm`), on the CPU.
#
#   bash examples/build_mlm.sh [OUT]
#
# OUT defaults to $SEMBED_MLM, else ${XDG_DATA_HOME:-~/.local/share}/sembed/minilm-mlm, where gensets looks.
# 1. The corpora (about 205k sentences: abc, state_union, inaugural, webtext, movie_reviews, brown) become doc_id,
#    sent_id, text records, each as `sembed convert --help` recommends.
# 2. sembed train --method mlm trains STEPS steps of BATCH sentences; HOLDOUT of the sentences (by a hash of their
#    text) are never trained on, and sembed.json says which, for bench/mlm_recovery.py.
# 2000 steps take about 18 minutes on 2 free cores in fp32 (0.55 s a step), 12 in bf16 (0.37 s; PRECISION=auto on a
# CPU with AVX512-BF16). On a machine other jobs share, OMP_NUM_THREADS=1 avoids the threads' thrashing (there 2
# threads ran 3 to 6 s a step, 1 thread about 1 s).
# Top-10 recovery of masked content words (bench/mlm_recovery.py): 23.9% after the default 2000 steps; 30.9% after
# 5000 more from that model (FROM=<the 2000-step OUT> STEPS=5000 SEED=43 bash examples/build_mlm.sh OUT2); 40.2%
# after 20,000 more from that one (FROM=OUT2 STEPS=20000 SEED=44 bash examples/build_mlm.sh OUT3; 110 minutes in
# bf16 here). A GPU (DEVICE=cuda) builds 100,000 steps and more in minutes.
# Prints how long each stage and the whole build took. OUT appears complete or not at all, and an existing OUT is
# kept unless FORCE=1; an interrupted build goes on from its last checkpoint when run again.
# Settings (environment): DATA (SEMBED_DATA, else ../shared/data), FROM (the encoder to start from: all-MiniLM-L6-v2;
# a masked-LM this script built goes on training with its head), STEPS (2000), BATCH (32), HOLDOUT (0.02), SEED (42),
# DEVICE (auto), PRECISION (auto: bf16 autocast where the CPU or GPU does bf16 natively, 1.7x faster on this CPU;
# fp32 for the same model on every machine), FORCE (0), WORK (runs/build-mlm; removed at the end unless KEEP=1).
set -euo pipefail
OUT=${1:-${SEMBED_MLM:-${XDG_DATA_HOME:-$HOME/.local/share}/sembed/minilm-mlm}}
OUT=$(realpath -m "$OUT")  # before the cd below
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
DATA=${DATA:-${SEMBED_DATA:-../shared/data}}
STEPS=${STEPS:-2000}
BATCH=${BATCH:-32}
HOLDOUT=${HOLDOUT:-0.02}
SEED=${SEED:-42}
DEVICE=${DEVICE:-auto}
PRECISION=${PRECISION:-auto}
WORK=${WORK:-runs/build-mlm}
FROM=${FROM:-all-MiniLM-L6-v2}

if [ -e "$OUT" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "error: $OUT already exists (hint: FORCE=1 bash examples/build_mlm.sh to replace it)" >&2
  exit 1
fi
mkdir -p "$WORK"
: > "$WORK/times.tsv"
start=$(date +%s)
source examples/stages.sh  # stage NAME COMMAND...: run it, note its seconds

corpora() {
  corpus_records "$DATA/corpora" > "$WORK/corpora.jsonl"
}
stage "convert the corpora" corpora
force=()
[ "${FORCE:-0}" = 1 ] && force=(--force)
# as many passes over the sentences as STEPS steps need (train stops at --max-steps; its schedule ends there)
epochs=$(( STEPS * BATCH / $(wc -l < "$WORK/corpora.jsonl") + 1 ))
stage "train mlm" sembed train "$WORK/corpora.jsonl" --method mlm --model "$FROM" --max-steps "$STEPS" \
  --epochs "$epochs" --batch-size "$BATCH" --holdout "$HOLDOUT" --seed "$SEED" --device "$DEVICE" \
  --precision "$PRECISION" -o "$OUT" --resume "${force[@]}"
echo -e "total\t$(($(date +%s) - start))" >> "$WORK/times.tsv"
awk -F'\t' '{printf "%-22s %6d s\n", $1, $2}' "$WORK/times.tsv" >&2
echo "built $OUT in $(($(date +%s) - start)) s" >&2
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
