//! Box–Muller normals alone (`lockstep_shared::bridge::boxmuller`): one thread per path, one
//! Philox block per four rows, two pairs per block, each row's element stored at
//! `out[row·paths + p]` (a warp's stores coalesce).

use lockstep_cuda_std::prelude::*;
use lockstep_shared::bridge::Real;
use lockstep_shared::bridge::philox::{counter, key, philox4x32_10};

/// `out[j·paths + p]` = row `j`'s Box–Muller normal of path `first + p` under `seed`, for
/// `j < rows`, `p < paths`: rows `4b, 4b+1` are the pair of words 0, 1 of Philox block `b`, rows `4b+2, 4b+3`
/// that of words 2, 3 (`boxmuller::normal_of_block`).
///
/// # Safety
/// `out` holds `rows·paths` elements; a 1-D grid of at least `paths` threads.
#[inline(always)]
unsafe fn normals_bm_philox<T: Real>(rows: u32, seed: u64, first: u64, out: *mut T, paths: u32) {
    let p = index_1d();
    if p >= paths {
        return;
    }
    let k = key(seed);
    let stride = paths as usize;
    let mut o = out.wrapping_add(p as usize);
    let mut j = 0;
    while j < rows {
        let w = philox4x32_10(counter(j / 4, first + p as u64), k);
        let (c0, s0) = T::box_muller(w[0], w[1]);
        let (c1, s1) = T::box_muller(w[2], w[3]);
        // SAFETY: o = out + j·paths + p with j < rows; each further row is checked against rows.
        unsafe {
            *o = c0;
            if j + 1 < rows {
                *o.wrapping_add(stride) = s0;
            }
            if j + 2 < rows {
                *o.wrapping_add(2 * stride) = c1;
            }
            if j + 3 < rows {
                *o.wrapping_add(3 * stride) = s1;
            }
        }
        o = o.wrapping_add(4 * stride);
        j += 4;
    }
}

/// [`normals_bm_philox`] in f32.
///
/// # Safety
/// As [`normals_bm_philox`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn normals_bm_philox_f32(rows: u32, seed: u64, first: u64, out: *mut f32, paths: u32) {
    // SAFETY: this kernel's contract is the body's.
    unsafe { normals_bm_philox::<f32>(rows, seed, first, out, paths) }
}

/// [`normals_bm_philox`] in f64.
///
/// # Safety
/// As [`normals_bm_philox`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn normals_bm_philox_f64(rows: u32, seed: u64, first: u64, out: *mut f64, paths: u32) {
    // SAFETY: this kernel's contract is the body's.
    unsafe { normals_bm_philox::<f64>(rows, seed, first, out, paths) }
}
