"""Probe: the memory pattern of lockstep's Himeno sweep, written in CUDA C++ (nvcc through CuPy),
to find which property of a kernel decides how close it streams to the copy bandwidth — the
questions behind #21 target 3 on the H200 (bench/results/himeno-h200-2026-11-28.md).

The kernel `sweep` does what `himeno_jacobi` does per point — the 19-point pressure stencil,
twelve coefficient planes, one store: 56 B per interior point — with the same thread mapping
(k = 1 + x, j = 1 + y, `--planes` consecutive i per thread). Variants (`--variants`, each a
`+`-joined set): `restrict` (every pointer `__restrict__`, the default) or `plain` (none),
`gosa` (lockstep's warp-tree gosa partial per row chunk and plane), `nofma` (no contraction,
`jacobi_point`'s order of operations: lockstep's arithmetic), `nc` (`__ldg` loads), `nounroll`,
`lbN` (`__launch_bounds__(256, N)`). Layouts (`--layouts`): `packed` (rows of `mk` floats back
to back, lockstep's layout) and `padded` (rows of `roundup(mk + 31, 32)` floats, k = 1 on a
128-byte line).

It prints each variant's registers, the median sweep time (CUDA events, after a warm-up), GB/s
at 56 B per interior point and the share of the same run's device-copy bandwidth (a CuPy
device-to-device copy of 1 GiB, read + write). `--ptx DIR` writes each variant's nvrtc output.

Usage: python3 bench/peers/himeno_pattern.py [--sizes M,L] [--planes 8] [--block 128x2]
           [--runs 9] [--layouts packed,padded] [--variants restrict+gosa,plain+gosa+nofma+lb6]
"""
import argparse

import cupy as cp

from timing import median_ms

SIZES = {"M": (129, 129, 257), "L": (257, 257, 513)}

SOURCE = r"""
#ifdef PLAIN
#define R
#else
#define R __restrict__
#endif
#ifdef NC
#define LD(q, x) __ldg((q) + (x))
#else
#define LD(q, x) (q)[x]
#endif
#ifdef NOFMA
#define MUL(x, y) __fmul_rn(x, y)
#define ADD(x, y) __fadd_rn(x, y)
#define SUB(x, y) __fsub_rn(x, y)
#else
#define MUL(x, y) ((x) * (y))
#define ADD(x, y) ((x) + (y))
#define SUB(x, y) ((x) - (y))
#endif
#ifdef MINB
#define BOUNDS __launch_bounds__(256, MINB)
#else
#define BOUNDS
#endif
extern "C" __global__ void BOUNDS sweep(const float* R p, float* R out,
        const float* R a, const float* R b, const float* R c,
        const float* R bnd, const float* R wrk1, float* R partials,
        int mi, int mj, int mk, int stride, int off, long long plane, float omega) {
    int k = 1 + blockIdx.x * blockDim.x + threadIdx.x;
    int j = 1 + blockIdx.y * blockDim.y + threadIdx.y;
    int q = (mi - 2 + gridDim.z - 1) / gridDim.z;
    int i0 = 1 + q * blockIdx.z;
    if (j + 1 >= mj) return;
    bool inside = k + 1 < mk;
    int cpr = (mk - 2 + 31) / 32, chunk = (k - 1) / 32;
    long long si = (long long)mj * stride, sj = stride;
#ifdef NOUNROLL
#pragma unroll 1
#endif
    for (int u = 0; u < q && i0 + u + 1 < mi; ++u) {
        int i = i0 + u;
        long long x = i * si + j * sj + k + off;
        float sq = 0.0f;
        if (inside) {
            // lockstep_shared::himeno::jacobi_point's order of operations
            float s0 = MUL(LD(a, x), LD(p, x + si));
            s0 = ADD(s0, MUL(LD(a, plane + x), LD(p, x + sj)));
            s0 = ADD(s0, MUL(LD(a, 2 * plane + x), LD(p, x + 1)));
            s0 = ADD(s0, MUL(LD(b, x), ADD(SUB(SUB(LD(p, x + si + sj), LD(p, x + si - sj)), LD(p, x - si + sj)), LD(p, x - si - sj))));
            s0 = ADD(s0, MUL(LD(b, plane + x), ADD(SUB(SUB(LD(p, x + sj + 1), LD(p, x - sj + 1)), LD(p, x + sj - 1)), LD(p, x - sj - 1))));
            s0 = ADD(s0, MUL(LD(b, 2 * plane + x), ADD(SUB(SUB(LD(p, x + si + 1), LD(p, x - si + 1)), LD(p, x + si - 1)), LD(p, x - si - 1))));
            s0 = ADD(s0, MUL(LD(c, x), LD(p, x - si)));
            s0 = ADD(s0, MUL(LD(c, plane + x), LD(p, x - sj)));
            s0 = ADD(s0, MUL(LD(c, 2 * plane + x), LD(p, x - 1)));
            s0 = ADD(s0, LD(wrk1, x));
            float centre = LD(p, x);
            float ss = MUL(SUB(MUL(s0, LD(a, 3 * plane + x)), centre), LD(bnd, x));
            out[x] = ADD(centre, MUL(omega, ss));
            sq = MUL(ss, ss);
        }
#ifdef GOSA
        for (int d = 16; d > 0; d /= 2) sq = ADD(sq, __shfl_down_sync(0xffffffffu, sq, d));
        if ((threadIdx.x & 31) == 0 && chunk < cpr)
            partials[((long long)(i - 1) * (mj - 2) + (j - 1)) * cpr + chunk] = sq;
#endif
    }
}
"""


