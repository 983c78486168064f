#!/usr/bin/env bash
# Node 0 of 1: Qwen/Qwen3-32B with vllm 0.24.0, agg tp4pp2.
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

# worker 0: 4x tp, 2x pp, 1x dp on GPUs 0,1,2,3,4,5,6,7
CUDA_VISIBLE_DEVICES='0,1,2,3,4,5,6,7' DYN_SYSTEM_PORT='8081' VLLM_NIXL_SIDE_CHANNEL_PORT='20100' \
  python3 -m dynamo.vllm \
    --model "$MODEL" \
    --served-model-name "$MODEL" \
    --tensor-parallel-size '4' \
    --pipeline-parallel-size '2' \
    --data-parallel-size '1' \
    --max-num-seqs '48' \
    --max-num-batched-tokens '8192' \
    --max-model-len '5120' \
    --kv-cache-dtype 'auto' &
pids+=("$!")

# Stop everything as soon as one process exits.
wait -n || true
echo "run_0.sh: a process exited; stopping the others" >&2
exit 1
