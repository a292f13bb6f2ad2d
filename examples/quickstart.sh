#!/usr/bin/env bash
# The main job on the embedded defaults: every subcommand built so far, chained
# over the small inputs in examples/data, using the packaged models only.
#
#   bash examples/quickstart.sh            (after bash .ci/install)
#
# 1. STS-style pairs: convert -> normalize (base forms) -> parse -> spo (S_cf)
# 2. prose: convert (sentence splitting) -> normalize -> spo
# Each pipeline's JSONL goes to runs/quickstart/; a readable summary to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
out=runs/quickstart
mkdir -p "$out"

sembed convert --from stsb examples/data/pairs.tsv \
  | sembed normalize -q \
  | sembed parse -q \
  | sembed spo -q > "$out/pairs.jsonl"

sembed convert --from prose examples/data/story.txt \
  | sembed normalize -q \
  | sembed spo -q > "$out/story.jsonl"

python - "$out/pairs.jsonl" "$out/story.jsonl" <<'PY'
import json, sys
pairs, story = ([json.loads(line) for line in open(path)] for path in sys.argv[1:])
print(f"STS-style pairs ({len(pairs)} records, fields: {', '.join(pairs[0])})\n")
for r in pairs:
    for side in ("a", "b"):
        print(f"  {r['text_raw_' + side]}\n    base form: {r['text_' + side]}\n    S_cf:      {r['s_cf_' + side]}")
    print(f"    gold score {r['score']}\n")
print(f"Prose ({len(story)} sentences, fields: {', '.join(story[0])})\n")
for r in story:
    print(f"  [{r['doc_id']} #{r['sent_id']}] {r['text_raw']}\n    S_cf: {r['s_cf']}")
PY
