"""Probe: row-major `[row][path]` f32 streams at path counts that are not a multiple of 4, written
in CUDA C++ (nvcc through CuPy), to find which access pattern streams near the copy bandwidth on
an H200 — the question behind #21 target 5 (bench/results/bridge-anypaths-2026-11-28.md: the
bridge's d = 1 f32 quads at odd counts run 75-79% of copy on an H200, 90% at multiples of 4).

Each kernel reads `z[row][path]` and writes `out[row][path] = z·a + b` for every row, thread `q`
owning paths `4q..4q + 4` in every row (the bridge's ownership: a path's state stays in one
thread), rows in order, the next `--prefetch` rows' loads issued before the current ones are
used (the bridge's software pipeline). Variants (`--variants`):

- `split`: lockstep's way today (`QuadNormals`/`QuadSink`): per row, by the class
  `c = (row·paths) mod 4` (uniform over the grid), one 16-byte access (c = 0), two 8-byte ones
  (c = 2) or a 4-, an 8- and a 4-byte one (c = 1, 3).
- `shfl`: every access on the row's 16-byte grid: each thread loads the aligned quad holding its
  first element (lane 31 also the next one), and at use takes the rest of its quad from lane + 1
  (`__shfl_down_sync`); stores the aligned quad after its first element, its own last c and lane
  + 1's first 4 - c, as one 16-byte store; lanes 0 and 31 and the row's last threads store their
  own pieces alone.
- `scalar`: one path per thread, 4-byte accesses (no quads).
- `aligned`: `split` at a path count rounded down to a multiple of 4 (every access 16 bytes): the
  reference the others are held to.
- `order-paths`, `order-incr`: `split`'s accesses in the order and rows of lockstep's d = 1
  bridge at 64 steps (its depth-first bisection strategy, `STRATEGY_64`): step s reads z row
  `zrow[s]` and writes row `orow[s]` (paths), or the rows its increments emit (0 or 2 per step);
  `order-incr-aligned` at the count rounded down to a multiple of 4.

It prints each variant's registers, the median time (CUDA events, after a warm-up), GB/s (read +
write of rows·paths f32) and the share of the same run's device-copy bandwidth (a CuPy
device-to-device copy of the same bytes), and checks every variant's output against NumPy's
`z·a + b` in f32 (bit for bit: one multiply and one add, no contraction).

Usage: python3 bench/peers/rows_pattern.py [--rows 65] [--paths 1439741,1439745,1439746,1439747]
           [--block 128] [--prefetch 4] [--runs 9]
           [--variants aligned,split,shfl,scalar,order-paths,order-incr,order-incr-aligned]
"""
import argparse

import cupy as cp
import numpy as np

from timing import median_ms

