#!/usr/bin/env bash
# Run the benchmark harness with a config from benchmarks/configs/ and keep its console log.
# Usage: bash benchmarks/run_bench.sh [quick|full|<config.json>]
# The results (results.jsonl, run.json, table.md, equal_utility.md, pareto_*.png) land in
# benchmarks/results/<name>/; `time` at the end of console.log is the run's wall/CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-quick}
out="benchmarks/results/$(basename "$name" .json)"
mkdir -p "$out"
{ time .venv/bin/private-vectors bench --config "$name" --out "$out"; } 2>&1 | tee "$out/console.log"
