//! Timing GPU work with CUDA events: medians after warm-up, as lockstep's benchmarks report.

use crate::error::{Result, cuda};
use crate::gpu::Gpu;
use cust::event::{Event, EventFlags};

/// Summary of repeated event-timed runs, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Timings {
    /// Every timed run, in order.
    pub runs_ms: Vec<f64>,
}

impl Timings {
    /// The median run.
    pub fn median_ms(&self) -> f64 {
        median(&self.runs_ms)
    }

    /// The fastest run.
    pub fn min_ms(&self) -> f64 {
        self.runs_ms.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// The median of `xs` (mean of the middle two for even lengths); NaN for none.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

/// Runs `work` (which enqueues on the GPU's stream) `warmup` times, then `runs` times between
/// two recorded events each, and returns the event-measured times.
pub fn time_gpu(gpu: &Gpu, warmup: usize, runs: usize, mut work: impl FnMut() -> Result<()>) -> Result<Timings> {
    gpu.bind()?;
    for _ in 0..warmup {
        work()?;
    }
    gpu.synchronize()?;
    let start = Event::new(EventFlags::DEFAULT).map_err(cuda("cuEventCreate"))?;
    let stop = Event::new(EventFlags::DEFAULT).map_err(cuda("cuEventCreate"))?;
    let mut runs_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        start.record(gpu.stream()).map_err(cuda("cuEventRecord"))?;
        work()?;
        stop.record(gpu.stream()).map_err(cuda("cuEventRecord"))?;
        stop.synchronize().map_err(cuda("cuEventSynchronize"))?;
        runs_ms.push(stop.elapsed_time_f32(&start).map_err(cuda("cuEventElapsedTime"))? as f64);
    }
    Ok(Timings { runs_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        let t = Timings { runs_ms: vec![5.0, 1.0, 3.0] };
        assert_eq!((t.median_ms(), t.min_ms()), (3.0, 1.0));
    }
}
