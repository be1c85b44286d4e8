//! The Himeno benchmark's Jacobi sweep (issue #4) with its gosa reductions: plain atomics,
//! aggregated atomics, or a grid-independent two-level tree.

use lockstep_cuda_std::atomic::{load_volatile_u32, threadfence};
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::thread::{block_dim_y, block_idx_y, block_idx_z, grid_dim_y, grid_dim_z, thread_idx_y};
use lockstep_shared::himeno::{self, Coefs, Dims, gosa_via, jacobi_point};
use lockstep_shared::reduce::WARP_TREE_OFFSETS;

/// Level-2 group `g` of the gosa tree (`lockstep_shared::himeno::level2_group_sum`) over
/// `partials[..len]`, by the calling block (`tid` this thread's index in it, `nthreads` its
/// size): thread `tid` sums lanes `tid, tid + nthreads, …` (eight loads in flight, a missing
/// partial read as `+0`: adding `+0` to a sum from `+0` of squares changes no bit), a halving tree
/// joins the 256 lanes into `sums[g]`; the block that finishes the last of the `LEVEL2_GROUPS`
/// groups of this launch (counted in `*count`, which it resets to 0) joins `sums` by a halving
/// tree into `*out`.
///
/// # Safety
/// Every thread of the block calls it (barriers); `partials` holds `len` values, `sums`
/// `LEVEL2_GROUPS`, `count` and `out` one each; `*count` is 0 at the launch's start and only
/// this function touches `sums` and `count` during the launch, each group once.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn level2_group(
    partials: *const f32,
    len: usize,
    g: usize,
    sums: *mut f32,
    count: *mut u32,
    out: *mut f32,
    tid: usize,
    nthreads: usize,
) {
    const L: usize = himeno::LEVEL2_LANES;
    const S: usize = himeno::LEVEL2_STRIDE;
    const G: usize = himeno::LEVEL2_GROUPS;
    // 32-bit shared addresses: LDS/STS, not generic loads with 64-bit arithmetic.
    let slots = shared_addr(shared_array![ATOMICS_HIMENO_LEVEL2: [f32; L]]);
    let last = shared_addr(shared_array![HIMENO_LEVEL2_LAST: [u32; 1]]);
    let slot = |t: usize| slots + 4 * t as u32;
    let (tid32, n32) = (tid as u32, nthreads as u32);
    let mut t = tid;
    while t < L {
        let mut s = 0.0f32;
        let mut i = g * L + t;
        while i < len {
            // SAFETY: read only below len.
            let v = |u: usize| if i + u * S < len { unsafe { *partials.add(i + u * S) } } else { 0.0 };
            let (v0, v1, v2, v3, v4, v5, v6, v7) = (v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7));
            s += v0;
            s += v1;
            s += v2;
            s += v3;
            s += v4;
            s += v5;
            s += v6;
            s += v7;
            i += 8 * S;
        }
        // SAFETY: t < L, inside the slots.
        unsafe { st_shared_f32(slot(t), s) };
        t += nthreads;
    }
    sync_threads();
    // A halving tree over the first `width` slots (both trees): every index is below L, and a
    // barrier separates the levels.
    let tree = |width: u32| {
        let mut stride = width / 2;
        while stride > 0 {
            let mut t = tid32;
            while t < stride {
                let (lo, hi) = (slots + 4 * t, slots + 4 * (t + stride));
                // SAFETY: t + stride < width ≤ L.
                unsafe { st_shared_f32(lo, ld_shared_f32(lo) + ld_shared_f32(hi)) };
                t += n32;
            }
            sync_threads();
            stride /= 2;
        }
    };
    tree(L as u32);
    if tid == 0 {
        // SAFETY: g < G slots in sums; count is one u32 that only atomics touch until the last
        // block resets it (after every other group's increment); the flag is one shared u32.
        unsafe {
            *sums.add(g) = ld_shared_f32(slots);
            threadfence();
            st_shared_u32(last, (atomic_add(count, 1u32) as usize == G - 1) as u32);
        }
    }
    sync_threads();
    // SAFETY: written before the barrier above.
    if unsafe { ld_shared_u32(last) } != 0 {
        threadfence();
        let mut t = tid;
        while t < G {
            // SAFETY: t < G; the volatile load skips L1, which may not hold other blocks' sums.
            unsafe { st_shared_f32(slot(t), f32::from_bits(load_volatile_u32(sums.add(t) as *const u32))) };
            t += nthreads;
        }
        sync_threads();
        tree(G as u32);
        if tid == 0 {
            // SAFETY: out and count are one value each; every group of this launch has counted.
            unsafe {
                *out = ld_shared_f32(slots);
                *count = 0;
            }
        }
    }
    sync_threads(); // the slots and the flag are free again
}

