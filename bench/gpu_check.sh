#!/usr/bin/env bash
# The GPU check (issue 39, item 7): on a machine with CUDA, in under 8 minutes, embed (fp16 and bf16 on the GPU
# against fp32 on the CPU: sentences/s and how far the vectors are from the CPU's), a short CF-BERT and TA-SBERT
# training run on the GPU, `sembed parts run --engine ray --worker-gpus 1` and FAISS on the GPU where they are
# installed; figures and each step's ok/failed/skipped with the reason in bench/results/gpu_check.json.
# bench/gpu_check.py says what each step does. Run it whenever a GPU is lent.
#
#   python bench/gpu_check.py prepare .gpu      # first, on a CPU machine with ../shared/data and spaCy
#   bash bench/gpu_check.sh                     # then on the GPU machine, with .gpu/.whl's wheels installed
#
# On the lent GPU machine (no registry there), the tree travels with .gpu/ (ignored by git) holding the inputs and
# the wheels it lacks, 58 MB in all: the pruned model wheel prepare writes, and orjson, datasets, dill,
# multiprocess, typer 0.29.2 (its typer 0.27.2 is under sembed's floor: `train` fails on it), pydantic,
# pydantic-core, annotated-types, typing-inspection, typing-extensions and click, fetched with the device README's
# `pip download --no-deps` for cp312 into .gpu/.whl; there:
#   pip install --no-index --no-deps --target /tmp/site .gpu/.whl/*.whl && PYTHONPATH=/tmp/site:$PWD bash bench/gpu_check.sh
# The inputs are read from GPU_CHECK_INPUTS (default .gpu/inputs). On a machine without a CUDA GPU it says so on
# stderr and exits 0, touching nothing; GPU_CHECK_DRY=1 runs every step there on the CPU, small, to test them.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] && python=${PYTHON:-.venv/bin/python}
if [ "${GPU_CHECK_DRY:-}" != 1 ] && ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; }; then
  echo "gpu_check: no CUDA GPU on this machine (nvidia-smi lists none): nothing checked" >&2
  exit 0
fi
# Each step has its own time limits; this one stops the whole check inside the 8 minutes it is sized for.
PYTHONUNBUFFERED=1 timeout 470 "$python" bench/gpu_check.py run "$@"
status=$?
[ $status = 124 ] && echo "gpu_check: stopped after 470 s; bench/results/gpu_check.json holds the steps done" >&2
exit $status
