"""Peers for lockstep's histograms: what a user would call for k equal bins of f64 values.

Usage: python3 bench/peers/histogram_peers.py [--n N] [--ks 1,10,...] [--runs R] [--out FILE]

The input is `lockstep bench histogram`'s: n (default 10^7) uniform f64 in [0, 1) on the GPU.
Peers, each timed with CUDA events (median of R runs after 3 warm-ups), counts checked to sum
to n:
- `cupy.histogram` with CuPy's CUB accelerator (CUB's DeviceHistogram::HistogramEven),
- `cupy.histogram` without accelerators (CuPy's own kernel),
- `torch.histc` (float64 counts),
- `torch.bincount` of `floor(x·k)` (the index computation counted: it is part of the work).
Prints a table and the GPU's name; `--out FILE` writes `k ms` lines of the best peer per k,
for `lockstep bench histogram --peers FILE`.
"""
import argparse
import os

os.environ.setdefault("CUPY_ACCELERATORS", "cub")

import cupy as cp  # noqa: E402
import torch  # noqa: E402
from cupy._core import _accelerator  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=10_000_000)
ap.add_argument("--ks", default="1,10,100,1000,10000,100000,1000000,10000000")
ap.add_argument("--runs", type=int, default=20)
ap.add_argument("--out")
args = ap.parse_args()
ks = [int(k) for k in args.ks.split(",")]
name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()

x = cp.random.default_rng(12345).random(args.n, dtype=cp.float64)
xt = torch.as_tensor(x, device="cuda")


def timed(fn):
    """Median ms of `fn` over args.runs CUDA-event timings on the current stream, and its result."""
    out = None
    for _ in range(3):
        out = fn()
    cp.cuda.Device().synchronize()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        out = fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2], out


def total(counts):
    return int(counts.sum().item()) if hasattr(counts, "item") else int(counts.sum())


# CuPy and torch share the device; both run on their default (legacy) stream, so a torch event
# brackets CuPy's work too.
print(f"GPU: {name}; n = {args.n} uniform f64 in [0,1); median of {args.runs} after 3 warm-ups")
print(f"{'k':>9} {'cupy+cub':>10} {'cupy':>10} {'histc':>10} {'bincount':>10} {'best ms':>10}  best")
best_rows = []
for k in ks:
    row = {}

    def cupy_hist():
        return cp.histogram(x, bins=k, range=(0.0, 1.0))[0]

    _accelerator.set_routine_accelerators(["cub"])
    row["cupy+cub"] = timed(cupy_hist)
    _accelerator.set_routine_accelerators([])
    row["cupy"] = timed(cupy_hist)
    _accelerator.set_routine_accelerators(["cub"])
    row["histc"] = timed(lambda: torch.histc(xt, bins=k, min=0.0, max=1.0))
    row["bincount"] = timed(lambda: torch.bincount((xt * k).long().clamp_(max=k - 1), minlength=k))
    for peer, (ms, counts) in row.items():
        got = total(counts)
        if got != args.n:
            raise SystemExit(f"{peer} at k={k}: counts sum to {got}, not {args.n}")
    best = min(row, key=lambda p: row[p][0])
    best_rows.append((k, row[best][0]))
    cells = " ".join(f"{row[p][0]:>10.4f}" for p in ("cupy+cub", "cupy", "histc", "bincount"))
    print(f"{k:>9} {cells} {row[best][0]:>10.4f}  {best}")
if args.out:
    with open(args.out, "w") as f:
        f.write(f"# best peer ms per k, {name}, n = {args.n}\n")
        for k, ms in best_rows:
            f.write(f"{k} {ms:.5f}\n")
    print(f"wrote {args.out}")