/// A sweep's share of level 2 of the previous sweep's tree (nothing when `prev_len` is 0): the
/// block of linear index `b` sums groups `b, b + blocks, …` below `LEVEL2_GROUPS` by
/// [`level2_group`], the last group's block writing `*gosa`.
///
/// # Safety
/// Called first by every thread of the block (barriers); with `prev_len > 0`, `prev` holds
/// `prev_len` values, `sums` `LEVEL2_GROUPS`, `count` one `u32` that is 0 at the launch's start,
/// `gosa` one, none of them touched by anything else during the launch.
#[inline(always)]
pub(crate) unsafe fn level2_in_sweep(prev: *const f32, prev_len: u32, sums: *mut f32, count: *mut u32, gosa: *mut f32) {
    if prev_len == 0 {
        return;
    }
    let blocks = grid_dim_x() * grid_dim_y() * grid_dim_z();
    let block = block_idx_x() + grid_dim_x() * (block_idx_y() + grid_dim_y() * block_idx_z());
    let tid = (thread_idx_x() + block_dim_x() * thread_idx_y()) as usize;
    let nthreads = (block_dim_x() * block_dim_y()) as usize;
    let mut g = block as usize;
    while g < himeno::LEVEL2_GROUPS {
        // SAFETY: the whole block calls it (g is uniform); buffers per the contract.
        unsafe { level2_group(prev, prev_len as usize, g, sums, count, gosa, tid, nthreads) };
        g += blocks as usize;
    }
}

/// The coefficients of point `idx` (`a`: 4 planes of `plane` points, `b`, `c`: 3, `bnd`,
/// `wrk1`: 1).
///
/// # Safety
/// `idx` is a point of the grid and the arrays are as [`himeno_jacobi`]'s contract says.
#[inline(always)]
pub(crate) unsafe fn coefs_at(
    a: *const f32,
    b: *const f32,
    c: *const f32,
    bnd: *const f32,
    wrk1: *const f32,
    plane: usize,
    idx: usize,
) -> Coefs {
    // SAFETY: the caller's contract.
    unsafe {
        Coefs {
            a: [*a.add(idx), *a.add(plane + idx), *a.add(2 * plane + idx), *a.add(3 * plane + idx)],
            b: [*b.add(idx), *b.add(plane + idx), *b.add(2 * plane + idx)],
            c: [*c.add(idx), *c.add(plane + idx), *c.add(2 * plane + idx)],
            bnd: *bnd.add(idx),
            wrk1: *wrk1.add(idx),
        }
    }
}

// Six blocks of 256 per SM: ptxas fits the sweep in 40 registers (39 unbounded) and, told so,
// schedules it so that an H200 streams at 85–87% (M) / 94–97% (L) of copy at 128×2/2, where
// the same shapes ran at 61–77% / 66–89% without the bounds
// (bench/results/himeno-bounds-2026-11-28.md); eight blocks (32 registers) spill and run slower.
lockstep_cuda_std::launch_bounds!(
    himeno_jacobi,
    max_threads = himeno::SWEEP_MAX_THREADS,
    min_blocks = himeno::SWEEP_MIN_BLOCKS
);

