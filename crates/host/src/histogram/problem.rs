//! The histograms' problem: the [`Histogram`] result with its dropped values, validated
//! [`Bins`] ([`bins`], [`bins_with_frac_bits`]), the checks of weights ([`check_weights`],
//! [`check_fixed_range`]), and the conversion of fixed-point sums to f64 ([`fixed_to_f64`]) —
//! the same for the CPU twins (`cpu.rs`) and the GPU launcher (`gpu.rs`).

use crate::error::{Error, Result};
use crate::launch::expect_len;
use lockstep_shared::histogram::{Bins, BinsError, DROP_ABOVE, DROP_BELOW, DROP_NAN, from_fixed};

/// A histogram with its dropped values (the policy of `lockstep_shared::histogram`: NaN and
/// values outside `[lo, hi)` are counted in no bin and reported here).
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram<T> {
    /// One counter per bin.
    pub counts: Vec<T>,
    /// NaN values.
    pub nan: u64,
    /// Values below `lo` (−∞ included).
    pub below: u64,
    /// Values at or above `hi` (+∞ included).
    pub above: u64,
}

impl<T> Histogram<T> {
    /// Builds from counts and the three dropped counters `[nan, below, above]`.
    pub fn from_parts(counts: Vec<T>, dropped: [u64; 3]) -> Self {
        Histogram {
            counts,
            nan: dropped[DROP_NAN as usize],
            below: dropped[DROP_BELOW as usize],
            above: dropped[DROP_ABOVE as usize],
        }
    }
}

/// Validated bins, as an [`Error::InvalidInput`] naming the problem.
pub fn bins(lo: f64, hi: f64, k: u64) -> Result<Bins> {
    let k32 = u32::try_from(k).map_err(|_| invalid_bins(BinsError::TooManyBins))?;
    Bins::new(lo, hi, k32).map_err(invalid_bins)
}

/// As [`bins`] with explicit fixed-point fractional bits.
pub fn bins_with_frac_bits(lo: f64, hi: f64, k: u64, frac_bits: u32) -> Result<Bins> {
    let k32 = u32::try_from(k).map_err(|_| invalid_bins(BinsError::TooManyBins))?;
    Bins::with_frac_bits(lo, hi, k32, frac_bits).map_err(invalid_bins)
}

fn invalid_bins(e: BinsError) -> Error {
    Error::InvalidInput { what: "histogram bins", why: e.reason().into() }
}

/// Checks that `w` (if any) has one weight per value, all finite.
pub fn check_weights(x: &[f64], w: Option<&[f64]>) -> Result<()> {
    if let Some(w) = w {
        expect_len("weights", w.len(), x.len())?;
        if let Some(i) = w.iter().position(|v| !v.is_finite()) {
            return Err(Error::InvalidInput { what: "weights", why: format!("weight {i} is {}, not finite", w[i]) });
        }
    }
    Ok(())
}

/// Checks that the fixed-point sums of `w` cannot wrap (`n · max|w| · 2^f ≤ 2^62`).
pub fn check_fixed_range(bins: &Bins, x: &[f64], w: Option<&[f64]>) -> Result<()> {
    check_weights(x, w)?;
    let max = w.map_or(1.0, |w| w.iter().fold(0.0f64, |m, v| m.max(v.abs())));
    if !lockstep_shared::histogram::fixed_fits(x.len() as u64, max, bins.frac_bits) {
        return Err(Error::InvalidInput {
            what: "weights",
            why: format!(
                "{} weights up to {max:e} could overflow the 64-bit fixed-point sums at {} fractional bits; use fewer frac_bits",
                x.len(),
                bins.frac_bits
            ),
        });
    }
    Ok(())
}

/// The f64 bin values of fixed-point accumulators (`acc · 2^-f`).
pub fn fixed_to_f64(bins: &Bins, h: &Histogram<i64>) -> Histogram<f64> {
    Histogram {
        counts: h.counts.iter().map(|&a| from_fixed(a, bins.frac_bits)).collect(),
        nan: h.nan,
        below: h.below,
        above: h.above,
    }
}
