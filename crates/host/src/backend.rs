//! [`Backend`]: where a family's computation runs — the one value that switches CPU and GPU.

use crate::gpu::Gpu;

/// Where a family's computation runs. Every family takes it as its first argument, with the
/// same other arguments on every backend; the result has the same bits on all three (except
/// in the n-body's fast mode, which says so).
#[derive(Clone, Copy, Debug)]
pub enum Backend<'g> {
    /// The CPU twin on the calling thread.
    CpuSeq,
    /// The CPU twin on every rayon thread.
    Cpu,
    /// The GPU's kernels.
    Gpu(&'g Gpu),
}

impl Backend<'_> {
    /// `"cpu-seq"`, `"cpu"` or `"gpu"`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::CpuSeq => "cpu-seq",
            Backend::Cpu => "cpu",
            Backend::Gpu(_) => "gpu",
        }
    }
}

/// Values that can travel to the GPU (cust's `DeviceCopy` when feature `gpu` is on; every type
/// otherwise). Lets a family's element trait stay the same with and without GPU support.
#[cfg(feature = "gpu")]
pub trait DeviceValue: cust::memory::DeviceCopy {}
#[cfg(feature = "gpu")]
impl<T: cust::memory::DeviceCopy> DeviceValue for T {}

/// Values that can travel to the GPU (cust's `DeviceCopy` when feature `gpu` is on; every type
/// otherwise). Lets a family's element trait stay the same with and without GPU support.
#[cfg(not(feature = "gpu"))]
pub trait DeviceValue {}
#[cfg(not(feature = "gpu"))]
impl<T> DeviceValue for T {}

/// Without GPU support, the stand-in for each family's sealed kernel-choice trait (`Select`):
/// every type passes, nothing is selected.
#[cfg(not(feature = "gpu"))]
pub(crate) trait NoKernels {}
#[cfg(not(feature = "gpu"))]
impl<T> NoKernels for T {}