SOURCE = r"""
#define PF PREFETCH
struct Quad { float v[4]; };

__device__ __forceinline__ float fma_free(float z, float a, float b) {
    return __fadd_rn(__fmul_rn(z, a), b);
}

// ---- split: lockstep's QuadNormals / QuadSink ----
__device__ __forceinline__ Quad split_load(const float* z, unsigned e, unsigned c, unsigned n) {
    Quad r = {{0.f, 0.f, 0.f, 0.f}};
    if (n < 4) {
        _Pragma("unroll") for (unsigned i = 0; i < 4; i++) if (i < n) r.v[i] = z[e + i];
    } else if (c == 0) {
        float4 t = *(const float4*)(z + e); r.v[0] = t.x; r.v[1] = t.y; r.v[2] = t.z; r.v[3] = t.w;
    } else if (c == 2) {
        float2 t = *(const float2*)(z + e), u = *(const float2*)(z + e + 2);
        r.v[0] = t.x; r.v[1] = t.y; r.v[2] = u.x; r.v[3] = u.y;
    } else {
        float2 t = *(const float2*)(z + e + 1);
        r.v[0] = z[e]; r.v[1] = t.x; r.v[2] = t.y; r.v[3] = z[e + 3];
    }
    return r;
}
__device__ __forceinline__ void split_store(float* out, unsigned e, unsigned c, unsigned n, Quad w) {
    if (n < 4) {
        _Pragma("unroll") for (unsigned i = 0; i < 4; i++) if (i < n) out[e + i] = w.v[i];
    } else if (c == 0) {
        *(float4*)(out + e) = make_float4(w.v[0], w.v[1], w.v[2], w.v[3]);
    } else if (c == 2) {
        *(float2*)(out + e) = make_float2(w.v[0], w.v[1]);
        *(float2*)(out + e + 2) = make_float2(w.v[2], w.v[3]);
    } else {
        out[e] = w.v[0]; *(float2*)(out + e + 1) = make_float2(w.v[1], w.v[2]); out[e + 3] = w.v[3];
    }
}

extern "C" __global__ void split(const float* __restrict__ z, float* __restrict__ out,
                                 unsigned rows, unsigned paths, float a, float b) {
    unsigned q = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned q4 = 4 * q;
    if (q4 >= paths) return;
    unsigned n = paths - q4 < 4 ? paths - q4 : 4;
    Quad cur[PF], nxt[PF];
    #pragma unroll
    for (int j = 0; j < PF; j++) {
        unsigned r = j; unsigned e = r * paths + q4;
        if (r < rows) cur[j] = split_load(z, e, (r * paths) & 3, n);
    }
    for (unsigned r0 = 0; r0 < rows; r0 += PF) {
        #pragma unroll
        for (int j = 0; j < PF; j++) {
            unsigned r = r0 + PF + j; unsigned e = r * paths + q4;
            if (r < rows) nxt[j] = split_load(z, e, (r * paths) & 3, n);
        }
        #pragma unroll
        for (int j = 0; j < PF; j++) {
            unsigned r = r0 + j;
            if (r < rows) {
                Quad w;
                for (int i = 0; i < 4; i++) w.v[i] = fma_free(cur[j].v[i], a, b);
                split_store(out, r * paths + q4, (r * paths) & 3, n, w);
            }
        }
        #pragma unroll
        for (int j = 0; j < PF; j++) cur[j] = nxt[j];
    }
}

// ---- shfl: every access on the row's 16-byte grid ----
// Raw loads of one row: the aligned quad holding the thread's first element, and (lane 31) the
// one after it. Elements past the buffer's end (total) are not read.
struct Raw { Quad a, b; };

__device__ __forceinline__ Quad load_aligned(const float* z, unsigned base, unsigned total) {
    Quad r = {{0.f, 0.f, 0.f, 0.f}};
    if (base + 4 <= total) {
        float4 t = *(const float4*)(z + base); r.v[0] = t.x; r.v[1] = t.y; r.v[2] = t.z; r.v[3] = t.w;
    } else {
        _Pragma("unroll") for (unsigned i = 0; i < 4; i++) if (base + i < total) r.v[i] = z[base + i];
    }
    return r;
}

// Every thread whose quad starts inside the row loads it (a thread past the last path too: the
// last one may need its first elements).
__device__ __forceinline__ Raw shfl_load(const float* z, unsigned e, unsigned c, unsigned row_end,
                                         unsigned lane, unsigned total) {
    Raw r = {{{0.f, 0.f, 0.f, 0.f}}, {{0.f, 0.f, 0.f, 0.f}}};
    unsigned base = e - c;
    if (base < row_end) r.a = load_aligned(z, base, total);
    if (lane == 31 && c != 0 && base + 4 < row_end) r.b = load_aligned(z, base + 4, total);
    return r;
}

// The thread's four elements e..e+4 from its raw quads and lane + 1's (all lanes take part).
__device__ __forceinline__ Quad shfl_finish(Raw r, unsigned c, unsigned lane) {
    Quad nb;
    for (int i = 0; i < 4; i++) nb.v[i] = __shfl_down_sync(0xffffffffu, r.a.v[i], 1);
    if (lane == 31) nb = r.b;
    Quad v;
    // v[i] = element c + i of the pair (a, nb); c is uniform over the grid.
    switch (c) {
    case 0: v = r.a; break;
    case 1: v.v[0] = r.a.v[1]; v.v[1] = r.a.v[2]; v.v[2] = r.a.v[3]; v.v[3] = nb.v[0]; break;
    case 2: v.v[0] = r.a.v[2]; v.v[1] = r.a.v[3]; v.v[2] = nb.v[0]; v.v[3] = nb.v[1]; break;
    default: v.v[0] = r.a.v[3]; v.v[1] = nb.v[0]; v.v[2] = nb.v[1]; v.v[3] = nb.v[2]; break;
    }
    return v;
}

// Stores the thread's m existing elements e..e+m (class c, row end row_end), all lanes take part.
__device__ __forceinline__ void shfl_store(float* out, unsigned e, unsigned c, unsigned m, bool live,
                                           unsigned lane, unsigned row_end, Quad w) {
    if (c == 0) {
        if (!live) return;
        if (m == 4) *(float4*)(out + e) = make_float4(w.v[0], w.v[1], w.v[2], w.v[3]);
        else _Pragma("unroll") for (unsigned i = 0; i < 4; i++) if (i < m) out[e + i] = w.v[i];
        return;
    }
    Quad nb;
    for (int i = 0; i < 4; i++) nb.v[i] = __shfl_down_sync(0xffffffffu, w.v[i], 1);
    if (!live) return;
    unsigned base = e - c, lower = 4 - c;   // own w[0..lower] at positions c..4 of quad base
    // Lower part: stored with the previous thread's quad unless this is lane 0 or the previous
    // thread's quad (base .. base + 4) passes the row's end.
    if (lane == 0 || base + 4 > row_end) {
        _Pragma("unroll") for (unsigned i = 0; i < 4; i++) if (i < lower && i < m) out[e + i] = w.v[i];
    }
    // Upper part w[lower..m] and lane + 1's lower, as one aligned quad at base + 4.
    if (lane != 31 && base + 8 <= row_end) {
        float4 s;
        switch (c) {   // own w[lower..4] then lane + 1's w[0..lower]
        case 1: s = make_float4(w.v[3], nb.v[0], nb.v[1], nb.v[2]); break;
        case 2: s = make_float4(w.v[2], w.v[3], nb.v[0], nb.v[1]); break;
        default: s = make_float4(w.v[1], w.v[2], w.v[3], nb.v[0]); break;
        }
        *(float4*)(out + base + 4) = s;
    } else {
        _Pragma("unroll") for (unsigned i = 0; i < 4; i++) if (i >= lower && i < m) out[e + i] = w.v[i];
    }
}

extern "C" __global__ void shfl(const float* __restrict__ z, float* __restrict__ out,
                                unsigned rows, unsigned paths, float a, float b) {
    unsigned q = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned lane = threadIdx.x & 31;
    unsigned q4 = 4 * q;
    bool live = q4 < paths;    // the others take part in the shuffles only
    unsigned m = live ? (paths - q4 < 4 ? paths - q4 : 4) : 0;
    unsigned total = rows * paths;
    Raw cur[PF], nxt[PF];
    #pragma unroll
    for (int j = 0; j < PF; j++) {
        unsigned r = j;
        if (r < rows) cur[j] = shfl_load(z, r * paths + q4, (r * paths) & 3, r * paths + paths, lane, total);
    }
    for (unsigned r0 = 0; r0 < rows; r0 += PF) {
        #pragma unroll
        for (int j = 0; j < PF; j++) {
            unsigned r = r0 + PF + j;
            if (r < rows) nxt[j] = shfl_load(z, r * paths + q4, (r * paths) & 3, r * paths + paths, lane, total);
        }
        #pragma unroll
        for (int j = 0; j < PF; j++) {
            unsigned r = r0 + j;
            if (r < rows) {
                unsigned c = (r * paths) & 3;
                Quad v = shfl_finish(cur[j], c, lane), w;
                for (int i = 0; i < 4; i++) w.v[i] = fma_free(v.v[i], a, b);
                shfl_store(out, r * paths + q4, c, m, live, lane, r * paths + paths, w);
            }
        }
        #pragma unroll
        for (int j = 0; j < PF; j++) cur[j] = nxt[j];
    }
}

// ---- order: split accesses in a bridge strategy's order ----
// Step s reads z row zrow[s] and writes out row orow[s] (paths), or with INCR the rows orow[s]
// (flag 1, z·a + b) and orow[s] + 1 (flag 2, z·a - b): the rows and order lockstep's d = 1
// bridge reads and writes (its depth-first bisection strategy, from `Plan::exec`).
template <bool INCR>
__device__ __forceinline__ void order_body(const float* __restrict__ z, float* __restrict__ out,
        unsigned steps, unsigned paths, float a, float b, const unsigned* __restrict__ zrow,
        const unsigned* __restrict__ orow, const unsigned* __restrict__ flags) {
    unsigned q = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned q4 = 4 * q;
    if (q4 >= paths) return;
    unsigned n = paths - q4 < 4 ? paths - q4 : 4;
    Quad cur[PF], nxt[PF];
    #pragma unroll
    for (int j = 0; j < PF; j++) {
        unsigned s = j;
        if (s < steps) { unsigned r = zrow[s]; cur[j] = split_load(z, r * paths + q4, (r * paths) & 3, n); }
    }
    for (unsigned s0 = 0; s0 < steps; s0 += PF) {
        #pragma unroll
        for (int j = 0; j < PF; j++) {
            unsigned s = s0 + PF + j;
            if (s < steps) { unsigned r = zrow[s]; nxt[j] = split_load(z, r * paths + q4, (r * paths) & 3, n); }
        }
        #pragma unroll
        for (int j = 0; j < PF; j++) {
            unsigned s = s0 + j;
            if (s < steps) {
                unsigned r = orow[s];
                Quad w;
                for (int i = 0; i < 4; i++) w.v[i] = fma_free(cur[j].v[i], a, b);
                if (!INCR) {
                    split_store(out, r * paths + q4, (r * paths) & 3, n, w);
                } else {
                    unsigned f = flags[s];
                    if (f & 1) split_store(out, r * paths + q4, (r * paths) & 3, n, w);
                    if (f & 2) {
                        Quad w2;
                        for (int i = 0; i < 4; i++) w2.v[i] = __fsub_rn(__fmul_rn(cur[j].v[i], a), b);
                        unsigned r2 = r + 1;
                        split_store(out, r2 * paths + q4, (r2 * paths) & 3, n, w2);
                    }
                }
            }
        }
        #pragma unroll
        for (int j = 0; j < PF; j++) cur[j] = nxt[j];
    }
}
extern "C" __global__ void order_paths(const float* z, float* out, unsigned steps, unsigned paths, float a,
        float b, const unsigned* zrow, const unsigned* orow, const unsigned* flags) {
    order_body<false>(z, out, steps, paths, a, b, zrow, orow, flags);
}
extern "C" __global__ void order_incr(const float* z, float* out, unsigned steps, unsigned paths, float a,
        float b, const unsigned* zrow, const unsigned* orow, const unsigned* flags) {
    order_body<true>(z, out, steps, paths, a, b, zrow, orow, flags);
}

// ---- scalar: one path per thread ----
extern "C" __global__ void scalar(const float* __restrict__ z, float* __restrict__ out,
                                  unsigned rows, unsigned paths, float a, float b) {
    unsigned p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= paths) return;
    float cur[PF], nxt[PF];
    #pragma unroll
    for (int j = 0; j < PF; j++) if ((unsigned)j < rows) cur[j] = z[j * paths + p];
    for (unsigned r0 = 0; r0 < rows; r0 += PF) {
        #pragma unroll
        for (int j = 0; j < PF; j++) { unsigned r = r0 + PF + j; if (r < rows) nxt[j] = z[r * paths + p]; }
        #pragma unroll
        for (int j = 0; j < PF; j++) { unsigned r = r0 + j; if (r < rows) out[r * paths + p] = fma_free(cur[j], a, b); }
        #pragma unroll
        for (int j = 0; j < PF; j++) cur[j] = nxt[j];
    }
}
"""


