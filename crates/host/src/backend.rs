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

/// An element type of a kernel family (`kernel::Element` when feature `gpu` is on: it picks
/// the type's kernels). A family's element trait names it the same way in both builds.
#[cfg(feature = "gpu")]
pub(crate) use crate::kernel::Element;

/// An element type of a kernel family (`kernel::Element` when feature `gpu` is on: it picks
/// the type's kernels). Without GPU support every type passes and nothing is picked.
#[cfg(not(feature = "gpu"))]
pub(crate) trait Element<F> {}
#[cfg(not(feature = "gpu"))]
impl<T, F> Element<F> for T {}
