//! `lockstep bridge`: generate Brownian bridge paths (or scaled increments) on the GPU, or on
//! the CPU (`--device cpu`, or `auto` without a GPU), write them as `.npy` (shape
//! `(N+1, d, paths)`, the `[step][dim][path]` layout) and plot the fan: a shaded quantile band
//! with sample paths on top.
//!
//! With `--out`, a run is made and written in chunks of paths (`bridge_chunks.rs`), so its size
//! is bounded by the disk, not by memory; the file's bytes equal a one-shot run's.

use crate::bridge_chunks::{self, CHUNK_BYTES, Job, chunk_paths};
use crate::common::{self, Device, PrecisionArg, Progress, check_in, read_numbers};
use crate::plot::{Band, Series, fan_chart};
use crate::{npy, output, sidecar};
use anyhow::{Result, bail};
use lockstep::bridge::{
    self as cpu, BridgeSpec, Noise, Output, Plan, Precision, Source, bisection_order, forward_order,
};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `--order`: a keyword or a file of time indices.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Breadth-first bisection (the paper's eq. 3).
    Bisection,
    /// 1, 2, …, N.
    Forward,
    /// A file of the 1-based time indices 1..=N in construction order.
    File(PathBuf),
}

fn keyword_or_file(s: &str, keywords: &str, what: &str) -> std::result::Result<PathBuf, String> {
    let p = PathBuf::from(s);
    if p.is_file() { Ok(p) } else { Err(format!("`{s}` is neither {keywords} nor an existing file ({what})")) }
}

fn parse_order(s: &str) -> std::result::Result<Order, String> {
    match s {
        "bisection" => Ok(Order::Bisection),
        "forward" => Ok(Order::Forward),
        _ => keyword_or_file(s, "bisection, forward", "of time indices 1..=N").map(Order::File),
    }
}

/// `--source`: a generator or a file of normals.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceArg {
    /// Philox4x32-10 keyed by `--seed` (normals by Φ⁻¹).
    Philox,
    /// Philox4x32-10 keyed by `--seed`, normals by Box–Muller.
    PhiloxBm,
    /// Sobol (Joe–Kuo); `--seed` is the index of path 0's point.
    Sobol,
    /// A file of (N+1)·d·paths normals, `[row][path]`.
    File(PathBuf),
}

fn parse_source(s: &str) -> std::result::Result<SourceArg, String> {
    match s {
        "philox" => Ok(SourceArg::Philox),
        "philox-bm" => Ok(SourceArg::PhiloxBm),
        "sobol" => Ok(SourceArg::Sobol),
        _ => keyword_or_file(s, "philox, philox-bm, sobol", "of normals").map(SourceArg::File),
    }
}

