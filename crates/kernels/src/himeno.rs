//! The Himeno benchmark's Jacobi sweep (issue #4) with its gosa reductions: plain atomics,
//! aggregated atomics, or a grid-independent two-level tree.

use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::thread::{block_dim_y, block_idx_y, block_idx_z, grid_dim_z, thread_idx_y};
use lockstep_shared::himeno::{self, Coefs, Dims, gosa_via, jacobi_point};
use lockstep_shared::reduce::WARP_TREE_OFFSETS;

/// One Jacobi sweep of the Himeno benchmark: `p_out = p + omega·ss` at interior points, gosa
/// by `dims.gosa_via` into `*gosa` (atomics) or into `partials` (tree level 1: one warp-tree
/// sum per 32 consecutive k of a row, at `(row, chunk)`). Thread x ↦ k − 1, y ↦ j − 1; block z
/// covers `q = ceil((mi − 2) / gridDim.z)` consecutive planes from `i = 1 + q·z`. With exactly 2
/// or 4 planes a thread issues the loads of all its points (their shared `p` values loaded
/// once) in one basic block before storing any; otherwise it goes plane by plane.
///
/// # Safety
/// Coefficient arrays as in the benchmark (`a`: 4 planes, `b`, `c`: 3 planes, `bnd`, `wrk1`,
/// `p`, `p_out`: 1 plane of `mi·mj·mk`); `p` and `p_out` do not overlap; `partials` holds
/// `(mi−2)(mj−2)·chunks_per_row(mk)` for the tree; blockDim.x is a multiple of 32, blockDim.z 1.
#[unsafe(no_mangle)]
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
) {
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
        let co = Coefs {
            a: [*a.add(idx), *a.add(plane + idx), *a.add(2 * plane + idx), *a.add(3 * plane + idx)],
            b: [*b.add(idx), *b.add(plane + idx), *b.add(2 * plane + idx)],
            c: [*c.add(idx), *c.add(plane + idx), *c.add(2 * plane + idx)],
            bnd: *bnd.add(idx),
            wrk1: *wrk1.add(idx),
        };
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
    if planes == 4 || planes == 2 {
        let (mut s0, mut s1, mut s2, mut s3) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
        if inside {
            if planes == 4 {
                let (r0, r1, r2, r3) = (point(at_plane(0)), point(at_plane(1)), point(at_plane(2)), point(at_plane(3)));
                store(at_plane(0), r0.1);
                store(at_plane(1), r1.1);
                store(at_plane(2), r2.1);
                store(at_plane(3), r3.1);
                (s0, s1, s2, s3) = (r0.0 * r0.0, r1.0 * r1.0, r2.0 * r2.0, r3.0 * r3.0);
            } else {
                let (r0, r1) = (point(at_plane(0)), point(at_plane(1)));
                store(at_plane(0), r0.1);
                store(at_plane(1), r1.1);
                (s0, s1) = (r0.0 * r0.0, r1.0 * r1.0);
            }
        }
        reduce(s0, i0);
        reduce(s1, i0 + 1);
        if planes == 4 {
            reduce(s2, i0 + 2);
            reduce(s3, i0 + 3);
        }
    } else {
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
}

/// Level 2 of the deterministic gosa: one block of `LEVEL2_THREADS` threads; thread t sums
/// partials t, t + LEVEL2_THREADS, … in order, then a halving tree; `*out` = the total.
///
/// # Safety
/// `partials` holds `len` values, `out` one; launched as one block of `LEVEL2_THREADS` threads.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn himeno_gosa_reduce(partials: *const f32, len: u32, out: *mut f32) {
    const T: usize = himeno::LEVEL2_THREADS;
    let slots = shared_array![ATOMICS_HIMENO_LEVEL2: [f32; T]];
    let t = thread_idx_x() as usize;
    let len = len as usize;
    let mut s = 0.0f32;
    let mut i = t;
    // Sixteen loads in flight, then the same in-order additions as the plain loop.
    while i + 15 * T < len {
        // SAFETY: i + 15·T < len.
        let v = |u: usize| unsafe { *partials.add(i + u * T) };
        let (v0, v1, v2, v3, v4, v5, v6, v7) = (v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7));
        let (v8, v9, v10, v11, v12, v13, v14, v15) = (v(8), v(9), v(10), v(11), v(12), v(13), v(14), v(15));
        s += v0;
        s += v1;
        s += v2;
        s += v3;
        s += v4;
        s += v5;
        s += v6;
        s += v7;
        s += v8;
        s += v9;
        s += v10;
        s += v11;
        s += v12;
        s += v13;
        s += v14;
        s += v15;
        i += 16 * T;
    }
    while i < len {
        // SAFETY: i < len.
        s += unsafe { *partials.add(i) };
        i += T;
    }
    // SAFETY: t < 256 (launch contract).
    unsafe { *slots.add(t) = s };
    sync_threads();
    let mut stride = T / 2;
    while stride > 0 {
        if t < stride {
            // SAFETY: t + stride < 256.
            unsafe { *slots.add(t) += *slots.add(t + stride) };
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        // SAFETY: out is one f32.
        unsafe { *out = *slots };
    }
}
