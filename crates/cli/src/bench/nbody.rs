//! `lockstep bench nbody <throughput | step | grid | matmul>`: the N-body and matrix-product
//! benchmarks of issues #5 and #21. CUDA-event medians after warm-up; the GPU's name and the
//! bound or peer next to each figure (`--peer FILE`: the CSV `bench/peers/nbody_peer.py --csv`
//! wrote in the same session); `--record FILE` appends Markdown rows.

use lockstep::matmul as mcpu;
use lockstep::matmul::MODEL_MAX_N_I32;
use lockstep::matmul::{MatKernel, Matmul, MatmulInt};
use lockstep::nbody::{self as cpu, init};
use lockstep::nbody::{DeviceSystem, Method, Mode, Nbody, NbodyFloat, Params, System};
use lockstep::timing::time_gpu;
use lockstep::{DeviceBuffer, Gpu};
use std::path::PathBuf;
use std::time::Instant;

/// Options of `lockstep bench nbody`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    suite: Suite,
}

use crate::nbody::KernelArg;

#[derive(clap::Subcommand)]
#[command(allow_negative_numbers = true)]
enum Suite {
    /// Body–body interactions per second of one force evaluation (one RK4 stage), N = 1024 … 262144.
    Throughput {
        /// Body counts.
        #[arg(long, value_delimiter = ',', default_values_t = [1024usize, 4096, 16384, 65536, 262144])]
        n: Vec<usize>,
        /// Kernels: global, shared (with more than one lane per body both run the split kernel).
        #[arg(long, value_enum, value_delimiter = ',', default_value = "shared")]
        kernel: Vec<KernelArg>,
        /// Threads per block = bodies per tile; default: the launcher's pick from N and the GPU.
        #[arg(long)]
        block: Option<u32>,
        /// Lanes per body as a shift (0 = one lane, the pre-split kernels … 5 = 32 lanes);
        /// default: `split_shift(N)`.
        #[arg(long)]
        split: Option<u32>,
        /// CSV of the peer's interactions/s (`n,prec,mode,rate[,batch]` per line, from
        /// `bench/peers/nbody_peer.py --csv FILE`, run in the same session).
        #[arg(long)]
        peer: Option<PathBuf>,
        /// Timed runs per figure (after 2 warm-up runs).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Force evaluations per timed run, launched back to back between the two events
        /// (1: one launch, whose submission the figure includes; more: the kernel's throughput
        /// with the submission hidden behind the previous launch). Give the peer the same.
        #[arg(long, default_value_t = 1)]
        batch: usize,
        /// Append Markdown rows to this file.
        #[arg(long)]
        record: Option<PathBuf>,
    },
    /// Time per RK4 step (four stages) at small N: graph replay, plain launches, and the
    /// pre-split path (one lane per body, block 256, no graph) in the same call.
    Step {
        /// Body counts.
        #[arg(long, value_delimiter = ',', default_values_t = [1024usize, 4096])]
        n: Vec<usize>,
        /// Steps per timed run (one graph of this many steps).
        #[arg(long, default_value_t = 8)]
        steps: u64,
        /// Timed runs per figure (after 2 warm-up runs).
        #[arg(long, default_value_t = 21)]
        runs: usize,
        /// Append Markdown rows to this file.
        #[arg(long)]
        record: Option<PathBuf>,
    },
    /// The seed's grid: N × steps, f32/f64, GPU (exact kernels) vs CPU (1 thread, all threads);
    /// about 90 s on an H200 with the defaults.
    Grid {
        /// Body counts.
        #[arg(long, value_delimiter = ',', default_values_t = [256usize, 1024, 4096])]
        n: Vec<usize>,
        /// Step counts.
        #[arg(long, value_delimiter = ',', default_values_t = [1u64, 10, 100, 1000, 10000])]
        steps: Vec<u64>,
        /// CPU seconds per cell at most; longer runs are extrapolated from fewer steps (marked *).
        #[arg(long, default_value_t = 0.4)]
        cpu_budget: f64,
        /// GPU kernels: global, shared (both: about 3 minutes on an H200 with the default grid).
        #[arg(long, value_enum, value_delimiter = ',', default_value = "shared")]
        kernel: Vec<KernelArg>,
        /// Append Markdown rows to this file.
        #[arg(long)]
        record: Option<PathBuf>,
    },
    /// Integer matrix product: N × threads per block, global and shared kernels vs the CPU.
    Matmul {
        /// Matrix sizes.
        #[arg(long, value_delimiter = ',', default_values_t = [16usize, 32, 64, 100, 128, 256, 512, 1000, 1024])]
        n: Vec<usize>,
        /// Block edges (threads per block = edge²).
        #[arg(long, value_delimiter = ',', default_values_t = [1u32, 2, 4, 8, 16])]
        edge: Vec<u32>,
        /// Timed runs per figure.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Append Markdown rows to this file.
        #[arg(long)]
        record: Option<PathBuf>,
    },
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.suite {
        Suite::Throughput { n, kernel, block, split, peer, runs, batch, record } => {
            throughput(&n, &kernel, block, split, peer, Timing { runs, batch }, record)
        }
        Suite::Step { n, steps, runs, record } => step(&n, steps, runs, record),
        Suite::Grid { n, steps, cpu_budget, kernel, record } => {
            grid(&n, &steps, cpu_budget, &methods(&kernel)?, record)
        }
        Suite::Matmul { n, edge, runs, record } => matmul(&n, &edge, runs, record),
    }
}