/// Options of `lockstep bridge` (also the parameters of the `.npy`'s sidecar).
#[derive(clap::Args, serde::Serialize)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// Paths to generate (≥ 1).
    #[arg(long, default_value = "10000", value_parser = common::count)]
    paths: usize,
    /// Equal time steps of [0, T] (N + 1 of them: N interior times and T).
    #[arg(long, default_value = "64", value_parser = common::count, conflicts_with = "times")]
    steps: usize,
    /// End time T of the equal steps (> 0).
    #[arg(long, default_value = "1", value_parser = common::positive, conflicts_with = "times")]
    t_end: f64,
    /// A file of increasing times t1 < … < tN < T (whitespace-separated; the last is T),
    /// instead of --steps/--t-end. The start time is 0.
    #[arg(long)]
    times: Option<PathBuf>,
    /// Start value x0, one number per dimension (default 0 in each of --dims).
    #[arg(long, num_args = 1.., value_parser = common::finite)]
    start: Vec<f64>,
    /// `bisection`, `forward`, or a file of the 1-based time indices 1..=N in construction order.
    #[arg(long, default_value = "bisection", value_parser = parse_order)]
    order: Order,
    /// Dimension d (1..=8); taken from --start when given.
    #[arg(long, value_parser = common::count)]
    dims: Option<usize>,
    /// A file with the d×d covariance Σ (row-major, whitespace-separated); identity if absent.
    #[arg(long)]
    cov: Option<PathBuf>,
    /// Precision.
    #[arg(long, value_enum, default_value = "f32")]
    precision: PrecisionArg,
    /// `philox` (Φ⁻¹ normals), `philox-bm` (Box–Muller normals from the same generator), `sobol`,
    /// or a file of (N+1)·d·paths normals (`[row][path]`, whitespace-separated).
    #[arg(long, default_value = "philox", value_parser = parse_source)]
    source: SourceArg,
    /// Write scaled increments instead of points.
    #[arg(long)]
    increments: bool,
    /// Seed: Philox key; with --source sobol, the index of path 0's point (< 2^32).
    #[arg(long, default_value = "1", value_parser = common::u64_any)]
    seed: u64,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    device: Device,
    /// Write the result here as .npy (made and written in chunks of paths, through
    /// FILE.partial; a FILE.json sidecar says how to make it again).
    #[arg(long)]
    out: Option<PathBuf>,
    /// With --out: paths per chunk (default: 512 MiB of output, less when memory is short). The
    /// file's bytes do not depend on it.
    #[arg(long, value_parser = common::count, requires = "out")]
    chunk_paths: Option<usize>,
    /// Plot the fan (5–95% and 25–75% bands, the median, 20 paths on top; dimension 0) to this PNG.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// Bytes of the plan per interior time (strategy steps, both precisions' tables, the grid and
/// order; measured ≈ 170 B, with margin).
const PLAN_BYTES_PER_STEP: u64 = 320;

