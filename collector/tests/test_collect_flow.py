"""The collect() flow end to end on the CPU: a stand-in `torch` module and stubbed measurements, so the
grid -> rows -> CSV + meta.yaml path runs without PyTorch or a GPU."""

import contextlib
import io
import os
import sys
import tempfile
import types
import unittest
from unittest import mock

from collector import cli, env, measure, tables


def fake_torch(cuda: bool) -> types.ModuleType:
    t = types.ModuleType("torch")
    t.cuda = types.SimpleNamespace(is_available=lambda: cuda)
    return t


def stub(points, deadline=None, **_):
    rows = []
    for i, p in enumerate(points):
        row = {k: v for k, v in p.items() if k != "elements"}
        row["latency_ms"] = 0.01 * (i + 1)
        rows.append(row)
    return rows


INFO = {"gpu": "NVIDIA H200", "capability": (9, 0), "count": 1, "torch": "2.9.0+cu128", "cuda": "12.8",
        "driver": "570.86.15"}


class CollectFlow(unittest.TestCase):
    def run_cli(self, argv, cuda=True, stubs=True):
        out, err = io.StringIO(), io.StringIO()
        patches = [mock.patch.dict(sys.modules, {"torch": fake_torch(cuda)}),
                   mock.patch.object(env, "gpu_info", return_value=dict(INFO))]
        if stubs:
            patches += [mock.patch.object(measure, n, side_effect=stub)
                        for n in ("gemm", "context_attention", "generation_attention", "elementwise")]
        with contextlib.ExitStack() as stack:
            for p in patches:
                stack.enter_context(p)
            stack.enter_context(contextlib.redirect_stdout(out))
            stack.enter_context(contextlib.redirect_stderr(err))
            code = cli.main(argv)
        return code, out.getvalue(), err.getvalue()

    def test_quick_run_writes_every_single_gpu_table_and_meta(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, out, err = self.run_cli(["--out", tmp, "--quick", "--models-dir", "/nonexistent"])
            self.assertEqual(code, 0, err)
            d = os.path.join(tmp, "h200_sxm", "torch", "2.9.0")
            self.assertEqual(out.strip().splitlines()[-1], d)
            self.assertEqual(sorted(os.listdir(d)), ["context_attention.csv", "elementwise.csv", "gemm.csv",
                                                     "generation_attention.csv", "meta.yaml"])
            self.assertIn("comm: skipped (one GPU visible)", err)
            gemm = tables.read_table(os.path.join(d, "gemm.csv"))
            self.assertEqual(len(gemm), 336)  # bf16 + fp8 on sm 9.0
            self.assertEqual({r["dtype"] for r in gemm}, {"bfloat16", "fp8"})
            with open(os.path.join(d, "meta.yaml")) as f:
                meta = f.read()
            self.assertIn("kind: measured", meta)
            self.assertIn("torch: 2.9.0+cu128", meta)
            self.assertIn('gpu: "NVIDIA H200"', meta)

    def test_ops_system_and_no_fp8(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = self.run_cli(["--out", tmp, "--quick", "--ops", "gemm", "--no-fp8", "--system", "mybox",
                                         "--models-dir", "/nonexistent"])
            self.assertEqual(code, 0, err)
            d = os.path.join(tmp, "mybox", "torch", "2.9.0")
            self.assertEqual(sorted(os.listdir(d)), ["gemm.csv", "meta.yaml"])
            self.assertEqual({r["dtype"] for r in tables.read_table(os.path.join(d, "gemm.csv"))}, {"bfloat16"})

    def test_no_gpu_and_nothing_measured(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = self.run_cli(["--out", tmp, "--quick"], cuda=False)
            self.assertEqual(code, 4)
            self.assertIn("no CUDA GPU", err)
            with mock.patch.object(measure, "elementwise", return_value=[]):
                code, _, err = self.run_cli(["--out", tmp, "--quick", "--ops", "elementwise"], stubs=False)
            self.assertEqual(code, 1)
            self.assertIn("no point could be measured", err)
            self.assertFalse(os.path.exists(os.path.join(tmp, "h200_sxm")))


if __name__ == "__main__":
    unittest.main()
