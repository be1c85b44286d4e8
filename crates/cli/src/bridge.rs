//! `lockstep bridge`: generate Brownian bridge paths (or scaled increments) on the GPU, or on
//! the CPU when there is none (or with `--cpu`), write them as `.npy` (shape `(N+1, d, paths)`,
//! the `[step][dim][path]` layout) and plot a few paths with a fan of quantiles.

use crate::plot::{Scale, Series, line_chart};
use lockstep::Gpu;
use lockstep::bridge::Bridge;
use lockstep::bridge::{self as cpu, BridgeSpec, Noise, Output, Plan, Precision, Source, forward_order};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of `lockstep bridge`.
#[derive(clap::Args)]
pub struct Args {
    /// Paths to generate.
    #[arg(long, default_value_t = 10_000)]
    paths: usize,
    /// Time steps (N + 1): equal steps of [0, T].
    #[arg(long, default_value_t = 64)]
    steps: usize,
    /// End time T.
    #[arg(long, default_value_t = 1.0)]
    t_end: f64,
    /// `bisection`, `forward`, or a file of the 1-based time indices 1..=N in construction order.
    #[arg(long, default_value = "bisection")]
    order: String,
    /// Dimension d.
    #[arg(long, default_value_t = 1)]
    dims: usize,
    /// A file with the d×d covariance Σ (row-major, whitespace-separated); identity if absent.
    #[arg(long)]
    cov: Option<PathBuf>,
    /// `f32` or `f64`.
    #[arg(long, default_value = "f32")]
    precision: String,
    /// `philox`, `sobol`, or a file of (N+1)·d·paths normals (`[row][path]`, whitespace-separated).
    #[arg(long, default_value = "philox")]
    source: String,
    /// Write scaled increments instead of points.
    #[arg(long)]
    increments: bool,
    /// Philox seed (Sobol: index of path 0's point).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Generate on the CPU (rayon) even when a GPU is present.
    #[arg(long)]
    cpu: bool,
    /// Write the result here as .npy.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Plot a few paths (dimension 0) and the 5/25/50/75/95% quantiles to this PNG.
    #[arg(long)]
    plot: Option<PathBuf>,
}

fn numbers(path: &Path) -> anyhow::Result<Vec<f64>> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    text.split_whitespace()
        .enumerate()
        .map(|(i, w)| w.parse::<f64>().map_err(|e| anyhow::anyhow!("{}: entry {i} `{w}`: {e}", path.display())))
        .collect()
}

fn spec(args: &Args) -> anyhow::Result<BridgeSpec> {
    anyhow::ensure!(args.steps >= 1, "--steps must be at least 1");
    let n = args.steps - 1;
    let mut s = BridgeSpec::standard(args.steps);
    s.times = (1..=n).map(|i| args.t_end * i as f64 / args.steps as f64).collect();
    s.t_end = args.t_end;
    s.order = match args.order.as_str() {
        "bisection" => s.order,
        "forward" => forward_order(n),
        file => numbers(Path::new(file))?
            .into_iter()
            .map(|v| {
                anyhow::ensure!(v.fract() == 0.0 && v >= 0.0, "order entries are 1-based integers, not {v}");
                Ok(v as usize)
            })
            .collect::<anyhow::Result<_>>()?,
    };
    let d = args.dims;
    s.start = vec![0.0; d];
    s.noise = match &args.cov {
        Some(f) => Noise::Covariance(numbers(f)?),
        None => Noise::Cholesky((0..d * d).map(|i| if i / d.max(1) == i % d.max(1) { 1.0 } else { 0.0 }).collect()),
    };
    Ok(s)
}

fn write_npy<T: Precision + LeBytes>(path: &Path, data: &[T], shape: [usize; 3]) -> anyhow::Result<()> {
    let descr = if T::NAME == "f32" { "<f4" } else { "<f8" };
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': ({}, {}, {}), }}",
        shape[0], shape[1], shape[2]
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = Vec::with_capacity(10 + header.len() + std::mem::size_of_val(data));
    bytes.extend_from_slice(b"\x93NUMPY\x01\x00");
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in data {
        bytes.extend_from_slice(&T::to_le(*v));
    }
    std::fs::write(path, bytes).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}