/// The problem: times, order, start, noise; every value checked in the run's precision.
fn spec(args: &Args) -> Result<BridgeSpec> {
    let prec = args.precision;
    let (times, t_end) = match &args.times {
        Some(f) => {
            let mut t = read_numbers(f, "--times", prec)?;
            if t.len() < 2 {
                bail!("--times {}: {} times; give at least two (t1 < … < tN < T, the last is T)", f.display(), t.len());
            }
            let t_end = t.pop().unwrap_or(1.0);
            (t, t_end)
        }
        None => {
            if args.steps < 2 {
                bail!("--steps {}: give at least 2 (N = steps − 1 interior times, at least one)", args.steps);
            }
            check_in(prec, "--t-end", args.t_end)?;
            let n = args.steps - 1;
            ((1..=n).map(|i| args.t_end * i as f64 / args.steps as f64).collect(), args.t_end)
        }
    };
    let n = times.len();
    // Times must stay increasing once rounded to the precision (the weights divide by their gaps).
    let round = |t: f64| if prec == PrecisionArg::F32 { t as f32 as f64 } else { t };
    let grid: Vec<f64> = std::iter::once(0.0).chain(times.iter().copied()).chain([t_end]).collect();
    for g in 1..grid.len() {
        if round(grid[g]) <= round(grid[g - 1]) {
            let what = if args.times.is_some() { "--times: entry" } else { "--steps/--t-end: time" };
            bail!(
                "{what} {g} = {:e} is not after the time before it ({:e}) in {}; times must increase from 0 \
                 (refine less, or use --precision f64)",
                grid[g],
                grid[g - 1],
                prec.name()
            );
        }
    }
    let order = match &args.order {
        Order::Bisection => bisection_order(n),
        Order::Forward => forward_order(n),
        Order::File(f) => read_numbers(f, "--order", PrecisionArg::F64)?
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                if v.fract() != 0.0 || !(1.0..=n as f64).contains(&v) {
                    bail!("--order {}: entry {} is {v}; entries are time indices 1..={n}", f.display(), i + 1);
                }
                Ok(v as usize)
            })
            .collect::<Result<_>>()?,
    };
    let d = match (args.start.len(), args.dims) {
        (0, d) => d.unwrap_or(1),
        (k, None) => k,
        (k, Some(d)) if k == d => d,
        (k, Some(d)) => bail!("--start has {k} values but --dims is {d}; give one start value per dimension"),
    };
    if d > 8 {
        bail!("--dims {d}: at most 8 dimensions are supported");
    }
    let start = if args.start.is_empty() { vec![0.0; d] } else { args.start.clone() };
    for (k, &x) in start.iter().enumerate() {
        check_in(prec, &format!("--start value {}", k + 1), x)?;
    }
    let noise = match &args.cov {
        Some(f) => {
            let c = read_numbers(f, "--cov", prec)?;
            if c.len() != d * d {
                bail!("--cov {}: {} numbers; a {d}×{d} covariance needs {}", f.display(), c.len(), d * d);
            }
            Noise::Covariance(c)
        }
        None => Noise::Cholesky((0..d * d).map(|i| if i / d == i % d { 1.0 } else { 0.0 }).collect()),
    };
    // The problem's scale in the precision: paths reach a few standard deviations from x0 (we
    // allow 64), increments divide by the smallest gap; both must stay well inside the range.
    let max_var = match &noise {
        Noise::Covariance(c) => (0..d).map(|i| c[i * d + i].abs()).fold(0.0, f64::max),
        Noise::Cholesky(_) => 1.0,
    };
    let x_max = start.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let min_gap = grid.windows(2).map(|w| round(w[1]) - round(w[0])).fold(f64::INFINITY, f64::min);
    let reach = x_max + 64.0 * (t_end * max_var).sqrt();
    let inc_reach = 64.0 * (max_var / min_gap).sqrt() + 2.0 * x_max / min_gap;
    let limit = prec.max() / 16.0;
    let within = |v: f64| v.is_finite() && v < limit;
    if !within(reach) || (args.increments && !within(inc_reach)) {
        bail!(
            "this problem's values would reach about {:e} in {}, beyond its range (largest {:e}); lower --t-end \
             (or the --times, --cov, --start values), or use --precision f64",
            if args.increments { reach.max(inc_reach) } else { reach },
            prec.name(),
            prec.max()
        );
    }
    Ok(BridgeSpec { t0: 0.0, times, t_end, order, start, noise })
}

