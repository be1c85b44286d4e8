//! `lockstep demo`: a small, fast representative of every kernel family, on the GPU when one is
//! present and always on the CPU twins (one thread and all threads), with timings and a bit-for-bit
//! comparison.
//!
//! The foundation kernels live here; each other family has its own module. All of them go
//! through [`Table::check`], which times the runs, compares the results ([`Same`]) and prints
//! one [`Row`].

mod bridge;
mod histogram_himeno;
mod mg;
mod nbody;

use lockstep::foundation as cpu;
use lockstep::foundation::Foundation;
use lockstep::{Error, Gpu};
use std::time::Instant;

/// Deterministic inputs: a SplitMix64 stream mapped to [-4, 4).
fn inputs(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 11) as f64 / (1u64 << 53) as f64 * 8.0 - 4.0
        })
        .collect()
}

/// Results compared bit for bit: floats by their bits (any NaN equals any NaN: GPUs return a
/// canonical NaN), everything else by `==`.
pub(crate) trait Same {
    fn same(&self, other: &Self) -> bool;
}

macro_rules! same_float {
    ($($t:ty),*) => {$(
        impl Same for $t {
            fn same(&self, other: &Self) -> bool {
                self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
            }
        }
    )*};
}
same_float!(f32, f64);

macro_rules! same_eq {
    ($($t:ty),*) => {$(
        impl Same for $t {
            fn same(&self, other: &Self) -> bool {
                self == other
            }
        }
    )*};
}
same_eq!(u32, u64, i64, lockstep::mg::Outcome);

impl<T: Same> Same for Vec<T> {
    fn same(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a.same(b))
    }
}

impl<A: Same, B: Same> Same for (A, B) {
    fn same(&self, other: &Self) -> bool {
        self.0.same(&other.0) && self.1.same(&other.1)
    }
}

/// One line of the table.
pub(crate) struct Row {
    kernel: String,
    cpu1_ms: f64,
    cpu_par_ms: f64,
    /// `None` without a GPU.
    gpu_ms: Option<f64>,
    /// `Some(false)` when the GPU or the all-threads CPU result differs from the one-thread CPU
    /// result; `None` without a GPU (and the CPU results agree).
    parity: Option<bool>,
    summary: String,
}

/// Runs `f` and measures its wall-clock time in milliseconds.
fn timed<R>(f: impl FnOnce() -> lockstep::Result<R>) -> lockstep::Result<(R, f64)> {
    let t = Instant::now();
    let r = f()?;
    Ok((r, t.elapsed().as_secs_f64() * 1e3))
}

/// The demo's table: prints each row as it is measured and remembers what went wrong.
pub(crate) struct Table {
    /// Kernels whose results differ and families that failed, for the final verdict.
    failures: Vec<String>,
}

impl Table {
    fn new() -> Table {
        let threads = format!("CPU {} thr", rayon::current_num_threads());
        println!(
            "\n{:<22} {:>10} {:>12} {:>14} {:>8}  result",
            "kernel", "CPU 1 thr", threads, "GPU (+copies)", "parity"
        );
        Table { failures: Vec::new() }
    }

    fn section(&self, title: &str) {
        println!("-- {title}");
    }

    /// Runs one kernel: its CPU twin on one thread (`cpu1`) and with rayon (`cpu_par`) and, when
    /// there is a launcher, on the GPU (`on_gpu`); compares both with the one-thread result bit
    /// for bit and prints the row with `summary` of the one-thread result.
    pub(crate) fn check<L, R: Same>(
        &mut self,
        kernel: &str,
        cpu1: impl FnOnce() -> lockstep::Result<R>,
        cpu_par: impl FnOnce() -> lockstep::Result<R>,
        launcher: Option<&L>,
        on_gpu: impl FnOnce(&L) -> lockstep::Result<R>,
        summary: impl FnOnce(&R) -> String,
    ) -> anyhow::Result<()> {
        let (want, cpu1_ms) = timed(cpu1)?;
        let (par, cpu_par_ms) = timed(cpu_par)?;
        let cpu_ok = par.same(&want);
        let (gpu_ms, parity) = match launcher {
            Some(l) => {
                let (got, ms) = timed(|| on_gpu(l))?;
                (Some(ms), Some(cpu_ok && got.same(&want)))
            }
            None => (None, (!cpu_ok).then_some(false)),
        };
        self.push(Row { kernel: kernel.to_string(), cpu1_ms, cpu_par_ms, gpu_ms, parity, summary: summary(&want) });
        Ok(())
    }

    fn push(&mut self, r: Row) {
        let gpu_ms = r.gpu_ms.map_or("-".to_string(), |v| format!("{v:.2} ms"));
        let parity = match r.parity {
            Some(true) => "bits ==",
            Some(false) => {
                self.failures.push(r.kernel.clone());
                "DIFFER"
            }
            None => "-",
        };
        println!(
            "{:<22} {:>7.2} ms {:>9.2} ms {:>14} {:>8}  {}",
            r.kernel, r.cpu1_ms, r.cpu_par_ms, gpu_ms, parity, r.summary
        );
    }
}

