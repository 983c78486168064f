"""Single-GPU measurements (torch imported inside each function). Each returns table rows."""

from __future__ import annotations

import sys
import time
from typing import Callable, Dict, Iterable, List, Optional

from .grid import RMSNORM_HIDDEN
from .timing import time_cuda

Row = Dict[str, object]
Timer = Callable[[Callable[[], object]], float]


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fp8_supported(capability) -> bool:
    """torch._scaled_mm needs fp8 tensor cores: Ada (8.9), Hopper (9.0) and later."""
    return tuple(capability) >= (8, 9)


def _run_points(name: str, points: List[Row], measure: Callable[[Row], Optional[float]],
                deadline: Optional[float], device: str = "cuda") -> List[Row]:
    """Measure each point, skipping the ones that fail (unsupported shape, out of memory) with a note."""
    import torch

    rows: List[Row] = []
    skipped = 0
    t0 = time.monotonic()
    for i, pt in enumerate(points):
        if deadline is not None and time.monotonic() > deadline:
            _log(f"{name}: time budget reached after {i}/{len(points)} points")
            break
        try:
            ms = measure(pt)
        except (RuntimeError, ValueError) as err:  # torch raises RuntimeError for OOM and unsupported kernels
            skipped += 1
            if skipped <= 3:
                _log(f"{name}: skipped {pt}: {str(err).splitlines()[0][:160]}")
            if device == "cuda":
                torch.cuda.empty_cache()
            continue
        if ms is not None:
            row = {k: v for k, v in pt.items() if k != "elements"}
            row["latency_ms"] = ms
            rows.append(row)
    _log(f"{name}: {len(rows)} rows, {skipped} skipped, {time.monotonic() - t0:.1f} s")
    return rows


def gemm(points: List[Row], deadline: Optional[float] = None, device: str = "cuda",
         timer: Timer = time_cuda) -> List[Row]:
    import torch

    dev = torch.device(device)
    cache: Dict[tuple, object] = {}

    def weights(dtype: str, n: int, k: int):
        # One weight per (dtype, n, k), reused across m; keep only the current one to bound memory.
        key = (dtype, n, k)
        if key not in cache:
            cache.clear()
            w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
            cache[key] = w.to(torch.float8_e4m3fn) if dtype == "fp8" else w
        return cache[key]

    def run(pt: Row) -> float:
        m, n, k, dtype = int(pt["m"]), int(pt["n"]), int(pt["k"]), str(pt["dtype"])
        w = weights(dtype, n, k)
        if dtype == "bfloat16":
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            return timer(lambda: torch.mm(a, w.t(), out=out))
        if dtype == "fp8":
            one = torch.ones((), device=dev, dtype=torch.float32)

            def timed(rows: int) -> float:
                a = torch.randn(rows, k, device=dev, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
                return timer(lambda: torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))

            try:
                return timed(m)
            except RuntimeError:
                if m % 16 == 0:
                    raise
                # Some torch/cuBLASLt versions want rows in multiples of 16: pad, as engines do.
                return timed((m + 15) // 16 * 16)
        raise ValueError(f"gemm dtype {dtype} is not measured by this collector")

    return _run_points("gemm", points, run, deadline, device)


def _sdpa(q, k, v, causal: bool):
    """Flash / memory-efficient SDPA with native GQA where torch has it, else KV heads repeated up front."""
    import torch
    import torch.nn.functional as F

    backends = None
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]
    except ImportError:
        sdpa_kernel = None  # type: ignore[assignment]

    group = q.shape[1] // k.shape[1]

    def gqa_native():
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)

    def repeated():
        # Only built when needed: the repeated KV takes `group` times the memory.
        kr = k.repeat_interleave(group, dim=1) if group > 1 else k
        vr = v.repeat_interleave(group, dim=1) if group > 1 else v
        return lambda: F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)

    factories = [gqa_native, repeated] if group > 1 else [repeated]

    def wrap(fn):
        if sdpa_kernel is None:
            return fn

        def run():
            with sdpa_kernel(backends):
                return fn()

        return run

    last: Optional[Exception] = None
    for make in factories:
        try:
            runner = wrap(make())
            runner()
            if q.is_cuda:
                torch.cuda.synchronize()
            return runner
        except (RuntimeError, TypeError) as err:  # TypeError: enable_gqa unknown before torch 2.5
            last = err
    raise RuntimeError(f"no SDPA kernel ran: {last}")


def context_attention(points: List[Row], deadline: Optional[float] = None, device: str = "cuda",
                      timer: Timer = time_cuda) -> List[Row]:
    import torch

    def run(pt: Row) -> float:
        b, s, h, kv, d = (int(pt[c]) for c in ("batch", "seq", "heads", "kv_heads", "head_dim"))
        q = torch.randn(b, h, s, d, device=device, dtype=torch.bfloat16)
        k = torch.randn(b, kv, s, d, device=device, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        return timer(_sdpa(q, k, v, causal=True))

    return _run_points("context_attention", points, run, deadline, device)


def generation_attention(points: List[Row], deadline: Optional[float] = None, device: str = "cuda",
                         timer: Timer = time_cuda) -> List[Row]:
    import torch

    def run(pt: Row) -> float:
        b, L, h, kv, d = (int(pt[c]) for c in ("batch", "kv_len", "heads", "kv_heads", "head_dim"))
        q = torch.randn(b, h, 1, d, device=device, dtype=torch.bfloat16)
        k = torch.randn(b, kv, L, d, device=device, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        return timer(_sdpa(q, k, v, causal=False))

    return _run_points("generation_attention", points, run, deadline, device)


def elementwise(points: List[Row], deadline: Optional[float] = None, device: str = "cuda",
                timer: Timer = time_cuda) -> List[Row]:
    import torch

    def run(pt: Row) -> float:
        op, n = str(pt["op"]), int(pt["elements"])
        x = torch.randn(n, device=device, dtype=torch.bfloat16)
        if op == "memory":
            y = torch.empty_like(x)
            return timer(lambda: y.copy_(x))
        if op == "add":
            z, y = torch.randn_like(x), torch.empty_like(x)
            return timer(lambda: torch.add(x, z, out=y))
        if op == "rmsnorm":
            x2 = x.view(-1, RMSNORM_HIDDEN)
            w = torch.ones(RMSNORM_HIDDEN, device=device, dtype=torch.bfloat16)
            fn = getattr(torch.nn.functional, "rms_norm", None)
            if fn is not None:
                return timer(lambda: fn(x2, (RMSNORM_HIDDEN,), w, 1e-6))
            return timer(lambda: x2 * torch.rsqrt(x2.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x2.dtype) * w)
        raise ValueError(f"unknown elementwise op {op}")

    return _run_points("elementwise", points, run, deadline, device)


def available_ops() -> Iterable[str]:
    return ("gemm", "attention", "elementwise", "comm")