fn run_typed<T: Precision + Into<f64> + npy::Element>(
    args: &Args,
    plan: &Plan,
    gpu: Option<lockstep::Gpu>,
    rank: Option<lockstep::dist::Rank>,
    chunk: usize,
) -> Result<()> {
    let prec = args.precision;
    let rows = plan.rows();
    let paths = args.paths;
    let Some(len) = rows.checked_mul(paths) else {
        bail!("(N+1)·d·paths = {rows}·{paths} values do not fit in memory; lower --paths or --steps");
    };
    let file_z: Option<Vec<T>> = match &args.source {
        SourceArg::File(f) => {
            let z = read_numbers(f, "--source", prec)?;
            if z.len() != len {
                bail!(
                    "--source {}: {} normals; this run needs (N+1)·d·paths = {rows}·{paths} = {len} ([row][path])",
                    f.display(),
                    z.len()
                );
            }
            Some(z.into_iter().map(T::from_f64).collect())
        }
        _ => None,
    };
    let source = match (&args.source, &file_z) {
        (SourceArg::Philox, _) => Source::Philox { seed: args.seed },
        (SourceArg::PhiloxBm, _) => Source::PhiloxBoxMuller { seed: args.seed },
        (SourceArg::Sobol, _) => {
            let Ok(offset) = u32::try_from(args.seed) else {
                bail!("--seed {} with --source sobol is the index of path 0's point; give 0..={}", args.seed, u32::MAX);
            };
            Source::Sobol { offset }
        }
        (SourceArg::File(_), Some(z)) => Source::Buffer(&z[..]),
        (SourceArg::File(_), None) => bail!("--source: no normals read"),
    };
    cpu::check_generation(plan, &source, paths)?;
    let output = if args.increments { Output::Increments } else { Output::Paths };
    let d = plan.dims();
    let shape = [plan.steps() as u64, d as u64, paths as u64];
    if let Some(rank) = rank {
        return run_ranks(args, plan, source, output, shape, chunk, rank);
    }
    if let Some(out) = &args.out {
        output::check_disk(out, "--out", npy::file_bytes::<T>(&shape), "--paths or --steps")?;
    }
    let mut file = match &args.out {
        Some(out) => Some(npy::Slabs::<T>::create(out, &shape)?),
        None => None,
    };
    let threads = rayon::current_num_threads();
    let place = match &gpu {
        Some(g) => g.name().to_string(),
        None => format!("the CPU ({threads} threads)"),
    };
    let chunks = paths.div_ceil(chunk);
    let pieces = if chunks > 1 { format!(", in {chunks} chunks of up to {chunk} paths") } else { String::new() };
    match &gpu {
        Some(g) => println!("generating {paths} paths on {} ({}){pieces}", g.name(), T::NAME),
        None => println!("generating {paths} paths on the CPU ({threads} threads, {}){pieces}", T::NAME),
    }
    let t = Instant::now();
    let bar = Progress::new(paths as u64, "paths");
    let job = Job { plan, source, paths, range: 0..paths, digest: false, chunk, output, gpu: gpu.as_ref() };
    let staged = bridge_chunks::staging(&job);
    let done = bridge_chunks::run(&job, file.as_mut(), args.plot.is_some(), staged, &bar);
    bar.finish();
    let done = done?;
    let what = if args.increments { "increments" } else { "path values" };
    println!(
        "{} {what} ({rows} rows × {paths} paths, {}) on {place} in {:.3} s; strategy stack {} slots",
        len,
        T::NAME,
        t.elapsed().as_secs_f64(),
        plan.stack_slots()
    );
    if let (Some(out), Some(file)) = (&args.out, file) {
        let synced = Instant::now();
        file.commit()?;
        let sync_secs = synced.elapsed().as_secs_f64();
        sidecar::write(out, "bridge", args, Some(args.seed), &sidecar::device_name(gpu.as_ref()))?;
        let bytes = npy::file_bytes::<T>(&shape).unwrap_or(0);
        println!(
            "wrote {} (shape ({}, {d}, {paths}), {}; {bytes} bytes in {} chunk(s): generating {:.3} s, writing {:.3} s, \
             sync {sync_secs:.3} s) and {}",
            out.display(),
            plan.steps(),
            T::NAME,
            done.chunks,
            done.generate_secs,
            done.write_secs,
            sidecar::path_of(out).display()
        );
    }
    if let Some(png) = &args.plot {
        let n = done.first_paths;
        plot(args, plan, png, n, |g, p| done.first[(g * d) * n + p].into())?;
        let from = if n < paths { format!(" (from the first {n} paths)") } else { String::new() };
        println!("plotted {}{from}", png.display());
    }
    Ok(())
}

