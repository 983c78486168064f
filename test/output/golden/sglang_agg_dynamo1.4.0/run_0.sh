#!/usr/bin/env bash
# Node 0 of 1: Qwen/Qwen3-32B with sglang 0.5.6.post2, agg tp2pp1.
# Start etcd and NATS on the head node first; set HEAD_NODE_IP on every other node.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODEL='Qwen/Qwen3-32B'
HEAD_NODE_IP="${HEAD_NODE_IP:-127.0.0.1}"
export ETCD_ENDPOINTS="${ETCD_ENDPOINTS:-http://${HEAD_NODE_IP}:2379}"
export NATS_SERVER="${NATS_SERVER:-nats://${HEAD_NODE_IP}:4222}"
HTTP_PORT="${HTTP_PORT:-8000}"
echo "node 0: model $MODEL, etcd $ETCD_ENDPOINTS, nats $NATS_SERVER, scripts in $SCRIPT_DIR" >&2

pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop_all EXIT

# Frontend (OpenAI-compatible HTTP), only on node 0
python3 -m dynamo.frontend --http-port "$HTTP_PORT" &
pids+=("$!")

# worker 0: 2x tp, 1x pp, 1x dp on GPUs 0,1
CUDA_VISIBLE_DEVICES='0,1' DYN_SYSTEM_PORT='8081' \
  python3 -m dynamo.sglang \
    --model-path "$MODEL" \
    --served-model-name "$MODEL" \
    --tp-size '2' \
    --pp-size '1' \
    --max-running-requests '32' \
    --chunked-prefill-size '8192' \
    --max-prefill-tokens '8192' \
    --context-length '5120' \
    --kv-cache-dtype 'fp8_e4m3' \
    --port '30000' &
pids+=("$!")

# worker 1: 2x tp, 1x pp, 1x dp on GPUs 2,3
CUDA_VISIBLE_DEVICES='2,3' DYN_SYSTEM_PORT='8082' \
  python3 -m dynamo.sglang \
    --model-path "$MODEL" \
    --served-model-name "$MODEL" \
    --tp-size '2' \
    --pp-size '1' \
    --max-running-requests '32' \
    --chunked-prefill-size '8192' \
    --max-prefill-tokens '8192' \
    --context-length '5120' \
    --kv-cache-dtype 'fp8_e4m3' \
    --port '30100' &
pids+=("$!")

# worker 2: 2x tp, 1x pp, 1x dp on GPUs 4,5
CUDA_VISIBLE_DEVICES='4,5' DYN_SYSTEM_PORT='8083' \
  python3 -m dynamo.sglang \
    --model-path "$MODEL" \
    --served-model-name "$MODEL" \
    --tp-size '2' \
    --pp-size '1' \
    --max-running-requests '32' \
    --chunked-prefill-size '8192' \
    --max-prefill-tokens '8192' \
    --context-length '5120' \
    --kv-cache-dtype 'fp8_e4m3' \
    --port '30200' &
pids+=("$!")

# worker 3: 2x tp, 1x pp, 1x dp on GPUs 6,7
CUDA_VISIBLE_DEVICES='6,7' DYN_SYSTEM_PORT='8084' \
  python3 -m dynamo.sglang \
    --model-path "$MODEL" \
    --served-model-name "$MODEL" \
    --tp-size '2' \
    --pp-size '1' \
    --max-running-requests '32' \
    --chunked-prefill-size '8192' \
    --max-prefill-tokens '8192' \
    --context-length '5120' \
    --kv-cache-dtype 'fp8_e4m3' \
    --port '30300' &
pids+=("$!")

# Stop everything as soon as one process exits.
wait -n || true
echo "run_0.sh: a process exited; stopping the others" >&2
exit 1
