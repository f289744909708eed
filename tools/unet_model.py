#!/usr/bin/env python3
"""Writes a meshsim.model/1 layers file for the convolutional U-Net of Alpa's
end-to-end benchmark (the MLSys'23 "U-Transformer"), every layer with its
kernels.

The network, per sample, channels last, element type f32:
  image 32 x 32 x 3, base channels C, levels with C, 2C, 4C, 4C channels at
  32, 16, 8 and 4 pixels a side; one ResNet block per level; a spatial
  transformer (8 heads) after the ResNet of the first three levels, in the
  middle and in the last three up levels, attending across the image and to
  a context of 16 tokens of width 4C; 13 pipeline layers, as the model
  marks them:
    0      input convolution (and the time-embedding MLP's weights)
    1-3    down levels 0-2: ResNet, transformer, stride-2 convolution; the
           transformer's output is also a skip tensor for the up path
    4      down level 3: ResNet (its output is a skip tensor)
    5, 6   middle: ResNet and transformer; ResNet
    7, 8   up level 3: two ResNets, each over the input joined with a skip
    9-11   up levels 2-0: nearest upsampling and a 3 x 3 convolution, the
           skip joined, ResNet, transformer
    12     group norm, SiLU and the output convolution
Kernels, per sample:
  convolution k x k, stride s: an implicit GEMM, m = output pixels,
      n = output channels, k = k*k*input channels
  dense layer over N tokens: m = N, n = outputs, k = inputs
  attention, 8 heads of d = D/8: scores N x M x d and values N x d x M,
      batched over the heads (the microbatch multiplies the batch)
  normalisations, activations, residual adds, joins and resizes:
      memory-bound kernels of the bytes they read and write (XLA fuses a
      norm with the activation after it: one kernel)
Stored activations (without recomputation): what each GEMM and each
memory-bound kernel reads. Tensor-parallel all-reduces: Megatron's split,
one all-reduce after each column/row GEMM pair (a ResNet's two
convolutions, each attention, the feed-forward) and after each GEMM that
stands alone (the transformer's two 1 x 1 projections, resizing
convolutions, the input and output convolutions), of that GEMM's output.
The time embedding (one timestep per batch) has weights but no per-sample
work; the context, an input every transformer reads, is not sent between
stages.

Usage: tools/unet_model.py CHANNELS NAME > model.json
"""

import json
import sys

E = 4  # bytes per f32 element
HEADS = 8
CONTEXT_TOKENS = 16


class Layer:
    def __init__(self, name):
        self.name = name
        self.gemms = []
        self.memory = []
        self.allreduces = []
        self.params = 0
        self.saved = 0  # elements

    def gemm(self, m, n, k, batch=1, grows="m", weights=True, saved=None):
        g = {"m": m, "n": n, "k": k}
        if batch != 1:
            g["batch"] = batch
        if grows != "m":
            g["grows"] = grows
        if not weights:
            g["weights"] = False
        self.gemms.append(g)
        self.saved += m * k * batch if saved is None else saved

    def mem(self, read, written):
        self.memory.append(f"{(read + written) * E}B")
        self.saved += read

    def conv(self, pixels_out, cin, cout, size=3, pixels_in=None, allreduce=True):
        # The saved input is the image, not its k x k unfolding.
        self.gemm(pixels_out, cout, size * size * cin, saved=(pixels_in or pixels_out) * cin)
        self.params += size * size * cin * cout + cout
        if allreduce:
            self.allreduces.append(pixels_out * cout)

    def norm(self, n, c):  # group or layer norm (with the activation after it)
        self.mem(n * c, n * c)
        self.params += 2 * c

    def add(self, n, c):
        self.memory.append(f"{3 * n * c * E}B")


def resnet(l, n, cin, cout, time_dim):
    l.norm(n, cin)
    l.conv(n, cin, cout, allreduce=False)
    l.params += time_dim * cout + cout  # the time embedding's projection
    l.norm(n, cout)  # with the time embedding's add and SiLU
    l.conv(n, cout, cout, allreduce=False)
    if cin != cout:
        l.conv(n, cin, cout, size=1, allreduce=False)
    l.add(n, cout)
    l.allreduces.append(n * cout)


def attention(l, n, d, context=None):
    m, width = (n, d) if context is None else context
    dh = d // HEADS
    if context is None:
        l.gemm(n, 3 * d, d)  # queries, keys and values
        l.params += 3 * d * d
    else:
        l.gemm(n, d, d)  # queries
        l.gemm(m, 2 * d, width)  # keys and values of the context
        l.params += d * d + 2 * width * d
    l.gemm(n, m, dh, batch=HEADS, grows="batch", weights=False, saved=HEADS * (n + m) * dh)
    l.mem(HEADS * n * m, HEADS * n * m)  # scale and softmax
    l.gemm(n, dh, m, batch=HEADS, grows="batch", weights=False, saved=HEADS * m * dh)
    l.gemm(n, d, d)  # output projection
    l.params += d * d + d
    l.add(n, d)
    l.allreduces.append(n * d)