/// One rank of a launched run: paths split over the ranks (`lockstep::dist::split_even`), each
/// rank's share made in chunks with `bridge::generate_range` (so each path has the bits of the
/// one-rank run; `bridge_chunks::run` over the rank's paths: each chunk checked finite) and,
/// with `--out`, written by the rank itself into its columns of the one `.npy` (rank 0 creates
/// `FILE.partial` and renames it once every rank has written and synced; across hosts `--out`
/// needs a shared filesystem). `bits` is the path digest: the wrapping sum
/// over paths of a hash of (path index, its values), all-reduced — the same for any number of
/// ranks. `seconds` is the slowest rank's generation time.
fn run_ranks<T: Precision + Into<f64> + npy::Element>(
    args: &Args,
    plan: &Plan,
    source: Source<'_, T>,
    output: Output,
    shape: [u64; 3],
    chunk: usize,
    rank: lockstep::dist::Rank,
) -> Result<()> {
    if args.plot.is_some() {
        bail!("--plot: a run over ranks does not gather its paths for a plot; run without --plot (or on one rank)");
    }
    let comm = rank.comm();
    let paths = args.paths;
    let me = lockstep::dist::split_even(paths as u64, comm.size(), comm.rank());
    let mut file = None;
    if let Some(out) = &args.out {
        if comm.rank() == 0 {
            output::check_disk(out, "--out", npy::file_bytes::<T>(&shape), "--paths or --steps")?;
            file = Some(npy::Slabs::<T>::create(out, &shape)?);
        }
        comm.barrier()?;
        if comm.rank() != 0 {
            file = Some(npy::Slabs::<T>::join(out, &shape)?);
        }
    }
    let range = me.range.start as usize..me.range.end as usize;
    let job = Job { plan, source, paths, range: range.clone(), digest: true, chunk, output, gpu: rank.gpu() };
    let bar = Progress::new(range.len() as u64, "paths");
    // The staging buffers are made before the clock starts, as the GPU and NCCL are.
    let staged = bridge_chunks::staging(&job);
    let (done, wall) = crate::ranks::timed(&rank, || {
        let done = bridge_chunks::run(&job, file.as_mut(), false, staged, &bar)?;
        if let (Some(f), true) = (file.as_mut(), comm.rank() != 0) {
            f.sync()?;
        }
        Ok(done)
    })?;
    bar.finish();
    let mut sums = [done.digest];
    comm.all_reduce_u64(&mut sums)?;
    let times = lockstep::dist::all_gather(comm, &[done.generate_secs])?;
    let slowest = times.iter().copied().fold(0.0, f64::max);
    let what = format!("paths = {paths}, rows = {}, {}, {:?}", plan.rows(), T::NAME, output);
    crate::ranks::summary(&rank, "bridge", &what, &format!("{:016x}", sums[0]), slowest);
    if comm.rank() == 0 {
        println!("bridge over {} ranks: {wall:.3} s wall (generating: slowest rank {slowest:.3} s)", comm.size());
        if let (Some(out), Some(file)) = (&args.out, file) {
            file.commit()?;
            let place = format!("{} ranks; {}", comm.size(), crate::ranks::place(&rank));
            sidecar::write(out, "bridge", args, Some(args.seed), &place)?;
            println!("wrote {} and {}", out.display(), sidecar::path_of(out).display());
        }
    }
    Ok(rank.finish()?)
}

/// The fan of dimension 0: bands of the 5–95% and 25–75% quantiles, the median, and up to 20
/// sample paths drawn on top.
fn plot(args: &Args, plan: &Plan, png: &Path, paths: usize, at: impl Fn(usize, usize) -> f64) -> Result<()> {
    let grid = plan.grid();
    let steps = plan.steps();
    let x0 = plan.tables::<f64>().start[0];
    let first = if args.increments { None } else { Some((grid[0], x0)) };
    let mut q: [Vec<(f64, f64)>; 5] = Default::default();
    for g in 0..steps {
        let mut v: Vec<f64> = (0..paths).map(|p| at(g, p)).collect();
        v.sort_by(f64::total_cmp);
        for (k, f) in [0.05, 0.25, 0.5, 0.75, 0.95].into_iter().enumerate() {
            q[k].push((grid[g + 1], v[((v.len() - 1) as f64 * f).round() as usize]));
        }
    }
    if let Some(p0) = first {
        q.iter_mut().for_each(|s| s.insert(0, p0));
    }
    let bands = [
        Band { name: "5–95%".into(), lo: q[0].clone(), hi: q[4].clone(), opacity: 0.18 },
        Band { name: "25–75%".into(), lo: q[1].clone(), hi: q[3].clone(), opacity: 0.35 },
    ];
    let mut lines: Vec<Series> = (0..paths.min(20))
        .map(|p| Series {
            name: String::new(),
            points: first.into_iter().chain((0..steps).map(|g| (grid[g + 1], at(g, p)))).collect(),
        })
        .collect();
    lines.push(Series { name: "median".into(), points: q[2].clone() });
    let what = if args.increments { "scaled increment (dimension 0)" } else { "X_t (dimension 0)" };
    let title = format!("Brownian bridge: {paths} paths, quantile fan and {} sample paths", paths.min(20));
    fan_chart(png, &title, "t", what, &bands, &lines)
}

