//! Thread, block and grid indices, and block-wide barriers.
//!
//! The special registers (`%tid`, `%ctaid`, `%ntid`, `%nctaid`) are read through
//! `core::arch::nvptx` (pure reads, which LLVM may hoist out of loops), and `%tid.x` also by an
//! `asm` statement that stays where it is written (`reread_thread_idx_x`). Indices are `u32`
//! as in CUDA and `cuda_std`.

#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx;

#[cfg(target_arch = "nvptx64")]
macro_rules! special_registers {
    ($($(#[$doc:meta])* $name:ident => $intrinsic:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            // SAFETY: reading a special register has no preconditions.
            unsafe { nvptx::$intrinsic() as u32 }
        }
    )*};
}

#[cfg(target_arch = "nvptx64")]
special_registers! {
    /// This thread's index in its block, x dimension (`threadIdx.x`).
    thread_idx_x => _thread_idx_x;
    /// This thread's index in its block, y dimension (`threadIdx.y`).
    thread_idx_y => _thread_idx_y;
    /// This thread's index in its block, z dimension (`threadIdx.z`).
    thread_idx_z => _thread_idx_z;
    /// This block's index in the grid, x dimension (`blockIdx.x`).
    block_idx_x => _block_idx_x;
    /// This block's index in the grid, y dimension (`blockIdx.y`).
    block_idx_y => _block_idx_y;
    /// This block's index in the grid, z dimension (`blockIdx.z`).
    block_idx_z => _block_idx_z;
    /// Threads per block, x dimension (`blockDim.x`).
    block_dim_x => _block_dim_x;
    /// Threads per block, y dimension (`blockDim.y`).
    block_dim_y => _block_dim_y;
    /// Threads per block, z dimension (`blockDim.z`).
    block_dim_z => _block_dim_z;
    /// Blocks in the grid, x dimension (`gridDim.x`).
    grid_dim_x => _grid_dim_x;
    /// Blocks in the grid, y dimension (`gridDim.y`).
    grid_dim_y => _grid_dim_y;
    /// Blocks in the grid, z dimension (`gridDim.z`).
    grid_dim_z => _grid_dim_z;
}

/// `threadIdx.x` read again where it is called (`mov.u32 %tid.x` in an `asm` statement with
/// side effects, which LLVM does not hoist or merge): for code inside a long loop that needs
/// the index only briefly. [`thread_idx_x`] is a pure read, so LLVM hoists what is computed
/// from it (`t / 32`, `t % 32`) out of the loop and keeps it in registers for the whole loop
/// (measured: +6 registers in `bridge_staged_dims_f32`, one block fewer per SM).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn reread_thread_idx_x() -> u32 {
    let t: u32;
    // SAFETY: reads a special register; no memory is touched.
    unsafe { core::arch::asm!("mov.u32 {t}, %tid.x;", t = out(reg32) t, options(nomem, nostack, preserves_flags)) };
    t
}

/// This thread's index in a one-dimensional grid: `blockIdx.x · blockDim.x + threadIdx.x`.
///
/// Computed in 32 bits: host launchers only start grids of at most 2^32 threads
/// (`Grid1d::for_len` refuses more), so it never wraps.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn index_1d() -> u32 {
    grid::global_index(block_idx_x(), block_dim_x(), thread_idx_x())
}

/// This thread's index with the blocks taken from the end: `(gridDim.x − 1 − blockIdx.x) ·
/// blockDim.x + threadIdx.x` — the same indices as [`index_1d`], the last block's first. Which
/// indices run last then changes where the hardware starts blocks in `blockIdx` order (as
/// observed, not documented): a grid's tail moves to its first indices.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn index_1d_blocks_reversed() -> u32 {
    grid::global_index_blocks_reversed(block_idx_x(), grid_dim_x(), block_dim_x(), thread_idx_x())
}

/// Total threads in a one-dimensional grid (`gridDim.x · blockDim.x`), as `u64`: the stride of
/// a grid-stride loop.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn grid_size_1d() -> u64 {
    grid_dim_x() as u64 * block_dim_x() as u64
}

