//! `lockstep mg`: plays Minority Games in any model and reports (and plots) the winner ratio
//! averaged over trials against the step (the paper's Fig. 1).

use crate::plot::{Scale, Series, line_chart};
use lockstep::mg::{Distributed, Mg};
use lockstep::mg::{play, validate, winner_ratio};

/// Which model plays.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Model {
    /// CPU, one thread.
    Cpu,
    /// CPU, rayon (trials in sequence, groups in parallel).
    CpuPar,
    /// GPU, one game per block.
    Standalone,
    /// GPU, one launch per step.
    Step,
    /// GPU, one persistent kernel with a grid barrier (co-resident grid).
    GridSync,
}

/// Options of `lockstep mg`.
#[derive(clap::Args)]
pub struct Args {
    /// Agents (odd).
    #[arg(long, default_value_t = 10_001)]
    n: u64,
    /// Memory (history length).
    #[arg(long, default_value_t = 5)]
    m: u32,
    /// Strategy tables per agent.
    #[arg(long, default_value_t = 2)]
    s: u32,
    /// Steps.
    #[arg(long, default_value_t = 512)]
    p: u32,
    /// Groups (one generator each; 1 ≤ groups ≤ n). Part of the result's identity.
    #[arg(long, default_value_t = 1024)]
    groups: u64,
    /// Trials (games) to average.
    #[arg(long, default_value_t = 100)]
    trials: u64,
    /// First trial number.
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Seed of XSadd.
    #[arg(long, default_value_t = 2026)]
    seed: u32,
    /// Model.
    #[arg(long, value_enum, default_value = "standalone")]
    model: Model,
    /// Threads per block (GPU models).
    #[arg(long, default_value_t = 128)]
    block: u32,
    /// Write the averaged winner ratio against the step as a PNG chart.
    #[arg(long)]
    plot: Option<std::path::PathBuf>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let params = validate(a.n, a.m, a.s, a.p, a.groups)?;
    anyhow::ensure!(a.trials >= 1, "--trials must be at least 1");
    let t0 = std::time::Instant::now();
    let mut sum = vec![0u64; a.p as usize];
    let mut add = |w: Vec<u64>| sum.iter_mut().zip(w).for_each(|(s, v)| *s += v);
    match a.model {
        Model::Cpu | Model::CpuPar => {
            let threads = if matches!(a.model, Model::CpuPar) { Some(0) } else { None };
            for tr in a.first..a.first + a.trials {
                add(play(&params, a.seed, tr, threads, false)?.0.winners(a.n));
            }
        }
        Model::Standalone | Model::Step | Model::GridSync => {
            let gpu = lockstep::Gpu::new()?;
            let mg = Mg::with_block_size(&gpu, a.block)?;
            println!("GPU: {}", gpu.name());
            if let Model::Standalone = a.model {
                for (o, _) in mg.play_standalone(&params, a.seed, a.first, a.trials, None, false)? {
                    add(o.winners(a.n));
                }
            } else {
                let model = if let Model::Step = a.model {
                    Distributed::KernelPerStep
                } else {
                    Distributed::GridSync { blocks: None }
                };
                for tr in a.first..a.first + a.trials {
                    add(mg.play(&params, a.seed, tr, model, false)?.0.winners(a.n));
                }
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let ratio = winner_ratio(&sum, a.n, a.trials);
    let mean = ratio.iter().sum::<f64>() / ratio.len() as f64;
    let checksum = sum.iter().fold(0u64, |h, &v| h.rotate_left(7) ^ v);
    println!(
        "{:?}: n = {}, m = {}, s = {}, p = {}, groups = {}, trials {}..{}, seed {}: mean winner ratio {mean:.5}, \
         winners checksum {checksum:#018x}, {secs:.2} s ({:.3e} agent-steps/s incl. set-up)",
        a.model,
        a.n,
        a.m,
        a.s,
        a.p,
        a.groups,
        a.first,
        a.first + a.trials,
        a.seed,
        (a.n as f64) * (a.p as f64) * (a.trials as f64) / secs
    );
    let show: Vec<String> = ratio.iter().take(80).map(|r| format!("{r:.4}")).collect();
    println!("winner ratio, steps 0..{}: {}", show.len(), show.join(" "));
    if let Some(path) = a.plot {
        let points = ratio.iter().enumerate().map(|(t, &r)| (t as f64, r)).collect();
        line_chart(
            &path,
            &format!("Minority Game: n = {}, m = {}, s = {}, {} trials", a.n, a.m, a.s, a.trials),
            "step",
            "winner ratio (winners / n), mean over trials",
            &[Series { name: format!("{:?}", a.model), points }],
            Scale::default(),
        )?;
        println!("plot written to {}", path.display());
    }
    Ok(())
}
