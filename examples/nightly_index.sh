#!/usr/bin/env bash
# Mirror a folder of documents into a sembed index, night after night (a cron job):
#
#   15 2 * * *  cd /srv/search && bash nightly_index.sh docs/ docs-index --backend onnx --quantize int8
#
#   nightly_index.sh DOCS_DIR INDEX_DIR [-m MODEL] [--backend torch|onnx] [--quantize none|int8]
#
# The first night builds the index; every later night updates it in place: each sentence's id is a hash of its
# file and its text (one entry per file and sentence, so "which files say X" finds every one), so only sentences
# that are new or edited since yesterday are embedded (a line added at the top of a file re-embeds that line
# alone), and --sync removes the sentences of edited and deleted files that are gone. Quiet
# when all is well (-q: errors only; the run's warnings are in INDEX_DIR/sembed.json), so cron mails only a
# failure; a failed night leaves yesterday's index whole.
#
#   -m MODEL     the model of a new index: a sentence-transformers model, or a static one (`sembed train --method
#                static` wrote it: -m STATIC_DIR, then no --backend); default $MODEL, else all-MiniLM-L6-v2
#   --backend    how the first night embeds: torch (the default) or onnx; default $BACKEND
#   --quantize   with --backend onnx: none or int8 (recommended on CPUs: docs/cpu-embedding.md); default $QUANTIZE
#   FORMAT       (environment) how to read the folder: prose (split into sentences, the default) or lines
#
# Later nights take the model, backend and quantisation the index records (sembed index --update embeds as the
# index was built), so a night never mixes two kinds of vectors.
set -euo pipefail
usage="usage: nightly_index.sh DOCS_DIR INDEX_DIR [-m MODEL] [--backend torch|onnx] [--quantize none|int8]"
DOCS=${1:?$usage}
INDEX=${2:?$usage}
shift 2
MODEL=${MODEL:-all-MiniLM-L6-v2}
BACKEND=${BACKEND:-}
QUANTIZE=${QUANTIZE:-}
FORMAT=${FORMAT:-prose}
while [ $# -gt 0 ]; do
  case "$1" in
    -m|--model) MODEL=${2:?$usage}; shift 2 ;;
    --backend) BACKEND=${2:?$usage}; shift 2 ;;
    --quantize) QUANTIZE=${2:?$usage}; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
if [ -d "$INDEX" ]; then
  sembed convert -q --from "$FORMAT" --doc-break file "$DOCS" | sembed index -q --update "$INDEX" --sync
else
  embedding=(-m "$MODEL")
  [ -z "$BACKEND" ] || embedding+=(--backend "$BACKEND")
  [ -z "$QUANTIZE" ] || embedding+=(--quantize "$QUANTIZE")
  sembed convert -q --from "$FORMAT" --doc-break file "$DOCS" | sembed index -q "${embedding[@]}" -o "$INDEX"
fi
