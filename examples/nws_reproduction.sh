#!/usr/bin/env bash
# Neural Word Saliency (Samardzhiev et al. 2018) reproduced on the shared corpora, on the CPU.
#
#   bash examples/nws_reproduction.sh [DATA]     (DATA: SEMBED_DATA, else ../shared/data)
#
# 1. The sentence-ordered corpora (about 4.4M tokens, 205k sentences) become doc_id, sent_id, text
#    records, each corpus as `sembed convert --help` recommends.
# 2. NWS is trained twice, on the packaged GloVe 6B 50-d and on spaCy's en_core_web_md 300-d vectors
#    (AdaGrad lr 0.01, K = 2, ISF initialisation, EPOCHS epochs, the scores after every epoch kept).
# 3. STS-B test and SICK-R test are embedded with AVG, ISF, SIF and NWS (the baselines use the same
#    corpus's counts, stored in the salience table) and scored by `sembed eval sts`; NWS also after
#    every epoch (the paper's Fig. 2).
# Prints our table next to the paper's Table 1 (its overall average over 18 SemEval sets: it has no
# STS-B / SICK column) and writes examples/results/nws.md, nws.json and nws_epochs.png.
# Settings (environment): EPOCHS (6), SEED (42), WORK (runs/nws-example; removed at the end unless KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
DATA=${1:-${SEMBED_DATA:-../shared/data}}
EPOCHS=${EPOCHS:-6}
SEED=${SEED:-42}
WORK=${WORK:-runs/nws-example}
C=$DATA/corpora

mkdir -p "$WORK/metrics"
: > "$WORK/times.tsv"
start=$(date +%s)
source examples/stages.sh  # stage NAME COMMAND...: run it, note its seconds

prepare() {
  corpus_records "$C" > "$WORK/corpora.jsonl"
  sembed convert -q --from stsb "$DATA/stsb/sts-test.csv" > "$WORK/stsb-test.jsonl"
  sembed convert -q --from sick "$DATA/sick/SICK_test_annotated.txt" > "$WORK/sick-test.jsonl"
}
stage prepare prepare

evaluate() {  # evaluate NAME DATA [embed options]
  local name=$1 data=$2
  shift 2
  sembed embed -q "$WORK/$data-test.jsonl" "$@" | sembed eval sts -q > "$WORK/metrics/$name.$data.json"
}
for vectors in glove-6b-50d spacy:en_core_web_md; do
  tag=${vectors#spacy:}
  table="$WORK/nws-$tag"
  stage "train $tag" sembed train "$WORK/corpora.jsonl" --method nws --vectors "$vectors" --epochs "$EPOCHS" \
    --seed "$SEED" --device cpu --save-epochs -o "$table" --resume --force 2> >(tee "$WORK/train-$tag.log" >&2)
  for data in stsb sick; do
    stage "embed+eval $tag $data" bash -c "$(declare -f evaluate); WORK=$WORK
      evaluate $tag.avg $data --method avg --vectors $vectors
      for method in isf sif nws; do evaluate $tag.\$method $data --method \$method --salience $table; done
      for e in \$(ls $table/epochs); do evaluate $tag.epoch\$e $data --method nws --salience $table/epochs/\$e; done"
  done
done

echo -e "total\t$(($(date +%s) - start))" >> "$WORK/times.tsv"
python examples/nws_report.py "$WORK" --epochs "$EPOCHS" --seed "$SEED" \
  --markdown examples/results/nws.md --json examples/results/nws.json --plot examples/results/nws_epochs.png
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
