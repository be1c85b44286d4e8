//! Histograms by warp-aggregated atomics: `k` equal bins over `[lo, hi)`; NaN and values outside
//! the range are dropped and counted ([`Histogram`]'s `nan`, `below`, `above`). Counts are
//! exact by every method; fixed-point weighted sums are bit-identical on every [`Backend`].

mod cpu;
#[cfg(feature = "gpu")]
mod gpu;
#[cfg(feature = "gpu")]
mod partition;
mod problem;

pub use cpu::{
    histogram_counts_par, histogram_counts_seq, histogram_f64_seq, histogram_fixed_raw_par, histogram_fixed_raw_seq,
};
#[cfg(feature = "gpu")]
pub use gpu::{
    CounterKind, Histograms, Method, PARTITION_AUTO_BINS, PRIVATE_WIDE_BINS, check_method, private_capacity,
};
pub use lockstep_shared::histogram::Bins;
pub use problem::{Histogram, bins, bins_with_frac_bits, check_fixed_range, check_weights, fixed_to_f64};

use crate::{Backend, Result};

/// The count histograms' kernels as a family: a [`Counter`]'s `Element<CountKernels>` picks
/// its own.
#[cfg(feature = "gpu")]
pub(crate) enum CountKernels {}

/// Counter types of the count histograms (`u32`, `u64`).
#[cfg(feature = "gpu")]
#[allow(private_bounds)] // sealed: `Element` picks the kernels of each type
pub trait Counter:
    cust::memory::DeviceCopy
    + Default
    + Clone
    + cust::memory::bytemuck::Zeroable
    + Into<u64>
    + crate::backend::Element<CountKernels>
{
}

#[cfg(feature = "gpu")]
impl Counter for u32 {}
#[cfg(feature = "gpu")]
impl Counter for u64 {}

/// Counts of `x` in `bins` on `backend` (u64 counters; on the GPU by the launcher's
/// [`Histograms::auto_method`]).
pub fn counts(backend: Backend<'_>, bins: &Bins, x: &[f64]) -> Result<Histogram<u64>> {
    match backend {
        Backend::CpuSeq => Ok(histogram_counts_seq(bins, x)),
        Backend::Cpu => Ok(histogram_counts_par(bins, x)),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => {
            let h = Histograms::new(gpu)?;
            h.histogram_counts(h.auto_method(CounterKind::Count, bins.k), bins, x)
        }
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}

/// Sums of `w` (or counts, without weights) per bin in fixed point, `round(w·2^f)` in `i64`
/// with `f = bins.frac_bits`, converted to f64: the same bits on every backend. Errors: weights
/// of the wrong length, or sums that could wrap ([`check_fixed_range`], checked once: here for
/// the CPU twins, by the launcher on the GPU).
pub fn fixed(backend: Backend<'_>, bins: &Bins, x: &[f64], w: Option<&[f64]>) -> Result<Histogram<f64>> {
    match backend {
        Backend::CpuSeq => {
            check_fixed_range(bins, x, w)?;
            Ok(fixed_to_f64(bins, &histogram_fixed_raw_seq(bins, x, w)))
        }
        Backend::Cpu => {
            check_fixed_range(bins, x, w)?;
            Ok(fixed_to_f64(bins, &histogram_fixed_raw_par(bins, x, w)))
        }
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => {
            let h = Histograms::new(gpu)?;
            h.histogram_fixed(h.auto_method(CounterKind::Fixed { unit: w.is_none() }, bins.k), bins, x, w)
        }
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}