def transformer(l, n, d, context_width):
    l.norm(n, d)
    l.conv(n, d, d, size=1)  # projection in
    l.norm(n, d)
    attention(l, n, d)
    l.norm(n, d)
    attention(l, n, d, (CONTEXT_TOKENS, context_width))
    l.norm(n, d)
    l.gemm(n, 8 * d, d)  # GEGLU projection
    l.params += 8 * d * d + 8 * d
    l.mem(8 * n * d, 4 * n * d)  # GELU of one half times the other
    l.gemm(n, d, 4 * d)
    l.params += 4 * d * d + d
    l.add(n, d)
    l.allreduces.append(n * d)
    l.conv(n, d, d, size=1)  # projection out
    l.add(n, d)


def unet_layers(c):
    chans = [c, 2 * c, 4 * c, 4 * c]
    px = [32 * 32, 16 * 16, 8 * 8, 4 * 4]
    side = [32, 16, 8, 4]
    time_dim, context = 4 * c, 4 * c
    layers = []

    l = Layer("conv_in")
    l.mem(px[0] * 3, px[0] * 3)  # channels-first image to channels last
    l.conv(px[0], 3, c)
    l.params += c * time_dim + time_dim + time_dim * time_dim + time_dim  # time-embedding MLP
    layers.append((l, [side[0], side[0], c], [], []))

    for lvl in range(3):  # down levels with a transformer and a stride-2 convolution
        l = Layer(f"down{lvl}")
        cin = c if lvl == 0 else chans[lvl - 1]
        resnet(l, px[lvl], cin, chans[lvl], time_dim)
        transformer(l, px[lvl], chans[lvl], context)
        l.conv(px[lvl + 1], chans[lvl], chans[lvl], pixels_in=px[lvl])
        reader = 11 - lvl
        sides = [{"shape": [side[lvl], side[lvl], chans[lvl]], "to": [reader]}]
        layers.append((l, [side[lvl + 1], side[lvl + 1], chans[lvl]], [8] if lvl == 2 else [], sides))

    l = Layer("down3")
    resnet(l, px[3], chans[2], chans[3], time_dim)
    layers.append((l, [4, 4, chans[3]], [7], []))

    l = Layer("mid0")
    resnet(l, px[3], chans[3], chans[3], time_dim)
    transformer(l, px[3], chans[3], context)
    layers.append((l, [4, 4, chans[3]], [], []))
    l = Layer("mid1")
    resnet(l, px[3], chans[3], chans[3], time_dim)
    layers.append((l, [4, 4, chans[3]], [], []))

    for i, skip in enumerate([chans[3], chans[2]]):  # up level 3: joins down3's and down2's outputs
        l = Layer(f"up3_{i}")
        l.mem(px[3] * (chans[3] + skip), px[3] * (chans[3] + skip))
        resnet(l, px[3], chans[3] + skip, chans[3], time_dim)
        layers.append((l, [4, 4, chans[3]], [], []))

    prev = chans[3]
    for lvl in (2, 1, 0):  # up levels with a transformer
        l = Layer(f"up{lvl}")
        l.mem(px[lvl + 1] * prev, px[lvl] * prev)  # nearest upsampling
        l.conv(px[lvl], prev, prev)
        l.mem(px[lvl] * (prev + chans[lvl]), px[lvl] * (prev + chans[lvl]))  # join the skip
        resnet(l, px[lvl], prev + chans[lvl], chans[lvl], time_dim)
        transformer(l, px[lvl], chans[lvl], context)
        layers.append((l, [side[lvl], side[lvl], chans[lvl]], [], []))
        prev = chans[lvl]

    l = Layer("conv_out")
    l.norm(px[0], c)
    l.conv(px[0], c, 4)
    l.mem(2 * px[0] * 4, px[0])  # squared error against the target
    layers.append((l, [side[0], side[0], 4], [], []))
    return layers


def model(c, name):
    layers = unet_layers(c)
    total = sum(l.params for l, *_ in layers)
    out = {
        "format": "meshsim.model/1",
        "name": name,
        "description": (
            f"Convolutional U-Net of Alpa's end-to-end benchmark (the MLSys'23 U-Transformer): image 32 x 32, "
            f"base channels {c}, levels of {c}/{2 * c}/{4 * c}/{4 * c} channels, spatial transformers of 8 "
            f"heads with a 16-token context, f32, {total / 1e6:.1f}M parameters; 13 pipeline layers with "
            f"their kernels (convolutions as implicit GEMMs). Written by tools/unet_model.py."),
        "kind": "layers",
        "dtype": "f32",
        "layers": [],
    }
    for l, shape, skip_to, sides in layers:
        entry = {
            "name": l.name,
            "params": f"{l.params * E}B",
            "activation": f"{l.saved * E}B",
            "output_shape": shape,
        }
        if skip_to:
            entry["skip_to"] = skip_to
        if sides:
            entry["side_outputs"] = sides
        entry["kernels"] = {"gemms": l.gemms, "memory": l.memory, "allreduces": l.allreduces}
        out["layers"].append(entry)
    return out


def main():
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) % HEADS != 0:
        sys.exit(f"usage: {sys.argv[0]} CHANNELS NAME  (CHANNELS a multiple of {HEADS}, e.g. 320)")
    print(json.dumps(model(int(sys.argv[1]), sys.argv[2]), indent=1))


if __name__ == "__main__":
    main()
