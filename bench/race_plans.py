#!/usr/bin/env python3
"""Writes a plan that stresses the plan loader's race check to stdout:
  race_plans.py overwrites N   N sends overwrite one region of a flat
                               buffer, each waiting for the one before
                               (ordered: no race)
  race_plans.py tiles N        N disjoint one-element tiles of a square
                               grid, each sent into one tile buffer
"""
import json, sys
kind, n = sys.argv[1], int(sys.argv[2])
if kind == "overwrites":
    # n sends overwriting one region of one flat buffer, each after the last (ordered: no race)
    p = {"format": "meshsim.plan/1", "name": "overwrites",
         "tensors": [{"name": "x", "shape": [256], "dtype": "f32"}],
         "buffers": [{"name": "a", "device": "h0/gpu0", "size": "1KiB", "tensor": "x", "box": [[0, 256]]},
                     {"name": "b", "device": "h0/gpu1", "size": "1KiB"}],
         "tasks": []}
    for k in range(n):
        t = {"id": f"t{k}", "kind": "send", "src": "h0/gpu0", "dst": "h0/gpu1", "size": "1KiB",
             "payload": [{"tensor": "x", "box": [[0, 256]], "src_buffer": "a", "dst_buffer": "b", "dst_offset": "0B"}]}
        if k: t["deps"] = [f"t{k-1}"]
        p["tasks"].append(t)
else:
    # n disjoint tiles of a side x side grid, each its own send into a tile buffer
    side = int(n ** 0.5)
    p = {"format": "meshsim.plan/1", "name": "tiles",
         "tensors": [{"name": "x", "shape": [side, side], "dtype": "f32"}],
         "buffers": [{"name": "a", "device": "h0/gpu0", "size": f"{side*side*4}B", "tensor": "x", "box": [[0, side], [0, side]]},
                     {"name": "b", "device": "h0/gpu1", "size": f"{side*side*4}B", "tensor": "x", "box": [[0, side], [0, side]]}],
         "tasks": []}
    for i in range(side):
        for j in range(side):
            p["tasks"].append({"id": f"t{i}_{j}", "kind": "send", "src": "h0/gpu0", "dst": "h0/gpu1", "size": "4B",
                "payload": [{"tensor": "x", "box": [[i, i+1], [j, j+1]], "src_buffer": "a", "dst_buffer": "b"}]})
json.dump(p, sys.stdout)
