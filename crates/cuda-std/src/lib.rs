//! The device prelude: lockstep's stand-in for Rust-CUDA's `cuda_std`.
//!
//! Kernels are compiled by rustc's own NVPTX backend (`nvptx64-nvidia-cuda`), which knows
//! nothing of CUDA's vocabulary beyond `core::arch::nvptx`. This crate gives kernels the names
//! CUDA programmers expect, mirroring `cuda_std`:
//!
//! - [`thread`]: `thread_idx_x`, `block_idx_x`, `block_dim_x`, `grid_dim_x`, `index_1d`,
//!   `sync_threads` — all `u32`, as in `cuda_std`.
//! - [`warp`]: `lane_id`, `activemask`, `sync_warp`, `warp_shuffle_{down,up,xor,idx}`,
//!   `warp_vote_{ballot,any,all}`, `warp_match_any`, through `asm!`.
//! - [`aggregate`]: warp-aggregated `atomic_add_aggregated` (variants a–d, CAS f64, counts).
//! - [`atomic`]: `atomic_add` (u32, i32, u64, f32, f64 — native `atom.add`), `atomic_cas`.
//! - `cluster` (sm_90 builds only): `cluster_blocks`, `cluster_block_rank`, `cluster_id_x`.
//! - [`memory`]: `load_global_i16`, `load_global_u32`, `store_global_i16` at a 32-bit element
//!   offset (`ld.global`/`st.global`).
//! - [`launch_bounds!`]: CUDA's `__launch_bounds__` for a kernel (the PTX builder writes the
//!   directives).
//! - [`shared_array!`] / [`dynamic_shared!`]: shared memory sized at compile time / per launch; [`shared`]: `shared_addr` and
//!   typed `ld_shared_*`/`st_shared_*` (explicit `ld.shared`/`st.shared` on 32-bit addresses).
//! - a panic handler that executes `trap` (a kernel that panics aborts its launch and the host
//!   sees `CUDA_ERROR_ILLEGAL_INSTRUCTION`-class errors instead of wrong data).
//!
//! **Execution model.** A kernel runs once per thread; threads come in warps of 32 that execute
//! together, warps in blocks that share memory and can meet at barriers, blocks in a grid that
//! cannot synchronise with each other inside a launch. Warp intrinsics take a `mask` of the
//! lanes that participate; every lane named in it must execute the same intrinsic.
//!
//! On the host only the pure helpers (mask arithmetic in [`warp::mask`], grid arithmetic in
//! [`thread::grid`]) exist, so they can be unit-tested; the intrinsics are
//! `#[cfg(target_arch = "nvptx64")]`.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch, stdarch_nvptx, core_float_math))]
#![warn(missing_docs)]

pub mod aggregate;
pub mod atomic;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub mod cluster;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub mod grid_dependency;
pub mod launch_bounds;
pub mod math;
pub mod memory;
pub mod shared;
pub mod thread;
pub mod unroll;
pub mod warp;

/// Everything a kernel usually needs, for `use lockstep_cuda_std::prelude::*`.
pub mod prelude {
    #[cfg(target_arch = "nvptx64")]
    pub use crate::aggregate::{
        atomic_add_aggregated, atomic_add_aggregated_block, atomic_add_aggregated_cas_f64, atomic_add_aggregated_match,
        atomic_add_aggregated_shared, atomic_add_aggregated_shfl, atomic_add_cas_f64, atomic_count_aggregated,
    };
    #[cfg(target_arch = "nvptx64")]
    pub use crate::atomic::{atomic_add, atomic_cas};
    #[cfg(target_arch = "nvptx64")]
    pub use crate::shared::{
        ld_shared_f32, ld_shared_f64, ld_shared_u32, ld_shared_u64, ld_shared_v2_f32, ld_shared_v2_f64,
        ld_shared_v4_f32, ld_shared_v4_f64, ld_shared_v4_u32, shared_addr, st_shared_f32, st_shared_f64, st_shared_u32,
        st_shared_u64, st_shared_v2_f32, st_shared_v4_f32, st_shared_v4_f64,
    };
    #[cfg(target_arch = "nvptx64")]
    pub use crate::thread::{
        block_dim_x, block_idx_x, grid_dim_x, index_1d, index_1d_blocks_reversed, reread_thread_idx_x, sync_threads,
        sync_threads_and, thread_idx_x,
    };
    pub use crate::warp::{FULL_MASK, mask};
    #[cfg(target_arch = "nvptx64")]
    pub use crate::warp::{
        activemask, lane_id, sync_warp, warp_match_any, warp_shuffle_down, warp_shuffle_idx, warp_shuffle_xor,
        warp_vote_any, warp_vote_ballot,
    };
    pub use crate::{dynamic_shared, shared_array};
}

/// Aborts the kernel: every panic in device code (an out-of-bounds slice index, an explicit
/// `panic!`) ends in `trap`, which fails the launch with an error the host reports.
#[cfg(all(target_arch = "nvptx64", not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` has no preconditions; it ends the kernel.
    unsafe { core::arch::nvptx::trap() }
}
