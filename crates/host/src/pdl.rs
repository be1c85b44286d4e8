//! Programmatic dependent launch (sm_90 and newer): a kernel launched while the kernel before
//! it is still running, which waits for it on its own.
//!
//! The kernels that may be launched so are the sm_90 `*_pdl_*` kernels: their first
//! instruction is `griddepcontrol.wait` (every thread waits until the grids before it have
//! completed and their writes are visible), their second `griddepcontrol.launch_dependents`.
//! Launched early, such a kernel's blocks are resident and waiting while the kernel before it
//! drains, and it reads and writes memory only after that kernel completed — the same order
//! of memory accesses as a plain launch, so the same bits. Launched plainly, the wait is a
//! no-op. On the stream that is `cuLaunchKernelEx` with the programmatic-serialization
//! attribute (this module); in a graph, a programmatic edge (`crate::graph`).
//!
//! Invariant: [`Edge::Programmatic`] is asked for only with a `*_pdl_*` kernel. The overlap is
//! between kernels only: work before it that is not a kernel (a copy, a memset, a graph node of
//! another kind) completes before it starts, as before any launch.

use crate::launch::Dims;
use cust::function::Function;
use cust::stream::Stream;
use cust::sys::{CUfunction, CUresult, CUstream};
use std::ffi::c_void;

/// How a launch follows the launch before it (on the stream, or in a graph being recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    /// After the launch before has completed, its writes visible: any kernel.
    Full,
    /// As soon as every block of the kernel before has signalled or exited: only for a
    /// `*_pdl_*` kernel (the module's invariant). Where the driver has no programmatic launch, a
    /// full edge instead.
    Programmatic,
}

/// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`.
const PROGRAMMATIC_STREAM_SERIALIZATION: u32 = 6;

/// `CUlaunchAttribute` (CUDA 11.8; cust 0.3.2's bindings predate it): an id, padding to 8
/// bytes, a 64-byte value (here the `int` of `programmaticStreamSerializationAllowed`), aligned
/// as the C union, which holds pointers.
#[repr(C, align(8))]
struct LaunchAttribute {
    id: u32,
    pad: [u8; 4],
    value: [i32; 16],
}

/// `CUlaunchConfig`.
#[repr(C)]
struct LaunchConfig {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: CUstream,
    attrs: *const LaunchAttribute,
    count: u32,
}

unsafe extern "C" {
    /// `cuLaunchKernelEx` (CUDA 11.8), through the driver table ([`crate::driver`]).
    fn cuLaunchKernelEx(
        config: *const LaunchConfig,
        function: CUfunction,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> CUresult;
}

/// Launches `function` on `stream` with programmatic stream serialization: whether the driver
/// took it (`false`: no `cuLaunchKernelEx`, no programmatic launch, or a refused launch — the
/// caller then launches plainly, which reports any real launch error).
///
/// # Safety
/// As `Gpu::launch` (`args`, the device pointers), the grid is not empty, `stream` belongs to the
/// current context, and the module's invariant: `function` is a `*_pdl_*` kernel.
pub(crate) unsafe fn launch(
    stream: &Stream,
    function: &Function<'_>,
    dims: Dims,
    shared_bytes: u32,
    args: &[*mut c_void],
) -> bool {
    let mut value = [0; 16];
    value[0] = 1;
    let attribute = LaunchAttribute { id: PROGRAMMATIC_STREAM_SERIALIZATION, pad: [0; 4], value };
    let config = LaunchConfig {
        grid: dims.grid,
        block: dims.block,
        shared_bytes,
        stream: stream.as_inner(),
        attrs: &attribute,
        count: 1,
    };
    // SAFETY: `config` and `attribute` live across the call; `args` holds one pointer per
    // parameter (the caller's contract), which the driver reads during the call; the function
    // belongs to a module the caller keeps loaded; `extra` is null.
    let r = unsafe {
        cuLaunchKernelEx(&config, function.to_raw(), args.as_ptr() as *mut *mut c_void, std::ptr::null_mut())
    };
    r == CUresult::CUDA_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layouts `cuda.h` gives (64-bit): the driver reads these bytes.
    #[test]
    fn launch_structs_have_the_drivers_layout() {
        assert_eq!((size_of::<LaunchAttribute>(), align_of::<LaunchAttribute>()), (72, 8));
        assert_eq!(std::mem::offset_of!(LaunchAttribute, value), 8);
        assert_eq!(size_of::<LaunchConfig>(), 56);
        assert_eq!(std::mem::offset_of!(LaunchConfig, shared_bytes), 24);
        assert_eq!(std::mem::offset_of!(LaunchConfig, stream), 32);
        assert_eq!(std::mem::offset_of!(LaunchConfig, attrs), 40);
        assert_eq!(std::mem::offset_of!(LaunchConfig, count), 48);
    }
}
