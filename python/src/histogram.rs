//! `lockstep.histogram`: counts (u64) or fixed-point sums of a borrowed float64 array.

use crate::run::{Device, Fail, Work, check_alloc, single_pass, to_py};
use lockstep::histogram::{self, Bins, Histogram, Method};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Values per CPU chunk: the stop flag is checked between chunks (counts are integers, so the
/// sums over chunks are the same bits as one pass).
const CHUNK: usize = 1 << 22;

fn method_of(name: &str) -> PyResult<Option<Method>> {
    Ok(Some(match name {
        "auto" => return Ok(None),
        "plain" => Method::Plain,
        "shared" => Method::Shared,
        "shfl" => Method::Shfl,
        "match" => Method::Match,
        "block" => Method::Block,
        "count" => Method::Count,
        "private" => Method::Private,
        "wide" => Method::Wide,
        "partition" => Method::Partition,
        m => {
            return Err(PyValueError::new_err(format!(
                "method: {m:?} is not one of 'auto', 'plain', 'shared', 'shfl', 'match', 'block', 'count', 'private', 'wide', 'partition'"
            )));
        }
    }))
}

fn add_into<T: Copy + std::ops::Add<Output = T>>(acc: &mut Histogram<T>, part: Histogram<T>) {
    acc.counts.iter_mut().zip(part.counts).for_each(|(a, b)| *a = *a + b);
    acc.nan += part.nan;
    acc.below += part.below;
    acc.above += part.above;
}

fn counts_on(device: Device, method: Option<Method>, bins: &Bins, x: &[f64], stop: &AtomicBool) -> Work<Histogram<u64>> {
    match (device, method) {
        (Device::Gpu(g), Some(m)) => Ok(histogram::Histograms::new(g)?.histogram_counts::<u64>(m, bins, x)?),
        (Device::Gpu(_), None) => Ok(histogram::counts(device.backend(), bins, x)?),
        _ => {
            let mut acc = Histogram { counts: vec![0u64; bins.k as usize], nan: 0, below: 0, above: 0 };
            for part in x.chunks(CHUNK) {
                if stop.load(Ordering::Relaxed) {
                    return Err(Fail::Stopped);
                }
                add_into(&mut acc, histogram::counts(device.backend(), bins, part)?);
            }
            Ok(acc)
        }
    }
}

fn fixed_on(device: Device, bins: &Bins, x: &[f64], w: Option<&[f64]>, stop: &AtomicBool) -> Work<Histogram<f64>> {
    match device {
        // The launcher checks the weights and the range (once).
        Device::Gpu(_) => Ok(histogram::fixed(device.backend(), bins, x, w)?),
        _ => {
            histogram::check_fixed_range(bins, x, w)?;
            // i64 sums per chunk, added in i64 (exact: the range check rules out wrapping).
            let mut acc = Histogram { counts: vec![0i64; bins.k as usize], nan: 0, below: 0, above: 0 };
            for (i, part) in x.chunks(CHUNK).enumerate() {
                if stop.load(Ordering::Relaxed) {
                    return Err(Fail::Stopped);
                }
                let wpart = w.map(|w| &w[i * CHUNK..i * CHUNK + part.len()]);
                let raw = match device {
                    Device::CpuSeq => histogram::histogram_fixed_raw_seq(bins, part, wpart),
                    _ => histogram::histogram_fixed_raw_par(bins, part, wpart),
                };
                add_into(&mut acc, raw);
            }
            Ok(histogram::fixed_to_f64(bins, &acc))
        }
    }
}

type Counted<'py, T> = (Bound<'py, PyArray1<T>>, u64, u64, u64);

/// Counts of `x` in `k` equal bins over `[lo, hi)`, with the dropped (nan, below, above).
#[pyfunction]
#[pyo3(signature = (x, lo, hi, k, method, device))]
fn histogram_counts<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    lo: f64,
    hi: f64,
    k: u64,
    method: &str,
    device: &str,
) -> PyResult<Counted<'py, u64>> {
    let bins = histogram::bins(lo, hi, k).map_err(to_py)?;
    check_alloc("the counts (bins)", k as u128, 8)?;
    let method = method_of(method)?;
    let device = Device::parse(py, device)?;
    let x = x.as_slice().map_err(|_| PyValueError::new_err("values: not contiguous"))?;
    let h = single_pass(py, device, |stop| counts_on(device, method, &bins, x, stop))?;
    Ok((h.counts.into_pyarray(py), h.nan, h.below, h.above))
}

/// Fixed-point sums `round(w·2^f)` per bin (counts without weights), as float64.
#[pyfunction]
#[pyo3(signature = (x, w, lo, hi, k, frac_bits, device))]
#[allow(clippy::too_many_arguments)]
fn histogram_fixed<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    w: Option<PyReadonlyArray1<'py, f64>>,
    lo: f64,
    hi: f64,
    k: u64,
    frac_bits: Option<u32>,
    device: &str,
) -> PyResult<Counted<'py, f64>> {
    let bins = match frac_bits {
        Some(f) => histogram::bins_with_frac_bits(lo, hi, k, f),
        None => histogram::bins(lo, hi, k),
    }
    .map_err(to_py)?;
    check_alloc("the sums (bins)", k as u128, 8)?;
    let device = Device::parse(py, device)?;
    let x = x.as_slice().map_err(|_| PyValueError::new_err("values: not contiguous"))?;
    let w = match &w {
        Some(w) => Some(w.as_slice().map_err(|_| PyValueError::new_err("weights: not contiguous"))?),
        None => None,
    };
    let h = single_pass(py, device, |stop| fixed_on(device, &bins, x, w, stop))?;
    Ok((h.counts.into_pyarray(py), h.nan, h.below, h.above))
}

/// Seconds of `repeats` calls of `lockstep::histogram::counts` on the borrowed array, no
/// Python in between: the Rust side of the overhead benchmark.
#[pyfunction]
#[pyo3(signature = (x, lo, hi, k, device, repeats))]
fn _rust_timing_histogram(
    py: Python<'_>,
    x: PyReadonlyArray1<'_, f64>,
    lo: f64,
    hi: f64,
    k: u64,
    device: &str,
    repeats: usize,
) -> PyResult<Vec<f64>> {
    let bins = histogram::bins(lo, hi, k).map_err(to_py)?;
    let backend = Device::parse(py, device)?.backend();
    let x = x.as_slice().map_err(|_| PyValueError::new_err("values: not contiguous"))?;
    py.allow_threads(|| {
        let mut times = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let t = Instant::now();
            let h = histogram::counts(backend, &bins, x).map_err(to_py)?;
            times.push(t.elapsed().as_secs_f64());
            std::hint::black_box(h);
        }
        Ok(times)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(histogram_counts, m)?)?;
    m.add_function(wrap_pyfunction!(histogram_fixed, m)?)?;
    m.add_function(wrap_pyfunction!(_rust_timing_histogram, m)?)?;
    Ok(())
}
