"""Kernel collector: measures GEMM, attention, elementwise and NCCL latencies on the local GPU and writes
them in inferplan's table format (data/perf/<system>/torch/<version>/)."""

__version__ = "0.1.0"
