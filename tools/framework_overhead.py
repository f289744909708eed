#!/usr/bin/env python3
"""Measures what an eager framework (PyTorch) adds on the host to the GPU
time of a transformer layer: the per-operation dispatch cost that makes a
thin token slice cost more than its kernels.

For one GPT layer as Megatron-LM writes it (hidden H, A heads, fp16, one
sequence of L tokens, no tensor parallelism), at each L:
  eager    wall time of one pass, the host issuing every operation as the
           framework does (mean over many passes, the queue kept full);
  graph    the same pass replayed from a CUDA graph: the GPU's own time,
           no host work between kernels;
  kernels  the CUDA kernels one pass launches (torch.profiler).
for the forward pass and for forward plus backward. Where eager exceeds
graph, the host, not the GPU, sets the pace: eager / kernels is then the
host's cost per launched kernel. Also the cost of dispatching one tiny
element-wise operation in a loop.

Needs a CUDA GPU and PyTorch (exit status 77, "skipped", without them).
Output: a table on stdout and, with --out,
JSON:
  {"gpu", "torch", "cpu", "hidden", "heads", "dispatch_us",
   "rows": [{"tokens", "pass": "forward"|"forward+backward",
             "eager_us", "graph_us", "kernels"}]}

  python3 tools/framework_overhead.py --out fw.json
"""
import argparse
import json
import platform
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hidden", type=int, default=2048, help="hidden size (default 2048, GPT-3 1B)")
    p.add_argument("--heads", type=int, default=16, help="attention heads (default 16)")
    p.add_argument("--tokens", default="16,32,64,128,256,512,1024,2048",
                   help="comma-separated token counts per pass")
    p.add_argument("--iters", type=int, default=50, help="timed passes per point (default 50)")
    p.add_argument("--out", help="write the JSON here")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless every point has all three figures, the eager pass takes at least "
                        "90 %% of the graph's time and the forward launches 10 to 60 kernels")
    return p.parse_args()


def make_layer(torch, h, a):
    nn = torch.nn
    F = torch.nn.functional

    class Layer(nn.Module):
        """One pre-norm GPT layer, written op by op as Megatron-LM does."""

        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(h)
            self.qkv = nn.Linear(h, 3 * h)
            self.proj = nn.Linear(h, h)
            self.ln2 = nn.LayerNorm(h)
            self.fc1 = nn.Linear(h, 4 * h)
            self.fc2 = nn.Linear(4 * h, h)

        def forward(self, x):  # x: [L, 1, h]
            L = x.shape[0]
            d = h // a
            y = self.ln1(x)
            q, k, v = self.qkv(y).view(L, a, 3 * d).split(d, dim=-1)
            q = q.transpose(0, 1)  # [a, L, d]
            k = k.transpose(0, 1)
            v = v.transpose(0, 1)
            s = torch.baddbmm(torch.empty(a, L, L, dtype=x.dtype, device=x.device), q, k.transpose(1, 2),
                              beta=0.0, alpha=d ** -0.5)
            mask = torch.ones(L, L, device=x.device, dtype=torch.bool).triu(1)
            s = s.masked_fill(mask, -10000.0)
            p = F.dropout(torch.softmax(s, dim=-1), 0.1, self.training)
            c = torch.bmm(p, v).transpose(0, 1).contiguous().view(L, 1, h)
            x = x + F.dropout(self.proj(c), 0.1, self.training)
            y = self.ln2(x)
            y = self.fc2(F.gelu(self.fc1(y)))
            return x + F.dropout(y, 0.1, self.training)

    return Layer()


def timed(torch, fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters * 1e6


def kernel_count(torch, fn):
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    n = 0
    for e in prof.events():
        if getattr(e, "device_type", None) is not None and "CUDA" in str(e.device_type):
            n += 1
    return n


def graph_time(torch, fn, iters):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return timed(torch, g.replay, iters)


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("skipped: no CUDA GPU", file=sys.stderr)
        return 77
    dev = torch.device("cuda")
    torch.manual_seed(0)
    layer = make_layer(torch, args.hidden, args.heads).to(dev).half()
    layer.train()
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    one = torch.zeros(1, device=dev)
    n = 20000
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        one.add_(1.0)
    torch.cuda.synchronize()
    dispatch_us = (time.perf_counter() - t0) / n * 1e6
    result = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cpu": cpu,
              "hidden": args.hidden, "heads": args.heads, "dispatch_us": round(dispatch_us, 3), "rows": []}
    print(f"{result['gpu']}, torch {result['torch']}, {cpu}")
    print(f"tiny element-wise op in a loop: {dispatch_us:.2f} us each")
    print(f"{'tokens':>7} {'pass':>17} {'eager us':>10} {'graph us':>10} {'kernels':>8} {'eager/kernel':>13}")
    for L in [int(t) for t in args.tokens.split(",")]:
        x = torch.randn(L, 1, args.hidden, device=dev, dtype=torch.half, requires_grad=True)
        g = torch.randn_like(x)

        def fwd():
            with torch.no_grad():
                layer(x)

        def fwdbwd():
            layer(x).backward(g)

        for name, fn in (("forward", fwd), ("forward+backward", fwdbwd)):
            row = {"tokens": L, "pass": name}
            try:
                row["eager_us"] = round(timed(torch, fn, args.iters), 2)
                row["kernels"] = kernel_count(torch, fn)
            except Exception as e:  # noqa: BLE001 - report and go on
                row["error"] = f"eager: {e}"
            try:
                row["graph_us"] = round(graph_time(torch, fn, args.iters), 2)
            except Exception as e:  # noqa: BLE001
                row["graph_error"] = str(e)[:200]
            result["rows"].append(row)
            per = row.get("eager_us", 0) / row["kernels"] if row.get("kernels") else float("nan")
            print(f"{L:7d} {name:>17} {row.get('eager_us', float('nan')):10.1f} "
                  f"{row.get('graph_us', float('nan')):10.1f} {row.get('kernels', 0):8d} {per:13.2f}")
            sys.stdout.flush()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    if args.check:
        bad = [r for r in result["rows"] if not all(k in r for k in ("eager_us", "graph_us", "kernels"))
               or r["eager_us"] < 0.9 * r["graph_us"]
               or (r["pass"] == "forward" and not 10 <= r["kernels"] <= 60)]
        for r in bad:
            print(f"check failed: {r}", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
