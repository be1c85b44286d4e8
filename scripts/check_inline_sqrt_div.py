"""Checks on the GPU that the written-out inline paths of `sqrt.rn.f32` and `div.rn.f32` (cuda-std
`math.rs`: `sqrt_rn_f32_inline`, `div_rn_f32_inline`, used by the f32 exact n-body kernels) give
the instructions' own results in the ranges where lockstep takes them.

The same PTX instructions as the Rust functions emit (inline asm: `rsqrt.approx.ftz.f32` /
`rcp.approx.ftz.f32` seeds, `mul.rn.f32`, `fma.rn.f32`), compared bit for bit with `sqrt.rn.f32`
and `div.rn.f32`:

- square root: every f32 in the range (`bits − 0x0d00_0000 ≤ 0x727f_ffff`), about 1.9e9 inputs;
- division: every pair of significands with both operands in [1, 2) (2^46 pairs; the range
  argument reduces every other in-range pair to one of these), plus 2^32 pairs with random signs,
  significands and exponent fields in 67..=186, plus every significand of `a` against 1,024
  significands of `b` at the four corners of the exponent range.

The kernels below mirror the two Rust functions' PTX (the module's `nbody_shared_f32` shows it:
`rsqrt.approx.ftz.f32`, `mul.rn.f32`, `neg.f32`, `fma.rn.f32`; `rcp.approx.ftz.f32`, `neg.f32`,
five `fma.rn.f32`): a change to either sequence must be made here too.

Usage (on the GPU machine): python3 scripts/check_inline_sqrt_div.py [--quick]
(`--quick`: 1/64 of the significand pairs). Exit status 0 when nothing differs.
"""

import argparse
import sys
import time

import cupy as cp
import numpy as np

