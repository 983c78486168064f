import argparse
import io
import unittest

from collector import cli


class Cli(unittest.TestCase):
    def test_parse_ops(self):
        self.assertEqual(cli.parse_ops("gemm, comm"), ["gemm", "comm"])
        with self.assertRaises(argparse.ArgumentTypeError):
            cli.parse_ops("gemm,bogus")
        with self.assertRaises(argparse.ArgumentTypeError):
            cli.parse_ops(",")

    def test_defaults(self):
        args = cli.build_parser().parse_args(["--out", "x"])
        self.assertEqual(args.ops, list(cli.OPS))
        self.assertFalse(args.quick)

    def test_dry_run_counts_without_torch(self):
        args = cli.build_parser().parse_args(["--out", "x", "--quick", "--dry-run", "--ops", "gemm",
                                              "--models-dir", "/nonexistent"])
        buf = io.StringIO()
        self.assertEqual(cli.dry_run(args, out=buf), 0)
        text = buf.getvalue()
        self.assertIn("grid: quick", text)
        self.assertRegex(text, r"gemm\s+336 points\n")
        self.assertRegex(text, r"context_attention\s+\d+ points \(not selected\)")


if __name__ == "__main__":
    unittest.main()
