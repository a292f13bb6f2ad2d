#!/usr/bin/env bash
# The main job on the embedded defaults: every subcommand built so far, chained
# over the small inputs in examples/data, using the packaged models only.
#
#   bash examples/quickstart.sh            (after bash .ci/install)
#
# 1. STS-style pairs: convert -> normalize (base forms) -> parse -> spo (S_cf)
# 2. prose: convert (sentence splitting) -> normalize -> spo
# 3. sentence vectors: embed (all-MiniLM-L6-v2, CF-BERT's W_cf = 0.2) -> eval sts
# 4. TA-SBERT: train --method ta (a few steps) -> embed --plain (Token Attention per word)
# 5. word saliency: train --method nws on the prose (packaged GloVe) -> embed --method nws -> eval sts
# 6. POI: convert --from gazetteer (a sample) -> train --method mlm --from-scratch -> train --method poi
#    (a few steps each; name variants, character n-grams) -> taste --neighbours (k-NN vote + n-gram regression) -> eval poi;
#    index the POI names -> search --spelling a misspelt one and one with a word the name lacks
# 7. syntax: train --method mlm (MiniLM made a masked-LM, a few steps) -> gensets on the prose
#    -> train --method syntax -> embed --words --syntax-map -> eval structure
# Each pipeline's JSONL goes to runs/quickstart/; a readable summary to stdout. The models here are
# trained for seconds on toy data, to show the commands: see examples/*_reproduction.sh for the papers.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(pwd)/.venv/bin:$PATH"
out=runs/quickstart
rm -rf "$out" && mkdir -p "$out"  # the quickstart's own folder: a second run starts afresh

sembed convert --from stsb examples/data/pairs.tsv \
  | sembed normalize -q \
  | sembed parse -q \
  | sembed spo -q > "$out/pairs.jsonl"

sembed convert --from prose examples/data/story.txt \
  | sembed normalize -q \
  | sembed spo -q > "$out/story.jsonl"

sembed embed -q "$out/pairs.jsonl" --cf-weight 0.2 --keep-parts -o "$out/pairs.embedded.jsonl"
sembed eval sts -q "$out/pairs.embedded.jsonl" --cf-grid 0,0.2 > "$out/sts.json"

sembed train -q "$out/pairs.jsonl" --method ta --objective sts --max-steps 2 --batch-size 2 -o "$out/ta" --force
echo '{"text": "A man attacks a woman."}' | sembed embed -q -m "$out/ta" --plain > /dev/null 2> "$out/attention.txt"

sembed convert --from prose --doc-break blank examples/data/story.txt \
  | sembed train -q --method nws --epochs 2 -o "$out/nws" --force
sembed embed -q "$out/pairs.jsonl" --method nws --salience "$out/nws" | sembed eval sts -q > "$out/nws-sts.json"

sembed convert --from gazetteer | awk 'NR % 100 == 0 || /"text":"Springfield"/' > "$out/gazetteer.jsonl"
sembed train -q "$out/gazetteer.jsonl" --method mlm --from-scratch --layers 2 --hidden 64 --batch-size 128 \
  --max-steps 30 -o "$out/poi-stage1" --force
sembed train -q "$out/gazetteer.jsonl" --method poi --model "$out/poi-stage1" --variants 1 --ngram-weight 0.7 \
  --max-steps 30 -o "$out/poi-model" --force
grep '"split":"train"' "$out/gazetteer.jsonl" | sembed index -q -m "$out/poi-model" -o "$out/poi-labelled" --force
grep '"split":"dev"' "$out/gazetteer.jsonl" | sembed taste -q -m "$out/poi-model" --neighbours "$out/poi-labelled" \
  | sembed eval poi -q --score-key poi_score > "$out/poi.json"
printf '{"text": "Springfield"}\n{"text": "butterfly"}\n' \
  | sembed taste -q -m "$out/poi-model" --neighbours "$out/poi-labelled" > "$out/tasted.jsonl"
grep '"is_poi":true' "$out/gazetteer.jsonl" | sembed index -q -m "$out/poi-model" -o "$out/poi-index" --force
printf '{"text": "Springfeild"}\n{"text": "Springfield City"}\n' \
  | sembed search -q --index "$out/poi-index" --spelling --k 3 > "$out/search.jsonl"
sembed search -q --index "$out/poi-index" --keyword --query Springfield --k 3 > "$out/keyword.jsonl"
sembed dedup -q --index "$out/poi-index" --keep duplicates > "$out/duplicates.jsonl"
sembed cluster -q --index "$out/poi-index" -k 4 --summary "$out/clusters.json" > "$out/clustered.jsonl"

sembed train -q "$out/story.jsonl" --method mlm --max-steps 3 --batch-size 4 -o "$out/mlm" --force
sembed gensets -q "$out/story.jsonl" --mlm "$out/mlm" --k 3 > "$out/sets.jsonl"
sembed train -q "$out/sets.jsonl" --method syntax --epochs 2 -o "$out/syntax" --force
sembed embed -q --words "$out/story.jsonl" --syntax-map "$out/syntax" \
  | sembed eval structure -q --queries 50 --clusters 10 > "$out/structure.json"

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
python - "$out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
sts, nws, poi, structure = (json.loads((out / name).read_text())
                             for name in ("sts.json", "nws-sts.json", "poi.json", "structure.json"))
grid = {round(g["cf_weight"], 1): g["pearson"] for g in sts["cf_grid"]}
print(f"\nall-MiniLM-L6-v2 on the 3 pairs: Pearson {grid[0.0]:.1f} (W_cf = 0), {grid[0.2]:.1f} (W_cf = 0.2)")
print(f"NWS (GloVe, scores learnt on the 6 prose sentences): Pearson {nws['pearson']:.1f}")
print(f"Token Attention of the toy TA-SBERT model: {(out / 'attention.txt').read_text().strip()}")
print(f"POI k-NN vote + n-gram regression of the toy POI model on {poi['n']} dev names: F0.5 {poi['f0_5']:.2f}")
tasted = [json.loads(line) for line in open(out / "tasted.jsonl")]
print("taste --neighbours: " + ", ".join(f"{r['text']} {'a POI' if r['is_poi'] else 'not a POI'} (score "
                                         f"{r['poi_score']:.2f}, vote {r['poi_vote']:.2f})" for r in tasted))
for hit in map(json.loads, open(out / "search.jsonl")):
    print(f"search --spelling '{hit['text']}': {', '.join(n['text'] for n in hit['neighbors'])}")
[first] = [json.loads(line) for line in open(out / "sets.jsonl")][:1]
print("gensets (toy masked-LM): " + " / ".join(first["sentences"][:3]))
print(f"syntax map on the prose's words: dependency-edge neighbours {structure['all']['dep_edge']:.2f}, "
      f"lexical match {structure['all']['lexical_match']:.2f}")
PY
