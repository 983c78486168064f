"""Exercises the measurement code paths (tensor shapes, torch calls, row assembly) on the CPU with a
wall-clock timer, so API misuse shows up without a GPU. Skipped when PyTorch is not installed."""

import time
import unittest

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def wall_timer(fn):
    fn()
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


@unittest.skipUnless(HAVE_TORCH, "needs PyTorch (CPU build is enough)")
class OnCpu(unittest.TestCase):
    def test_gemm_bf16_and_fp8(self):
        from collector import measure

        pts = [{"dtype": d, "m": m, "n": 256, "k": 128} for d in ("bfloat16", "fp8") for m in (1, 64)]
        rows = measure.gemm(pts, device="cpu", timer=wall_timer)
        if len(rows) == 2:
            self.skipTest("this torch build has no CPU fp8 _scaled_mm")  # bf16 rows still checked above
        self.assertEqual([(r["dtype"], r["m"]) for r in rows], [(p["dtype"], p["m"]) for p in pts])
        self.assertTrue(all(r["latency_ms"] > 0 for r in rows))

    def test_attention_gqa_and_mha(self):
        from collector import measure

        ctx = [{"batch": 2, "seq": 64, "heads": h, "kv_heads": kv, "head_dim": 64, "dtype": "bfloat16",
                "kv_dtype": "bfloat16", "window": 0} for h, kv in ((8, 2), (4, 4))]
        gen = [{"batch": 3, "kv_len": 128, "heads": 8, "kv_heads": 2, "head_dim": 64, "kv_dtype": "bfloat16",
                "window": 0}]
        self.assertEqual(len(measure.context_attention(ctx, device="cpu", timer=wall_timer)), 2)
        self.assertEqual(len(measure.generation_attention(gen, device="cpu", timer=wall_timer)), 1)

    def test_gqa_falls_back_to_repeated_kv_heads(self):
        import torch.nn.functional as F
        from unittest import mock

        from collector import measure

        real = F.scaled_dot_product_attention
        calls = []

        def old_torch(q, k, v, **kw):
            if "enable_gqa" in kw:
                raise TypeError("unexpected keyword argument 'enable_gqa'")
            calls.append((q.shape[1], k.shape[1]))
            return real(q, k, v, **kw)

        pt = {"batch": 1, "kv_len": 32, "heads": 8, "kv_heads": 2, "head_dim": 64, "kv_dtype": "bfloat16", "window": 0}
        with mock.patch.object(F, "scaled_dot_product_attention", side_effect=old_torch):
            rows = measure.generation_attention([pt], device="cpu", timer=wall_timer)
        self.assertEqual(len(rows), 1)
        self.assertEqual(calls[0], (8, 8))  # KV heads repeated to match the query heads

    def test_elementwise_ops(self):
        from collector import grid, measure

        pts = [p for p in grid.elementwise_points(grid.quick()) if p["bytes"] <= 1 << 22]
        rows = measure.elementwise(pts, device="cpu", timer=wall_timer)
        self.assertEqual(len(rows), len(pts))
        self.assertEqual({r["op"] for r in rows}, {"memory", "add", "rmsnorm"})
        self.assertTrue(all(set(r) == {"op", "bytes", "latency_ms"} for r in rows))

    def test_failed_points_are_skipped_not_fatal(self):
        from collector import measure

        rows = measure.gemm([{"dtype": "nvfp4", "m": 1, "n": 16, "k": 16}], device="cpu", timer=wall_timer)
        self.assertEqual(rows, [])


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(HAVE_TORCH, "needs PyTorch (CPU build is enough)")
class CommOnCpu(unittest.TestCase):
    def test_two_process_group_over_gloo(self):
        from collector import comm, grid

        pts = [{"collective": c, "dtype": "bfloat16", "gpus": 2, "elements": 1024} for c in grid.COLLECTIVES]
        rows = comm.measure_group(2, pts, backend="gloo")
        self.assertEqual([r["collective"] for r in rows], ["all_reduce", "all_gather"])
        self.assertTrue(all(r["latency_ms"] > 0 and r["gpus"] == 2 for r in rows))
