"""python3 -m collector --out DIR [--quick] [--ops gemm,attention,elementwise,comm] ..."""

from __future__ import annotations

import argparse
import sys
import time
from typing import List, Optional, Sequence

from . import __version__, grid
from .shapes import default_models_dir, load_models, select_models
from .tables import TableSet, table_dir, write_meta

OPS = ("gemm", "attention", "elementwise", "comm")


def parse_ops(text: str) -> List[str]:
    ops = [o.strip() for o in text.split(",") if o.strip()]
    bad = [o for o in ops if o not in OPS]
    if bad or not ops:
        raise argparse.ArgumentTypeError(f"unknown op(s) {', '.join(bad) or '(none)'}; accepted: {', '.join(OPS)}")
    return ops


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m collector",
                                description="Measure kernel latencies on the local GPU and write inferplan perf tables.")
    p.add_argument("--out", required=True, help="root folder; tables go to OUT/<system>/torch/<torch version>/")
    p.add_argument("--quick", action="store_true", help="reduced grid (a few minutes on one GPU)")
    p.add_argument("--ops", type=parse_ops, default=list(OPS), help=f"comma list of {','.join(OPS)} (default: all)")
    p.add_argument("--system", help="system id for the output path (default: from the GPU name, e.g. h200_sxm)")
    p.add_argument("--models-dir", default=default_models_dir(), help="model shape files (default: data/models)")
    p.add_argument("--no-fp8", action="store_true", help="skip fp8 GEMMs even where the GPU has them")
    p.add_argument("--no-graphs", action="store_true", help="launch timed batches eagerly instead of as CUDA graphs")
    p.add_argument("--max-minutes", type=float, help="stop measuring new points after this long (tables keep what was done)")
    p.add_argument("--dry-run", action="store_true", help="print the grid sizes and exit (no GPU or torch needed)")
    return p


def dry_run(args: argparse.Namespace, out=sys.stdout) -> int:
    spec = grid.quick() if args.quick else grid.full()
    models = load_models(args.models_dir)
    gemm_dtypes = ["bfloat16"] if args.no_fp8 else ["bfloat16", "fp8"]
    counts = grid.summarize(spec, models, gemm_dtypes, visible_gpus=8)
    names = [m.name for m in select_models(models, spec.models)]
    print(f"grid: {'quick' if args.quick else 'full'}; {len(names)} model shapes: {', '.join(names)}", file=out)
    for table, n in counts.items():
        if table in ("context_attention", "generation_attention"):
            selected = "attention" in args.ops
        else:
            selected = table in args.ops
        print(f"  {table:22s} {n:6d} points{'' if selected else ' (not selected)'}", file=out)
    print("  (comm counted for 8 GPUs; with one GPU it is skipped)", file=out)
    return 0


def collect(args: argparse.Namespace) -> int:
    try:
        import torch
    except ImportError:
        print("collector: error: PyTorch is not installed (pip install torch); --dry-run works without it", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("collector: error: no CUDA GPU is visible to PyTorch", file=sys.stderr)
        return 4

    from . import env, measure, timing

    timing.USE_GRAPHS = not args.no_graphs
    info = env.gpu_info()
    system = args.system or env.system_for_gpu(str(info["gpu"])) or env.slug(str(info["gpu"]))
    spec = grid.quick() if args.quick else grid.full()
    models = load_models(args.models_dir)
    outdir = table_dir(args.out, system, str(info["torch"]))
    deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else None
    print(f"collector: {info['gpu']} x{info['count']} (sm {info['capability'][0]}.{info['capability'][1]}), "
          f"torch {info['torch']}, CUDA {info['cuda']}, driver {info['driver']} -> {outdir}", file=sys.stderr)

    gemm_dtypes = ["bfloat16"]
    if not args.no_fp8 and measure.fp8_supported(info["capability"]):
        gemm_dtypes.append("fp8")
    tables = TableSet()

    def flush() -> None:
        # Write after every op so an interrupted run keeps what it measured.
        if not any(tables.rows.values()):
            return
        tables.write(outdir)
        meta = env.measured_meta(system, str(info["torch"]), str(info["cuda"]), str(info["gpu"]), str(info["driver"]),
                                 env.today(), f"inferplan collector {__version__} ({'quick' if args.quick else 'full'} grid)")
        meta["timing"] = timing.timing_mode_summary()
        write_meta(outdir, meta)

    if "gemm" in args.ops:
        for r in measure.gemm(grid.gemm_points(spec, models, gemm_dtypes), deadline):
            tables.add("gemm", r)
        flush()
    if "attention" in args.ops:
        for r in measure.context_attention(grid.context_attention_points(spec, models), deadline):
            tables.add("context_attention", r)
        for r in measure.generation_attention(grid.generation_attention_points(spec, models), deadline):
            tables.add("generation_attention", r)
        flush()
    if "elementwise" in args.ops:
        for r in measure.elementwise(grid.elementwise_points(spec), deadline):
            tables.add("elementwise", r)
        flush()
    if "comm" in args.ops:
        counts = grid.comm_gpu_counts(spec, int(info["count"]))
        if not counts:
            print("comm: skipped (one GPU visible)", file=sys.stderr)
        from . import comm

        for g in counts:
            if deadline is not None and time.monotonic() > deadline:
                break
            for table, rows in comm.to_tables(comm.measure_group(g, grid.comm_points(spec, g))).items():
                for r in rows:
                    tables.add(table, r)
        flush()
    if not any(tables.rows.values()):
        print("collector: error: no point could be measured (see the notes above)", file=sys.stderr)
        return 1
    print(f"collector: wrote {outdir}", file=sys.stderr)
    print(outdir)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return dry_run(args) if args.dry_run else collect(args)
