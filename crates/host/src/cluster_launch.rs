//! Launches with a thread-block cluster dimension (sm_90): `cuLaunchKernelEx` with the
//! `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` attribute, and the function attribute that allows
//! clusters of more than 8 blocks. cust 0.3.2 (and its `cust_raw` 0.11, CUDA 11 headers) has
//! neither, so the two CUDA 12 driver structures are written here, laid out as `cuda.h` lays
//! them out (checked by the size assertions below); the driver symbol goes through the driver
//! table like every other (`driver.rs`).

use crate::error::{Result, driver};
use crate::gpu::Gpu;
use cust::function::Function;
use std::ffi::c_void;

/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` of `CUlaunchAttributeID`.
const CLUSTER_DIMENSION: u32 = 4;
/// `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED` of `CUfunction_attribute` (CUDA 12).
const NON_PORTABLE_CLUSTER_SIZE_ALLOWED: i32 = 14;

/// `CUlaunchAttribute`: an id, padding to 8 bytes, and a 64-byte value union whose
/// `clusterDim` member is three `u32` at its start.
#[repr(C, align(8))]
struct LaunchAttribute {
    id: u32,
    pad: u32,
    value: [u32; 16],
}

/// `CUlaunchConfig`.
#[repr(C)]
struct LaunchConfig {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: cust::sys::CUstream,
    attrs: *mut LaunchAttribute,
    num_attrs: u32,
}

const _: () = assert!(size_of::<LaunchAttribute>() == 72 && size_of::<LaunchConfig>() == 56);

unsafe extern "C" {
    /// `cuLaunchKernelEx` (CUDA 12.0).
    fn cuLaunchKernelEx(
        config: *const LaunchConfig,
        f: cust::sys::CUfunction,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> cust::sys::CUresult;
    /// `cuOccupancyMaxActiveClusters` (CUDA 12.0).
    fn cuOccupancyMaxActiveClusters(
        clusters: *mut i32,
        f: cust::sys::CUfunction,
        config: *const LaunchConfig,
    ) -> cust::sys::CUresult;
}

/// Lets `function` be launched in clusters of up to 16 blocks (8 is the portable limit).
pub(crate) fn allow_large_clusters(function: &Function<'_>) -> Result<()> {
    type SetAttribute = unsafe extern "C" fn(cust::sys::CUfunction, i32, i32) -> cust::sys::CUresult;
    // SAFETY: the same symbol cust_raw declares, with the attribute as the `int` the C enum is
    // (its Rust enum lacks this CUDA 12 value, so it cannot be passed as that type).
    let set: SetAttribute = unsafe { std::mem::transmute(cust::sys::cuFuncSetAttribute as *const ()) };
    // SAFETY: a live function handle; the call sets one attribute of it.
    driver("cuFuncSetAttribute", unsafe { set(function.to_raw(), NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1) })
}

/// How many clusters of `cluster` blocks of `threads` threads with `shared_bytes` of dynamic
/// shared memory each the GPU runs at once (a grid of more runs in waves).
pub(crate) fn max_active_clusters(
    gpu: &Gpu,
    function: &Function<'_>,
    [threads, cluster]: [u32; 2],
    shared_bytes: u32,
) -> Result<u32> {
    gpu.bind()?;
    let mut attr = LaunchAttribute { id: CLUSTER_DIMENSION, pad: 0, value: [0; 16] };
    attr.value[..3].copy_from_slice(&[cluster, 1, 1]);
    let config = LaunchConfig {
        grid: [cluster, 1, 1],
        block: [threads, 1, 1],
        shared_bytes,
        stream: gpu.raw_stream(),
        attrs: &mut attr,
        num_attrs: 1,
    };
    let mut n = 0i32;
    // SAFETY: `config`, `attr` and `n` live across the call; the driver writes `n` only.
    let r = unsafe { cuOccupancyMaxActiveClusters(&mut n, function.to_raw(), &config) };
    driver("cuOccupancyMaxActiveClusters", r)?;
    Ok(n.max(0) as u32)
}

/// Launches `function` on `gpu`'s stream: `blocks` 1-D blocks of `threads` threads in clusters
/// of `cluster` blocks along x (`blocks` a multiple of it), with `shared_bytes` of dynamic
/// shared memory. A refused launch is [`crate::Error::Launch`] naming `kernel`.
///
/// # Safety
/// As [`Gpu::launch`]: `args` holds one pointer per kernel parameter, each to a value of the
/// parameter's type, and every device address among them is valid for the grid.
pub(crate) unsafe fn launch_clustered(
    gpu: &Gpu,
    function: &Function<'_>,
    kernel: &'static str,
    [blocks, threads, cluster]: [u32; 3],
    shared_bytes: u32,
    args: &[*mut c_void],
) -> Result<()> {
    gpu.bind()?;
    let mut attr = LaunchAttribute { id: CLUSTER_DIMENSION, pad: 0, value: [0; 16] };
    attr.value[..3].copy_from_slice(&[cluster, 1, 1]);
    let config = LaunchConfig {
        grid: [blocks, 1, 1],
        block: [threads, 1, 1],
        shared_bytes,
        stream: gpu.raw_stream(),
        attrs: &mut attr,
        num_attrs: 1,
    };
    // SAFETY: `config` and `attr` live across the call and are laid out as the driver reads
    // them; the parameter pointers are the caller's contract; the driver only reads `args`.
    let r = unsafe { cuLaunchKernelEx(&config, function.to_raw(), args.as_ptr() as *mut *mut c_void, std::ptr::null_mut()) };
    driver("cuLaunchKernelEx", r).map_err(|e| match e {
        crate::Error::Cuda { source, .. } => crate::Error::Launch { kernel, source },
        other => other,
    })
}
