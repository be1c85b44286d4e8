//! Histograms of 10⁶ values in 100 bins — exact counts and fixed-point weighted sums — have the
//! same bits on every backend, dropped values (NaN, out of range) included.
//! Run: `cargo run --release --example histogram`.

use lockstep::histogram::{self, Bins, Histogram};
use lockstep::{Backend, Error};

mod common;
use common::{compare, gpu};

/// Counts, then weighted sums (as bits), then the dropped counters of both, on `backend`.
fn histograms(backend: Backend<'_>, bins: &Bins, x: &[f64], w: &[f64]) -> Result<Vec<u64>, Error> {
    let counts: Histogram<u64> = histogram::counts(backend, bins, x)?;
    let sums: Histogram<f64> = histogram::fixed(backend, bins, x, Some(w))?;
    let mut all = counts.counts.clone();
    all.extend(sums.counts.iter().map(|s| s.to_bits()));
    all.extend([counts.nan, counts.below, counts.above, sums.nan, sums.below, sums.above]);
    Ok(all)
}

fn main() -> Result<(), Error> {
    let gpu = gpu()?;
    // Low-discrepancy values over [-1, 11) (some below, some above [0, 10)), every 100 000th NaN.
    let x: Vec<f64> = (0..1_000_000)
        .map(|i| if i % 100_000 == 7 { f64::NAN } else { (i as f64 * 0.618_033_988_749_895).fract() * 12.0 - 1.0 })
        .collect();
    let w: Vec<f64> = (0..x.len()).map(|i| (i as f64 * 0.754_877_666_246_692_7).fract() * 2.0 - 0.5).collect();
    let bins = histogram::bins(0.0, 10.0, 100)?;
    let h = histogram::counts(Backend::CpuSeq, &bins, &x)?;
    println!("{} values: {} NaN, {} below and {} above [0, 10) dropped", x.len(), h.nan, h.below, h.above);
    let want = histograms(Backend::CpuSeq, &bins, &x, &w)?;
    let mut same = true;
    for backend in [Some(Backend::Cpu), gpu.as_ref().map(Backend::Gpu)].into_iter().flatten() {
        same &= compare(backend.name(), &want, &histograms(backend, &bins, &x, &w)?);
    }
    if !same {
        eprintln!("error: the backends disagree");
        std::process::exit(1);
    }
    Ok(())
}
