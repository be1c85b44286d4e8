"""Probe: how many `MUFU.RSQ` (rsqrt.approx.ftz.f32) and how many FP32 FFMA an SM retires per
clock, measured on the GPU at hand — the two rates that bound an all-pairs n-body term with one
reciprocal square root and twelve FP32 operations per interaction (lockstep's f32 fast term; the
peer's, `bench/peers/nbody_peer.py`, has a few more) — and the two together: `probe_mix` runs one rsqrt
and `--fmas` dependent FFMAs per chain step (default twelve, the term's ratio; a list sweeps) and
reports groups per SM per clock and the cycles one warp's group takes on its scheduler.

Each kernel runs `CHAINS` independent chains per thread for `iters` iterations (enough warps to
hide every latency: 8 blocks of 256 threads per SM), timed with CUDA events (median of `runs`
after a warm-up); the rate is operations / (time · SMs · SM clock). The SM clock is read from
the device attributes (the boost clock), so the figure per clock assumes the card runs at it
(check with `nvidia-smi --query-gpu=clocks.sm` while it runs).

Usage: python3 bench/peers/mufu_rate.py [--iters 4096] [--runs 7] [--fmas 4,8,12,16]
"""
import argparse

import cupy as cp

CHAINS = 8

SOURCE = r"""
extern "C" __global__ void probe_rsq(float* out, int iters) {
    float x[8];
    for (int k = 0; k < 8; ++k) x[k] = 1.0f + 1e-3f * (threadIdx.x + k);
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            float y;
            asm volatile("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x[k]));
            x[k] = y;
        }
    }
    float s = 0;
    for (int k = 0; k < 8; ++k) s += x[k];
    if (s == 12345.0f) out[0] = s;
}

extern "C" __global__ void probe_mix(float* out, int iters) {
    float x[8], z[8];
    float b = 1e-3f * threadIdx.x;
    for (int k = 0; k < 8; ++k) { x[k] = 1.0f + 1e-3f * (threadIdx.x + k); z[k] = 0.5f; }
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            float y;
            asm volatile("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x[k]));
            x[k] = y;
            #pragma unroll
            for (int f = 0; f < NF; ++f) z[k] = fmaf(z[k], y, b);
        }
    }
    float s = 0;
    for (int k = 0; k < 8; ++k) s += x[k] + z[k];
    if (s == 12345.0f) out[0] = s;
}

extern "C" __global__ void probe_ffma(float* out, int iters) {
    float x[8];
    float a = 0.999f, b = 1e-3f * threadIdx.x;
    for (int k = 0; k < 8; ++k) x[k] = 1.0f + 1e-3f * (threadIdx.x + k);
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = fmaf(x[k], a, b);
    }
    float s = 0;
    for (int k = 0; k < 8; ++k) s += x[k];
    if (s == 12345.0f) out[0] = s;
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=4096)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--fmas", type=lambda v: [int(x) for x in v.split(",")], default=[12],
                    help="FFMAs per rsqrt in probe_mix, comma-separated (default 12, the n-body term's)")
    args = ap.parse_args()
    dev = cp.cuda.Device()
    attrs = dev.attributes
    sms = attrs["MultiProcessorCount"]
    clock_hz = attrs["ClockRate"] * 1e3
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    out = cp.zeros(1, dtype=cp.float32)
    block, grid = 256, sms * 8
    print(f"{name}: {sms} SMs, boost clock {clock_hz / 1e9:.3f} GHz; grid {grid} x {block}, "
          f"{CHAINS} chains x {args.iters} iterations per thread")
    runs = [("probe_rsq", 12), ("probe_ffma", 12)] + [("probe_mix", f) for f in args.fmas]
    for kname, nf in runs:
        k = cp.RawModule(code=f"#define NF {nf}\n" + SOURCE).get_function(kname)
        k((grid,), (block,), (out, cp.int32(args.iters)))
        cp.cuda.runtime.deviceSynchronize()
        times = []
        for _ in range(args.runs):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            k((grid,), (block,), (out, cp.int32(args.iters)))
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
        t = sorted(times)[len(times) // 2]
        ops = grid * block * CHAINS * args.iters
        per_clock = ops / t / sms / clock_hz
        if kname == "probe_mix":
            what = f"groups of one rsqrt and {nf} fma"
            extra = f"  ({4 * 32 / per_clock:.2f} cycles per warp-group per scheduler)"
        else:
            what, extra = "ops", ""
        print(f"{kname:10s} {t * 1e3:9.3f} ms  {ops / t:.3e} {what}/s  {per_clock:6.2f} per SM per clock{extra}")


if __name__ == "__main__":
    main()