SRC = r"""
__device__ __forceinline__ float rsq_ftz(float x) { float r; asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
__device__ __forceinline__ float rcp_ftz(float x) { float r; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
__device__ __forceinline__ float fma_rn(float a, float b, float c) { float r; asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c)); return r; }
__device__ __forceinline__ float mul_rn(float a, float b) { float r; asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ float neg(float a) { float r; asm("neg.f32 %0, %1;" : "=f"(r) : "f"(a)); return r; }
__device__ __forceinline__ float sqrt_rn(float a) { float r; asm("sqrt.rn.f32 %0, %1;" : "=f"(r) : "f"(a)); return r; }
__device__ __forceinline__ float div_rn(float a, float b) { float r; asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }

__device__ __forceinline__ float sqrt_inline(float x) {
    float y = rsq_ftz(x);
    float s = mul_rn(x, y);
    float h = mul_rn(y, 0.5f);
    return fma_rn(fma_rn(neg(s), s, x), h, s);
}

__device__ __forceinline__ float div_inline(float a, float b) {
    float r = rcp_ftz(b);
    float nb = neg(b);
    float r1 = fma_rn(r, fma_rn(nb, r, 1.0f), r);
    float q0 = fma_rn(a, r1, 0.0f);
    return fma_rn(r1, fma_rn(nb, q0, a), q0);
}

__device__ void report(unsigned long long *bad, unsigned int a, unsigned int b) {
    if (atomicAdd(bad, 1ULL) == 0ULL) { bad[1] = a; bad[2] = b; }
}

extern "C" __global__ void sqrt_all(unsigned int lo, unsigned long long count, unsigned long long *bad) {
    for (unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; k < count;
         k += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned int u = lo + (unsigned int)k;
        float x = __uint_as_float(u);
        if (__float_as_uint(sqrt_inline(x)) != __float_as_uint(sqrt_rn(x))) report(bad, u, 0);
    }
}

// Thread (i, jb): a = significand a0 + i in [1, 2), b = every significand of its block of
// 1,024 (step `stride` through them).
extern "C" __global__ void div_sig(unsigned int a0, unsigned int stride, unsigned long long *bad) {
    unsigned int i = a0 + blockIdx.y;
    unsigned int jb = blockIdx.x * blockDim.x + threadIdx.x;  // block of 1,024 b significands
    float a = __uint_as_float(0x3f800000u | i);
    unsigned int j0 = jb * 1024u;
    for (unsigned int j = j0; j < j0 + 1024u; j += stride) {
        float b = __uint_as_float(0x3f800000u | j);
        if (__float_as_uint(div_inline(a, b)) != __float_as_uint(div_rn(a, b))) report(bad, __float_as_uint(a), __float_as_uint(b));
    }
}

__device__ __forceinline__ unsigned long long mix(unsigned long long z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Random signs, significands and exponent fields 67..=186 for both operands.
extern "C" __global__ void div_random(unsigned long long seed, unsigned long long count, unsigned long long *bad) {
    for (unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; k < count;
         k += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long z = mix(seed ^ mix(k));
        unsigned int ua = ((unsigned int)(z >> 63) << 31) | ((67u + (unsigned int)((z >> 23) % 120u)) << 23) | ((unsigned int)z & 0x7fffffu);
        unsigned long long w = mix(z);
        unsigned int ub = ((unsigned int)(w >> 63) << 31) | ((67u + (unsigned int)((w >> 23) % 120u)) << 23) | ((unsigned int)w & 0x7fffffu);
        float a = __uint_as_float(ua), b = __uint_as_float(ub);
        if (__float_as_uint(div_inline(a, b)) != __float_as_uint(div_rn(a, b))) report(bad, ua, ub);
    }
}

// The check's own check: the sequence without its last correction (`q0`) must differ somewhere.
extern "C" __global__ void div_random_uncorrected(unsigned long long seed, unsigned long long count, unsigned long long *bad) {
    for (unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; k < count;
         k += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long z = mix(seed ^ mix(k));
        unsigned int ua = ((67u + (unsigned int)((z >> 23) % 120u)) << 23) | ((unsigned int)z & 0x7fffffu);
        unsigned long long w = mix(z);
        unsigned int ub = ((67u + (unsigned int)((w >> 23) % 120u)) << 23) | ((unsigned int)w & 0x7fffffu);
        float a = __uint_as_float(ua), b = __uint_as_float(ub);
        float r = rcp_ftz(b);
        float q0 = fma_rn(a, fma_rn(r, fma_rn(neg(b), r, 1.0f), r), 0.0f);
        if (__float_as_uint(q0) != __float_as_uint(div_rn(a, b))) report(bad, ua, ub);
    }
}

// Every significand of a (exponent field ea) against 1,024 significands of b (field eb).
extern "C" __global__ void div_corner(unsigned int ea, unsigned int eb, unsigned long long *bad) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (1u << 23)) return;
    float a = __uint_as_float((ea << 23) | i);
    for (unsigned int j = 0; j < (1u << 23); j += 8191u) {
        float b = __uint_as_float((eb << 23) | j);
        if (__float_as_uint(div_inline(a, b)) != __float_as_uint(div_rn(a, b))) report(bad, __float_as_uint(a), __float_as_uint(b));
    }
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1/64 of the significand pairs")
    args = ap.parse_args()
    mod = cp.RawModule(code=SRC, options=("--fmad=false",))
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"GPU: {name}")
    bad = cp.zeros(3, dtype=cp.uint64)
    failed = False

    def check(what, n):
        nonlocal failed, bad
        cp.cuda.runtime.deviceSynchronize()
        b = cp.asnumpy(bad)
        status = "OK" if b[0] == 0 else f"DIFFER: {b[0]} (first a = 0x{int(b[1]):08x}, b = 0x{int(b[2]):08x})"
        print(f"{what}: {n:.4g} inputs, {status}")
        failed |= b[0] != 0
        bad = cp.zeros(3, dtype=cp.uint64)

    t = time.time()
    lo, hi = 0x0D000000, 0x7F7FFFFF
    mod.get_function("sqrt_all")((132 * 64,), (256,), (np.uint32(lo), np.uint64(hi - lo + 1), bad))
    check("sqrt, every f32 in [2^-101, max]", hi - lo + 1)

    stride = 64 if args.quick else 1
    step = 1 << 12  # a significands per launch
    for a0 in range(0, 1 << 23, step):
        mod.get_function("div_sig")(((1 << 23) // 1024 // 256, step), (256,), (np.uint32(a0), np.uint32(stride), bad))
        if a0 % (1 << 20) == 0:
            cp.cuda.runtime.deviceSynchronize()
            print(f"  division, significands: {a0 / (1 << 23):.0%} after {time.time() - t:.0f} s", flush=True)
    check(f"division, significand pairs in [1, 2) (every {stride}th b)", 2.0**46 / stride)

    n = 1 << 32
    mod.get_function("div_random")((132 * 64,), (256,), (np.uint64(12345), np.uint64(n), bad))
    check("division, random in-range operands (signs, exponent fields 67..=186)", n)

    mod.get_function("div_random_uncorrected")((132 * 64,), (256,), (np.uint64(12345), np.uint64(1 << 24), bad))
    cp.cuda.runtime.deviceSynchronize()
    caught = int(cp.asnumpy(bad)[0])
    print(f"the check itself: the sequence without its last correction differs in {caught} of {1 << 24} pairs (must be > 0)")
    failed |= caught == 0
    bad = cp.zeros(3, dtype=cp.uint64)

    for ea in (67, 186):
        for eb in (67, 186):
            mod.get_function("div_corner")(((1 << 23) // 256,), (256,), (np.uint32(ea), np.uint32(eb), bad))
            check(f"division, corner: exponent fields a {ea}, b {eb}", (1 << 23) * 1025)
    print(f"total {time.time() - t:.1f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