/// The peer's interactions/s by `(n, prec, mode)` from `bench/peers/nbody_peer.py --csv`, and
/// the force evaluations per timed run it used (its `--batch`; 1 in files without the column).
type PeerTable = std::collections::HashMap<(usize, String, String), (f64, usize)>;

fn read_peer(path: &std::path::Path) -> anyhow::Result<PeerTable> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--peer {}: {e}", path.display()))?;
    let mut t = PeerTable::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if line.trim().is_empty() || f[0] == "n" {
            continue;
        }
        anyhow::ensure!(
            f.len() == 4 || f.len() == 5,
            "--peer {} line {}: want n,prec,mode,rate[,batch]",
            path.display(),
            i + 1
        );
        let batch = if f.len() == 5 { f[4].parse()? } else { 1 };
        t.insert((f[0].parse()?, f[1].to_string(), f[2].to_lowercase()), (f[3].parse()?, batch));
    }
    Ok(t)
}

fn methods(names: &[KernelArg]) -> anyhow::Result<Vec<Method>> {
    Ok(names
        .iter()
        .map(|k| match k {
            KernelArg::Global => Method::Global,
            KernelArg::Shared => Method::Shared,
        })
        .collect())
}

/// The timed benches' system: `n` Plummer bodies (seed 1), G = 1, ε = 0.01, dt = 0.001, uploaded.
fn plummer_on_device<T: NbodyFloat>(gpu: &Gpu, n: usize) -> anyhow::Result<(Params<T>, DeviceSystem<T>)> {
    let s = init::plummer(n, 1).convert::<T>();
    let p = Params { g: T::from_f64(1.0), eps: T::from_f64(0.01), dt: T::from_f64(0.001) };
    let dev = DeviceSystem::upload(gpu, &p, &s)?;
    Ok((p, dev))
}

fn stage_rate<T: NbodyFloat>(
    gpu: &Gpu,
    nb: &Nbody<'_>,
    method: Method,
    mode: Mode,
    n: usize,
    timing: Timing,
) -> anyhow::Result<f64> {
    let (p, mut dev) = plummer_on_device::<T>(gpu, n)?;
    let t = time_gpu(gpu, 2, timing.runs, || {
        for _ in 0..timing.batch {
            nb.stage_on_device(method, mode, &p, 0, &mut dev)?;
        }
        Ok(())
    })?;
    Ok(timing.batch as f64 * (n as f64) * (n as f64) / (t.median_ms() * 1e-3))
}

/// How `throughput` times a figure: `runs` timed runs (after 2 warm-up runs) of `batch` force
/// evaluations each, launched back to back.
#[derive(Clone, Copy)]
struct Timing {
    runs: usize,
    batch: usize,
}

/// Milliseconds per RK4 step: `(graph replay, plain launches)`.
type StepMs = (f64, f64);

/// [`StepMs`] of `n` bodies with `nb`.
fn step_ms<T: NbodyFloat>(
    gpu: &Gpu,
    nb: &Nbody<'_>,
    mode: Mode,
    n: usize,
    steps: u64,
    runs: usize,
) -> anyhow::Result<StepMs> {
    let (p, mut dev) = plummer_on_device::<T>(gpu, n)?;
    let graph = {
        let rec = nb.record_steps(Method::Shared, mode, &p, &dev, steps)?;
        time_gpu(gpu, 2, runs, || rec.launch())?.median_ms()
    };
    let plain = time_gpu(gpu, 2, runs, || {
        for _ in 0..steps {
            nb.step_on_device(Method::Shared, mode, &p, &mut dev)?;
        }
        Ok(())
    })?
    .median_ms();
    Ok((graph / steps as f64, plain / steps as f64))
}

