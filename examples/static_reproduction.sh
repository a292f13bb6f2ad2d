#!/usr/bin/env bash
# Static fast mode (issue 29): static models distilled from all-MiniLM-L6-v2, against the teacher and the peer.
#
#   bash examples/static_reproduction.sh [DATA]     (DATA: SEMBED_DATA, else ../shared/data)
#
# 1. The shared corpora (205k texts, 4.9M word-pieces) become text records: the word-piece counts of SIF
#    and the unlabelled sentences --fit teacher learns from (never an evaluation set).
# 2. `sembed train --method static` distils the packaged MiniLM (256 dimensions) six ways: weighting none, zipf
#    (model2vec's) and sif (corpus counts); --fit nws (NWS scores of the pieces, the paper's objective); sif then
#    --fit teacher (the weights only) and --fit teacher --fit-vectors (weights and vectors).
# 3. STS-B test and SICK-R test are embedded with each, with MiniLM itself (torch fp32 and ONNX int8), and with
#    model2vec's own `distill` of the same MiniLM (M2V_PYTHON: a Python with model2vec[distill]; left out
#    when unset), and scored by `sembed eval sts`.
# 4. Each learnt variant and model2vec against SIF alone: `sembed eval sts --versus`, a paired bootstrap 95%
#    interval of the difference over the test pairs (one seed: the interval is over pairs, not over seeds).
# 5. The pairs of examples/data/static_failures.jsonl (negation, roles swapped, and a paraphrase of each) are
#    scored by MiniLM and by the static models: where a bag of word-pieces cannot tell.
# Writes examples/results/static.md and static.json. Speed: bench/static_speed.py.
# Settings (environment): SEED (42), FIT_SENTENCES (20000), WORK (runs/static-example; removed unless KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} HF_HUB_OFFLINE=1
DATA=${1:-${SEMBED_DATA:-../shared/data}}
SEED=${SEED:-42}
FIT_SENTENCES=${FIT_SENTENCES:-20000}
WORK=${WORK:-runs/static-example}
TEACHER=all-MiniLM-L6-v2

mkdir -p "$WORK/metrics"
: > "$WORK/times.tsv"
source examples/stages.sh  # stage NAME COMMAND...: run it, note its seconds

prepare() {
  corpus_records "$DATA/corpora" > "$WORK/corpora.jsonl"
  sembed convert -q --from stsb "$DATA/stsb/sts-test.csv" > "$WORK/stsb-test.jsonl"
  sembed convert -q --from sick "$DATA/sick/SICK_test_annotated.txt" > "$WORK/sick-test.jsonl"
}
[ -s "$WORK/sick-test.jsonl" ] || stage prepare prepare

evaluate() {  # evaluate NAME [embed options]
  local name=$1 data
  shift
  mkdir -p "$WORK/vectors" "$WORK/failures"
  for data in stsb sick; do
    sembed embed -q "$WORK/$data-test.jsonl" "$@" | tee "$WORK/vectors/$name.$data.jsonl" \
      | sembed eval sts -q > "$WORK/metrics/$name.$data.json"
  done
  sembed embed -q examples/data/static_failures.jsonl "$@" \
    | sembed eval sts -q --pairs "$WORK/failures/$name.jsonl" > /dev/null
}

distil() {  # distil NAME [train options]
  local name=$1
  shift
  [ -d "$WORK/$name" ] || stage "train $name" sembed train "$WORK/corpora.jsonl" --method static -m "$TEACHER" \
    --seed "$SEED" --device cpu -o "$WORK/$name" "$@" 2> >(tee "$WORK/train-$name.log" >&2)
  stage "embed+eval $name" evaluate "$name" -m "$WORK/$name"
}

stage "embed+eval minilm" evaluate minilm
stage "embed+eval minilm-int8" evaluate minilm-int8 --backend onnx --quantize int8
distil static-none --weighting none
distil static-zipf --weighting zipf
distil static-sif --weighting sif
distil static-nws --fit nws
distil static-sif-fit --fit teacher --fit-sentences "$FIT_SENTENCES"
distil static-sif-fit-vectors --fit teacher --fit-vectors --fit-sentences "$FIT_SENTENCES"

if [ -n "${M2V_PYTHON:-}" ]; then
  teacher_dir=$(python -c "from sembed_cli.models import sentence_models as s; print(s.resolve_path('$TEACHER'))")
  [ -d "$WORK/model2vec" ] || stage "train model2vec" "$M2V_PYTHON" examples/static_peer.py distill "$teacher_dir" \
    "$WORK/model2vec" --dim 256
  peer() {
    for data in stsb sick; do
      "$M2V_PYTHON" examples/static_peer.py embed "$WORK/model2vec" < "$WORK/$data-test.jsonl" \
        | tee "$WORK/vectors/model2vec.$data.jsonl" | sembed eval sts -q > "$WORK/metrics/model2vec.$data.json"
    done
  }
  stage "embed+eval model2vec" peer
fi

versus() {  # each learnt variant and the peer against SIF alone: paired bootstrap over the test pairs
  local name data
  mkdir -p "$WORK/versus"
  for name in static-nws static-sif-fit static-sif-fit-vectors model2vec; do
    for data in stsb sick; do
      [ -s "$WORK/vectors/$name.$data.jsonl" ] || continue
      sembed eval sts -q "$WORK/vectors/$name.$data.jsonl" --versus "$WORK/vectors/static-sif.$data.jsonl" \
        --resamples 2000 > "$WORK/versus/$name.$data.json"
    done
  done
}
stage versus versus

python examples/static_report.py "$WORK" --seed "$SEED" --markdown examples/results/static.md \
  --json examples/results/static.json
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