trait LeBytes: Sized {
    fn to_le(self) -> Vec<u8>;
}

impl LeBytes for f32 {
    fn to_le(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

impl LeBytes for f64 {
    fn to_le(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

fn run_typed<T: Precision + LeBytes + Into<f64>>(args: &Args, plan: &Plan) -> anyhow::Result<()> {
    let file_z: Option<Vec<T>> = match args.source.as_str() {
        "philox" | "sobol" => None,
        f => Some(numbers(Path::new(f))?.into_iter().map(T::from_f64).collect()),
    };
    let source = match (args.source.as_str(), &file_z) {
        ("philox", _) => Source::Philox { seed: args.seed },
        ("sobol", _) => Source::Sobol { offset: u32::try_from(args.seed).unwrap_or(u32::MAX) },
        (_, Some(z)) => Source::Buffer(&z[..]),
        _ => anyhow::bail!("--source must be philox, sobol or a file"),
    };
    let output = if args.increments { Output::Increments } else { Output::Paths };
    let gpu = if args.cpu { None } else { Gpu::new().ok() };
    let t = Instant::now();
    let data = match &gpu {
        Some(g) => {
            println!("generating {} paths on {} ({})", args.paths, g.name(), T::NAME);
            Bridge::new(g)?.generate(plan, source, args.paths, output)?
        }
        None => {
            println!(
                "generating {} paths on the CPU ({} threads, {})…",
                args.paths,
                rayon::current_num_threads(),
                T::NAME
            );
            let last = std::sync::atomic::AtomicUsize::new(0);
            let out = cpu::generate_par_with_progress(plan, source, args.paths, output, |done, total| {
                // A one-line progress bar on stderr, redrawn at each new percent.
                let pct = done * 100 / total.max(1);
                if last.fetch_max(pct, std::sync::atomic::Ordering::Relaxed) < pct {
                    use std::io::Write;
                    let bar = "#".repeat(pct / 2) + &" ".repeat(50 - pct / 2);
                    let _ = write!(std::io::stderr(), "\r[{bar}] {pct:3}% ({done} of {total} paths)");
                }
            })?;
            eprintln!();
            out
        }
    };
    println!(
        "{} values in {:.3} s; strategy stack {} slots",
        data.len(),
        t.elapsed().as_secs_f64(),
        plan.stack_slots()
    );
    let (rows, d, paths) = (plan.steps(), plan.dims(), args.paths);
    if let Some(out) = &args.out {
        write_npy(out, &data, [rows, d, paths])?;
        println!("wrote {} (shape ({rows}, {d}, {paths}))", out.display());
    }
    if let Some(png) = &args.plot {
        let grid = plan.grid();
        let at = |g: usize, p: usize| -> f64 { data[(g * d) * paths + p].into() };
        let mut series: Vec<Series> = (0..paths.min(5))
            .map(|p| Series {
                name: format!("path {p}"),
                points: std::iter::once((grid[0], if args.increments { f64::NAN } else { 0.0 }))
                    .chain((0..rows).map(|g| (grid[g + 1], at(g, p))))
                    .collect(),
            })
            .collect();
        for q in [0.05, 0.25, 0.5, 0.75, 0.95] {
            let points = (0..rows)
                .map(|g| {
                    let mut v: Vec<f64> = (0..paths).map(|p| at(g, p)).collect();
                    v.sort_by(f64::total_cmp);
                    (grid[g + 1], v[((v.len() - 1) as f64 * q).round() as usize])
                })
                .collect();
            series.push(Series { name: format!("{:.0}% quantile", q * 100.0), points });
        }
        let what = if args.increments { "scaled increment" } else { "X_t (dimension 0)" };
        line_chart(png, "Brownian bridge: sample paths and quantiles", "t", what, &series, Scale::default())?;
        println!("plotted {}", png.display());
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let plan = Plan::new(&spec(&args)?)?;
    match args.precision.as_str() {
        "f32" => run_typed::<f32>(&args, &plan),
        "f64" => run_typed::<f64>(&args, &plan),
        other => anyhow::bail!("--precision must be f32 or f64, not {other}"),
    }
}
