import builtins
import os
import tempfile
import unittest
from unittest import mock

from collector import shapes

REGISTRY = """\
# comment
models:
  - id: org/Dense-8B
    aliases: [org/Dense-8B-Instruct]
    family: llama
    hiddenSize: 4096
    numHeads: 32
    numKvHeads: 8
    headDim: 128
    intermediateSize: 14336 # dense FFN
    vocabSize: 128256
    quant: { scheme: none, gemmDtype: bfloat16, moeDtype: bfloat16 }

  - id: org/Dense-70B
    extends: org/Dense-8B
    hiddenSize: 8192
    numHeads: 64
    intermediateSize: 28672

  - id: org/Dense-70B-FP8
    extends: org/Dense-70B

  - id: org/Moe
    hiddenSize: 4096
    numHeads: 64
    numKvHeads: 4
    headDim: 128
    intermediateSize: 12288
    moe: { numExperts: 128, topK: 8, expertIntermediateSize: 1536, sharedExperts: 0, sharedIntermediateSize: 0, firstDenseLayers: 0 }

  - id: org/Mla
    hiddenSize: 7168
    numHeads: 128
    numKvHeads: 128
    headDim: 192
    intermediateSize: 18432
    moe: { numExperts: 256, topK: 8, expertIntermediateSize: 2048, sharedExperts: 1, sharedIntermediateSize: 2048, firstDenseLayers: 3 }
    mla: { qLoraRank: 1536, kvLoraRank: 512, qkNopeHeadDim: 128, qkRopeHeadDim: 64, vHeadDim: 128 }
    layerOverrides:
      - { layer: 0, intermediateSize: 1 }
"""

EXPECTED = [
    shapes.ModelShape("org/Dense-8B", 4096, 32, 8, 128, 14336, 128256, False),
    shapes.ModelShape("org/Dense-70B", 8192, 64, 8, 128, 28672, 128256, False),
    # Dense-70B-FP8 has the same shape as Dense-70B: deduplicated.
    shapes.ModelShape("org/Moe", 4096, 64, 4, 128, 0, 0, False),
    shapes.ModelShape("org/Mla", 7168, 128, 128, 192, 18432, 0, True),
]


def without_pyyaml():
    real_import = builtins.__import__

    def no_yaml(name, *a, **kw):
        if name == "yaml":
            raise ImportError("no yaml")
        return real_import(name, *a, **kw)

    return mock.patch("builtins.__import__", side_effect=no_yaml)


class LoadModels(unittest.TestCase):
    def load(self, files):
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in files.items():
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
            return shapes.load_models(tmp)

    def test_registry_with_extends_moe_and_mla(self):
        self.assertEqual(self.load({"a.yaml": REGISTRY}), EXPECTED)

    def test_same_result_without_pyyaml(self):
        with without_pyyaml():
            self.assertEqual(self.load({"a.yaml": REGISTRY}), EXPECTED)

    def test_single_model_file_and_unusable_files(self):
        flat = "hidden_size: 2048\nnum_attention_heads: 16\nintermediate_size: 8192\n"
        models = self.load({"b_flat.yaml": flat, "c_broken.yaml": "id: nothing-useful\n"})
        self.assertEqual(models, [shapes.ModelShape("b_flat", 2048, 16, 16, 128, 8192, 0, False)])

    def test_falls_back_to_builtin_list(self):
        self.assertEqual(shapes.load_models(None), shapes.BUILTIN_MODELS)
        self.assertEqual(self.load({}), shapes.BUILTIN_MODELS)
        self.assertEqual(shapes.load_models("/does/not/exist"), shapes.BUILTIN_MODELS)

    def test_select_models(self):
        ms = EXPECTED
        self.assertEqual(shapes.select_models(ms, None), ms)
        self.assertEqual(shapes.select_models(ms, ("org/Moe", "org/Dense-8B")), [ms[2], ms[0]])
        self.assertEqual(shapes.select_models(ms, ("x", "y")), ms[:2])

    def test_repository_registry_parses_the_same_with_and_without_pyyaml(self):
        d = shapes.default_models_dir()
        if not os.path.isdir(d):
            self.skipTest("data/models not present")
        with without_pyyaml():
            fallback = shapes.load_models(d)
        self.assertEqual(shapes.load_models(d), fallback)
        self.assertTrue(d.endswith(os.path.join("data", "models")))


if __name__ == "__main__":
    unittest.main()
