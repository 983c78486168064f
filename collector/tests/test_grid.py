import unittest

from collector import grid
from collector.shapes import BUILTIN_MODELS, ModelShape

LLAMA8B = ModelShape("llama-8b", 4096, 32, 8, 128, 14336, 128256)


class GemmShapes(unittest.TestCase):
    def test_llama8b_tp1_and_tp8(self):
        shapes = grid.gemm_shapes([LLAMA8B], [1, 8])
        # tp1: QKV 4096+2*1024, proj, gate+up, down
        for s in [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]:
            self.assertIn(s, shapes)
        # tp8: 4 q heads + 1 kv head each for k and v
        for s in [(768, 4096), (4096, 512), (3584, 4096), (4096, 1792)]:
            self.assertIn(s, shapes)
        self.assertEqual(len(shapes), 8)
        self.assertEqual(shapes, sorted(shapes))

    def test_kv_heads_replicate_when_fewer_than_tp(self):
        m = ModelShape("x", 4096, 64, 4, 128, 0)
        self.assertIn((8 * 128 + 2 * 128, 4096), grid.gemm_shapes([m], [8]))

    def test_uneven_splits_are_skipped_and_logits_optional(self):
        m = ModelShape("odd", 1000, 10, 2, 100, 3000, 50000)
        self.assertEqual(grid.gemm_shapes([m], [4]), [])
        self.assertIn((25000, 1000), grid.gemm_shapes([m], [2], logits=True))
        self.assertNotIn((25000, 1000), grid.gemm_shapes([m], [2], logits=False))

    def test_moe_only_model_gives_attention_gemms_only(self):
        m = ModelShape("moe", 4096, 64, 4, 128, 0)
        self.assertEqual(len(grid.gemm_shapes([m], [1])), 2)

    def test_mla_model_gives_dense_ffn_only(self):
        mla = ModelShape("ds", 7168, 128, 128, 192, 18432, mla=True)
        self.assertEqual(grid.gemm_shapes([mla], [8]), [(4608, 7168), (7168, 2304)])

    def test_quick_grid_uses_the_named_models(self):
        spec = grid.quick()
        other = ModelShape("other", 1024, 16, 8, 64, 4096)
        chosen = [m for m in BUILTIN_MODELS if m.name in spec.models]
        self.assertEqual(len(chosen), 3)
        self.assertEqual(grid.gemm_points(spec, [other] + BUILTIN_MODELS, ["bfloat16"]),
                         grid.gemm_points(spec, chosen, ["bfloat16"]))

    def test_points_cross_dtype_shape_m(self):
        spec = grid.quick()
        pts = grid.gemm_points(spec, [LLAMA8B], ["bfloat16", "fp8"])
        n_shapes = len(grid.gemm_shapes([LLAMA8B], spec.gemm_tps))
        self.assertEqual(len(pts), 2 * n_shapes * len(spec.gemm_m))
        self.assertEqual(set(pts[0]), {"dtype", "m", "n", "k"})


class AttentionPoints(unittest.TestCase):
    def test_head_configs_skip_mla_and_split_heads(self):
        mla = ModelShape("ds", 7168, 128, 128, 128, 18432, mla=True)
        self.assertEqual(grid.head_configs([LLAMA8B, mla], [1, 4]), [(8, 2, 128), (32, 8, 128)])

    def test_token_caps(self):
        for spec in (grid.full(), grid.quick()):
            ctx = grid.context_attention_points(spec, BUILTIN_MODELS)
            gen = grid.generation_attention_points(spec, BUILTIN_MODELS)
            self.assertTrue(ctx and gen)
            self.assertTrue(all(p["batch"] * p["seq"] <= spec.ctx_max_tokens for p in ctx))
            self.assertTrue(all(p["batch"] * p["kv_len"] <= spec.gen_max_tokens for p in gen))
            self.assertTrue(all(p["window"] == 0 and p["kv_dtype"] == "bfloat16" for p in ctx + gen))

    def test_quick_is_a_subset_of_full_in_size(self):
        full, quick = grid.full(), grid.quick()
        a = grid.summarize(full, BUILTIN_MODELS, ["bfloat16", "fp8"], 8)
        b = grid.summarize(quick, BUILTIN_MODELS, ["bfloat16", "fp8"], 8)
        for table in a:
            self.assertLess(b[table], a[table], table)
        # Quick must stay small enough for a few minutes on one GPU.
        self.assertLess(b["gemm"] + b["context_attention"] + b["generation_attention"], 600)


class ElementwiseAndComm(unittest.TestCase):
    def test_bytes_are_traffic_of_whole_elements(self):
        pts = grid.elementwise_points(grid.quick())
        self.assertEqual({p["op"] for p in pts}, set(grid.ELEMENTWISE_OPS))
        for p in pts:
            self.assertEqual(p["bytes"], p["elements"] * grid.ELEMENT_TRAFFIC[p["op"]])
            if p["op"] == "rmsnorm":
                self.assertEqual(p["elements"] % grid.RMSNORM_HIDDEN, 0)
        add = [p for p in pts if p["op"] == "add"]
        self.assertEqual(add[0]["elements"], (1 << 20) // 6)

    def test_comm_needs_two_gpus(self):
        spec = grid.quick()
        self.assertEqual(grid.comm_gpu_counts(spec, 1), [])
        self.assertEqual(grid.comm_gpu_counts(spec, 4), [2, 4])
        self.assertEqual(grid.summarize(spec, BUILTIN_MODELS, ["bfloat16"], 1)["comm"], 0)

    def test_comm_points_divisible_by_group(self):
        pts = grid.comm_points(grid.full(), 8)
        self.assertEqual({p["collective"] for p in pts}, {"all_reduce", "all_gather"})
        self.assertTrue(all(p["elements"] % 8 == 0 and p["gpus"] == 8 for p in pts))


if __name__ == "__main__":
    unittest.main()
