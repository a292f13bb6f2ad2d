#!/bin/bash
# Issue 40, item 2 on a CPU machine, where only the fit can change: `--fit-loss infonce` on today's recipe (the
# 100,000 corpus sentences of docs/static-mode.md's command, read from its kept teacher pass), three seeds, each
# scored on STS-B and SICK-R test and paired (sembed eval sts --versus, 2,000 resamples) against today's model.
# The text and vocabulary variants need the teacher over ~1.4M texts: bench/static_quality.sh, on a GPU machine.
#
#   bash bench/static_quality_cpu.sh [SEEDS...]     # default 42 7 2027, in parallel (1 thread each, ~2 GB each)
#
# Needs runs/static/corpus.jsonl, runs/static/teacher.npz (its pass; copied, never written) and
# runs/static/minilm-static (today's model) from the main checkout (MAIN, default /work/main).
# Writes runs/static_quality/ and bench/results/static_quality_cpu.json.
set -euo pipefail
cd "$(dirname "$0")/.."
main=${MAIN:-/work/main}
data=${DATA:-$main/../shared/data}
work=runs/static_quality
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(42 7 2027)
export SEMBED_THREADS=${SEMBED_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONPATH=$PWD
sembed=.venv/bin/sembed
mkdir -p "$work"
[ -f "$work/teacher.npz" ] || cp "$main/runs/static/teacher.npz" "$work/teacher.npz"
$sembed convert -q --from stsb "$data/stsb/sts-test.csv" > "$work/stsb-test.jsonl"
$sembed convert -q --from sick "$data/sick/SICK_test_annotated.txt" > "$work/sick-test.jsonl"
for data in stsb-test sick-test; do
  $sembed embed -q -m "$main/runs/static/minilm-static" "$work/$data.jsonl" > "$work/today.$data.jsonl"
done

fit() {  # fit SEED: the model (kept when made before), its vectors of the test pairs, scores, paired differences
  local seed=$1 data
  [ -f "$work/infonce-$seed/sembed.json" ] ||
    /usr/bin/time -v nice -n 10 $sembed train "$main/runs/static/corpus.jsonl" --method static --fit teacher \
      --fit-vectors --fit-loss infonce --teacher-cache "$work/teacher.npz" --seed "$seed" --force \
      -o "$work/infonce-$seed" 2> "$work/infonce-$seed.err"
  for data in stsb-test sick-test; do
    $sembed embed -q -m "$work/infonce-$seed" "$work/$data.jsonl" > "$work/infonce-$seed.$data.jsonl"
    $sembed eval sts -q "$work/infonce-$seed.$data.jsonl" > "$work/infonce-$seed.$data.json"
    $sembed eval sts -q "$work/infonce-$seed.$data.jsonl" --versus "$work/today.$data.jsonl" --resamples 2000 \
      > "$work/infonce-$seed~today.$data.json"
  done
}
for seed in "${seeds[@]}"; do fit "$seed" & done
wait

.venv/bin/python - "$work" "${seeds[@]}" <<'EOF'
import json, os, platform, re, sys, time
from pathlib import Path

from sembed_cli.evaluation.statistics import T_INTERVAL, t_interval

work, seeds = Path(sys.argv[1]), sys.argv[2:]
read = lambda name: json.loads((work / name).read_text())
result = {
    "date": time.strftime("%Y-%m-%d"),
    "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    "load_average": os.getloadavg(),
    "threads": int(os.environ["SEMBED_THREADS"]),
    "command": "bash bench/static_quality_cpu.sh " + " ".join(seeds),
    "recipe": "today's (docs/static-mode.md): --fit teacher --fit-vectors, 100,000 corpus sentences, 5 epochs of 256, "
    "Adam 1e-3; with --fit-loss infonce (temperature 0.07, in-batch negatives)",
    "versus": "today's model, runs/static/minilm-static (cosine loss, seed 42): sembed eval sts --versus, paired "
    "bootstrap over the test pairs, 2000 resamples",
    "today": {"stsb-test": 75.7381, "sick-test": 63.9865, "stsb-test_mean_of_3_seeds": 75.73},
    "runs": {},
    "mean": {},
}
for seed in seeds:
    err = (work / f"infonce-{seed}.err").read_text()
    fit = json.loads((work / f"infonce-{seed}" / "sembed.json").read_text())["fit"]
    run = {
        "wall_seconds": err.split("Elapsed (wall clock) time (h:mm:ss or m:ss): ")[1].split("\n")[0],
        "peak_rss_kb": int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)),
        "kept_epoch": fit["kept_epoch"],
        "history": fit["history"],
    }
    for data in ("stsb-test", "sick-test"):
        scores, versus = read(f"infonce-{seed}.{data}.json"), read(f"infonce-{seed}~today.{data}.json")
        run[data] = {"spearman": scores["spearman"], "pearson": scores["pearson"], "versus_today": versus}
    result["runs"][seed] = run
for data in ("stsb-test", "sick-test"):
    values = [result["runs"][s][data]["spearman"] for s in seeds]
    differences = [result["runs"][s][data]["versus_today"]["difference"]["spearman"] for s in seeds]
    interval = t_interval(differences)
    result["mean"][data] = {
        "spearman": round(sum(values) / len(values), 4),
        "range": [min(values), max(values)],
        "versus_today_spearman": round(sum(differences) / len(differences), 4),
        "versus_today_t_interval": None if interval is None else [round(x, 4) for x in interval],
        "interval": T_INTERVAL,
    }
Path("bench/results/static_quality_cpu.json").write_text(json.dumps(result, indent=1) + "\n")
print(json.dumps(result["mean"], indent=1))
EOF
