#!/usr/bin/env bash
# The full grid (benchmarks/configs/full.json) on 2 cores: one process per core, SciFact + PII in
# one, STS12 + Pri-DDXPlus in the other, then one merged report. Each part keeps its console log
# (with `time`); the merged report lands in benchmarks/results/full-grid/.
# Usage: bash benchmarks/run_full.sh [config name, default full] [extra args for both parts, e.g. --seeds 2,3]
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-full}
shift || true
out="benchmarks/results/${name}-grid"
mkdir -p "$out/part-scifact" "$out/part-sts-ddxplus"
run_part() {  # $1 = data sets, $2 = folder
    { time nice -n 10 .venv/bin/private-vectors bench --config "$name" --datasets "$1" --out "$2" --no-progress "${@:3}"; } \
        > "$2/console.log" 2>&1
}
run_part scifact "$out/part-scifact" "$@" &
a=$!
run_part sts12,ddxplus "$out/part-sts-ddxplus" "$@" &
b=$!
wait "$a" "$b"
.venv/bin/python -m private_vectors.eval.report "$out" "$out/part-scifact/results.jsonl" \
    "$out/part-sts-ddxplus/results.jsonl"
tail -n 3 "$out"/part-*/console.log
