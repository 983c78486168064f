"""Runs a few real measurements when a CUDA GPU is visible; skipped otherwise."""

import os
import tempfile
import unittest

try:
    import torch

    HAVE_CUDA = torch.cuda.is_available()
except ImportError:
    HAVE_CUDA = False


@unittest.skipUnless(HAVE_CUDA, "needs PyTorch with a CUDA GPU")
class OnGpu(unittest.TestCase):
    def test_gemm_bigger_is_slower(self):
        from collector import measure

        pts = [{"dtype": "bfloat16", "m": m, "n": 4096, "k": 4096} for m in (16, 8192)]
        rows = measure.gemm(pts)
        self.assertEqual(len(rows), 2)
        self.assertLess(rows[0]["latency_ms"], rows[1]["latency_ms"])

    def test_attention_and_elementwise_rows(self):
        from collector import grid, measure

        ctx = measure.context_attention([{"batch": 1, "seq": 1024, "heads": 32, "kv_heads": 8, "head_dim": 128,
                                          "dtype": "bfloat16", "kv_dtype": "bfloat16", "window": 0}])
        gen = measure.generation_attention([{"batch": 8, "kv_len": 2048, "heads": 32, "kv_heads": 8,
                                             "head_dim": 128, "kv_dtype": "bfloat16", "window": 0}])
        el = measure.elementwise(grid.elementwise_points(grid.quick())[:2])
        self.assertEqual((len(ctx), len(gen), len(el)), (1, 1, 2))
        self.assertNotIn("elements", el[0])

    def test_quick_cli_writes_tables(self):
        from collector import cli

        with tempfile.TemporaryDirectory() as tmp:
            code = cli.main(["--out", tmp, "--quick", "--ops", "elementwise", "--system", "testgpu"])
            self.assertEqual(code, 0)
            ver = os.listdir(os.path.join(tmp, "testgpu", "torch"))[0]
            files = sorted(os.listdir(os.path.join(tmp, "testgpu", "torch", ver)))
            self.assertEqual(files, ["elementwise.csv", "meta.yaml"])


if __name__ == "__main__":
    unittest.main()
