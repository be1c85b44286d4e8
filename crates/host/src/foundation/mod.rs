//! Foundation kernels: `axpy` (f32/f64), a counter, warp and block reductions with fixed trees,
//! and a `libm` kernel — each with its CPU twin, the same bits on every [`Backend`].

#[cfg(feature = "gpu")]
mod cluster;
mod cpu;
#[cfg(feature = "gpu")]
mod gpu;
#[cfg(feature = "gpu")]
mod probe;

#[cfg(feature = "gpu")]
pub use cluster::Hopper;
pub use cpu::{
    axpy_par, axpy_seq, block_sums_par, block_sums_seq, cluster_probe_cpu, count_exceeding_par, count_exceeding_seq,
    exp_sin_log_par, exp_sin_log_seq, warp_sums_par, warp_sums_seq,
};
#[cfg(feature = "gpu")]
pub use gpu::{DEFAULT_BLOCK, Foundation};
pub use lockstep_shared::reduce::{BLOCK_REDUCE_THREADS, WARP_SIZE};
#[cfg(feature = "gpu")]
pub use probe::{ProbeValue, Probes};

use crate::launch::expect_len;
use crate::{Backend, Result};

/// `backend`'s result: the sequential twin `$seq`, the rayon twin `$par`, or the [`Foundation`]
/// launcher's `$method(args…)`.
macro_rules! on_backend {
    ($backend:expr, $seq:expr, $par:expr, $method:ident($($arg:expr),*)) => {
        match $backend {
            Backend::CpuSeq => Ok($seq),
            Backend::Cpu => Ok($par),
            #[cfg(feature = "gpu")]
            Backend::Gpu(gpu) => Foundation::new(gpu)?.$method($($arg),*),
            #[cfg(not(feature = "gpu"))]
            Backend::Gpu(gpu) => match gpu.never {},
        }
    };
}

/// The float types of `axpy`.
pub trait AxpyFloat:
    Copy + Send + Sync + core::ops::Mul<Output = Self> + core::ops::Add<Output = Self> + crate::DeviceValue
{
    #[cfg(feature = "gpu")]
    #[doc(hidden)]
    fn axpy_gpu(f: &Foundation<'_>, a: Self, x: &[Self], y: &mut [Self]) -> Result<()>;
}

impl AxpyFloat for f32 {
    #[cfg(feature = "gpu")]
    fn axpy_gpu(f: &Foundation<'_>, a: f32, x: &[f32], y: &mut [f32]) -> Result<()> {
        f.saxpy(a, x, y)
    }
}

impl AxpyFloat for f64 {
    #[cfg(feature = "gpu")]
    fn axpy_gpu(f: &Foundation<'_>, a: f64, x: &[f64], y: &mut [f64]) -> Result<()> {
        f.daxpy(a, x, y)
    }
}

/// `y ← a·x + y` (no fused multiply-add) on `backend`. Errors: `x` and `y` of different lengths.
pub fn axpy<T: AxpyFloat>(backend: Backend<'_>, a: T, x: &[T], y: &mut [T]) -> Result<()> {
    expect_len("y", y.len(), x.len())?;
    match backend {
        Backend::CpuSeq => axpy_seq(a, x, y),
        Backend::Cpu => axpy_par(a, x, y),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => T::axpy_gpu(&Foundation::new(gpu)?, a, x, y)?,
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
    Ok(())
}

/// How many of `x` exceed `threshold` (NaN never does), on `backend`.
/// Errors: a NaN threshold (nothing could ever be counted); more than `u32::MAX` values.
pub fn count_exceeding(backend: Backend<'_>, x: &[f32], threshold: f32) -> Result<u32> {
    crate::launch::len_u32("x", x.len())?;
    if threshold.is_nan() {
        return Err(crate::Error::InvalidInput { what: "threshold", why: "NaN: no value can exceed it".into() });
    }
    on_backend!(
        backend,
        count_exceeding_seq(x, threshold),
        count_exceeding_par(x, threshold),
        count_exceeding(x, threshold)
    )
}

/// The sum of every [`WARP_SIZE`] values (a fixed shuffle tree; the last chunk zero-padded).
pub fn warp_sums(backend: Backend<'_>, x: &[f32]) -> Result<Vec<f32>> {
    on_backend!(backend, warp_sums_seq(x), warp_sums_par(x), warp_sums(x))
}

/// The sum of every [`BLOCK_REDUCE_THREADS`] values (a fixed shared-memory tree).
pub fn block_sums(backend: Backend<'_>, x: &[f64]) -> Result<Vec<f64>> {
    on_backend!(backend, block_sums_seq(x), block_sums_par(x), block_sums(x))
}

/// `exp(x)·sin(x) + log(x)` per element with the pure-Rust `libm`.
pub fn exp_sin_log(backend: Backend<'_>, x: &[f64]) -> Result<Vec<f64>> {
    on_backend!(backend, exp_sin_log_seq(x), exp_sin_log_par(x), exp_sin_log(x))
}

/// Where each of `blocks` blocks sits in its thread-block cluster: `(blocks in its cluster, its
/// rank there, its cluster's x index)`. On the GPU this is `cluster_probe`, a kernel of the
/// sm_90 image only: [`Error::KernelNotLoaded`](crate::Error::KernelNotLoaded) where the GPU
/// loaded another image (not a Hopper GPU, or `LOCKSTEP_MODULE=ptx`); the CPU gives what a
/// launch without a cluster dimension gives, `(1, 0, b)`. Errors: more than 2^20 blocks.
pub fn cluster_probe(backend: Backend<'_>, blocks: u32) -> Result<Vec<[u32; 3]>> {
    match backend {
        Backend::CpuSeq | Backend::Cpu => check_probe_blocks(blocks).map(|()| cluster_probe_cpu(blocks)),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => Hopper::new(gpu)?.probe(blocks),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}

/// The most blocks [`cluster_probe`] takes.
pub const MAX_PROBE_BLOCKS: u32 = 1 << 20;

fn check_probe_blocks(blocks: u32) -> Result<()> {
    if blocks > MAX_PROBE_BLOCKS {
        return Err(crate::Error::TooLarge { what: "blocks", value: blocks.into(), max: MAX_PROBE_BLOCKS.into() });
    }
    Ok(())
}