/// A family's demo: adds its rows to the table.
type Family<'a> = &'a dyn Fn(&mut Table, Option<&Gpu>) -> anyhow::Result<()>;

pub fn run(n: usize) -> anyhow::Result<()> {
    let gpu = match Gpu::new() {
        Ok(g) => {
            println!("GPU: {} — running every kernel family on it and on the CPU twins", g.name());
            Some(g)
        }
        Err(Error::NoDevice { reason } | Error::NoDriver { reason }) => {
            println!("NO GPU FOUND ({reason}). Running the CPU twins only.");
            None
        }
        Err(e) => return Err(e.into()),
    };
    // The foundation inputs and results: f64 and f32 copies of x, y and their updated copies
    // (about 100 bytes per element on the host, 32 on the GPU), checked before any is made.
    let n64 = n as u64;
    crate::common::check_run_memory(
        gpu.as_ref(),
        crate::common::mul(&[n64, 100]),
        crate::common::mul(&[n64, 32]),
        "--n",
    )?;
    let families: [(&str, Family); 5] = [
        (&format!("foundation, n = {n}"), &|t, g| foundation(t, g, n)),
        ("Brownian bridge (issue #3): 64 steps, bisection, d = 1", &bridge::run),
        ("histogram and Himeno (issue #4)", &histogram_himeno::run),
        ("N-body RK4 and the integer matrix product (issue #5)", &nbody::run),
        ("Minority Game (issue #6)", &mg::run),
    ];
    let mut table = Table::new();
    for (title, family) in families {
        table.section(title);
        if let Err(e) = family(&mut table, gpu.as_ref()) {
            println!("ERROR in {title}: {e:#}");
            table.failures.push(title.to_string());
        }
    }
    println!(
        "\nparity: the GPU's and the all-threads CPU results against the one-thread CPU twin, bit for bit.\n\
         GPU times are wall-clock including host<->device copies; `lockstep bench` reports kernel-only \
         CUDA-event medians."
    );
    if !table.failures.is_empty() {
        anyhow::bail!("results differ or a run failed: {}", table.failures.join(", "));
    }
    Ok(())
}

/// The foundation kernels on `n` elements.
fn foundation(t: &mut Table, gpu: Option<&Gpu>, n: usize) -> anyhow::Result<()> {
    let xd = inputs(n, 1);
    let yd = inputs(n, 2);
    let xf: Vec<f32> = xd.iter().map(|&v| v as f32).collect();
    let yf: Vec<f32> = yd.iter().map(|&v| v as f32).collect();
    let pos: Vec<f64> = xd.iter().map(|v| v.abs() + 0.01).collect();
    let f = gpu.map(Foundation::new).transpose()?;
    let f = f.as_ref();
    let first = |y: &Vec<f32>| format!("y[0] = {}", y.first().copied().unwrap_or(0.0));
    let first_f64 = |y: &Vec<f64>| format!("y[0] = {}", y.first().copied().unwrap_or(0.0));

    /// A copy of `y`, updated in place by `op`.
    fn updated<T: Clone>(y: &[T], op: impl FnOnce(&mut [T])) -> Vec<T> {
        let mut y = y.to_vec();
        op(&mut y);
        y
    }
    t.check(
        "saxpy",
        || Ok(updated(&yf, |y| cpu::axpy_seq(2.5f32, &xf, y))),
        || Ok(updated(&yf, |y| cpu::axpy_par(2.5f32, &xf, y))),
        f,
        |f| {
            let mut y = yf.clone();
            f.saxpy(2.5, &xf, &mut y).map(|()| y)
        },
        first,
    )?;
    t.check(
        "daxpy",
        || Ok(updated(&yd, |y| cpu::axpy_seq(2.5f64, &xd, y))),
        || Ok(updated(&yd, |y| cpu::axpy_par(2.5f64, &xd, y))),
        f,
        |f| {
            let mut y = yd.clone();
            f.daxpy(2.5, &xd, &mut y).map(|()| y)
        },
        first_f64,
    )?;
    t.check(
        "count_exceeding",
        || Ok(cpu::count_exceeding_seq(&xf, 1.0)),
        || Ok(cpu::count_exceeding_par(&xf, 1.0)),
        f,
        |f| f.count_exceeding(&xf, 1.0),
        |c| format!("{c} of {n} above 1.0"),
    )?;
    t.check(
        "warp_sum_f32",
        || Ok(cpu::warp_sums_seq(&xf)),
        || Ok(cpu::warp_sums_par(&xf)),
        f,
        |f| f.warp_sums(&xf),
        |w| format!("{} warp sums", w.len()),
    )?;
    t.check(
        "block_sum_f64",
        || Ok(cpu::block_sums_seq(&xd)),
        || Ok(cpu::block_sums_par(&xd)),
        f,
        |f| f.block_sums(&xd),
        |b| format!("total {:.6}", b.iter().sum::<f64>()),
    )?;
    t.check(
        "exp_sin_log_f64",
        || Ok(cpu::exp_sin_log_seq(&pos)),
        || Ok(cpu::exp_sin_log_par(&pos)),
        f,
        |f| f.exp_sin_log(&pos),
        first_f64,
    )
}