/// Block-wide barrier (`__syncthreads`, `bar.sync 0`). Every thread of the block must reach it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: `bar.sync 0` has no memory-safety preconditions; a barrier that some threads skip
    // deadlocks or misbehaves, which is a logic error the kernels avoid by calling it uniformly.
    unsafe { nvptx::_syncthreads() }
}

/// Block-wide barrier that also reduces a predicate (`__syncthreads_and`, `bar.red.and.pred`):
/// `true` iff `pred` is `true` in every thread of the block. Every thread must reach it, as
/// [`sync_threads`]; it orders memory as `bar.sync` does.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn sync_threads_and(pred: bool) -> bool {
    let all: u32;
    // SAFETY: as `sync_threads` (called uniformly by the kernels); the asm is not `nomem`, so
    // the compiler keeps memory accesses on their side of the barrier.
    unsafe {
        core::arch::asm!(
            "{{ .reg .pred p, q; setp.ne.u32 p, {x}, 0; bar.red.and.pred q, 0, p; selp.u32 {r}, 1, 0, q; }}",
            x = in(reg32) pred as u32,
            r = out(reg32) all,
            options(nostack),
        )
    };
    all != 0
}

/// Pure grid arithmetic, shared by the device and the host launchers (testable on the host).
pub mod grid {
    /// `block · dim + thread` in 32 bits (the caller guarantees it does not wrap).
    #[inline(always)]
    pub fn global_index(block: u32, dim: u32, thread: u32) -> u32 {
        block.wrapping_mul(dim).wrapping_add(thread)
    }

    /// `(grid − 1 − block) · dim + thread` in 32 bits, for `block < grid` (the caller
    /// guarantees that `grid · dim` does not wrap): [`global_index`] with the blocks taken
    /// from the end.
    #[inline(always)]
    pub fn global_index_blocks_reversed(block: u32, grid: u32, dim: u32, thread: u32) -> u32 {
        global_index(grid.wrapping_sub(1).wrapping_sub(block), dim, thread)
    }

    /// Blocks of `threads` needed to cover `len` items: `ceil(len / threads)`.
    /// `None` when `threads` is zero.
    #[inline]
    pub fn blocks_for(len: u64, threads: u32) -> Option<u64> {
        if threads == 0 {
            return None;
        }
        Some(len.div_ceil(threads as u64))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn blocks_cover_every_item_once() {
            assert_eq!(blocks_for(0, 256), Some(0));
            assert_eq!(blocks_for(1, 256), Some(1));
            assert_eq!(blocks_for(256, 256), Some(1));
            assert_eq!(blocks_for(257, 256), Some(2));
            assert_eq!(blocks_for(u32::MAX as u64, 256), Some(1 << 24));
            assert_eq!(blocks_for(5, 0), None);
        }

        #[test]
        fn global_index_is_row_major() {
            assert_eq!(global_index(0, 256, 7), 7);
            assert_eq!(global_index(3, 256, 7), 3 * 256 + 7);
            assert_eq!(global_index((1 << 24) - 1, 256, 255), u32::MAX);
        }

        #[test]
        fn blocks_reversed_is_the_same_set_of_indices() {
            assert_eq!(global_index_blocks_reversed(0, 5, 128, 7), 4 * 128 + 7);
            assert_eq!(global_index_blocks_reversed(4, 5, 128, 7), 7);
            assert_eq!(global_index_blocks_reversed(0, 1 << 24, 256, 255), u32::MAX);
            for (grid, dim) in [(1u32, 32u32), (3, 64), (7, 96), (11, 128)] {
                // Every index below grid · dim exactly once; a block's threads stay consecutive.
                let mut seen = [false; 11 * 128];
                for b in 0..grid {
                    let first = global_index_blocks_reversed(b, grid, dim, 0);
                    for t in 0..dim {
                        let p = global_index_blocks_reversed(b, grid, dim, t);
                        assert_eq!(p, first + t);
                        assert!(!seen[p as usize]);
                        seen[p as usize] = true;
                    }
                }
                assert!(seen[..(grid * dim) as usize].iter().all(|&s| s));
            }
        }
    }
}