def copy_gbps(runs):
    n = 1 << 28  # 1 GiB of f32
    src = cp.ones(n, dtype=cp.float32)
    dst = cp.empty_like(src)
    ms = median_ms(lambda: dst.__setitem__(Ellipsis, src), runs)
    return 2 * 4 * n / (ms * 1e-3) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="M,L")
    ap.add_argument("--planes", type=int, default=8)
    ap.add_argument("--block", default="128x2")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--layouts", default="packed,padded")
    ap.add_argument("--variants", default="restrict",
                    help="comma-separated; each a '+'-joined set of: restrict (every pointer "
                         "__restrict__, the default), plain (no __restrict__), gosa (lockstep's "
                         "warp-tree gosa partials), nofma (no contraction, lockstep's arithmetic), "
                         "nc (__ldg loads), nounroll, lbN (__launch_bounds__(256, N))")
    ap.add_argument("--ptx", help="write each variant's PTX to this folder")
    args = ap.parse_args()
    bx, by = (int(v) for v in args.block.split("x"))
    def flags_of(variant):
        out = []
        for part in variant.split("+"):
            if part.startswith("lb"):
                out.append(f"-DMINB={int(part[2:])}")
            elif part != "restrict":
                out.append("-D" + {"plain": "PLAIN", "gosa": "GOSA", "nofma": "NOFMA", "nc": "NC",
                                   "nounroll": "NOUNROLL"}[part])
        return tuple(out)

    flags = {v: flags_of(v) for v in args.variants.split(",")}
    kernels = {}
    for v in args.variants.split(","):
        kernels[v] = cp.RawModule(code=SOURCE, options=flags[v]).get_function("sweep")
        if args.ptx:
            from cupy.cuda import compiler
            ptx = compiler.compile_using_nvrtc(SOURCE, options=flags[v], arch="90")
            ptx = ptx[0] if isinstance(ptx, tuple) else ptx
            mode, ext = ("wb", "cubin") if isinstance(ptx, bytes) else ("w", "ptx")
            open(f"{args.ptx}/himeno_pattern-{v}.{ext}", mode).write(ptx)
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    copy = copy_gbps(args.runs)
    print(f"{name}: device copy {copy:.0f} GB/s; block {bx}x{by}, {args.planes} planes per thread")
    for size in args.sizes.split(","):
        mi, mj, mk = SIZES[size]
        points = (mi - 2) * (mj - 2) * (mk - 2)
        for layout, v in [(l, v) for l in args.layouts.split(",") for v in kernels]:
            kernel = kernels[v]
            stride, off = (mk, 0) if layout == "packed" else (-(-(mk + 31) // 32) * 32, 31)
            plane = mi * mj * stride
            rng = cp.random.default_rng(1)
            p = rng.random(plane, dtype=cp.float32)
            out = p.copy()
            a = rng.random(4 * plane, dtype=cp.float32)
            b = rng.random(3 * plane, dtype=cp.float32)
            c = rng.random(3 * plane, dtype=cp.float32)
            bnd = rng.random(plane, dtype=cp.float32)
            wrk1 = rng.random(plane, dtype=cp.float32)
            grid = (-(-(mk - 2) // bx), -(-(mj - 2) // by), -(-(mi - 2) // args.planes))
            partials = cp.zeros((mi - 2) * (mj - 2) * (-(-(mk - 2) // 32)), dtype=cp.float32)
            params = (p, out, a, b, c, bnd, wrk1, partials, cp.int32(mi), cp.int32(mj), cp.int32(mk),
                      cp.int32(stride), cp.int32(off), cp.int64(plane), cp.float32(0.8))
            ms = median_ms(lambda: kernel(grid, (bx, by, 1), params), args.runs)
            gbps = 56 * points / (ms * 1e-3) / 1e9
            print(f"{size} {layout:6} {v:22} {kernel.num_regs:2} regs row {stride:3} floats: {ms:.4f} ms  {gbps:6.0f} GB/s  "
                  f"{100 * gbps / copy:5.1f}% of copy")
            del p, out, a, b, c, bnd, wrk1, partials


if __name__ == "__main__":
    main()
