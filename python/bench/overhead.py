"""Call overhead of the Python module: the Python call (argument checks, worker thread, GIL
release, result handed to numpy) against the same Rust call timed inside Rust with no Python
in between (`_rust_timing_*`), at the paper's problem sizes.

    python python/bench/overhead.py [--device auto|cpu|gpu] [--repeats 5] [--small]

Prints one Markdown row per family: median seconds of each and the overhead in percent
(target: at most 5%), with the date and the device. A program, not a test.
"""

import argparse
import datetime
import statistics
import time

import numpy as np

import lockstep
from lockstep import _native


def median_time(fn, repeats):
    fn()  # warm-up (the GPU's module JIT, page faults)
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="auto")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--small", action="store_true", help="1/64 of the paper sizes (a quick check)")
    a = ap.parse_args()
    info = lockstep.gpu_info()
    device = a.device
    where = info["name"] if info["available"] and device in ("auto", "gpu") else "CPU"
    scale = 64 if a.small else 1
    rows = []

    paths = 1_439_744 // scale
    plan = lockstep.bridge.Plan.uniform(64)
    py = median_time(lambda: plan.generate(paths, seed=1, precision="f32", device=device), a.repeats)
    _native._rust_timing_bridge(plan._plan, paths, "f32", 1, "paths", device, 1)
    rust = statistics.median(_native._rust_timing_bridge(plan._plan, paths, "f32", 1, "paths", device, a.repeats))
    rows.append((f"bridge f32 {paths} paths × 64 steps (Philox)", py, rust))

    n = 10_000_000 // scale
    x = np.random.default_rng(1).normal(size=n)
    py = median_time(lambda: lockstep.histogram.histogram(x, 100, (-4.0, 4.0), device=device), a.repeats)
    _native._rust_timing_histogram(x, -4.0, 4.0, 100, device, 1)
    rust = statistics.median(_native._rust_timing_histogram(x, -4.0, 4.0, 100, device, a.repeats))
    rows.append((f"histogram {n:.0e} f64, 100 bins", py, rust))

    bodies = 65_536 // (8 if a.small else 1)
    steps = 1 if (where == "CPU") else 10
    pos, vel, mass = (v.astype(np.float32) for v in lockstep.nbody.plummer(bodies, seed=1))
    py = median_time(
        lambda: lockstep.nbody.integrate(pos, vel, mass, dt=1e-3, steps=steps, eps=0.01, energy=False, device=device),
        max(1, a.repeats // 2),
    )
    rust = statistics.median(
        _native._rust_timing_nbody(pos, vel, mass, 1.0, 0.01, 1e-3, steps, device, max(1, a.repeats // 2))
    )
    rows.append((f"nbody f32 exact {bodies} bodies × {steps} steps", py, rust))

    today = datetime.date.today().isoformat()
    print(f"| date | device | problem | Python call (s) | Rust call (s) | overhead |")
    print(f"|---|---|---|---|---|---|")
    for name, p, r in rows:
        print(f"| {today} | {where} ({device}) | {name} | {p:.4f} | {r:.4f} | {100 * (p / r - 1):+.1f}% |")


if __name__ == "__main__":
    main()
