#!/usr/bin/env python3
"""Hand-derived checks of tools/unet_model.py's blocks, and the bundled U-Net
files are what it writes."""

import importlib.util
import json
import pathlib
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("unet_model", ROOT / "tools" / "unet_model.py")
unet = importlib.util.module_from_spec(spec)
spec.loader.exec_module(unet)


class Blocks(unittest.TestCase):
    def test_resnet(self):
        # 8 -> 16 channels over 4 pixels, time embedding 32 wide:
        #   params GN 2*8 + conv 9*8*16+16 + time 32*16+16 + GN 2*16 + conv 9*16*16+16
        #          + shortcut 8*16+16 = 16 + 1168 + 528 + 32 + 2320 + 144 = 4208
        #   GEMMs 4 x 16 x 72, 4 x 16 x 144, 4 x 16 x 8; one all-reduce of 4*16
        #   memory (f32) GN 2*4*8*4 = 256 B, GN 2*4*16*4 = 512 B, add 3*4*16*4 = 768 B
        l = unet.Layer("r")
        unet.resnet(l, 4, 8, 16, 32)
        self.assertEqual(l.params, 4208)
        self.assertEqual([(g["m"], g["n"], g["k"]) for g in l.gemms], [(4, 16, 72), (4, 16, 144), (4, 16, 8)])
        self.assertEqual(l.allreduces, [64])
        self.assertEqual(l.memory, ["256B", "512B", "768B"])

    def test_transformer(self):
        # 16 channels, context 32 wide: GN 32, proj_in 272, LN 32, self-attention
        # 3*256 + 272 = 1040, LN 32, cross-attention 256 + 2*32*16 + 272 = 1552,
        # LN 32, GEGLU 8*256 + 128 = 2176, out 4*256 + 16 = 1040, proj_out 272: 6480.
        # Scores over 2 pixels and 8 heads of 2: GEMM 2 x 2 x 2, batch 8 that grows.
        l = unet.Layer("t")
        unet.transformer(l, 2, 16, 32)
        self.assertEqual(l.params, 6480)
        scores = l.gemms[2]
        self.assertEqual(scores, {"m": 2, "n": 2, "k": 2, "batch": 8, "grows": "batch", "weights": False})
        self.assertEqual(len(l.allreduces), 5)  # proj_in, two attentions, feed-forward, proj_out


class Bundled(unittest.TestCase):
    def test_files_are_the_generators(self):
        for channels, name in ((320, "unet-470m"), (480, "unet-1b"), (672, "unet-2b")):
            with open(ROOT / "configs" / "models" / f"{name}.json") as f:
                self.assertEqual(json.load(f), unet.model(channels, name), name)


if __name__ == "__main__":
    sys.exit(unittest.main())
