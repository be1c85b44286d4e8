"""Peer for lockstep's n-body: the tiled all-pairs force kernel a user would write (GPU Gems 3,
ch. 31) as a CuPy RawKernel, f32 and f64, in two modes like lockstep's:

  fast  - FMA contraction on, rsqrt (rsqrtf in f32): acc += d * m * rsqrt(r2)^3
          (--ftz: compiled with --ftz=true, subnormals flushed as --use_fast_math would)
  exact - no FMA (--fmad=false), correctly rounded sqrt and division: acc += d * (m / (r2*sqrt(r2)))

with lockstep's softening r2 = dx^2 + dy^2 + dz^2 + eps^2 (eps = 0.01, the CLI bench's value).
One thread per body i; the block stages blockDim.x bodies in shared memory per tile (the last
tile padded with zero-mass bodies, so every N works); the j = i term adds 0 (softened), so the
kernel counts N^2 interactions like lockstep's benchmark. For every (N, precision, mode) the
block is the fastest of 64/128/256/512 (a short trial each), then timed: CUDA-event median of
`runs` timed runs after warm-up, each of `--batch` launches back to back between two events
(default 1). interactions/s = batch·N^2 / median time of a run.

Before timing, each kernel is checked against a numpy float64 all-pairs result at N = 500
(a partial tile): the max error relative to the largest |a| is printed; the script stops with
exit status 1 if it exceeds 1e-4 (f32) or 1e-10 (f64).

Usage: python3 bench/peers/nbody_peer.py [--n 1024,4096,16384,65536,262144] [--runs 11]
                                         [--batch 1] [--ftz] [--csv FILE]
--csv writes `n,prec,mode,rate,batch` lines for `lockstep bench nbody throughput --peer FILE`
(which refuses a file whose batch differs from its own `--batch`).
"""
import argparse
import sys

import cupy as cp
import numpy as np

EPS = 0.01
BLOCKS = (64, 128, 256, 512)

SOURCE = r"""
struct __align__(16) REAL4 { REAL x, y, z, w; };

extern "C" __global__ void forces(const REAL4* __restrict__ pos, REAL4* __restrict__ acc, int n, REAL eps2) {
    extern __shared__ __align__(16) unsigned char raw[];
    REAL4* tile = reinterpret_cast<REAL4*>(raw);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    REAL4 zero = {0, 0, 0, 0};
    REAL4 pi = i < n ? pos[i] : zero;
    REAL ax = 0, ay = 0, az = 0;
    for (int base = 0; base < n; base += blockDim.x) {
        int j = base + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos[j] : zero;
        __syncthreads();
        #pragma unroll 8
        for (int k = 0; k < blockDim.x; ++k) {
            REAL4 pj = tile[k];
            REAL dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
            REAL r2 = dx * dx + dy * dy + dz * dz + eps2;
#ifdef FAST
            REAL inv = RSQRT(r2);
            REAL s = pj.w * (inv * inv * inv);
#else
            REAL s = pj.w / (r2 * sqrt(r2));
#endif
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        __syncthreads();
    }
    if (i < n) {
        REAL4 a = {ax, ay, az, 0};
        acc[i] = a;
    }
}
"""


def kernel(prec, mode, ftz=False):
    real = "float" if prec == "f32" else "double"
    src = SOURCE.replace("REAL4", "body").replace("REAL", real)
    src = src.replace("RSQRT", "rsqrtf" if prec == "f32" else "rsqrt")
    options = ("-DFAST",) if mode == "fast" else ("--fmad=false",)
    if ftz and mode == "fast":
        options += ("--ftz=true",)
    return cp.RawKernel(src, "forces", options=options)


def bodies(n, dtype, seed=1):
    """A Plummer-like clump: positions in a unit-ish ball, masses 1/n (x, y, z, m per body)."""
    rng = np.random.default_rng(seed)
    p = np.empty((n, 4), dtype=np.float64)
    p[:, :3] = rng.standard_normal((n, 3)) * 0.5
    p[:, 3] = 1.0 / n
    return p.astype(dtype)


