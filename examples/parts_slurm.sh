#!/usr/bin/env bash
# Embed a corpus as a Slurm job array, one part per array task, then build one index in a job that waits for them.
#
#   bash examples/parts_slurm.sh submit corpus.txt parts corpus-index 64 --model all-MiniLM-L6-v2
#
# submits `sbatch --array=1-64 parts_slurm.sh part corpus.txt parts --model ...` (each task runs
# `sembed embed corpus.txt --shard I/64 --parts parts --model ...`), then
# `sbatch --dependency=afterany:ARRAY parts_slurm.sh index parts corpus-index`, which checks the parts
# (`sembed parts parts`: it fails, naming the missing parts, when a task failed) and builds the index from them.
#
# After a failure: `sembed parts parts` lists what is missing; submit again (the same command): finished parts are
# skipped by their manifests, so only the missing ones do work. Preempted or requeued tasks redo their part.
# Options for sbatch (partition, account, time, memory) go in SBATCH_* variables or the #SBATCH lines below.
# SEMBED names the command (default: sembed; e.g. "apptainer exec sembed.sif sembed"); SEMBED_INDEX_OPTIONS
# are added to the index job's `sembed index` (e.g. "--type ivfpq --trained quantiser-index").
#
#SBATCH --job-name=sembed-parts
#SBATCH --output=%x-%A_%a.log
#SBATCH --cpus-per-task=4
#SBATCH --time=24:00:00
#SBATCH --requeue
set -euo pipefail

SEMBED=${SEMBED:-sembed}
mode=${1:?"usage: parts_slurm.sh submit INPUT PARTS_DIR INDEX_DIR N [sembed embed options...]"}
shift

case "$mode" in
  submit)  # run by the user, on the login node
    input=$1 parts=$2 index=$3 count=$4
    shift 4
    array=$(sbatch --parsable --array="1-$count" "$0" part "$input" "$parts" "$@")
    after=$(sbatch --parsable --dependency="afterany:${array%%;*}" "$0" index "$parts" "$index")
    echo "submitted the array $array ($count parts) and the index job $after (after it)" >&2
    ;;
  part)  # one array task: its share of the input, written to the parts directory with its manifest
    input=$1 parts=$2
    shift 2
    index=$((SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-1} + 1))  # an array 0-63 is fine too
    count=${SLURM_ARRAY_TASK_COUNT:?"run under sbatch --array"}
    export SEMBED_THREADS=${SEMBED_THREADS:-${SLURM_CPUS_PER_TASK:-1}}
    $SEMBED embed "$input" --shard "$index/$count" --parts "$parts" "$@"
    ;;
  index)  # after the array: every part done and of one model, then one index in input order
    parts=$1 index=$2
    export SEMBED_THREADS=${SEMBED_THREADS:-${SLURM_CPUS_PER_TASK:-1}}
    $SEMBED parts "$parts" > "$parts.status.jsonl"
    $SEMBED index "$parts" -o "$index" --force ${SEMBED_INDEX_OPTIONS:-}  # e.g. "--type ivfpq --trained DIR"
    ;;
  *)
    echo "parts_slurm.sh: unknown mode '$mode' (submit, part or index)" >&2
    exit 2
    ;;
esac
