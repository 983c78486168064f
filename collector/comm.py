"""NCCL all-reduce / all-gather with torch.distributed, one process per GPU, for each group size."""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
from typing import Dict, List

Row = Dict[str, object]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wall_timer(fn) -> float:
    """CPU stand-in for CUDA events (gloo smoke runs only)."""
    import time

    from .timing import REPS, median_ms

    fn()
    samples = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000.0)
    return median_ms(samples)


def _worker(rank: int, world: int, port: int, points: List[Row], out_path: str, backend: str) -> None:
    import torch
    import torch.distributed as dist

    from .timing import time_cuda

    cuda = backend == "nccl"
    device = "cuda" if cuda else "cpu"
    # Collectives launch eagerly: NCCL inside CUDA graphs needs engine-specific setup.
    timer = (lambda fn: time_cuda(fn, graphs=False)) if cuda else _wall_timer
    if cuda:
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    rows: List[Row] = []
    try:
        for pt in points:
            n = int(pt["elements"])
            if pt["collective"] == "all_reduce":
                buf = torch.randn(n, device=device, dtype=torch.bfloat16)
                fn = lambda: dist.all_reduce(buf)  # noqa: E731
            else:
                out = torch.empty(n, device=device, dtype=torch.bfloat16)
                inp = torch.randn(n // world, device=device, dtype=torch.bfloat16)
                fn = lambda: dist.all_gather_into_tensor(out, inp)  # noqa: E731
            dist.barrier()
            ms = torch.tensor([timer(fn)], device=device, dtype=torch.float64)
            # The collective is as slow as its slowest rank.
            dist.all_reduce(ms, op=dist.ReduceOp.MAX)
            rows.append({**pt, "latency_ms": float(ms.item())})
    finally:
        dist.destroy_process_group()
    if rank == 0:
        with open(out_path, "w", encoding="utf-8") as f:
            json.dump(rows, f)


def measure_group(gpus: int, points: List[Row], backend: str = "nccl") -> List[Row]:
    """Spawn `gpus` processes (one per GPU), time every point, return rank 0's rows. backend "gloo" runs on CPU."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "rows.json")
        mp.spawn(_worker, args=(gpus, _free_port(), points, out_path, backend), nprocs=gpus, join=True)
        with open(out_path, encoding="utf-8") as f:
            rows = json.load(f)
    print(f"comm: {len(rows)} rows on {gpus} GPUs", file=sys.stderr, flush=True)
    return rows


def to_tables(rows: List[Row]) -> Dict[str, List[Row]]:
    """nccl.csv gets every collective; allreduce.csv gets the all-reduces as kind=nccl (no custom kernel here)."""
    nccl = [dict(r) for r in rows]
    allreduce = [{"kind": "nccl", "dtype": r["dtype"], "gpus": r["gpus"], "elements": r["elements"],
                  "latency_ms": r["latency_ms"]} for r in rows if r["collective"] == "all_reduce"]
    return {"nccl": nccl, "allreduce": allreduce}