pub fn run(args: Args) -> Result<()> {
    common::check_outputs(&[("--out", &args.out, Some("npy")), ("--plot", &args.plot, Some("png"))])?;
    let size = args.precision.bytes();
    // The sizes of the run, from the flags alone, before any of it is allocated.
    let interior = match &args.times {
        Some(f) => std::fs::metadata(f).map(|m| m.len() / 2).unwrap_or(0),
        None => args.steps as u64 - 1,
    };
    let d = args.start.len().max(args.dims.unwrap_or(1)) as u64;
    let rows = (interior + 1).saturating_mul(d);
    let len = common::mul(&[rows, args.paths as u64]);
    let plan_bytes = common::mul(&[PLAN_BYTES_PER_STEP, interior + 1, d.max(1)]);
    let file_bytes = match &args.source {
        SourceArg::File(f) => {
            common::add(&[std::fs::metadata(f).ok().map(|m| m.len()), len.and_then(|l| l.checked_mul(8 + size))])
        }
        _ => Some(0),
    };
    let rank = crate::ranks::join(args.device)?;
    let gpu = if rank.is_some() { None } else { common::pick(args.device)? };
    let place = gpu.as_ref().or(rank.as_ref().and_then(|r| r.gpu()));
    // With --out the run is made and written in chunks (bridge_chunks.rs), on the GPU too (every
    // source generates ranges there); without, in one piece (held for the summary and the plot).
    let one_piece = args.out.is_none();
    let chunk = match (one_piece, args.chunk_paths) {
        (true, _) => args.paths,
        (false, Some(c)) => c.min(args.paths),
        (false, None) => {
            let mut budget = CHUNK_BYTES;
            if let Some(avail) = common::host_available() {
                budget = budget.min(avail / 8);
            }
            if let Some((free, _)) = place.and_then(|g| g.memory_info().ok()) {
                budget = budget.min(free as u64 / 8);
            }
            chunk_paths(rows.saturating_mul(size), budget, args.paths)
        }
    };
    let chunks = args.paths.div_ceil(chunk) as u64;
    let chunk_bytes = common::mul(&[rows, chunk as u64, size]);
    let plot_bytes = if args.plot.is_some() { common::mul(&[16, chunk as u64]) } else { Some(0) };
    // Host: the chunk being made (the CPU's blocks and their scatter, or the GPU's download) and
    // the one being written, and with --plot the first; the device: as a one-shot generation.
    let held = (if chunks == 1 || place.is_some() { 2 } else { 3 }) + u64::from(args.plot.is_some() && chunks > 1);
    let host = common::add(&[plan_bytes, file_bytes, plot_bytes, chunk_bytes.and_then(|b| b.checked_mul(held))]);
    let device = common::add(&[plan_bytes, chunk_bytes, chunk_bytes, chunk_bytes]);
    let lower = "--paths or --steps (or the --times file)";
    common::check_run_memory(place, host, device, lower)?;
    let plan = Plan::new(&spec(&args)?)?;
    match args.precision {
        PrecisionArg::F32 => run_typed::<f32>(&args, &plan, gpu, rank, chunk),
        PrecisionArg::F64 => run_typed::<f64>(&args, &plan, gpu, rank, chunk),
    }
}
