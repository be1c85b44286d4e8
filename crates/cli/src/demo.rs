//! `lockstep demo`: every kernel on one input, GPU against CPU, with timings.

use lockstep::kernels::foundation::Foundation;
use lockstep::reference::foundation as cpu;
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

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Whether two float vectors agree bit for bit (any NaN equals any NaN).
fn same_bits<T: Copy + Into<f64>>(a: &[T], b: &[T], bits: impl Fn(T) -> u64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| bits(x) == bits(y) || (x.into().is_nan() && y.into().is_nan()))
}

struct Row {
    kernel: &'static str,
    cpu1_ms: f64,
    cpu_par_ms: f64,
    gpu_ms: Option<f64>,
    parity: Option<bool>,
    summary: String,
}

pub fn run(n: usize) -> anyhow::Result<()> {
    let xd = inputs(n, 1);
    let yd = inputs(n, 2);
    let xf: Vec<f32> = xd.iter().map(|&v| v as f32).collect();
    let yf: Vec<f32> = yd.iter().map(|&v| v as f32).collect();
    let pos: Vec<f64> = xd.iter().map(|v| v.abs() + 0.01).collect();

    let gpu = match Gpu::new() {
        Ok(g) => {
            println!("GPU: {} — running every kernel on it and on the CPU references, n = {n}", g.name());
            Some(g)
        }
        Err(Error::NoDevice { reason }) => {
            println!("NO GPU FOUND ({reason}). Running the CPU references only, n = {n}.");
            None
        }
        Err(e) => return Err(e.into()),
    };
    let f = gpu.as_ref().map(Foundation::new).transpose()?;
    let threads = rayon::current_num_threads();
    let mut rows = Vec::new();

    // saxpy
    let (mut y1, mut yp) = (yf.clone(), yf.clone());
    let t = Instant::now();
    cpu::axpy_seq(2.5f32, &xf, &mut y1);
    let c1 = ms(t);
    let t = Instant::now();
    cpu::axpy_par(2.5f32, &xf, &mut yp);
    let cp = ms(t);
    let (g, ok) = match &f {
        Some(f) => {
            let mut yg = yf.clone();
            let t = Instant::now();
            f.saxpy(2.5, &xf, &mut yg)?;
            (Some(ms(t)), Some(same_bits(&yg, &y1, |v: f32| v.to_bits() as u64)))
        }
        None => (None, None),
    };
    rows.push(Row {
        kernel: "saxpy",
        cpu1_ms: c1,
        cpu_par_ms: cp,
        gpu_ms: g,
        parity: ok,
        summary: format!("y[0] = {}", y1.first().copied().unwrap_or(0.0)),
    });

    // daxpy
    let (mut y1, mut yp) = (yd.clone(), yd.clone());
    let t = Instant::now();
    cpu::axpy_seq(2.5f64, &xd, &mut y1);
    let c1 = ms(t);
    let t = Instant::now();
    cpu::axpy_par(2.5f64, &xd, &mut yp);
    let cp = ms(t);
    let (g, ok) = match &f {
        Some(f) => {
            let mut yg = yd.clone();
            let t = Instant::now();
            f.daxpy(2.5, &xd, &mut yg)?;
            (Some(ms(t)), Some(same_bits(&yg, &y1, f64::to_bits)))
        }
        None => (None, None),
    };
    rows.push(Row {
        kernel: "daxpy",
        cpu1_ms: c1,
        cpu_par_ms: cp,
        gpu_ms: g,
        parity: ok,
        summary: format!("y[0] = {}", y1.first().copied().unwrap_or(0.0)),
    });

    // count_exceeding
    let t = Instant::now();
    let c = cpu::count_exceeding_seq(&xf, 1.0);
    let c1 = ms(t);
    let t = Instant::now();
    let _ = cpu::count_exceeding_par(&xf, 1.0);
    let cp = ms(t);
    let (g, ok) = match &f {
        Some(f) => {
            let t = Instant::now();
            let cg = f.count_exceeding(&xf, 1.0)?;
            (Some(ms(t)), Some(cg == c))
        }
        None => (None, None),
    };
    rows.push(Row {
        kernel: "count_exceeding",
        cpu1_ms: c1,
        cpu_par_ms: cp,
        gpu_ms: g,
        parity: ok,
        summary: format!("{c} of {n} above 1.0"),
    });

    // warp sums
    let t = Instant::now();
    let w = cpu::warp_sums_seq(&xf);
    let c1 = ms(t);
    let t = Instant::now();
    let _ = cpu::warp_sums_par(&xf);
    let cp = ms(t);
    let (g, ok) = match &f {
        Some(f) => {
            let t = Instant::now();
            let wg = f.warp_sums(&xf)?;
            (Some(ms(t)), Some(same_bits(&wg, &w, |v: f32| v.to_bits() as u64)))
        }
        None => (None, None),
    };
    rows.push(Row {
        kernel: "warp_sum_f32",
        cpu1_ms: c1,
        cpu_par_ms: cp,
        gpu_ms: g,
        parity: ok,
        summary: format!("{} warp sums", w.len()),
    });

    // block sums
    let t = Instant::now();
    let b = cpu::block_sums_seq(&xd);
    let c1 = ms(t);
    let t = Instant::now();
    let _ = cpu::block_sums_par(&xd);
    let cp = ms(t);
    let (g, ok) = match &f {
        Some(f) => {
            let t = Instant::now();
            let bg = f.block_sums(&xd)?;
            (Some(ms(t)), Some(same_bits(&bg, &b, f64::to_bits)))
        }
        None => (None, None),
    };
    rows.push(Row {
        kernel: "block_sum_f64",
        cpu1_ms: c1,
        cpu_par_ms: cp,
        gpu_ms: g,
        parity: ok,
        summary: format!("total {:.6}", b.iter().sum::<f64>()),
    });

    // libm
    let t = Instant::now();
    let l = cpu::exp_sin_log_seq(&pos);
    let c1 = ms(t);
    let t = Instant::now();
    let _ = cpu::exp_sin_log_par(&pos);
    let cp = ms(t);
    let (g, ok) = match &f {
        Some(f) => {
            let t = Instant::now();
            let lg = f.exp_sin_log(&pos)?;
            (Some(ms(t)), Some(same_bits(&lg, &l, f64::to_bits)))
        }
        None => (None, None),
    };
    rows.push(Row {
        kernel: "exp_sin_log_f64",
        cpu1_ms: c1,
        cpu_par_ms: cp,
        gpu_ms: g,
        parity: ok,
        summary: format!("y[0] = {}", l.first().copied().unwrap_or(0.0)),
    });

    println!(
        "\n{:<16} {:>10} {:>12} {:>14} {:>8}  result",
        "kernel",
        "CPU 1 thr",
        format!("CPU {threads} thr"),
        "GPU (+copies)",
        "parity"
    );
    let mut all = true;
    for r in &rows {
        let gpu_ms = r.gpu_ms.map_or("-".to_string(), |v| format!("{v:.2} ms"));
        let parity = match r.parity {
            Some(true) => "bits ==",
            Some(false) => {
                all = false;
                "DIFFER"
            }
            None => "-",
        };
        println!(
            "{:<16} {:>7.2} ms {:>9.2} ms {:>14} {:>8}  {}",
            r.kernel, r.cpu1_ms, r.cpu_par_ms, gpu_ms, parity, r.summary
        );
    }
    println!(
        "\nGPU times are wall-clock including host<->device copies; `lockstep bench` reports kernel-only CUDA-event medians."
    );
    if !all {
        anyhow::bail!("GPU and CPU results differ");
    }
    Ok(())
}
