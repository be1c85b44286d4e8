//! `lockstep bench himeno`: the Himeno benchmark (Jacobi, single precision) with gosa by plain
//! atomics, aggregated atomics and the deterministic tree; MFLOPS as Himeno reports them, next
//! to the bandwidth bound of the bytes each sweep must move.

use lockstep::DeviceBuffer;
use lockstep::himeno::{self, HimenoProblem};
use lockstep::himeno::{BYTES_PER_POINT, FLOPS_PER_POINT, gosa_via, interior};
use lockstep::himeno::{Himeno, HimenoSweep};
use lockstep::timing::time_gpu;
use std::time::Instant;

/// Options of `lockstep bench himeno`.
#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// Sizes, comma-separated (XS, S, M, L, XL).
    #[arg(long, value_delimiter = ',', default_value = "XS,S,M,L")]
    sizes: Vec<String>,
    /// Sweeps per timed run.
    #[arg(long, default_value_t = 20)]
    iters: u32,
    /// Timed runs (after one warm-up run).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// gosa reductions, comma-separated: plain, agg, tree.
    #[arg(long, value_delimiter = ',', default_value = "plain,agg,tree")]
    modes: Vec<String>,
    /// Threads per block as XxY (X a multiple of 32, along k); several, comma-separated, to
    /// compare shapes.
    #[arg(long, value_delimiter = ',', default_value = "128x2")]
    block: Vec<String>,
    /// i planes per block (per thread: each thread computes that many points along i;
    /// marching: the planes a block walks through); several, comma-separated, to compare. The
    /// block column shows `sweep XxY/planes`.
    #[arg(long, value_delimiter = ',', default_value = "2")]
    planes: Vec<u32>,
    /// Sweep kernels, comma-separated: thread (himeno_jacobi, points per thread), march
    /// (himeno_jacobi_march, blocks marching along i with the pressure in shared memory).
    #[arg(long, value_delimiter = ',', default_value = "thread")]
    sweep: Vec<String>,
    /// Overlap of each marching tree-gosa sweep with the sweep before (programmatic launch of
    /// the sm_90 `himeno_jacobi_march_pdl`, where the module has it), comma-separated: on, off.
    /// The block column marks sweeps that overlapped `+pdl`.
    #[arg(long, value_delimiter = ',', default_value = "on")]
    overlap: Vec<String>,
    /// Sweeps of the CPU versions (single thread and rayon), on sizes up to M; 0 skips them.
    #[arg(long, default_value_t = 2)]
    cpu_iters: u32,
    /// Skip the CPU timings.
    #[arg(long)]
    no_cpu: bool,
    /// Append Markdown rows to this file.
    #[arg(long)]
    record: Option<std::path::PathBuf>,
}