/// One row of [`step`]: the block of the first launcher and whether its stages overlap, and
/// [`step_ms`] with each of `launchers` (overlapping, full edges, pre-split).
fn step_row<T: NbodyFloat>(
    gpu: &Gpu,
    launchers: [&Nbody<'_>; 3],
    mode: Mode,
    n: usize,
    steps: u64,
    runs: usize,
) -> anyhow::Result<(u32, bool, [StepMs; 3])> {
    let block = launchers[0].block_for::<T>(Method::Shared, mode, n)?;
    let mut ms = [(0.0, 0.0); 3];
    for (m, nb) in ms.iter_mut().zip(launchers) {
        *m = step_ms::<T>(gpu, nb, mode, n, steps, runs)?;
    }
    Ok((block, launchers[0].overlaps::<T>(n, block), ms))
}

fn step(ns: &[usize], steps: u64, runs: usize, record: Option<PathBuf>) -> anyhow::Result<()> {
    anyhow::ensure!(runs >= 1 && steps >= 1, "--runs and --steps must be at least 1");
    let gpu = crate::common::bench_gpu()?;
    let nb = Nbody::new(&gpu)?;
    let full = Nbody::new(&gpu)?.with_programmatic_launch(false);
    let old = Nbody::with_block_size(&gpu, 256)?.with_split_shift(0)?;
    println!(
        "GPU: {}, module {}; µs per RK4 step (4 stages), median of {runs} runs of {steps} steps",
        gpu.name(),
        gpu.loaded().what
    );
    println!("pre-split = one lane per body, block 256, plain launches (main before #21 target 2)");
    println!(
        "edges = how split stages follow each other: pdl (programmatic launch, sm_90 kernels; grids of at most one block per SM) or full"
    );
    println!("…full = the same launches with full edges and the portable split kernels, same call");
    println!(
        "{:>6} {:>4} {:>6} {:>5} {:>6} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "N",
        "prec",
        "mode",
        "lanes",
        "block",
        "edges",
        "graph µs",
        "g.full µs",
        "plain µs",
        "p.full µs",
        "pre µs",
        "speedup"
    );
    for &n in ns {
        for prec in ["f32", "f64"] {
            for mode in [Mode::Exact, Mode::Fast] {
                let launchers = [&nb, &full, &old];
                let (block, pdl, [(g, pl), (fg, fpl), (_, pre)]) = if prec == "f32" {
                    step_row::<f32>(&gpu, launchers, mode, n, steps, runs)?
                } else {
                    step_row::<f64>(&gpu, launchers, mode, n, steps, runs)?
                };
                let lanes = 1u32 << nb.shift_for(n);
                let edges = if pdl { "pdl" } else { "full" };
                let (g, fg, pl, fpl, pre) = (g * 1e3, fg * 1e3, pl * 1e3, fpl * 1e3, pre * 1e3);
                println!(
                    "{n:>6} {prec:>4} {:>6} {lanes:>5} {block:>6} {edges:>5} {g:>10.2} {fg:>10.2} {pl:>10.2} {fpl:>10.2} {pre:>10.2} {:>7.1}×",
                    format!("{mode:?}"),
                    pre / g
                );
                if let Some(path) = &record {
                    super::record_row(
                        path,
                        &gpu,
                        &[
                            "N",
                            "precision",
                            "mode",
                            "lanes",
                            "block",
                            "edges",
                            "µs/step graph",
                            "µs/step graph full edges",
                            "µs/step plain",
                            "µs/step plain full edges",
                            "µs/step pre-split",
                            "speedup",
                        ],
                        &[
                            n.to_string(),
                            prec.to_string(),
                            format!("{mode:?}"),
                            lanes.to_string(),
                            block.to_string(),
                            edges.to_string(),
                            format!("{g:.2}"),
                            format!("{fg:.2}"),
                            format!("{pl:.2}"),
                            format!("{fpl:.2}"),
                            format!("{pre:.2}"),
                            format!("{:.2}", pre / g),
                        ],
                    )?;
                }
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn throughput(
    ns: &[usize],
    kernels: &[KernelArg],
    block: Option<u32>,
    split: Option<u32>,
    peer: Option<PathBuf>,
    timing: Timing,
    record: Option<PathBuf>,
) -> anyhow::Result<()> {
    anyhow::ensure!(timing.runs >= 1, "--runs must be at least 1");
    anyhow::ensure!(timing.batch >= 1, "--batch must be at least 1");
    let peers = peer.as_deref().map(read_peer).transpose()?.unwrap_or_default();
    if let Some(&(_, b)) = peers.values().find(|(_, b)| *b != timing.batch) {
        anyhow::bail!(
            "--peer was timed with {b} force evaluations per run, this run with --batch {}: give both the same",
            timing.batch
        );
    }
    let gpu = crate::common::bench_gpu()?;
    let nb = match block {
        Some(b) => Nbody::with_block_size(&gpu, b)?,
        None => Nbody::new(&gpu)?,
    };
    let nb = match split {
        Some(s) => nb.with_split_shift(s)?,
        None => nb,
    };
    let sms = gpu.attribute(cust::device::DeviceAttribute::MultiprocessorCount)?;
    let split_s = split.map_or("split_shift(N)".to_string(), |s| format!("{} lanes", 1u32 << s));
    let block_s = block.map_or("auto".to_string(), |b| b.to_string());
    println!("GPU: {} ({sms} SMs), module {}, block {block_s}, {split_s}", gpu.name(), gpu.loaded().what);
    if let Some(p) = &peer {
        println!("peer: {} (same session)", p.display());
    }
    if timing.batch == 1 {
        println!("interactions/s = N² / median time of one force evaluation (one RK4 stage; a step is four)");
    } else {
        println!(
            "interactions/s = {}·N² / median time of {} force evaluations launched back to back (one RK4 stage each)",
            timing.batch, timing.batch
        );
    }
    println!("bound: fp32 ≈ 2.8e12 interactions/s on H100/H200 (66.9 TFLOP/s at 20 flop per interaction)");
    println!(
        "{:>8} {:>7} {:>4} {:>6} {:>5} {:>5} {:>12} {:>12} {:>8}",
        "N", "kernel", "prec", "mode", "lanes", "block", "inter./s", "peer", "vs peer"
    );
    for method in methods(kernels)? {
        for &n in ns {
            for prec in ["f32", "f64"] {
                for mode in [Mode::Exact, Mode::Fast] {
                    let (rate, used) = if prec == "f32" {
                        (stage_rate::<f32>(&gpu, &nb, method, mode, n, timing)?, nb.block_for::<f32>(method, mode, n)?)
                    } else {
                        (stage_rate::<f64>(&gpu, &nb, method, mode, n, timing)?, nb.block_for::<f64>(method, mode, n)?)
                    };
                    let lanes = 1u32 << nb.shift_for(n);
                    let pr = peers.get(&(n, prec.to_string(), format!("{mode:?}").to_lowercase())).map(|&(r, _)| r);
                    let vs = pr.map(|p| format!("{:.2}×", rate / p)).unwrap_or_else(|| "-".into());
                    let pr_s = pr.map(|p| format!("{p:.2e}")).unwrap_or_else(|| "-".into());
                    println!(
                        "{n:>8} {:>7} {prec:>4} {:>6} {lanes:>5} {used:>5} {rate:>12.3e} {pr_s:>12} {vs:>8}",
                        format!("{method:?}"),
                        format!("{mode:?}")
                    );
                    if let Some(path) = &record {
                        super::record_row(
                            path,
                            &gpu,
                            &[
                                "N",
                                "kernel",
                                "precision",
                                "mode",
                                "lanes",
                                "block",
                                "batch",
                                "interactions/s",
                                "peer (same session)",
                                "vs peer",
                                "module",
                            ],
                            &[
                                n.to_string(),
                                format!("{method:?}"),
                                prec.to_string(),
                                format!("{mode:?}"),
                                lanes.to_string(),
                                used.to_string(),
                                timing.batch.to_string(),
                                format!("{rate:.3e}"),
                                pr_s,
                                vs,
                                gpu.loaded().what.clone(),
                            ],
                        )?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// CPU milliseconds for `steps` steps, measured on at most `budget` seconds and extrapolated.
fn cpu_ms<T: NbodyFloat>(s0: &System<T>, p: &Params<T>, steps: u64, par: bool, budget: f64) -> (f64, bool) {
    let mut s = s0.clone();
    let t = Instant::now();
    let mut done = 0;
    while done < steps {
        if par {
            cpu::step_par(p, &mut s)
        } else {
            cpu::step_seq(p, &mut s)
        }
        done += 1;
        if t.elapsed().as_secs_f64() > budget && done < steps {
            break;
        }
    }
    let ms = t.elapsed().as_secs_f64() * 1e3;
    (ms * steps as f64 / done as f64, done < steps)
}

fn grid_row<T: NbodyFloat>(
    gpu: &Gpu,
    nb: &Nbody<'_>,
    n: usize,
    steps: u64,
    budget: f64,
    kernels: &[Method],
    per_step: &mut std::collections::HashMap<(usize, bool, &'static str), f64>,
) -> anyhow::Result<Vec<String>> {
    let s0 = init::ball(n, 1.0, 1.0, 1).convert::<T>();
    let p = Params { g: T::from_f64(1.0), eps: T::from_f64(0.01), dt: T::from_f64(0.01) };
    // CPU: measured once per (N, threads) on up to `budget` seconds, then per step × steps.
    let mut cpu_col = |par: bool| {
        let key = (n, par, T::NAME);
        if let Some(&ms) = per_step.get(&key) {
            return (ms * steps as f64, steps > 1);
        }
        let (ms, extrapolated) = cpu_ms(&s0, &p, steps, par, budget);
        if extrapolated {
            per_step.insert(key, ms / steps as f64);
        }
        (ms, extrapolated)
    };
    let (c1, x1) = cpu_col(false);
    let (cn, xn) = cpu_col(true);
    let mut gpu_ms = [f64::NAN; 2];
    for &method in kernels {
        let mut dev = DeviceSystem::upload(gpu, &p, &s0)?;
        nb.step_on_device(method, Mode::Exact, &p, &mut dev)?; // warm-up: one step, not one run
        let runs = if steps >= 1000 { 1 } else { 3 };
        let t = time_gpu(gpu, 0, runs, || {
            for _ in 0..steps {
                nb.step_on_device(method, Mode::Exact, &p, &mut dev)?;
            }
            Ok(())
        })?;
        gpu_ms[(method == Method::Shared) as usize] = t.median_ms();
    }
    let star = |x: bool| if x { "*" } else { "" };
    let best = gpu_ms[0].min(gpu_ms[1]); // f64::min ignores the NaN of a kernel not run
    let ms = |v: f64| if v.is_nan() { "-".to_string() } else { format!("{v:.3}") };
    Ok(vec![
        n.to_string(),
        steps.to_string(),
        T::NAME.to_string(),
        format!("{c1:.3}{}", star(x1)),
        format!("{cn:.3}{}", star(xn)),
        ms(gpu_ms[0]),
        ms(gpu_ms[1]),
        format!("{:.1}", c1 / best),
        format!("{:.1}", cn / best),
    ])
}

fn grid(ns: &[usize], steps: &[u64], budget: f64, kernels: &[Method], record: Option<PathBuf>) -> anyhow::Result<()> {
    anyhow::ensure!(!kernels.is_empty(), "--kernel: name at least one of global, shared");
    let gpu = crate::common::bench_gpu()?;
    let nb = Nbody::new(&gpu)?;
    let threads = rayon::current_num_threads();
    println!("GPU: {} (exact kernels, the launcher's block) vs CPU twin: 1 thread and {threads} threads", gpu.name());
    println!("times in ms for the whole run (upload excluded); * = CPU extrapolated from the steps done in {budget} s");
    println!(
        "seed (thesis, 2010s GPU): best speedups over one CPU core 121× (f32, shared, N = 4096, 10 steps), 14.56× (f64)"
    );
    let header = [
        "N",
        "steps",
        "prec",
        "CPU 1 thread ms",
        &format!("CPU {threads} threads ms"),
        "GPU global ms",
        "GPU shared ms",
        "speedup vs 1 thread",
        &format!("speedup vs {threads} threads"),
    ];
    println!("| {} |", header.join(" | "));
    let mut per_step = std::collections::HashMap::new();
    for &n in ns {
        for prec in ["f32", "f64"] {
            for &s in steps {
                let row = if prec == "f32" {
                    grid_row::<f32>(&gpu, &nb, n, s, budget, kernels, &mut per_step)?
                } else {
                    grid_row::<f64>(&gpu, &nb, n, s, budget, kernels, &mut per_step)?
                };
                println!("| {} |", row.join(" | "));
                if let Some(path) = &record {
                    super::record_row(path, &gpu, &header, &row)?;
                }
            }
        }
    }
    Ok(())
}

/// The matmul timings of one `N`.
struct MatmulTimes {
    /// The CPU product's milliseconds on one thread (the model matrices built inside the
    /// timing).
    cpu1: f64,
    /// As `cpu1` on all threads.
    cpun: f64,
    /// Each kernel's name and GPU median (ms).
    kernels: Vec<(String, f64)>,
}

/// The matmul timings of `n` in `T`.
fn matmul_n<T: MatmulInt>(
    gpu: &Gpu,
    m: &Matmul<'_>,
    n: usize,
    edges: &[u32],
    runs: usize,
) -> anyhow::Result<MatmulTimes> {
    let cpu_ms = |multiply: fn(usize, &[T], &[T]) -> Vec<T>| {
        let t = Instant::now();
        let _ = multiply(n, &mcpu::model_matrix(n), &mcpu::model_matrix(n)).len();
        t.elapsed().as_secs_f64() * 1e3
    };
    let (cpu1, cpun) = (cpu_ms(mcpu::multiply_seq), cpu_ms(mcpu::multiply_par));
    let a: Vec<T> = mcpu::model_matrix(n);
    let da = DeviceBuffer::from_slice(&a)?;
    let db = DeviceBuffer::from_slice(&a)?;
    let mut dc = DeviceBuffer::from_slice(&a)?;
    let want = mcpu::multiply_par(n, &a, &a);
    let mut out = Vec::new();
    for &e in edges {
        for k in [MatKernel::Global { block: (e, e) }, MatKernel::Shared { tile: e }] {
            let t = time_gpu(gpu, 2, runs, || m.multiply_on_device(k, n, &da, &db, &mut dc))?;
            let mut got = vec![T::default(); n * n];
            cust::memory::CopyDestination::copy_to(&*dc, &mut got[..])?;
            anyhow::ensure!(got == want, "{k:?} N = {n}: GPU result differs from the CPU");
            let name = match k {
                MatKernel::Global { .. } => format!("global {e}×{e}"),
                MatKernel::Shared { .. } => format!("shared {e}×{e}"),
            };
            out.push((name, t.median_ms()));
        }
    }
    Ok(MatmulTimes { cpu1, cpun, kernels: out })
}

fn matmul(ns: &[usize], edges: &[u32], runs: usize, record: Option<PathBuf>) -> anyhow::Result<()> {
    anyhow::ensure!(runs >= 1, "--runs must be at least 1");
    let gpu = crate::common::bench_gpu()?;
    let m = Matmul::new(&gpu)?;
    println!("GPU: {}; model matrices A(n, m) = n + m − 1; i32 up to N = {MODEL_MAX_N_I32}, i64 above", gpu.name());
    println!("seed: best GPU speedups over one CPU core 479× (global) and 3167× (shared) at N = 1024");
    println!(
        "{:>5} {:>4} {:>14} {:>10} {:>10} {:>10} {:>10}",
        "N", "type", "kernel", "GPU ms", "CPU1 ms", "x CPU1", "x CPUall"
    );
    for &n in ns {
        let i32_ok = n as u64 <= MODEL_MAX_N_I32;
        let MatmulTimes { cpu1, cpun, kernels } = if i32_ok {
            matmul_n::<i32>(&gpu, &m, n, edges, runs)?
        } else {
            matmul_n::<i64>(&gpu, &m, n, edges, runs)?
        };
        let ty = if i32_ok { "i32" } else { "i64" };
        for (name, ms) in kernels {
            println!("{n:>5} {ty:>4} {name:>14} {ms:>10.4} {cpu1:>10.3} {:>10.1} {:>10.1}", cpu1 / ms, cpun / ms);
            if let Some(path) = &record {
                super::record_row(
                    path,
                    &gpu,
                    &["N", "type", "kernel", "GPU ms", "CPU 1 thread ms", "CPU all threads ms", "speedup vs 1 thread"],
                    &[
                        n.to_string(),
                        ty.to_string(),
                        name.clone(),
                        format!("{ms:.4}"),
                        format!("{cpu1:.3}"),
                        format!("{cpun:.3}"),
                        format!("{:.1}", cpu1 / ms),
                    ],
                )?;
            }
        }
    }
    Ok(())
}
