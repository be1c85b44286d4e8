//! The seed's integer matrix product `C = A·B` (square `n × n`, row-major, wrapping integer
//! arithmetic): one thread per element of `C`, from global memory or through shared-memory
//! tiles. Thread `(x, y)` of the 2-D grid computes `C(row = y, col = x)`.

use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::thread::{block_dim_y, block_idx_y, thread_idx_y};
use lockstep_shared::matmul::{MAX_TILE, MatInt, dot_row_col};

/// # Safety
/// `a`, `b`, `c` hold `n²` elements.
#[inline(always)]
unsafe fn global_body<T: MatInt>(n: u32, a: *const T, b: *const T, c: *mut T) {
    let col = block_idx_x() * block_dim_x() + thread_idx_x();
    let row = block_idx_y() * block_dim_y() + thread_idx_y();
    if row < n && col < n {
        // SAFETY: every index is below n² (row, col, k < n).
        unsafe {
            *c.add(row as usize * n as usize + col as usize) = dot_row_col(n, row, col, |i| *a.add(i), |i| *b.add(i));
        }
    }
}

/// # Safety
/// As [`global_body`]; the block is `tile × tile` with `tile ≤ MAX_TILE`; `sa`, `sb` are this
/// block's shared arrays of `MAX_TILE²` elements.
#[inline(always)]
unsafe fn shared_body<T: MatInt>(sa: *mut T, sb: *mut T, n: u32, a: *const T, b: *const T, c: *mut T) {
    let tile = block_dim_x();
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let col = block_idx_x() * tile + tx;
    let row = block_idx_y() * tile + ty;
    let (nu, m) = (n as usize, MAX_TILE as usize);
    let slot = ty as usize * m + tx as usize;
    let mut acc = T::default();
    let mut t0 = 0u32;
    while t0 < n {
        // Zero padding past the edge: mac(acc, 0, x) = acc, and wrapping sums are order-free.
        // SAFETY: slot < MAX_TILE²; global reads are below n².
        unsafe {
            *sa.add(slot) =
                if row < n && t0 + tx < n { *a.add(row as usize * nu + (t0 + tx) as usize) } else { T::default() };
            *sb.add(slot) =
                if t0 + ty < n && col < n { *b.add((t0 + ty) as usize * nu + col as usize) } else { T::default() };
        }
        sync_threads();
        let mut q = 0;
        while q < tile {
            // SAFETY: ty, tx, q < tile ≤ MAX_TILE.
            acc = unsafe { T::mac(acc, *sa.add(ty as usize * m + q as usize), *sb.add(q as usize * m + tx as usize)) };
            q += 1;
        }
        sync_threads();
        t0 += tile;
    }
    if row < n && col < n {
        // SAFETY: row, col < n.
        unsafe { *c.add(row as usize * nu + col as usize) = acc };
    }
}

macro_rules! matmul_kernels {
    ($(($global:ident, $shared:ident, $sa:ident, $sb:ident, $t:ty)),* $(,)?) => {$(
        #[doc = concat!("`C = A·B` in `", stringify!($t), "`, one thread per element, global memory.")]
        ///
        /// # Safety
        /// `a`, `b`, `c` hold `n²` elements; `c` overlaps neither input.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $global(n: u32, a: *const $t, b: *const $t, c: *mut $t) {
            // SAFETY: lengths checked by the launcher.
            unsafe { global_body(n, a, b, c) }
        }

        #[doc = concat!("`C = A·B` in `", stringify!($t), "` through `tile × tile` shared-memory tiles (`tile = blockDim.x`).")]
        ///
        /// # Safety
        /// As the global kernel; the block is square, at most 16 × 16.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $shared(n: u32, a: *const $t, b: *const $t, c: *mut $t) {
            let sa = shared_array![$sa: [$t; (MAX_TILE * MAX_TILE) as usize]];
            let sb = shared_array![$sb: [$t; (MAX_TILE * MAX_TILE) as usize]];
            // SAFETY: lengths and the square block checked by the launcher.
            unsafe { shared_body(sa, sb, n, a, b, c) }
        }
    )*};
}

matmul_kernels!(
    (matmul_global_i32, matmul_shared_i32, MATMUL_A_I32, MATMUL_B_I32, i32),
    (matmul_global_i64, matmul_shared_i64, MATMUL_A_I64, MATMUL_B_I64, i64),
);