# lockstep's d = 1 bridge strategy for `BridgeSpec::standard(64)` (depth-first bisection), from
# `Plan::exec`: (z row, out row, flags) per step; flags 1 = emit the left increment (row out),
# 2 = the right one (row out + 1).
STRATEGY_64 = (
    "0 63 0;1 31 0;2 15 0;4 7 0;8 3 0;16 1 0;32 0 3;33 2 3;17 5 0;34 4 3;35 6 3;9 11 0;18 9 0;"
    "36 8 3;37 10 3;19 13 0;38 12 3;39 14 3;5 23 0;10 19 0;20 17 0;40 16 3;41 18 3;21 21 0;42 20 3;"
    "43 22 3;11 27 0;22 25 0;44 24 3;45 26 3;23 29 0;46 28 3;47 30 3;3 47 0;6 39 0;12 35 0;24 33 0;"
    "48 32 3;49 34 3;25 37 0;50 36 3;51 38 3;13 43 0;26 41 0;52 40 3;53 42 3;27 45 0;54 44 3;"
    "55 46 3;7 55 0;14 51 0;28 49 0;56 48 3;57 50 3;29 53 0;58 52 3;59 54 3;15 59 0;30 57 0;"
    "60 56 3;61 58 3;31 61 0;62 60 3;63 62 3"
)


