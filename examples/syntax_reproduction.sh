#!/usr/bin/env bash
# Unsupervised distillation of syntax (the syntax-distillation paper) reproduced on the CPU with MiniLM.
#
#   bash examples/syntax_reproduction.sh [DATA]     (DATA: SEMBED_DATA, else ../shared/data)
#
# 1. SETS sentences of 6 to 25 words drawn (by SEED) from the edited prose corpora (abc, state_union,
#    inaugural, brown) become structurally equivalent sets: `sembed gensets` (k = 6, top-30, left to
#    right, in place, tag kept) with the masked-LM at SEMBED_MLM (built by examples/build_mlm.sh from
#    all-MiniLM-L6-v2 when missing).
# 2. `sembed train --method syntax` learns the 75-d map f on the packaged MiniLM's word vectors (mean of
#    all layers + layer 4), and again on a randomly initialised MiniLM: the paper's control.
# 3. EVAL sentences of the Penn Treebank sample (which neither the masked-LM nor the sets have seen) are
#    parsed by spaCy and embedded word by word (`sembed embed --words`): raw vectors, f(raw), and the
#    control map on the random encoder's vectors; `sembed eval structure` scores each (nearest neighbour:
#    dependency edge, head's edge, depth correlation, lexical match; difficult POS; k-means purity).
# Prints our table next to the paper's BERT table (appendix C, Table 4) and writes
# examples/results/syntax.md, syntax.json and syntax_words.png (the paper's Fig. 3: word vectors coloured
# by dependency label, before and after f).
# Settings (environment): SETS (2000), EVAL (1000), QUERIES (3000), SEED (42), DEVICE (auto),
# WORK (runs/syntax-example; removed at the end unless KEEP=1). Steps whose output is in WORK are reused.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
DATA=${1:-${SEMBED_DATA:-../shared/data}}
SETS=${SETS:-2000}
EVAL=${EVAL:-1000}
QUERIES=${QUERIES:-3000}
SEED=${SEED:-42}
DEVICE=${DEVICE:-auto}
WORK=${WORK:-runs/syntax-example}
MLM=${SEMBED_MLM:-${XDG_DATA_HOME:-$HOME/.local/share}/sembed/minilm-mlm}
C=$DATA/corpora

mkdir -p "$WORK/metrics"
touch "$WORK/times.tsv"
start=$(date +%s)
source examples/stages.sh  # stage NAME COMMAND...: run it, note its seconds
missing() { [ ! -s "$1" ] && [ ! -d "$1" ]; }

[ -d "$MLM" ] || stage "build masked-LM" bash examples/build_mlm.sh "$MLM"

prepare() {
  corpus_records "$C" abc state_union inaugural brown \
    | python examples/syntax_report.py sample --n "$SETS" --seed "$SEED" > "$WORK/sources.jsonl"
  sembed convert -q --from conll "$DATA/treebank/dependency_treebank" \
    | python examples/syntax_report.py sample --n "$EVAL" --seed "$SEED" --max-words 40 \
    | sembed parse -q > "$WORK/eval.jsonl"
}
missing "$WORK/eval.jsonl" && stage prepare prepare
missing "$WORK/sets.jsonl" && stage gensets sembed gensets -q "$WORK/sources.jsonl" --mlm "$MLM" --seed "$SEED" \
  --device "$DEVICE" -o "$WORK/sets.jsonl"
missing "$WORK/map" && stage "train syntax" sembed train "$WORK/sets.jsonl" --method syntax --seed "$SEED" \
  --device "$DEVICE" -o "$WORK/map" --resume --force
missing "$WORK/control" && stage "train syntax, random encoder" sembed train "$WORK/sets.jsonl" --method syntax \
  --random-init --seed "$SEED" --device "$DEVICE" -o "$WORK/control" --resume --force

score() {  # score NAME [embed options]: word vectors of the held-out sentences, then eval structure
  local name=$1
  shift
  sembed embed -q --words "$WORK/eval.jsonl" --device "$DEVICE" "$@" -o "$WORK/words.$name.jsonl"
  sembed eval structure -q "$WORK/words.$name.jsonl" --queries "$QUERIES" --seed "$SEED" \
    > "$WORK/metrics/$name.json"
}
stage "embed+eval raw" score raw
stage "embed+eval transformed" score transformed --syntax-map "$WORK/map"
stage "embed+eval control" score control --syntax-map "$WORK/control"

echo -e "total\t$(($(date +%s) - start))" >> "$WORK/times.tsv"
python examples/syntax_report.py report "$WORK" --sets "$SETS" --eval "$EVAL" --queries "$QUERIES" --seed "$SEED" \
  --markdown examples/results/syntax.md --json examples/results/syntax.json --png examples/results/syntax_words.png
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
