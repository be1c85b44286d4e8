//! [`launch_bounds!`](crate::launch_bounds!): CUDA's `__launch_bounds__(max_threads, min_blocks)` for a kernel written
//! here, which rustc's NVPTX backend has no attribute for.
//!
//! The macro exports one `[u32; 2]` named `__lockstep_launch_bounds__<kernel>`; lockstep's PTX
//! builder (`lockstep_ptx_builder::launch_bounds`, whose `PREFIX` is that name's start) removes
//! it from the module and writes `.maxntid max_threads, 1, 1` and `.minnctapersm min_blocks`
//! into the kernel's entry. ptxas then allocates registers so that `min_blocks` blocks of
//! `max_threads` threads fit on one SM — which also changes how it schedules the kernel — and
//! the driver refuses a launch of a larger block (`CUDA_ERROR_INVALID_VALUE`), so the host
//! launcher refuses such a block first.

/// Declares launch bounds for the kernel `$kernel` of this crate, as
/// `__launch_bounds__($max_threads, $min_blocks)` does in CUDA C++: at most `$max_threads`
/// threads per block, registers for `$min_blocks` resident blocks per SM.
///
/// ```ignore
/// launch_bounds!(himeno_jacobi, max_threads = 256, min_blocks = 6);
/// ```
#[macro_export]
macro_rules! launch_bounds {
    ($kernel:ident, max_threads = $threads:expr, min_blocks = $blocks:expr) => {
        const _: () = {
            assert!($threads > 0 && $threads <= 1024 && $blocks > 0, "launch bounds out of range");
            // Read and removed by the PTX builder (`lockstep_ptx_builder::launch_bounds::PREFIX`).
            #[unsafe(export_name = concat!("__lockstep_launch_bounds__", stringify!($kernel)))]
            static BOUNDS: [u32; 2] = [$threads, $blocks];
        };
    };
}
