//! The first kernels: BLAS-1 updates, a counter, a warp and a block reduction, a libm call.
//! Small on purpose — they prove the pipeline and become building blocks.

use lockstep_cuda_std::prelude::*;
use lockstep_shared::axpy::{SAXPY_PER_THREAD, axpy};
use lockstep_shared::{predicate::exceeds, reduce, special::exp_sin_log};

/// Four f32 in one 16-byte load or store (`ld.global.v4.f32`).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct F32x4([f32; 4]);

/// `y[i] = a·x[i] + y[i]` for `i < n` (f32). Thread `t` owns elements `4t .. 4t+4`: with both
/// pointers 16-byte aligned it moves them as one 16-byte load of x, one of y and one store;
/// otherwise (and for the tail) element by element. The arithmetic is the same
/// `lockstep_shared::axpy::axpy` either way.
///
/// # Safety
/// `x` and `y` hold `n` elements each and do not overlap; grid ≥ ceil(n/4) threads, ≤ 2^32.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32) {
    let t = index_1d() as usize;
    let first = t * SAXPY_PER_THREAD as usize;
    let n = n as usize;
    let aligned = (x as usize | y as usize) % 16 == 0;
    if aligned && first + 4 <= n {
        // SAFETY: elements first..first+4 are below n; both pointers are 16-byte aligned, so
        // element `first` (a multiple of 4) starts a whole F32x4.
        unsafe {
            let xv = (x as *const F32x4).add(t).read();
            let yv = (y as *const F32x4).add(t).read();
            let mut out = [0.0f32; 4];
            for k in 0..4 {
                out[k] = axpy(a, xv.0[k], yv.0[k]);
            }
            (y as *mut F32x4).add(t).write(F32x4(out));
        }
    } else {
        let mut i = first;
        while i < n && i < first + 4 {
            // SAFETY: i < n and the launcher checked both lengths are n.
            unsafe { *y.add(i) = axpy(a, *x.add(i), *y.add(i)) };
            i += 1;
        }
    }
}

/// `y[i] = a·x[i] + y[i]` for `i < n` (f64).
///
/// # Safety
/// As [`saxpy`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn daxpy(n: u32, a: f64, x: *const f64, y: *mut f64) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        // SAFETY: i < n and the launcher checked both lengths are n.
        unsafe { *y.add(i) = axpy(a, *x.add(i), *y.add(i)) };
    }
}

/// Adds to `*counter` the number of `x[i] > threshold`, one plain `atom.add` per hit.
///
/// # Safety
/// `x` holds `n` elements; `counter` points to one `u32` on the device.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn count_exceeding(n: u32, x: *const f32, threshold: f32, counter: *mut u32) {
    let i = index_1d();
    // SAFETY: i < n and the launcher checked the length; counter is one valid u32.
    if i < n && exceeds(unsafe { *x.add(i as usize) }, threshold) {
        unsafe { atomic_add(counter, 1u32) };
    }
}

/// `out[w]` = sum of `x[32w .. 32w+32]` (missing tail elements count as `+0.0`) in the warp-tree
/// order of `lockstep_shared::reduce::warp_tree_sum`, through `shfl.sync.down`.
///
/// # Safety
/// `x` holds `n` elements, `out` `ceil(n/32)`; the block size is a multiple of 32.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn warp_sum_f32(n: u32, x: *const f32, out: *mut f32) {
    let i = index_1d();
    // SAFETY: read only below n (the launcher checked the length).
    let mut s = if i < n { unsafe { *x.add(i as usize) } } else { 0.0 };
    for d in reduce::WARP_TREE_OFFSETS {
        s += warp_shuffle_down(FULL_MASK, s, d);
    }
    if lane_id() == 0 && i < n {
        // SAFETY: i / 32 < ceil(n / 32) = out's length.
        unsafe { *out.add((i / 32) as usize) = s };
    }
}

/// `out[b]` = sum of `x[256b .. 256b+256]` (missing elements `+0.0`) in the shared-memory tree
/// order of `lockstep_shared::reduce::block_tree_sum`.
///
/// # Safety
/// `x` holds `n` elements, `out` `ceil(n/256)`; launched with exactly 256 threads per block.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn block_sum_f64(n: u32, x: *const f64, out: *mut f64) {
    let slots = shared_array![BLOCK_SUM_F64_SLOTS: [f64; reduce::BLOCK_REDUCE_THREADS]];
    let t = thread_idx_x() as usize;
    let i = index_1d();
    // SAFETY: t < 256 = the array's length (launch contract); reads of x only below n.
    unsafe { *slots.add(t) = if i < n { *x.add(i as usize) } else { 0.0 } };
    sync_threads();
    let mut stride = reduce::BLOCK_REDUCE_THREADS / 2;
    while stride > 0 {
        if t < stride {
            // SAFETY: t + stride < 256.
            unsafe { *slots.add(t) += *slots.add(t + stride) };
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        // SAFETY: block_idx_x < ceil(n / 256) = out's length (launch contract).
        unsafe { *out.add(block_idx_x() as usize) = *slots };
    }
}

/// `y[i] = exp(x[i])·sin(x[i]) + log(x[i])` through the pure-Rust `libm`.
///
/// # Safety
/// `x` and `y` hold `n` elements each.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn exp_sin_log_f64(n: u32, x: *const f64, y: *mut f64) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        // SAFETY: i < n and the launcher checked both lengths.
        unsafe { *y.add(i) = exp_sin_log(*x.add(i)) };
    }
}