def reference(p):
    """numpy float64 all-pairs acceleration (G = 1), the same softening, j = i skipped."""
    x = p[:, :3].astype(np.float64)
    m = p[:, 3].astype(np.float64)
    d = x[None, :, :] - x[:, None, :]
    r2 = (d * d).sum(-1) + EPS * EPS
    s = m[None, :] / (r2 * np.sqrt(r2))
    np.fill_diagonal(s, 0.0)
    return (d * s[:, :, None]).sum(1)


def launch(k, block, pos, acc, n, eps2):
    grid = (n + block - 1) // block
    k((grid,), (block,), (pos, acc, np.int32(n), eps2), shared_mem=block * pos.itemsize * 4)


def time_ms(k, block, pos, acc, n, eps2, runs, warmup, batch=1):
    """Median milliseconds of one timed run of `batch` launches back to back."""
    for _ in range(warmup):
        launch(k, block, pos, acc, n, eps2)
    times = []
    for _ in range(runs):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        for _ in range(batch):
            launch(k, block, pos, acc, n, eps2)
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", default="1024,4096,16384,65536,262144")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--batch", type=int, default=1, help="launches per timed run, back to back")
    ap.add_argument("--ftz", action="store_true",
                    help="fast mode compiled with --ftz=true (subnormals flushed, as --use_fast_math)")
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    if args.batch < 1 or args.runs < 1:
        ap.error("--batch and --runs must be at least 1")
    ns = [int(v) for v in args.n.split(",") if v]
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    ftz = "; fast mode with --ftz=true" if args.ftz else ""
    print(f"peer: tiled all-pairs CuPy RawKernel (block = best of {BLOCKS}) on {name}; eps = {EPS}{ftz}")
    print(f"interactions/s = {args.batch}·N^2 / median time of {args.batch} force evaluation(s) back to back")
    ok = True
    rows = []
    for prec, dtype in (("f32", np.float32), ("f64", np.float64)):
        eps2 = dtype(EPS * EPS)
        for mode in ("exact", "fast"):
            k = kernel(prec, mode, args.ftz)
            # Validation at a partial tile.
            p = bodies(500, dtype, seed=3)
            want = reference(p)
            pos = cp.asarray(p)
            acc = cp.zeros_like(pos)
            for block in BLOCKS:
                launch(k, block, pos, acc, 500, eps2)
                got = cp.asnumpy(acc)[:, :3].astype(np.float64)
                err = np.abs(got - want).max() / np.abs(want).max()
                tol = 1e-4 if prec == "f32" else 1e-10
                if not err <= tol:
                    ok = False
                    print(f"FAIL {prec} {mode} block {block}: max relative error {err:.3e} > {tol:.0e}")
            print(f"check {prec} {mode}: max error / max|a| = {err:.3e} (numpy f64 all-pairs, N = 500)")
            for n in ns:
                pos = cp.asarray(bodies(n, dtype))
                acc = cp.zeros_like(pos)
                trial = {b: time_ms(k, b, pos, acc, n, eps2, 3, 1, args.batch) for b in BLOCKS}
                best = min(trial, key=trial.get)
                ms = time_ms(k, best, pos, acc, n, eps2, args.runs, 2, args.batch)
                rate = args.batch * n * n / (ms * 1e-3)
                rows.append((n, prec, mode, best, ms, rate))
    print(f"{'N':>8} {'prec':>4} {'mode':>6} {'block':>5} {'ms':>10} {'inter./s':>12}")
    for n, prec, mode, block, ms, rate in rows:
        print(f"{n:>8} {prec:>4} {mode:>6} {block:>5} {ms:>10.4f} {rate:>12.3e}")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("n,prec,mode,rate,batch\n")
            for n, prec, mode, _, _, rate in rows:
                f.write(f"{n},{prec},{mode},{rate:.6e},{args.batch}\n")
        print(f"wrote {args.csv}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