/// Each of `given` as its value and name from `names`; an unknown one is refused, the error naming
/// `flag` and the known names.
fn by_name<T: Copy>(
    flag: &str,
    given: &[String],
    names: &[(&'static str, T)],
) -> anyhow::Result<Vec<(T, &'static str)>> {
    given
        .iter()
        .map(|m| match names.iter().find(|(name, _)| name == m) {
            Some(&(name, value)) => Ok((value, name)),
            None => {
                let known: Vec<&str> = names.iter().map(|(name, _)| *name).collect();
                Err(anyhow::anyhow!("{flag}: unknown {m:?} ({})", known.join(", ")))
            }
        })
        .collect()
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let shapes: Vec<(u32, u32)> = args
        .block
        .iter()
        .map(|b| {
            b.split_once('x')
                .and_then(|(x, y)| Some((x.parse::<u32>().ok()?, y.parse::<u32>().ok()?)))
                .ok_or_else(|| anyhow::anyhow!("--block {b:?}: use XxY, e.g. 128x2"))
        })
        .collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(args.iters >= 1 && args.runs >= 1, "--iters and --runs must be positive");
    let modes = by_name(
        "--modes",
        &args.modes,
        &[("plain", gosa_via::PLAIN), ("agg", gosa_via::AGGREGATED), ("tree", gosa_via::TREE)],
    )?;
    let sweeps = by_name("--sweep", &args.sweep, &[("thread", HimenoSweep::PerThread), ("march", HimenoSweep::March)])?;
    let overlaps = by_name("--overlap", &args.overlap, &[("on", true), ("off", false)])?;
    let gpu = crate::common::bench_gpu()?;
    let a = Himeno::new(&gpu)?;
    // Bandwidth yardstick: a device-to-device copy of 1 GiB.
    let big = 1usize << 28;
    let src = DeviceBuffer::from_slice(&vec![1.0f32; big])?;
    let mut dst = DeviceBuffer::<f32>::zeroed(big)?;
    let copy = time_gpu(&gpu, 2, 10, || lockstep::gpu::copy_on_device(&gpu, &src, &mut dst))?;
    let copy_gbs = 8.0 * big as f64 / copy.median_ms() / 1e6;
    drop((src, dst));
    println!("GPU: {}", gpu.name());
    println!(
        "Himeno (Jacobi, f32, omega 0.8), {} sweeps per run; bound: {BYTES_PER_POINT} B per interior \
         point per sweep (read a[4] b[3] c[3] bnd wrk1 p, write p; ping-pong buffers) at the copy bandwidth {copy_gbs:.0} GB/s",
        args.iters
    );
    println!(
        "{:>4} {:>6} {:>20} {:>11} {:>11} {:>10} {:>10} {:>8}  gosa",
        "size", "gosa", "block", "ms/sweep", "MFLOPS", "GB/s", "bound MF", "% bound"
    );
    for name in &args.sizes {
        let pr = HimenoProblem::by_name(name)?;
        let pts = interior(pr.mi, pr.mj, pr.mk) as f64;
        let bound_mflops = FLOPS_PER_POINT * pts / (BYTES_PER_POINT * pts / (copy_gbs * 1e9)) / 1e6;
        let mut state = a.himeno_upload(&pr)?;
        let mut combos = Vec::new();
        for m in &modes {
            for w in &sweeps {
                for s in &shapes {
                    for &q in &args.planes {
                        for &(o, _) in &overlaps {
                            combos.push((*m, *w, *s, q, o));
                        }
                    }
                }
            }
        }
        for ((mode, mname), (sweep, wname), (bx, by), q, overlap) in combos {
            let a = Himeno::new(&gpu)?.with_sweep(sweep).with_planes(q)?.with_programmatic_launch(overlap);
            let pdl = a.programmatic_launch() && sweep == HimenoSweep::March && mode == gosa_via::TREE;
            let block = format!("{wname} {bx}x{by}/{q}{}", if pdl { " +pdl" } else { "" });
            let t =
                time_gpu(&gpu, 1, args.runs, || a.himeno_iterate_on_device(&mut state, args.iters, mode, (bx, by)))?;
            let per = t.median_ms() / args.iters as f64;
            let mflops = FLOPS_PER_POINT * pts / (per * 1e-3) / 1e6;
            let gbs = BYTES_PER_POINT * pts / (per * 1e-3) / 1e9;
            let (_, gosa) = state.download()?;
            println!(
                "{name:>4} {mname:>6} {block:>20} {per:>11.4} {mflops:>11.0} {gbs:>10.0} {bound_mflops:>10.0} {:>7.1}%  {gosa:e}",
                100.0 * mflops / bound_mflops
            );
            if let Some(path) = &args.record {
                super::record_row(
                    path,
                    &gpu,
                    &[
                        "size",
                        "gosa",
                        "block",
                        "ms/sweep",
                        "MFLOPS",
                        "GB/s (56 B/pt)",
                        "bound MFLOPS",
                        "% of bound",
                        "module",
                    ],
                    &[
                        name.to_uppercase(),
                        mname.to_string(),
                        block.clone(),
                        format!("{per:.4}"),
                        format!("{mflops:.0}"),
                        format!("{gbs:.0}"),
                        format!("{bound_mflops:.0}"),
                        format!("{:.1}", 100.0 * mflops / bound_mflops),
                        gpu.loaded().what.clone(),
                    ],
                )?;
            }
        }
        let small = pts <= interior(257, 129, 129) as f64;
        if args.cpu_iters > 0 && !args.no_cpu && small {
            for (label, f) in [
                ("cpu-1", himeno::himeno_seq as fn(&HimenoProblem, u32) -> lockstep::Result<himeno::HimenoResult>),
                ("cpu-par", himeno::himeno_par),
            ] {
                let t0 = Instant::now();
                let r = f(&pr, args.cpu_iters)?;
                let per = t0.elapsed().as_secs_f64() * 1e3 / args.cpu_iters as f64;
                let mflops = FLOPS_PER_POINT * pts / (per * 1e-3) / 1e6;
                println!(
                    "{name:>4} {label:>6} {:>20} {per:>11.4} {mflops:>11.0} {:>10} {:>10} {:>8}  {:e}",
                    "-", "-", "-", "-", r.gosa_seq
                );
            }
        }
    }
    Ok(())
}
