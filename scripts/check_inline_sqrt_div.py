"""Checks on the GPU that the written-out inline paths of `sqrt.rn` and `div.rn` (cuda-std
`math.rs`: `sqrt_rn_f32_inline`, `div_rn_f32_inline`, `sqrt_rn_f64_inline`, `div_rn_f64_inline`,
used by the exact n-body kernels) give the instructions' own results in the ranges where lockstep
takes them.

The same PTX instructions as the Rust functions emit (inline asm: `rsqrt.approx.ftz.f32` /
`rcp.approx.ftz.f32` seeds, `mul.rn.f32`, `fma.rn.f32`), compared bit for bit with `sqrt.rn.f32`
and `div.rn.f32`:

- square root: every f32 in the range (`bits − 0x0d00_0000 ≤ 0x727f_ffff`), about 1.9e9 inputs;
- division: every pair of significands with both operands in [1, 2) (2^46 pairs; the range
  argument reduces every other in-range pair to one of these), plus 2^32 pairs with random signs,
  significands and exponent fields in 67..=186, plus every significand of `a` against 1,024
  significands of `b` at the four corners of the exponent range.

f64 (2^64 inputs cannot all be tried; there the argument is that the sequence is ptxas's own
inline path and the range implies ptxas's tests, which these runs check against the instruction):

- square root: 2^38 random inputs over the whole range (exponent fields 53..=2046), every one of
  the 2^20 upper significand patterns with random lower words at exponent fields 53, 54, 1022,
  1023, 2045 and 2046, and the range's two ends;
- division: 2^38 random pairs (signs, significands, exponent fields 523..=1522), 2^26 random
  significand pairs at each of the four corners of the exponent range, and 2^26 pairs whose
  significands share long runs of ones or zeros (the quotients nearest a rounding boundary).

The kernels below mirror the Rust functions' PTX (the module's `nbody_shared_f32` shows it:
`rsqrt.approx.ftz.f32`, `mul.rn.f32`, `neg.f32`, `fma.rn.f32`; `rcp.approx.ftz.f32`, `neg.f32`,
five `fma.rn.f32`; `nbody_shared_f64` the f64 ones: `rsqrt.approx.ftz.f64` with the lower word
replaced, `mul.rn.f64`, `fma.rn.f64`, the upper word less `0x0010_0000`; `rcp.approx.ftz.f64` with
the lower word 1, five `fma.rn.f64`, `mul.rn.f64`, two `fma.rn.f64`): a change to any sequence must
be made here too.

Usage (on the GPU machine): python3 scripts/check_inline_sqrt_div.py [--quick] [--f64-only]
(`--quick`: 1/64 of the f32 significand pairs). Exit status 0 when nothing differs.
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

__device__ __forceinline__ unsigned long long mix(unsigned long long z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

__device__ void report(unsigned long long *bad, unsigned long long a, unsigned long long b) {
    if (atomicAdd(bad, 1ULL) == 0ULL) { bad[1] = a; bad[2] = b; }
}

__device__ __forceinline__ double rsq_ftz64(double x) { double r; asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x)); return r; }
__device__ __forceinline__ double rcp_ftz64(double x) { double r; asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x)); return r; }
__device__ __forceinline__ double fma64(double a, double b, double c) { double r; asm("fma.rn.f64 %0, %1, %2, %3;" : "=d"(r) : "d"(a), "d"(b), "d"(c)); return r; }
__device__ __forceinline__ double mul64(double a, double b) { double r; asm("mul.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b)); return r; }
__device__ __forceinline__ double neg64(double a) { double r; asm("neg.f64 %0, %1;" : "=d"(r) : "d"(a)); return r; }
__device__ __forceinline__ double sqrt64(double a) { double r; asm("sqrt.rn.f64 %0, %1;" : "=d"(r) : "d"(a)); return r; }
__device__ __forceinline__ double div64(double a, double b) { double r; asm("div.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b)); return r; }
__device__ __forceinline__ unsigned long long bits64(double x) { return (unsigned long long)__double_as_longlong(x); }

// `sqrt_rn_f64_inline`; `correct = false` drops the last correction (the check's own check).
__device__ __forceinline__ double sqrt_inline64(double x, bool correct) {
    int hx = __double2hiint(x);
    double y = __hiloint2double(__double2hiint(rsq_ftz64(x)), hx + (int)0xfcb00000u);
    double e = fma64(x, mul64(y, neg64(y)), 1.0);
    double y1 = fma64(fma64(e, 0.375, 0.5), mul64(e, y), y);
    double s = mul64(x, y1);
    if (!correct) return s;
    double h = __hiloint2double(__double2hiint(y1) - 0x00100000, __double2loint(y1));
    return fma64(fma64(s, neg64(s), x), h, s);
}

// `div_rn_f64_inline`; `correct = false` returns `q0`.
__device__ __forceinline__ double div_inline64(double a, double b, bool correct) {
    double y = __hiloint2double(__double2hiint(rcp_ftz64(b)), 1);
    double nb = neg64(b);
    double t = fma64(nb, y, 1.0);
    double y1 = fma64(y, fma64(t, t, t), y);
    double y2 = fma64(y1, fma64(nb, y1, 1.0), y1);
    double q0 = mul64(a, y2);
    if (!correct) return q0;
    return fma64(y2, fma64(nb, q0, a), q0);
}

// A random f64 with exponent field in [e0, e0 + span) and a random sign when `signed_`.
__device__ __forceinline__ unsigned long long rand64(unsigned long long z, unsigned int e0, unsigned int span, bool signed_);

// Square roots of random inputs (exponent fields 53..=2046), or when `pattern`, input k's upper
// 20 significand bits are k mod 2^20 at exponent field `e`, its lower 32 random.
extern "C" __global__ void sqrt64_check(unsigned long long seed, unsigned long long count, unsigned int e, int pattern, int correct, unsigned long long *bad) {
    for (unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; k < count;
         k += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long z = mix(seed ^ mix(k));
        unsigned long long u = pattern ? (((unsigned long long)e << 52) | ((k & 0xfffffULL) << 32) | (z & 0xffffffffULL))
                                       : rand64(z, 53u, 1994u, false);
        double x = __longlong_as_double((long long)u);
        if (bits64(sqrt_inline64(x, correct != 0)) != bits64(sqrt64(x))) report(bad, u, 0);
    }
}

// Quotients of random pairs: exponent fields in [ea, ea + span) and [eb, eb + span), random
// signs; when `runs`, each significand is a run of ones or zeros of random length and position
// over a random background.
extern "C" __global__ void div64_check(unsigned long long seed, unsigned long long count, unsigned int ea, unsigned int eb, unsigned int span, int runs, int correct, unsigned long long *bad) {
    for (unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; k < count;
         k += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long z = mix(seed ^ mix(k)), w = mix(z);
        unsigned long long ua = rand64(z, ea, span, true), ub = rand64(w, eb, span, true);
        if (runs) {
            unsigned long long r1 = mix(w), r2 = mix(r1);
            unsigned long long m = 0xfffffffffffffULL;
            unsigned long long ra = (m >> (r1 & 63)) << ((r1 >> 6) & 31), rb = (m >> (r2 & 63)) << ((r2 >> 6) & 31);
            ua = (ua & ~m) | (((r1 >> 12) & 1) ? (ua | ra) : (ua & ~ra)) & m;
            ub = (ub & ~m) | (((r2 >> 12) & 1) ? (ub | rb) : (ub & ~rb)) & m;
        }
        double a = __longlong_as_double((long long)ua), b = __longlong_as_double((long long)ub);
        if (bits64(div_inline64(a, b, correct != 0)) != bits64(div64(a, b))) report(bad, ua, ub);
    }
}

extern "C" __global__ void sqrt64_list(const unsigned long long *u, unsigned int n, unsigned long long *bad) {
    unsigned int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    double x = __longlong_as_double((long long)u[k]);
    if (bits64(sqrt_inline64(x, true)) != bits64(sqrt64(x))) report(bad, u[k], 0);
}

extern "C" __global__ void div64_list(const unsigned long long *ua, const unsigned long long *ub, unsigned int n, unsigned long long *bad) {
    unsigned int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    double a = __longlong_as_double((long long)ua[k]), b = __longlong_as_double((long long)ub[k]);
    if (bits64(div_inline64(a, b, true)) != bits64(div64(a, b))) report(bad, ua[k], ub[k]);
}

__device__ __forceinline__ unsigned long long rand64(unsigned long long z, unsigned int e0, unsigned int span, bool signed_) {
    unsigned long long w = mix(z ^ 0x5851f42d4c957f2dULL);
    unsigned long long sign = signed_ ? (w >> 63) << 63 : 0ULL;
    return sign | ((unsigned long long)(e0 + (unsigned int)((w >> 20) % span)) << 52) | (z & 0xfffffffffffffULL);
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
    ap.add_argument("--quick", action="store_true", help="1/64 of the f32 significand pairs")
    ap.add_argument("--f64-only", action="store_true", help="only the f64 checks")
    args = ap.parse_args()
    mod = cp.RawModule(code=SRC, options=("--fmad=false",))
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"GPU: {name}")
    bad = cp.zeros(3, dtype=cp.uint64)
    failed = False

    def check(what, n, width=8):
        nonlocal failed, bad
        cp.cuda.runtime.deviceSynchronize()
        b = cp.asnumpy(bad)
        first = f"first a = 0x{int(b[1]):0{width}x}, b = 0x{int(b[2]):0{width}x}"
        status = "OK" if b[0] == 0 else f"DIFFER: {b[0]} ({first})"
        print(f"{what}: {n:.4g} inputs, {status}", flush=True)
        failed |= b[0] != 0
        bad = cp.zeros(3, dtype=cp.uint64)

    def must_differ(what, n):
        nonlocal failed, bad
        cp.cuda.runtime.deviceSynchronize()
        caught = int(cp.asnumpy(bad)[0])
        print(f"the check itself: {what} differs in {caught} of {n} inputs (must be > 0)", flush=True)
        failed |= caught == 0
        bad = cp.zeros(3, dtype=cp.uint64)

    t = time.time()
    grid, block = (132 * 64,), (256,)
    if not args.f64_only:
        lo, hi = 0x0D000000, 0x7F7FFFFF
        mod.get_function("sqrt_all")(grid, block, (np.uint32(lo), np.uint64(hi - lo + 1), bad))
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
        mod.get_function("div_random")(grid, block, (np.uint64(12345), np.uint64(n), bad))
        check("division, random in-range operands (signs, exponent fields 67..=186)", n)

        mod.get_function("div_random_uncorrected")(grid, block, (np.uint64(12345), np.uint64(1 << 24), bad))
        must_differ("the f32 division without its last correction", 1 << 24)

        for ea in (67, 186):
            for eb in (67, 186):
                mod.get_function("div_corner")(((1 << 23) // 256,), (256,), (np.uint32(ea), np.uint32(eb), bad))
                check(f"division, corner: exponent fields a {ea}, b {eb}", (1 << 23) * 1025)

    # f64: exponent fields 53..=2046 for the square root, 523..=1522 for both division operands.
    sqrt64, div64 = mod.get_function("sqrt64_check"), mod.get_function("div64_check")
    u64, u32, i32 = np.uint64, np.uint32, np.int32
    n = 1 << 38
    sqrt64(grid, block, (u64(777), u64(n), u32(0), i32(0), i32(1), bad))
    check("f64 sqrt, random in-range inputs (exponent fields 53..=2046)", n, 16)
    for e in (53, 54, 1022, 1023, 2045, 2046):
        sqrt64(grid, block, (u64(e), u64(1 << 24), u32(e), i32(1), i32(1), bad))
        check(f"f64 sqrt, every upper significand pattern x 16 at exponent field {e}", 1 << 24, 16)
    lo64, top64 = 0x0350000000000000, 0x7FEFFFFFFFFFFFFF
    ends = cp.array([lo64, lo64 + 1, 0x3FF0000000000000, top64 - 1, top64], dtype=cp.uint64)
    mod.get_function("sqrt64_list")((1,), (32,), (ends, u32(ends.size), bad))
    check("f64 sqrt, the range's ends (2^-970, max)", ends.size, 16)
    sqrt64(grid, block, (u64(99), u64(1 << 24), u32(0), i32(0), i32(0), bad))
    must_differ("the f64 square root without its last correction", 1 << 24)

    div64(grid, block, (u64(4242), u64(n), u32(523), u32(523), u32(1000), i32(0), i32(1), bad))
    check("f64 division, random in-range operands (signs, exponent fields 523..=1522)", n, 16)
    for ea in (523, 1522):
        for eb in (523, 1522):
            div64(grid, block, (u64(ea * 7 + eb), u64(1 << 26), u32(ea), u32(eb), u32(1), i32(0), i32(1), bad))
            check(f"f64 division, corner: exponent fields a {ea}, b {eb}", 1 << 26, 16)
    div64(grid, block, (u64(31337), u64(1 << 26), u32(523), u32(523), u32(1000), i32(1), i32(1), bad))
    check("f64 division, significands with long runs of ones or zeros", 1 << 26, 16)
    lo, top = 0x20B0000000000000, 0x5F2FFFFFFFFFFFFF  # 2^-500, the largest below 2^500
    ends = [lo, lo + 1, top - 1, top, 0x3FF0000000000000]
    ends += [u | (1 << 63) for u in ends]
    pa = cp.array([x for x in ends for _ in ends], dtype=cp.uint64)
    pb = cp.array([y for _ in ends for y in ends], dtype=cp.uint64)
    mod.get_function("div64_list")((1,), (128,), (pa, pb, u32(pa.size), bad))
    check("f64 division, every pair of the range's ends", pa.size, 16)
    div64(grid, block, (u64(5), u64(1 << 24), u32(523), u32(523), u32(1000), i32(0), i32(0), bad))
    must_differ("the f64 division without its last correction", 1 << 24)
    print(f"total {time.time() - t:.1f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
