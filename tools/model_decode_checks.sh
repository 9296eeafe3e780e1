#!/usr/bin/env bash
# Issue 15's measured decode on a quiet machine: a Llama-3-8B slice decoded here by transformers and
# by the lean torch path, each held against the bound of the same slice on this machine's ceilings.
# Usage: tools/model_decode_checks.sh [OUT_DIR] [EXTRA roofline decode FLAGS...]
#   SMALL=1 runs a tiny custom model instead (a check that the script works, in about a minute).
# The command is the first run (bf16); the second is the same network in fp32, where a CPU
# without bf16 instructions is fast. Each writes its table into OUT_DIR (pass --json for JSON instead).
set -euo pipefail
out=${1:-quiet-15}
shift || true
py=${PYTHON:-.venv/bin/python}
mkdir -p "$out"
if [ "${SMALL:-0}" = 1 ]; then
    model=(--model custom --layers 2 --hidden 256 --heads 4 --kv-heads 2 --intermediate 512 --vocab 1024)
    run=(--batch 1,8 --context 16 --steps 3)
else
    model=(--model llama-3-8b --layers 2)
    run=(--batch 1,8,64)
fi
for dtype in bf16 fp32; do
    start=$(date +%s)
    "$py" -m roofline decode "${model[@]}" --hardware local --measure "${run[@]}" --dtype "$dtype" "$@" \
        | tee "$out/decode-$dtype.txt"
    echo "model_decode_checks: $dtype took $(($(date +%s) - start)) s" | tee -a "$out/times.txt"
done
