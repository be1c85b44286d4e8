//! Typed launchers, one module per kernel family (mirroring `crates/kernels/src`).
//!
//! A launcher owns the function handles of its family (looked up once, so a missing kernel is
//! an error when the launcher is built), validates every length and parameter with
//! [`crate::launch`], and only then enters its one `unsafe` block. Each family offers
//! `*_on_device` methods that enqueue work on device buffers (for pipelines and benchmarks)
//! and host-slice methods that copy in, launch, and copy out.

pub mod atomics;
pub mod bridge;
pub mod foundation;
pub mod matmul;
pub mod mg;
pub mod nbody;

use crate::error::{Result, cuda};
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};

/// Copies `data` to a new device buffer.
pub(crate) fn upload<T: DeviceCopy>(data: &[T]) -> Result<DeviceBuffer<T>> {
    DeviceBuffer::from_slice(data).map_err(cuda("cuMemcpyHtoD"))
}

/// Copies a device buffer back into a new vector (same length by construction).
pub(crate) fn download<T: DeviceCopy + Default + Clone>(buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
    let mut out = vec![T::default(); buf.len()];
    buf.copy_to(&mut out[..]).map_err(cuda("cuMemcpyDtoH"))?;
    Ok(out)
}

/// Copies a device buffer into `dst`, whose length the caller has checked.
pub(crate) fn download_into<T: DeviceCopy>(buf: &DeviceBuffer<T>, dst: &mut [T]) -> Result<()> {
    crate::launch::expect_len("output", dst.len(), buf.len())?;
    buf.copy_to(dst).map_err(cuda("cuMemcpyDtoH"))
}

/// Enqueues a device-to-device copy of `src` into `dst` on the GPU's stream (the bandwidth
/// yardstick of the benchmarks). Lengths must match.
pub fn copy_on_device<T: DeviceCopy>(
    gpu: &crate::Gpu,
    src: &cust::memory::DeviceSlice<T>,
    dst: &mut cust::memory::DeviceSlice<T>,
) -> Result<()> {
    use cust::memory::AsyncCopyDestination;
    crate::launch::expect_len("dst", dst.len(), src.len())?;
    gpu.bind()?;
    // SAFETY: both slices are live device allocations of equal length (checked), borrowed for
    // the call; the copy is ordered on the stream before any later use of `dst`.
    unsafe { dst.async_copy_from(src, gpu.stream()) }.map_err(cuda("cuMemcpyDtoDAsync"))
}
