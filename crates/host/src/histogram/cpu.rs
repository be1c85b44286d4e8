//! CPU twins of the histograms (sequential, and rayon with atomics as the paper's OpenMP
//! version), calling the same `lockstep-shared` functions as the kernels. The [`Histogram`] they
//! return and the checks of bins and weights are the problem's (`problem.rs`).

use super::problem::Histogram;
use lockstep_shared::histogram::{Bins, classify, to_fixed};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

fn weight(w: Option<&[f64]>, i: usize) -> f64 {
    w.map_or(1.0, |w| w[i])
}

/// Integer counts (u32 or u64 counters, wrapping as the device's), one thread.
pub fn histogram_counts_seq(bins: &Bins, x: &[f64]) -> Histogram<u64> {
    let mut counts = vec![0u64; bins.k as usize];
    let mut dropped = [0u64; 3];
    for &v in x {
        let c = classify(v, bins);
        if c < bins.k { counts[c as usize] += 1 } else { dropped[(c - bins.k) as usize] += 1 }
    }
    Histogram::from_parts(counts, dropped)
}

/// Integer counts with rayon and atomic counters (the paper's OpenMP-with-atomics version).
pub fn histogram_counts_par(bins: &Bins, x: &[f64]) -> Histogram<u64> {
    let counts: Vec<AtomicU64> = (0..bins.k).map(|_| AtomicU64::new(0)).collect();
    let dropped: [AtomicU64; 3] = Default::default();
    x.par_iter().for_each(|&v| {
        let c = classify(v, bins);
        if c < bins.k {
            counts[c as usize].fetch_add(1, Ordering::Relaxed);
        } else {
            dropped[(c - bins.k) as usize].fetch_add(1, Ordering::Relaxed);
        }
    });
    let dropped = dropped.map(|d| d.into_inner());
    Histogram::from_parts(counts.into_iter().map(AtomicU64::into_inner).collect(), dropped)
}

/// f64 weighted sums added in input order (one thread). For arbitrary weights the GPU's native
/// atomics add in another order, so agree only within rounding.
pub fn histogram_f64_seq(bins: &Bins, x: &[f64], w: Option<&[f64]>) -> Histogram<f64> {
    let mut counts = vec![0.0f64; bins.k as usize];
    let mut dropped = [0u64; 3];
    for (i, &v) in x.iter().enumerate() {
        let c = classify(v, bins);
        if c < bins.k { counts[c as usize] += weight(w, i) } else { dropped[(c - bins.k) as usize] += 1 }
    }
    Histogram::from_parts(counts, dropped)
}

/// Fixed-point (deterministic) weighted sums: the raw `i64` accumulators, one thread.
pub fn histogram_fixed_raw_seq(bins: &Bins, x: &[f64], w: Option<&[f64]>) -> Histogram<i64> {
    let mut counts = vec![0i64; bins.k as usize];
    let mut dropped = [0u64; 3];
    for (i, &v) in x.iter().enumerate() {
        let c = classify(v, bins);
        if c < bins.k {
            counts[c as usize] = counts[c as usize].wrapping_add(to_fixed(weight(w, i), bins.frac_bits));
        } else {
            dropped[(c - bins.k) as usize] += 1
        }
    }
    Histogram::from_parts(counts, dropped)
}

/// Fixed-point raw accumulators with rayon and atomics.
pub fn histogram_fixed_raw_par(bins: &Bins, x: &[f64], w: Option<&[f64]>) -> Histogram<i64> {
    let counts: Vec<AtomicU64> = (0..bins.k).map(|_| AtomicU64::new(0)).collect();
    let dropped: [AtomicU64; 3] = Default::default();
    x.par_iter().enumerate().for_each(|(i, &v)| {
        let c = classify(v, bins);
        if c < bins.k {
            counts[c as usize].fetch_add(to_fixed(weight(w, i), bins.frac_bits) as u64, Ordering::Relaxed);
        } else {
            dropped[(c - bins.k) as usize].fetch_add(1, Ordering::Relaxed);
        }
    });
    let dropped = dropped.map(|d| d.into_inner());
    Histogram::from_parts(counts.into_iter().map(|c| c.into_inner() as i64).collect(), dropped)
}
