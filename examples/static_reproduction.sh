#!/usr/bin/env bash
# Static fast mode: static models distilled from all-MiniLM-L6-v2, against the teacher and the peer.
#
#   bash examples/static_reproduction.sh [DATA]     (DATA: SEMBED_DATA, else ../shared/data)
#
# 1. The shared corpora (205k texts, 4.9M word-pieces) become text records: the word-piece counts of SIF
#    and the unlabelled sentences the teacher reads (never an evaluation set).
# 2. `sembed train --method static` distils the packaged MiniLM (256 dimensions):
#    - model2vec's way, each piece's vector alone (--piece-vectors alone), weighted none, zipf and sif;
#    - each piece's mean output over 100,000 corpus sentences (--piece-vectors corpus, the default), weighted
#      none and sif (the default), the teacher's pass kept once (--teacher-cache) for every later variant;
#    - the learnt variants, once per seed of SEEDS: --fit nws (NWS scores of the pieces, the paper's objective),
#      --fit teacher (the weights) and --fit teacher --fit-vectors (weights and vectors).
# 3. STS-B test and SICK-R test are embedded with each, with MiniLM itself (torch fp32 and ONNX int8), and with
#    model2vec's own `distill` of the same MiniLM (M2V_PYTHON: a Python with model2vec[distill,quantization]; left out
#    when unset), and scored by `sembed eval sts`, STS-B also by its source sets (--group-by source: the
#    SemEval 2012-2017 sets STS-B was drawn from).
# 4. `sembed eval sts --versus`, a paired bootstrap 95% interval of the Spearman difference over the test pairs:
#    the default against model2vec's way (static-alone-sif) and against model2vec; each learnt variant (each
#    seed) against the default. The report adds the mean over seeds with a t interval.
# 5. The pairs of examples/data/static_failures.jsonl (negation, word order, and a paraphrase of each) are
#    scored by MiniLM and by the static models: where a bag of word-pieces cannot tell.
# Writes examples/results/static.md and static.json. Speed: bench/static_speed.py.
# Settings (environment): SEEDS ("42 7 2027"), TEACHER_SENTENCES (100000), WORK (runs/static-example; removed
# unless KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} HF_HUB_OFFLINE=1
DATA=${1:-${SEMBED_DATA:-../shared/data}}
SEEDS=${SEEDS:-42 7 2027}
TEACHER_SENTENCES=${TEACHER_SENTENCES:-100000}
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
  sembed eval sts -q --group-by source "$WORK/vectors/$name.stsb.jsonl" > "$WORK/metrics/$name.stsb-sources.json"
  sembed embed -q examples/data/static_failures.jsonl "$@" \
    | sembed eval sts -q --force --pairs "$WORK/failures/$name.jsonl" > /dev/null
}

distil() {  # distil NAME [train options]
  local name=$1
  shift
  [ -d "$WORK/$name" ] || stage "train $name" sembed train "$WORK/corpora.jsonl" --method static -m "$TEACHER" \
    --device cpu -o "$WORK/$name" "$@" 2> >(tee "$WORK/train-$name.log" >&2)
  stage "embed+eval $name" evaluate "$name" -m "$WORK/$name"
}

stage "embed+eval minilm" evaluate minilm
stage "embed+eval minilm-int8" evaluate minilm-int8 --backend onnx --quantize int8
distil static-alone-none --piece-vectors alone --weighting none
distil static-alone-zipf --piece-vectors alone --weighting zipf
distil static-alone-sif --piece-vectors alone --weighting sif
corpus=(--teacher-sentences "$TEACHER_SENTENCES" --teacher-cache "$WORK/teacher-pass.npz")
distil static-corpus "${corpus[@]}"
distil static-corpus-none "${corpus[@]}" --weighting none
for seed in $SEEDS; do
  distil "static-corpus-nws.s$seed" "${corpus[@]}" --fit nws --seed "$seed"
  distil "static-corpus-fit.s$seed" "${corpus[@]}" --fit teacher --seed "$seed"
  distil "static-corpus-fit-vectors.s$seed" "${corpus[@]}" --fit teacher --fit-vectors --seed "$seed"
done

if [ -n "${M2V_PYTHON:-}" ]; then
  teacher_dir=$(python -c "from sembed_cli.models import sentence_models as s; print(s.resolve_path('$TEACHER'))")
  [ -d "$WORK/model2vec" ] || stage "train model2vec" "$M2V_PYTHON" examples/static_peer.py distill "$teacher_dir" \
    "$WORK/model2vec" --dim 256
  peer() {
    for data in stsb sick; do
      "$M2V_PYTHON" examples/static_peer.py embed "$WORK/model2vec" < "$WORK/$data-test.jsonl" \
        | tee "$WORK/vectors/model2vec.$data.jsonl" | sembed eval sts -q > "$WORK/metrics/model2vec.$data.json"
    done
    sembed eval sts -q --group-by source "$WORK/vectors/model2vec.stsb.jsonl" > "$WORK/metrics/model2vec.stsb-sources.json"
  }
  stage "embed+eval model2vec" peer
fi

versus() {  # versus NAME BASELINE: a paired bootstrap over the test pairs of each data set
  local name=$1 baseline=$2 data
  mkdir -p "$WORK/versus"
  for data in stsb sick; do
    [ -s "$WORK/vectors/$name.$data.jsonl" ] && [ -s "$WORK/vectors/$baseline.$data.jsonl" ] || continue
    sembed eval sts -q "$WORK/vectors/$name.$data.jsonl" --versus "$WORK/vectors/$baseline.$data.jsonl" \
      --resamples 2000 > "$WORK/versus/$name~$baseline.$data.json"
  done
}
compare() {
  local name
  versus static-corpus static-alone-sif
  versus static-corpus model2vec
  for name in "$WORK"/static-corpus-*.s*; do
    versus "$(basename "$name")" static-corpus
  done
}
stage versus compare

python examples/static_report.py "$WORK" --teacher-sentences "$TEACHER_SENTENCES" \
  --markdown examples/results/static.md --json examples/results/static.json
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