def strategy():
    rows = [tuple(int(x) for x in step.split()) for step in STRATEGY_64.split(";")]
    return [np.array(col, dtype=np.uint32) for col in zip(*rows)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=65)
    ap.add_argument("--paths", default="1439741,1439745,1439746,1439747")
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--prefetch", type=int, default=4)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--variants", default="aligned,split,shfl,scalar,order-paths,order-incr,order-incr-aligned")
    args = ap.parse_args()
    dev = cp.cuda.Device()
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    module = cp.RawModule(code=SOURCE, options=("-std=c++17", f"-DPREFETCH={args.prefetch}", "--fmad=false"),
                          name_expressions=None)
    kernels = {k: module.get_function(k) for k in ("split", "shfl", "scalar", "order_paths", "order_incr")}
    zrow, orow, flags = strategy()
    tables = [cp.asarray(t) for t in (zrow, orow, flags)]
    print(f"# rows_pattern: {name}, rows {args.rows}, block {args.block}, prefetch {args.prefetch}, runs {args.runs}")
    for k, f in kernels.items():
        print(f"#   {k}: {f.num_regs} registers")
    a, b = np.float32(1.0009765625), np.float32(-0.25)
    for paths in [int(p) for p in args.paths.split(",")]:
        rows = args.rows
        total = rows * paths
        z = cp.random.default_rng(paths).standard_normal(total, dtype=cp.float32)
        out = cp.empty_like(z)
        copy_dst = cp.empty_like(z)
        nbytes = 2 * total * 4
        copy_ms = median_ms(lambda: copy_dst.data.copy_from_device(z.data, total * 4), args.runs)
        for variant in args.variants.split(","):
            # order-*: lockstep's strategy (64 rows), `order-*-aligned` at the count rounded down.
            p = paths // 4 * 4 if variant.endswith("aligned") else paths
            name = variant.removesuffix("-aligned")
            ordered = name.startswith("order")
            kernel = kernels[{"aligned": "split", "order-paths": "order_paths", "order-incr": "order_incr"}.get(name, name)]
            used = len(zrow) if ordered else rows
            lanes = 1 if variant == "scalar" else 4
            threads = -(-p // lanes)
            grid = (-(-threads // args.block),)
            zz, oo = z[: used * p], out[: used * p]
            params = (zz, oo, np.uint32(used), np.uint32(p), a, b) + (tuple(tables) if ordered else ())
            launch = lambda: kernel(grid, (args.block,), params)
            out.fill(np.nan)
            launch()
            got = cp.asnumpy(oo).reshape(used, p)
            zh = cp.asnumpy(zz).reshape(used, p)
            if not ordered:
                want = zh * a + b
            else:
                want = np.full((used, p), np.nan, dtype=np.float32)
                for zr, orr, f in zip(zrow, orow, flags):
                    if name == "order-paths" or f & 1:
                        want[orr] = zh[zr] * a + b
                    if name == "order-incr" and f & 2:
                        want[orr + 1] = zh[zr] * a - b
            exact = np.array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32))
            ms = median_ms(launch, args.runs)
            bytes_ = 2 * used * p * 4
            gbs = bytes_ / ms / 1e6
            copy_gbs = nbytes / copy_ms / 1e6
            print(f"paths {p:>9} (mod 4 = {p % 4}) {variant:>7}: {ms:.4f} ms, {gbs:7.0f} GB/s, "
                  f"{100 * gbs / copy_gbs:5.1f}% of copy ({copy_gbs:.0f} GB/s), output exact: {exact}")


if __name__ == "__main__":
    main()