/// One Jacobi sweep of the Himeno benchmark: `p_out = p + omega·ss` at interior points, gosa
/// by `dims.gosa_via` into `*gosa` (atomics) or into `partials` (tree level 1: one warp-tree
/// sum per 32 consecutive k of a row, at `(row, chunk)`). With `prev_len > 0` the blocks of
/// linear index `b < LEVEL2_GROUPS` first do level 2 of the previous sweep's tree over
/// `prev[..prev_len]` (group `b`, `b + blocks`, … by [`level2_group`], the last one writing
/// `*gosa`), so that level 2 costs no launch of its own. Thread x ↦ k − 1, y ↦ j − 1; block z
/// covers `q = ceil((mi − 2) / gridDim.z)` consecutive planes from `i = 1 + q·z`; a thread goes
/// through its points plane by plane. At most `SWEEP_MAX_THREADS` (256) threads per block: the
/// kernel's launch bounds.
///
/// # Safety
/// Coefficient arrays as in the benchmark (`a`: 4 planes, `b`, `c`: 3 planes, `bnd`, `wrk1`,
/// `p`, `p_out`: 1 plane of `mi·mj·mk`); `p` and `p_out` do not overlap; `partials` holds
/// `(mi−2)(mj−2)·chunks_per_row(mk)` for the tree; blockDim.x is a multiple of 32, blockDim.z 1
/// (at most 256 threads: the launch bounds).
/// With `prev_len > 0`: `prev` holds `prev_len` values and overlaps no other array, `sums`
/// holds `LEVEL2_GROUPS` and `count` one `u32` that is 0, none of them touched by anything else
/// during the launch.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "ptx-kernel" fn himeno_jacobi(
    dims: Dims,
    omega: f32,
    a: *const f32,
    b: *const f32,
    c: *const f32,
    bnd: *const f32,
    wrk1: *const f32,
    p: *const f32,
    p_out: *mut f32,
    gosa: *mut f32,
    partials: *mut f32,
    prev: *const f32,
    prev_len: u32,
    sums: *mut f32,
    count: *mut u32,
) {
    // SAFETY: every thread calls it first; the buffers are as the contract above says.
    unsafe { level2_in_sweep(prev, prev_len, sums, count, gosa) };
    let Dims { mi, mj, mk, gosa_via: mode } = dims;
    let tx = block_idx_x() * block_dim_x() + thread_idx_x();
    let j = 1 + block_idx_y() * block_dim_y() + thread_idx_y();
    let q = (mi.saturating_sub(2)).div_ceil(grid_dim_z());
    let i0 = 1 + q * block_idx_z();
    if j + 1 >= mj || i0 + 1 >= mi {
        return; // a whole warp: blockDim.x is a multiple of 32
    }
    let planes = q.min(mi - 1 - i0); // interior planes of this block (uniform over the block)
    let k = 1 + tx;
    let inside = k + 1 < mk;
    let plane = mi as usize * mj as usize * mk as usize;
    let (sj, si) = (mk as isize, mj as isize * mk as isize);
    let idx0 = (i0 as usize * mj as usize + j as usize) * mk as usize + k as usize;
    let at_plane = |u: u32| idx0 + u as usize * si as usize;
    // Called for interior points only, so every neighbour index is inside the plane.
    // SAFETY: that; the coefficient planes are where the launch contract puts them.
    let point = |idx: usize| unsafe {
        let at = |di: isize, dj: isize, dk: isize| *p.offset(idx as isize + di * si + dj * sj + dk);
        let co = coefs_at(a, b, c, bnd, wrk1, plane, idx);
        jacobi_point(at, &co, omega)
    };
    // SAFETY: only called with interior points' indices, inside p_out.
    let store = |idx: usize, v: f32| unsafe { *p_out.add(idx) = v };
    let chunk = tx / 32;
    let cpr = himeno::chunks_per_row(mk);
    // gosa of one plane's point (every lane of the warp calls it: the tree shuffles).
    let reduce = |sq: f32, i: u32| match mode {
        gosa_via::PLAIN => {
            if inside {
                // SAFETY: gosa is one f32 on the device.
                unsafe { atomic_add(gosa, sq) };
            }
        }
        gosa_via::AGGREGATED => {
            if inside {
                // SAFETY: as above.
                unsafe { atomic_add_aggregated(gosa, sq) };
            }
        }
        _ => {
            let mut s = sq;
            for d in WARP_TREE_OFFSETS {
                s += warp_shuffle_down(FULL_MASK, s, d);
            }
            if lane_id() == 0 && chunk < cpr {
                let row = (i as usize - 1) * (mj as usize - 2) + (j as usize - 1);
                // SAFETY: row < (mi−2)(mj−2) and chunk < cpr: inside partials.
                unsafe { *partials.add(row * cpr as usize + chunk as usize) = s };
            }
        }
    };
    let mut u = 0;
    while u < planes {
        let mut sq = 0.0f32;
        if inside {
            let (ss, new) = point(at_plane(u));
            store(at_plane(u), new);
            sq = ss * ss;
        }
        reduce(sq, i0 + u);
        u += 1;
    }
}

