//! `lockstep bench mg`: Minority Game throughput in agent-steps per second (n·p·trials / time)
//! for the paper's configurations, next to the paper's GTX 670 rows (Tables 4–5) and our CPU
//! parallel twin on this machine's cores.
//!
//! - `standalone`: n = 1,048,575, m = 5, s = 2, p = 4096, 224 trials, 1024 groups (Table 4).
//! - `distributed`: n = 100,007,935, m = 5, s = 2, p = 1000, 10 trials (Table 5), grid-sync and
//!   kernel-per-step.
//! - `scale`: one distributed game with n = 4,000,000,001 (indices past 32 bits), m = 5, s = 2.
//!
//! Every size is a flag, so smaller runs fit any GPU. Times are CUDA events around the whole
//! game (reset, tables, all steps) after one small warm-up game.

use lockstep::mg::MgParams;
use lockstep::mg::{Distributed, Mg, bytes_per_agent};
use lockstep::mg::{play, validate};
use lockstep::timing::time_gpu;

/// Which configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Config {
    /// One game per block (paper Table 4).
    #[default]
    Standalone,
    /// One large game over the whole GPU (paper Table 5), grid-sync and kernel-per-step.
    Distributed,
    /// The largest game: 4,000,000,001 agents on one GPU.
    Scale,
}

/// Options of `lockstep bench mg`.
/// `lockstep bench mg <configuration>`: a subcommand, as in every bench with several suites.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    suite: Suite,
}

#[derive(clap::Subcommand)]
enum Suite {
    /// One game per block (paper Table 4).
    Standalone(Opts),
    /// One large game over the whole GPU (paper Table 5), grid-sync and kernel-per-step.
    Distributed(Opts),
    /// The largest game (n = 4·10^9 + 1) on one GPU.
    Scale(Opts),
}

/// Options of every `lockstep bench mg` configuration.
#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Opts {
    #[arg(skip)]
    config: Config,
    /// Agents (default: the configuration's).
    #[arg(long)]
    n: Option<u64>,
    /// Steps (default: the configuration's).
    #[arg(long)]
    p: Option<u32>,
    /// Trials (default: the configuration's).
    #[arg(long)]
    trials: Option<u64>,
    /// Groups (default: the configuration's).
    #[arg(long)]
    groups: Option<u64>,
    /// Memory.
    #[arg(long, default_value_t = 5)]
    m: u32,
    /// Threads per block (default: the standalone model picks its own from the kernel's
    /// occupancy on the GPU; the distributed models take 128).
    #[arg(long, value_parser = crate::common::u32_pos)]
    block: Option<u32>,
    /// Timed runs (after a small warm-up game).
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Skip the kernel-per-step model in `distributed`.
    #[arg(long)]
    no_step: bool,
    /// Time the CPU rayon twin on this many trials × steps of the same game.
    #[arg(long, default_value_t = 64)]
    cpu_steps: u32,
    /// Skip the CPU timings.
    #[arg(long)]
    no_cpu: bool,
    /// Append Markdown rows with the results to this file.
    #[arg(long)]
    record: Option<std::path::PathBuf>,
}

const HEADER: [&str; 8] = ["config", "model", "n", "m, s, p", "trials", "groups", "time s", "agent-steps/s"];

struct Row {
    model: String,
    params: MgParams,
    trials: u64,
    secs: f64,
}

