"""Peer for lockstep's normals: cuRAND's Philox4x32-10 normals through CuPy's host API.

Usage: python3 bench/peers/curand_normals.py [N] [runs]
N defaults to the bridge benchmark's normal count (65 rows x 1,439,744 paths = 93,583,360).
Prints one line per precision: the median over `runs` CUDA-event timings after 5 warm-ups,
the GPU's name and the write bandwidth the run implies.
"""
import sys

import cupy as cp
from cupy.cuda import curand

n = int(sys.argv[1]) if len(sys.argv) > 1 else 93_583_360
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 50
name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
gen = curand.createGenerator(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
curand.setPseudoRandomGeneratorSeed(gen, 7)
for dtype, fn in ((cp.float32, curand.generateNormal), (cp.float64, curand.generateNormalDouble)):
    out = cp.empty(n, dtype=dtype)
    for _ in range(5):
        fn(gen, out.data.ptr, n, 0.0, 1.0)
    times = []
    for _ in range(runs):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn(gen, out.data.ptr, n, 0.0, 1.0)
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    times.sort()
    ms = times[len(times) // 2]
    gbs = n * out.itemsize / ms / 1e6
    print(f"peer cuRAND Philox normals {out.dtype} n={n}: {ms:.4f} ms median of {runs} ({gbs:.1f} GB/s written) on {name}")
