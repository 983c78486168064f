"""Kernel timing with CUDA events: warm-up, then several repetitions of a batch of launches; the median
per-launch time is reported. The batch is captured in a CUDA graph when possible, so that small kernels are
timed on the GPU rather than by Python's launch overhead (engines run decode steps as CUDA graphs too); when
capture fails the batch is launched eagerly. The pure helpers are CPU-tested; `time_cuda` imports torch."""

from __future__ import annotations

import math
import statistics
from typing import Callable, Dict, Sequence

WARMUP = 3
REPS = 7
MIN_REP_MS = 1.0  # launches are batched until one repetition takes about this long
MAX_ITERS = 200

# Whether to try CUDA graphs (the CLI's --no-graphs turns this off) and how often each mode was used.
USE_GRAPHS = True
MODE_COUNTS: Dict[str, int] = {"graph": 0, "eager": 0}


def choose_iters(estimate_ms: float, min_rep_ms: float = MIN_REP_MS, max_iters: int = MAX_ITERS) -> int:
    """Launches per repetition: enough that event resolution and launch gaps stop mattering."""
    if not math.isfinite(estimate_ms) or estimate_ms <= 0:
        return max_iters
    return max(1, min(max_iters, math.ceil(min_rep_ms / estimate_ms)))


def median_ms(samples: Sequence[float]) -> float:
    if not samples:
        raise ValueError("no timing samples")
    return float(statistics.median(samples))


def timing_mode_summary() -> str:
    """For meta.yaml: how the batches were launched."""
    g, e = MODE_COUNTS["graph"], MODE_COUNTS["eager"]
    if g and not e:
        return "cuda graph"
    if e and not g:
        return "eager"
    return f"cuda graph ({g} points), eager ({e} points)"


def _capture(fn: Callable[[], object], iters: int):
    """A CUDA graph of `iters` calls of `fn`, or None when the op cannot be captured."""
    import torch

    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()  # warm-up on a side stream, as capture requires
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(iters):
                fn()
        torch.cuda.synchronize()
        return graph
    except Exception:  # noqa: BLE001 - any capture failure means: launch eagerly
        torch.cuda.synchronize()
        return None


def time_cuda(fn: Callable[[], object], warmup: int = WARMUP, reps: int = REPS, graphs: bool = True) -> float:
    """Median milliseconds per call of `fn` on the current CUDA stream."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    iters = choose_iters(start.elapsed_time(end))
    graph = _capture(fn, iters) if graphs and USE_GRAPHS else None
    MODE_COUNTS["graph" if graph is not None else "eager"] += 1
    run = graph.replay if graph is not None else (lambda: [fn() for _ in range(iters)])
    run()  # one untimed batch: the graph's first replay uploads it
    samples = []
    for _ in range(reps):
        start.record()
        run()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / iters)
    return median_ms(samples)