/// [`himeno_jacobi_march`] by name (and the sm_90 twin that waits for the sweep before it,
/// `crate::hopper::himeno`): after `prologue:`, an expression the kernel evaluates first and a
/// line its doc adds.
macro_rules! himeno_march_kernel {
    ($name:ident) => {
        himeno_march_kernel!($name, prologue: (), "");
    };
    ($name:ident, prologue: $prologue:expr, $prologue_doc:literal) => {
        /// The Himeno sweep marching along i (issue #21): the block owns a `blockDim.x × blockDim.y`
        /// tile of `(k, j)` (thread x ↦ k − 1, y ↦ j − 1 as in [`himeno_jacobi`]) and walks the
        /// `q = ceil((mi − 2) / gridDim.z)` planes from `i = 1 + q·blockIdx.z`. The pressure of planes
        /// `i − 1, i, i + 1` (tile plus a one-point halo) sits in a ring of four shared-memory planes;
        /// plane `i + 2` is loaded into registers while plane `i` is computed and stored into the free
        /// ring slot after, one barrier per plane. Each `p` value is read from global memory once per
        /// block (plus the halo) instead of once per neighbour; the coefficients are read as before.
        /// gosa and level 2 exactly as [`himeno_jacobi`] (the same `jacobi_point`, the same tree).
        ///
        /// # Safety
        /// As [`himeno_jacobi`], and the launch passes `4·(blockDim.x + 2)·(blockDim.y + 2)·4` bytes of
        /// dynamic shared memory.
        #[doc = $prologue_doc]
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            dims: Dims,
            omega: f32,
            a: *const f32,
            b: *const f32,
            c: *const f32,
            bnd: *const f32,
            wrk1: *const f32,
            p: *const f32,
            p_out: *mut f32,
            gosa: *mut f32,
            partials: *mut f32,
            prev: *const f32,
            prev_len: u32,
            sums: *mut f32,
            count: *mut u32,
        ) {
            $prologue;
            // SAFETY: every thread calls it first; the buffers are as the contract above says.
            unsafe { level2_in_sweep(prev, prev_len, sums, count, gosa) };
            let Dims { mi, mj, mk, gosa_via: mode } = dims;
            let (bx, by, tx, ty) = (block_dim_x(), block_dim_y(), thread_idx_x(), thread_idx_y());
            let q = (mi.saturating_sub(2)).div_ceil(grid_dim_z());
            let i0 = 1 + q * block_idx_z();
            if i0 + 1 >= mi {
                return; // the whole block: no plane left for it
            }
            let planes = q.min(mi - 1 - i0);
            let (k0, j0) = (1 + bx * block_idx_x(), 1 + by * block_idx_y());
            let (k, j) = (k0 + tx, j0 + ty);
            let row_ok = j + 1 < mj; // uniform over a warp
            let inside = row_ok && k + 1 < mk;
            let (w, h) = (bx + 2, by + 2);
            let tiles = shared_addr(dynamic_shared!(HIMENO_MARCH_TILES));
            // Ring slot s, tile row r (j = j0 − 1 + r), column cc (k = k0 − 1 + cc).
            let cell = move |s: u32, r: u32, cc: u32| tiles + 4 * ((s * h + r) * w + cc);
            let plane = mi as usize * mj as usize * mk as usize;
            let (mjs, mks) = (mj as usize, mk as usize);
            // This thread's share of a plane's tile: rows ty + m·by (m < 3), columns tx + n·bx (n < 2),
            // inside the tile; points outside the grid read as 0 (no interior point reads them). Six
            // named values, not an array: an array indexed in a loop went to local memory.
            type Share = (f32, f32, f32, f32, f32, f32);
            let load_one = |i: u32, m: u32, n: u32| {
                let (r, cc) = (ty + m * by, tx + n * bx);
                let (jj, kk) = (j0 - 1 + r, k0 - 1 + cc);
                if r < h && cc < w && jj < mj && kk < mk {
                    // SAFETY: (i, jj, kk) is a point of the grid.
                    unsafe { *p.add((i as usize * mjs + jj as usize) * mks + kk as usize) }
                } else {
                    0.0
                }
            };
            let load_plane = |i: u32| -> Share {
                (
                    load_one(i, 0, 0),
                    load_one(i, 0, 1),
                    load_one(i, 1, 0),
                    load_one(i, 1, 1),
                    load_one(i, 2, 0),
                    load_one(i, 2, 1),
                )
            };
            let store_one = |s: u32, m: u32, n: u32, v: f32| {
                let (r, cc) = (ty + m * by, tx + n * bx);
                if r < h && cc < w {
                    // SAFETY: r < h, cc < w, s < 4: inside the dynamic shared memory.
                    unsafe { st_shared_f32(cell(s, r, cc), v) };
                }
            };
            let store_plane = |s: u32, v: Share| {
                store_one(s, 0, 0, v.0);
                store_one(s, 0, 1, v.1);
                store_one(s, 1, 0, v.2);
                store_one(s, 1, 1, v.3);
                store_one(s, 2, 0, v.4);
                store_one(s, 2, 1, v.5);
            };
            let chunk = (k0 - 1 + tx) / 32;
            let cpr = himeno::chunks_per_row(mk);
            store_plane((i0 - 1) & 3, load_plane(i0 - 1));
            store_plane(i0 & 3, load_plane(i0));
            store_plane((i0 + 1) & 3, load_plane(i0 + 1));
            let mut u = 0;
            while u < planes {
                let i = i0 + u;
                // Planes i − 1, i, i + 1 are in the ring; every thread is done with plane i − 1's step,
                // so slot (i + 2) & 3 is free.
                sync_threads();
                let more = u + 1 < planes; // uniform: then i + 2 ≤ mi − 1
                let next = if more { load_plane(i + 2) } else { (0.0, 0.0, 0.0, 0.0, 0.0, 0.0) };
                let mut sq = 0.0f32;
                if inside {
                    let idx = (i as usize * mjs + j as usize) * mks + k as usize;
                    let at = |di: isize, dj: isize, dk: isize| {
                        let s = (i as isize + di) as u32 & 3;
                        // SAFETY: |di|, |dj|, |dk| ≤ 1 around an interior point of the tile: inside the ring.
                        unsafe { ld_shared_f32(cell(s, (ty as isize + 1 + dj) as u32, (tx as isize + 1 + dk) as u32)) }
                    };
                    // SAFETY: idx is an interior point; the coefficient planes are where the contract puts them.
                    let co = unsafe { coefs_at(a, b, c, bnd, wrk1, plane, idx) };
                    let (ss, new) = jacobi_point(at, &co, omega);
                    // SAFETY: an interior point of p_out.
                    unsafe { *p_out.add(idx) = new };
                    sq = ss * ss;
                }
                match mode {
                    gosa_via::PLAIN => {
                        if inside {
                            // SAFETY: gosa is one f32 on the device.
                            unsafe { atomic_add(gosa, sq) };
                        }
                    }
                    gosa_via::AGGREGATED => {
                        if inside {
                            // SAFETY: as above.
                            unsafe { atomic_add_aggregated(gosa, sq) };
                        }
                    }
                    _ => {
                        // Every lane of the warp is here (the branch above has closed). The offsets by
                        // constant index: a loop over the array stayed a loop over local memory here.
                        let mut s = sq;
                        let [d0, d1, d2, d3, d4] = WARP_TREE_OFFSETS;
                        s += warp_shuffle_down(FULL_MASK, s, d0);
                        s += warp_shuffle_down(FULL_MASK, s, d1);
                        s += warp_shuffle_down(FULL_MASK, s, d2);
                        s += warp_shuffle_down(FULL_MASK, s, d3);
                        s += warp_shuffle_down(FULL_MASK, s, d4);
                        if row_ok && lane_id() == 0 && chunk < cpr {
                            let row = (i as usize - 1) * (mj as usize - 2) + (j as usize - 1);
                            // SAFETY: row < (mi−2)(mj−2) and chunk < cpr: inside partials.
                            unsafe { *partials.add(row * cpr as usize + chunk as usize) = s };
                        }
                    }
                }
                if more {
                    store_plane((i + 2) & 3, next);
                }
                u += 1;
            }
        }
    };
}
pub(crate) use himeno_march_kernel;

himeno_march_kernel!(himeno_jacobi_march);

/// Level 2 of the deterministic gosa on its own (after a launch's last sweep): block `g` of
/// `LEVEL2_GROUPS` sums group `g` of `partials[..len]`; the last to finish writes `*out`.
///
/// # Safety
/// `partials` holds `len` values, `sums` `LEVEL2_GROUPS`, `count` one `u32` that is 0, `out`
/// one; launched as `LEVEL2_GROUPS` blocks of one dimension.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn himeno_gosa_reduce(
    partials: *const f32,
    len: u32,
    sums: *mut f32,
    count: *mut u32,
    out: *mut f32,
) {
    let (g, tid, n) = (block_idx_x() as usize, thread_idx_x() as usize, block_dim_x() as usize);
    // SAFETY: the whole block calls it with g < LEVEL2_GROUPS; buffers per the contract.
    unsafe { level2_group(partials, len as usize, g, sums, count, out, tid, n) };
}
