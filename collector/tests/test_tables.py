import os
import tempfile
import unittest

from collector import comm, env, tables
from collector.timing import choose_iters, median_ms


class Csv(unittest.TestCase):
    def test_header_order_sorting_and_latency_format(self):
        rows = [
            {"dtype": "fp8", "m": 16, "n": 4096, "k": 4096, "latency_ms": 0.0123456},
            {"dtype": "bfloat16", "m": 128, "n": 4096, "k": 4096, "latency_ms": 0.05},
            {"dtype": "bfloat16", "m": 16, "n": 4096, "k": 4096, "latency_ms": 1234.5678},
        ]
        text = tables.render_csv("gemm", rows)
        self.assertEqual(text.splitlines(), [
            "dtype,m,n,k,latency_ms",
            "bfloat16,16,4096,4096,1234.6",
            "bfloat16,128,4096,4096,0.05",
            "fp8,16,4096,4096,0.012346",
        ])
        self.assertEqual(tables.format_latency(12345.678), "12346")
        self.assertEqual(tables.format_latency(0.000123456), "0.00012346")

    def test_every_schema_ends_with_latency(self):
        for name, cols in tables.SCHEMAS.items():
            self.assertEqual(cols[-1], "latency_ms", name)
        self.assertEqual(tables.SCHEMAS["generation_attention"],
                         ["batch", "kv_len", "heads", "kv_heads", "head_dim", "kv_dtype", "window", "latency_ms"])

    def test_rejects_bad_rows(self):
        with self.assertRaises(ValueError):
            tables.render_csv("gemm", [{"dtype": "bfloat16", "m": 1, "n": 2, "latency_ms": 1.0}])
        with self.assertRaises(ValueError):
            tables.render_csv("gemm", [{"dtype": "bfloat16", "m": 1, "n": 2, "k": 3, "latency_ms": 0.0}])
        with self.assertRaises(ValueError):
            tables.render_csv("elementwise", [{"op": "a,b", "bytes": 1, "latency_ms": 1.0}])
        dup = {"op": "copy", "bytes": 4, "latency_ms": 1.0}
        with self.assertRaises(ValueError):
            tables.render_csv("elementwise", [dup, dup])
        with self.assertRaises(ValueError):
            tables.render_csv("nope", [])

    def test_write_and_read_back(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = tables.table_dir(tmp, "h200_sxm", "2.5.1+cu124")
            self.assertTrue(d.endswith(os.path.join("h200_sxm", "torch", "2.5.1")))
            ts = tables.TableSet()
            ts.add("elementwise", {"op": "copy", "bytes": 40, "latency_ms": 0.002})
            ts.add("allreduce", {"kind": "nccl", "dtype": "bfloat16", "gpus": 2, "elements": 1024, "latency_ms": 0.01})
            paths = ts.write(d)
            self.assertEqual(sorted(os.path.basename(p) for p in paths), ["allreduce.csv", "elementwise.csv"])
            self.assertEqual(tables.read_table(os.path.join(d, "elementwise.csv")),
                             [{"op": "copy", "bytes": "40", "latency_ms": "0.002"}])
            self.assertFalse(any(f.endswith(".tmp") for f in os.listdir(d)))


class Meta(unittest.TestCase):
    def meta(self):
        return env.measured_meta("h200_sxm", "2.5.1+cu124", "12.4", "NVIDIA H200", "550.54.15", "2026-12-02",
                                 "inferplan collector 0.1.0 (quick grid)")

    def test_measured_meta_fields_and_order(self):
        text = tables.render_meta(self.meta())
        lines = text.splitlines()
        self.assertEqual([ln.split(":")[0] for ln in lines],
                         tables.META_REQUIRED + tables.META_MEASURED)
        self.assertIn("version: 2.5.1", lines)
        self.assertIn("kind: measured", lines)
        self.assertIn("borrowed: false", lines)
        self.assertIn('cuda: "12.4"', lines)  # quoted so YAML keeps it a string
        self.assertIn('gpu: "NVIDIA H200"', lines)
        self.assertIn('date: "2026-12-02"', lines)

    def test_meta_parses_as_yaml_when_available(self):
        try:
            import yaml  # type: ignore
        except ImportError:
            self.skipTest("PyYAML not installed")
        doc = yaml.safe_load(tables.render_meta(self.meta()))
        self.assertEqual(doc["torch"], "2.5.1+cu124")
        self.assertEqual(doc["cuda"], "12.4")
        self.assertEqual(doc["generator"], "inferplan collector 0.1.0 (quick grid)")
        self.assertIs(doc["borrowed"], False)

    def test_missing_measured_fields_rejected(self):
        m = self.meta()
        del m["driver"]
        with self.assertRaises(ValueError):
            tables.render_meta(m)


class Helpers(unittest.TestCase):
    def test_system_for_gpu(self):
        self.assertEqual(env.system_for_gpu("NVIDIA H200"), "h200_sxm")
        self.assertEqual(env.system_for_gpu("NVIDIA GB200"), "gb200_sxm")
        self.assertEqual(env.system_for_gpu("NVIDIA B200"), "b200_sxm")
        self.assertEqual(env.system_for_gpu("NVIDIA H100 80GB HBM3"), "h100_sxm")
        self.assertIsNone(env.system_for_gpu("NVIDIA RTX 6000 Ada Generation"))
        self.assertEqual(env.slug("NVIDIA RTX 6000 Ada"), "nvidia_rtx_6000_ada")

    def test_timing_helpers(self):
        self.assertEqual(choose_iters(2.0), 1)
        self.assertEqual(choose_iters(0.01), 100)
        self.assertEqual(choose_iters(1e-6), 200)
        self.assertEqual(choose_iters(0.0), 200)
        self.assertEqual(median_ms([3.0, 1.0, 2.0]), 2.0)
        with self.assertRaises(ValueError):
            median_ms([])

    def test_timing_mode_summary_and_extra_meta_keys(self):
        from collector import timing

        saved = dict(timing.MODE_COUNTS)
        try:
            timing.MODE_COUNTS.update(graph=5, eager=0)
            self.assertEqual(timing.timing_mode_summary(), "cuda graph")
            timing.MODE_COUNTS.update(graph=5, eager=2)
            self.assertEqual(timing.timing_mode_summary(), "cuda graph (5 points), eager (2 points)")
        finally:
            timing.MODE_COUNTS.update(saved)
        meta = env.measured_meta("x", "2.5.1", "12.4", "G", "1", "2026-01-01", "t")
        meta["timing"] = "cuda graph (5 points), eager (2 points)"
        last = tables.render_meta(meta).splitlines()[-1]
        self.assertEqual(last, 'timing: "cuda graph (5 points), eager (2 points)"')

    def test_comm_rows_split_into_tables(self):
        rows = [{"collective": "all_reduce", "dtype": "bfloat16", "gpus": 2, "elements": 1024, "latency_ms": 0.01},
                {"collective": "all_gather", "dtype": "bfloat16", "gpus": 2, "elements": 1024, "latency_ms": 0.02}]
        t = comm.to_tables(rows)
        self.assertEqual(len(t["nccl"]), 2)
        self.assertEqual(t["allreduce"], [{"kind": "nccl", "dtype": "bfloat16", "gpus": 2, "elements": 1024,
                                           "latency_ms": 0.01}])
        tables.render_csv("nccl", t["nccl"])
        tables.render_csv("allreduce", t["allreduce"])


if __name__ == "__main__":
    unittest.main()
