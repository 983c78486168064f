#!/usr/bin/env bash
# AIPerf sweep around the predicted operating point (concurrency 32).
# Results land in bench/c<concurrency>/ next to this script, where `configure validate --plan` looks.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODEL='Qwen/Qwen3-32B'
URL="${URL:-http://localhost:8000}"
REQUESTS_PER_CONCURRENCY="${REQUESTS_PER_CONCURRENCY:-10}"
CONCURRENCIES=('8' '16' '24' '32' '40' '48')

for c in "${CONCURRENCIES[@]}"; do
  out="$SCRIPT_DIR/bench/c$c"
  mkdir -p "$out"
  echo "aiperf: concurrency $c -> $out" >&2
  aiperf profile \
    --model "$MODEL" \
    --tokenizer "$MODEL" \
    --url "$URL" \
    --endpoint-type chat \
    --streaming \
    --synthetic-input-tokens-mean '4000' \
    --synthetic-input-tokens-stddev 0 \
    --output-tokens-mean '500' \
    --output-tokens-stddev 0 \
    --extra-inputs 'min_tokens:500' \
    --extra-inputs 'ignore_eos:true' \
    --concurrency "$c" \
    --request-count "$((c * REQUESTS_PER_CONCURRENCY))" \
    --warmup-request-count "$c" \
    --random-seed 100 \
    --ui none \
    --artifact-dir "$out"
done