impl Row {
    fn rate(&self) -> f64 {
        self.params.n as f64 * self.params.p as f64 * self.trials as f64 / self.secs
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let (config, mut a) = match args.suite {
        Suite::Standalone(o) => (Config::Standalone, o),
        Suite::Distributed(o) => (Config::Distributed, o),
        Suite::Scale(o) => (Config::Scale, o),
    };
    a.config = config;
    run_config(a)
}

fn run_config(a: Opts) -> anyhow::Result<()> {
    let (n0, p0, t0, g0) = match a.config {
        Config::Standalone => (1_048_575, 4096, 224, 1024),
        Config::Distributed => (100_007_935, 1000, 10, 1 << 18),
        Config::Scale => (4_000_000_001, 100, 1, 1 << 22),
    };
    let params = validate(a.n.unwrap_or(n0), a.m, 2, a.p.unwrap_or(p0), a.groups.unwrap_or(g0))?;
    let trials = a.trials.unwrap_or(t0);
    anyhow::ensure!(trials >= 1 && a.runs >= 1, "--trials and --runs must be at least 1");
    let gpu = crate::common::bench_gpu()?;
    let mg = match a.block {
        Some(block) => Mg::with_block_size(&gpu, block)?,
        None => Mg::new(&gpu)?,
    };
    let (free, total) = gpu.memory_info()?;
    println!(
        "GPU: {} ({:.1} GiB free of {:.1} GiB), module {}",
        gpu.name(),
        free as f64 / 1073741824.0,
        total as f64 / 1073741824.0,
        gpu.loaded().what
    );
    println!(
        "game: n = {}, m = {}, s = 2, p = {}, {} trials, {} groups; device memory {} bytes per agent",
        params.n,
        params.m,
        params.p,
        trials,
        params.groups,
        bytes_per_agent(&params)
    );
    // warm-up: a small game through every kernel (module JIT, first-touch)
    let small = validate(10_001, params.m, 2, 16, 64)?;
    mg.play(&small, 1, 0, Distributed::KernelPerStep, false)?;
    mg.play(&small, 1, 0, Distributed::GridSync { blocks: None }, false)?;
    mg.play_standalone(&small, 1, 0, 2, None, false)?;
    let mut rows = Vec::new();
    match a.config {
        Config::Standalone => {
            let mut run = mg.prepare_standalone(&params, 2026, 0, trials, None, false)?;
            let (regs, resident) = mg.standalone_occupancy(&run)?;
            println!(
                "standalone: {} blocks × {} threads{} for {trials} trials ({regs} registers per thread, {resident} blocks resident at once)",
                run.blocks(),
                run.threads(),
                if a.block.is_none() { " (picked for this GPU)" } else { "" }
            );
            let t = time_gpu(&gpu, 0, a.runs, || mg.run_standalone_on_device(&mut run))?;
            let out = mg.standalone_results(&run)?;
            anyhow::ensure!(out.len() as u64 == trials, "missing trials");
            rows.push(Row {
                model: format!("GPU standalone, block {}", run.threads()),
                params,
                trials,
                secs: t.median_ms() / 1e3,
            });
        }
        Config::Distributed | Config::Scale => {
            let mut game = mg.prepare(&params, 2026, 0, false)?;
            let cap = mg.grid_sync_capacity(&params, false)?;
            println!("grid-sync: {cap} co-resident blocks × {} threads", mg.block_size());
            let mut models = vec![("GPU grid-sync", Distributed::GridSync { blocks: None })];
            if !a.no_step {
                models.push(("GPU kernel-per-step", Distributed::KernelPerStep));
            }
            for (name, model) in models {
                let mut first = None;
                let mut total_ms = 0.0;
                for _ in 0..trials {
                    // one game per trial on the same buffers (the trial number only moves the streams)
                    let t = time_gpu(&gpu, 0, a.runs, || mg.run_on_device(&mut game, model))?;
                    total_ms += t.median_ms();
                    let o = mg.outcome(&game)?;
                    first.get_or_insert(o);
                }
                rows.push(Row {
                    model: format!("{name}, block {}", mg.block_size()),
                    params,
                    trials,
                    secs: total_ms / 1e3,
                });
            }
        }
    }
    if a.cpu_steps > 0 && !a.no_cpu {
        let cpu_params = MgParams { p: a.cpu_steps.min(params.p), ..params };
        if params.n <= 200_000_000 {
            let t = std::time::Instant::now();
            play(&cpu_params, 2026, 0, Some(0), false)?;
            let secs = t.elapsed().as_secs_f64();
            rows.push(Row {
                model: format!("CPU rayon ({} threads, 1 trial, {} steps)", rayon::current_num_threads(), cpu_params.p),
                params: cpu_params,
                trials: 1,
                secs,
            });
        }
    }
    let paper = [
        ("paper Table 4, GTX 670, standalone", 1_048_575.0 * 4096.0 * 224.0 / 75.5),
        ("paper Table 4, i7-3930K 6 cores", 1_048_575.0 * 4096.0 * 224.0 / 3254.8),
        ("paper Table 5, GTX 670, grid-sync", 100_007_935.0 * 1000.0 * 10.0 / 78.2),
        ("paper Table 5, GTX 670, kernel-sync", 100_007_935.0 * 1000.0 * 10.0 / 1223.6),
        ("paper Table 5, i7-3930K 6 cores", 100_007_935.0 * 1000.0 * 10.0 / 3217.7),
    ];
    for r in &rows {
        println!(
            "{:<48} n = {:>13}, p = {:>5}, trials = {:>4}: {:>9.3} s -> {:.3e} agent-steps/s (target >= 2e11 on H100/H200)",
            r.model,
            r.params.n,
            r.params.p,
            r.trials,
            r.secs,
            r.rate()
        );
    }
    if let (Some(g), Some(c)) = (rows.first(), rows.iter().find(|r| r.model.starts_with("CPU"))) {
        println!("GPU / CPU rayon on this machine: {:.1}× (target >= 20×)", g.rate() / c.rate());
    }
    for (name, rate) in paper {
        println!("{name:<48} {rate:.3e} agent-steps/s");
    }
    if let Some(path) = a.record {
        for r in &rows {
            super::record_row(
                &path,
                &gpu,
                &HEADER,
                &[
                    format!("{:?}", a.config),
                    r.model.clone(),
                    r.params.n.to_string(),
                    format!("{}, {}, {}", r.params.m, r.params.s, r.params.p),
                    r.trials.to_string(),
                    r.params.groups.to_string(),
                    format!("{:.3}", r.secs),
                    format!("{:.3e}", r.rate()),
                ],
            )?;
        }
        println!("recorded in {}", path.display());
    }
    Ok(())
}
