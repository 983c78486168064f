"""The measurement grid: which shapes each table gets. Pure Python, no torch, so it is unit-tested on CPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .shapes import ModelShape, select_models

TPS: Tuple[int, ...] = (1, 2, 4, 8)


@dataclass(frozen=True)
class GridSpec:
    """Axis values for one collection run (`full()` or `quick()`)."""

    models: Optional[Tuple[str, ...]]  # model ids whose shapes are measured; None = every model
    gemm_m: Tuple[int, ...]
    gemm_tps: Tuple[int, ...]
    gemm_logits: bool  # include the vocab projection shapes
    attn_tps: Tuple[int, ...]
    ctx_seq: Tuple[int, ...]
    ctx_batch: Tuple[int, ...]
    ctx_max_tokens: int  # batch * seq cap (memory and time)
    gen_kv: Tuple[int, ...]
    gen_batch: Tuple[int, ...]
    gen_max_tokens: int  # batch * kv_len cap
    elem_bytes: Tuple[int, ...]
    comm_elements: Tuple[int, ...]
    comm_gpus: Tuple[int, ...] = (2, 4, 8)


# The quick grid's models: the most deployed dense shapes (8B, 32B, 70B class).
QUICK_MODELS: Tuple[str, ...] = ("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-70B")


def _pow2(lo: int, hi: int, step: int = 1) -> Tuple[int, ...]:
    return tuple(1 << e for e in range(lo, hi + 1, step))


def full() -> GridSpec:
    return GridSpec(
        models=None,
        gemm_m=_pow2(0, 14),
        gemm_tps=TPS,
        gemm_logits=True,
        attn_tps=TPS,
        ctx_seq=_pow2(7, 14),
        ctx_batch=_pow2(0, 6),
        ctx_max_tokens=1 << 16,
        gen_kv=_pow2(7, 16),
        gen_batch=_pow2(0, 8),
        gen_max_tokens=1 << 21,
        elem_bytes=_pow2(16, 30),
        comm_elements=_pow2(10, 28),
    )


def quick() -> GridSpec:
    """A reduced grid that runs in a few minutes on one GPU: fewer m values, two TP sizes, three models."""
    return GridSpec(
        models=QUICK_MODELS,
        gemm_m=(1, 8, 32, 128, 512, 2048, 8192),
        gemm_tps=(1, 4),
        gemm_logits=False,
        attn_tps=(1, 4),
        ctx_seq=(512, 2048, 8192),
        ctx_batch=(1, 4, 16),
        ctx_max_tokens=1 << 15,
        gen_kv=(512, 4096, 32768),
        gen_batch=(1, 8, 64, 256),
        gen_max_tokens=1 << 20,
        elem_bytes=_pow2(20, 30, 2),
        comm_elements=_pow2(10, 26, 4),
    )


def _kv_per_gpu(kv_heads: int, tp: int) -> int:
    # KV heads are replicated when there are fewer of them than TP ranks.
    return max(1, kv_heads // tp)


def gemm_shapes(models: Sequence[ModelShape], tps: Sequence[int], logits: bool = False) -> List[Tuple[int, int]]:
    """(n, k) of the dense linear layers per GPU at each TP size: QKV, output projection, gate+up, down
    (and the vocab projection when `logits`). Splits that do not divide evenly are skipped, as engines refuse them.
    MLA models contribute their dense FFN only (their attention projections belong to the MLA module table)."""
    out = set()
    for mdl in models:
        for tp in tps:
            if mdl.heads % tp:
                continue
            if not mdl.mla:
                q = mdl.heads // tp * mdl.head_dim
                kv = _kv_per_gpu(mdl.kv_heads, tp) * mdl.head_dim
                out.add((q + 2 * kv, mdl.hidden))  # fused QKV
                out.add((mdl.hidden, q))  # output projection
            if mdl.inter and mdl.inter % tp == 0:
                out.add((2 * mdl.inter // tp, mdl.hidden))  # fused gate + up
                out.add((mdl.hidden, mdl.inter // tp))  # down
            if logits and mdl.vocab and mdl.vocab % tp == 0:
                out.add((mdl.vocab // tp, mdl.hidden))
    return sorted(out)


def gemm_points(spec: GridSpec, models: Sequence[ModelShape], dtypes: Sequence[str]) -> List[Dict[str, object]]:
    shapes = gemm_shapes(select_models(models, spec.models), spec.gemm_tps, spec.gemm_logits)
    return [{"dtype": d, "m": m, "n": n, "k": k} for d in dtypes for (n, k) in shapes for m in spec.gemm_m]


def head_configs(models: Sequence[ModelShape], tps: Sequence[int]) -> List[Tuple[int, int, int]]:
    """(heads, kv_heads, head_dim) per GPU for the non-MLA models at each TP size."""
    out = set()
    for mdl in models:
        if mdl.mla:
            continue
        for tp in tps:
            if mdl.heads % tp == 0:
                out.add((mdl.heads // tp, _kv_per_gpu(mdl.kv_heads, tp), mdl.head_dim))
    return sorted(out)


def context_attention_points(spec: GridSpec, models: Sequence[ModelShape]) -> List[Dict[str, object]]:
    pts = []
    for heads, kv, hd in head_configs(select_models(models, spec.models), spec.attn_tps):
        for seq in spec.ctx_seq:
            for batch in spec.ctx_batch:
                if batch * seq <= spec.ctx_max_tokens:
                    pts.append({"batch": batch, "seq": seq, "heads": heads, "kv_heads": kv, "head_dim": hd,
                                "dtype": "bfloat16", "kv_dtype": "bfloat16", "window": 0})
    return pts


def generation_attention_points(spec: GridSpec, models: Sequence[ModelShape]) -> List[Dict[str, object]]:
    pts = []
    for heads, kv, hd in head_configs(select_models(models, spec.models), spec.attn_tps):
        for kv_len in spec.gen_kv:
            for batch in spec.gen_batch:
                if batch * kv_len <= spec.gen_max_tokens:
                    pts.append({"batch": batch, "kv_len": kv_len, "heads": heads, "kv_heads": kv, "head_dim": hd,
                                "kv_dtype": "bfloat16", "window": 0})
    return pts


# "memory" is a device copy, the pure bandwidth op the planner's elementwise lookup (bytes only) reads;
# add and rmsnorm show what real elementwise kernels reach.
ELEMENTWISE_OPS: Tuple[str, ...] = ("memory", "add", "rmsnorm")
# Bytes moved per bf16 element: memory (copy) reads 1 writes 1; add reads 2 writes 1; rmsnorm reads x writes y.
ELEMENT_TRAFFIC: Dict[str, int] = {"memory": 4, "add": 6, "rmsnorm": 4}
RMSNORM_HIDDEN = 4096


def elementwise_elements(op: str, target_bytes: int) -> int:
    """bf16 element count whose traffic is closest to `target_bytes` (rmsnorm: whole rows of RMSNORM_HIDDEN)."""
    n = max(1, target_bytes // ELEMENT_TRAFFIC[op])
    if op == "rmsnorm":
        n = max(RMSNORM_HIDDEN, n // RMSNORM_HIDDEN * RMSNORM_HIDDEN)
    return n


def elementwise_points(spec: GridSpec) -> List[Dict[str, object]]:
    """One point per op and size; `bytes` is the traffic actually moved (read plus written)."""
    pts = []
    for op in ELEMENTWISE_OPS:
        seen = set()
        for target in spec.elem_bytes:
            n = elementwise_elements(op, target)
            if n in seen:
                continue
            seen.add(n)
            pts.append({"op": op, "elements": n, "bytes": n * ELEMENT_TRAFFIC[op]})
    return pts


COLLECTIVES: Tuple[str, ...] = ("all_reduce", "all_gather")


def comm_gpu_counts(spec: GridSpec, visible: int) -> List[int]:
    """Process-group sizes to launch: those in the grid that fit on the visible GPUs (none with one GPU)."""
    return [g for g in spec.comm_gpus if 2 <= g <= visible]


def comm_points(spec: GridSpec, gpus: int) -> List[Dict[str, object]]:
    # all_gather: `elements` is the gathered (output) size, a multiple of the group size.
    return [{"collective": c, "dtype": "bfloat16", "gpus": gpus, "elements": e}
            for c in COLLECTIVES for e in spec.comm_elements if e % gpus == 0]


def summarize(spec: GridSpec, models: Sequence[ModelShape], gemm_dtypes: Sequence[str], visible_gpus: int) -> Dict[str, int]:
    """Point counts per table, for --dry-run and for sizing --quick."""
    comm = sum(len(comm_points(spec, g)) for g in comm_gpu_counts(spec, visible_gpus))
    return {
        "gemm": len(gemm_points(spec, models, gemm_dtypes)),
        "context_attention": len(context_attention_points(spec, models)),
        "generation_attention": len(generation_attention_points(spec, models)),
        "elementwise": len(elementwise_points(spec)),
        "comm": comm,
    }
