# One-off check: how torch's fp8 GEMM variants on this GPU compare with the planner's fp8 GEMM tables
# (docs/collector.md, 'Measured H200 tables'). Per-tensor scales, per-token x per-channel (rowwise) scales, and
# rowwise with an unfused per-token quantization of the bf16 activations first; bf16 torch.mm for reference.
# Usage: OUT=/tmp python3 collector/fp8_scaling.py  -> $OUT/fp8_linear.csv
import torch, csv, sys, os
torch.manual_seed(0)
dev = 'cuda'
out = os.path.join(os.environ.get('OUT', '/tmp'), 'fp8_linear.csv')
shapes = [(10240, 5120), (5120, 8192), (51200, 5120), (5120, 25600), (7168, 8192), (8192, 3584), (57344, 8192), (8192, 28672)]
ms = [1, 8, 32, 128, 512, 2048, 8192]
def bench(fn, iters=50):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(iters): fn()
    ts = []
    for _ in range(7):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / iters)
    ts.sort(); return ts[3]
rows = []
f8 = torch.float8_e4m3fn
for (n, k) in shapes:
    w = torch.randn(n, k, device=dev).to(f8)  # (n,k) row-major -> use w.t() as (k,n) column-major
    wt = w.t()
    sw_t = torch.ones(1, n, device=dev, dtype=torch.float32)
    one = torch.ones((), device=dev, dtype=torch.float32)
    for m in ms:
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        xq = x.to(f8)
        per_tensor = lambda: torch._scaled_mm(xq, wt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        def quant_rowwise():
            s = x.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-12) / 448.0
            q = (x / s).to(f8)
            return q, s
        q, s = quant_rowwise()
        rowwise = lambda: torch._scaled_mm(q, wt, scale_a=s, scale_b=sw_t, out_dtype=torch.bfloat16)
        def quant_and_rowwise():
            q2, s2 = quant_rowwise()
            return torch._scaled_mm(q2, wt, scale_a=s2, scale_b=sw_t, out_dtype=torch.bfloat16)
        wb = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        bf16 = lambda: torch.mm(x, wb)
        r = dict(m=m, n=n, k=k)
        for name, fn in [('per_tensor_ms', per_tensor), ('rowwise_ms', rowwise), ('quant_rowwise_ms', quant_and_rowwise), ('bf16_ms', bf16)]:
            try: r[name] = bench(fn)
            except Exception as e: r[name] = ''; print(name, m, n, k, 'failed:', str(e)[:120])
        rows.append(r); print(r, flush=True)
with open(out, 'w', newline='') as fh:
    wr = csv.DictWriter(fh, fieldnames=list(rows[0])); wr.writeheader(); wr.writerows(rows)
