//! `lockstep mg`: plays Minority Games on the GPU (any GPU model) or the CPU twin, and reports,
//! plots (`--plot`) and writes (`--out`) the winner ratio averaged over trials against the step
//! (the paper's Fig. 1).

use crate::common::{self, Device, Progress};
use crate::plot::{Scale, Series, line_chart};
use crate::resume::{self, CheckpointArgs};
use anyhow::{Result, bail};
use lockstep::mg::{Ended, Engine, Mg, RunState, Schedule};
use lockstep::mg::{game_bytes, run_resumable, trial_end, validate, winner_ratio};
use std::io::Write;
use std::path::PathBuf;

/// Which GPU model plays (the CPU twin gives the same bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// One game per block.
    Standalone,
    /// One game over the GPU, one launch per step.
    Step,
    /// One game over the GPU, one persistent kernel with a grid barrier (co-resident grid).
    GridSync,
}

/// Options of `lockstep mg`.
#[derive(clap::Args, serde::Serialize)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// Agents (odd, < 2^63).
    #[arg(long, default_value = "10001", value_parser = common::u64_pos)]
    n: u64,
    /// Memory (history length, 1..=16).
    #[arg(long, default_value = "5", value_parser = common::u32_pos)]
    m: u32,
    /// Strategy tables per agent (1..=16).
    #[arg(long, default_value = "2", value_parser = common::u32_pos)]
    s: u32,
    /// Steps (1..=2^24).
    #[arg(long, default_value = "512", value_parser = common::u32_pos)]
    p: u32,
    /// Groups (one generator each; 1 ≤ groups ≤ n; default min(1024, n)). Part of the result's identity.
    #[arg(long, value_parser = common::u64_pos)]
    groups: Option<u64>,
    /// Trials (games) to average.
    #[arg(long, default_value = "100", value_parser = common::u64_pos)]
    trials: u64,
    /// First trial number (first + trials ≤ 2^64 − 1).
    #[arg(long, default_value = "0", value_parser = common::u64_any)]
    first: u64,
    /// Seed of XSadd (0..=4294967295).
    #[arg(long, default_value = "2026", value_parser = common::u64_any)]
    seed: u64,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    device: Device,
    /// GPU model.
    #[arg(long, value_enum, default_value = "standalone")]
    model: Model,
    /// CPU threads (0: all; 1: this thread alone). Same bits with any count.
    #[arg(long, default_value = "0", value_parser = common::u64_any)]
    threads: u64,
    /// Threads per block (GPU models; default: 128 for `step` and `grid-sync`, and the
    /// standalone model picks its own from the kernel's occupancy on the GPU).
    #[arg(long, value_parser = common::u32_pos)]
    block: Option<u32>,
    /// Write the averaged winner ratio against the step as a PNG chart.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Write the whole averaged series (step, winners summed over trials, winner ratio) and the
    /// checksum as CSV.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    #[serde(skip)] // how a run is checkpointed is not part of its result (the sidecar's parameters)
    ckpt: CheckpointArgs,
}

pub fn run(a: Args) -> Result<()> {
    common::check_outputs(&[("--plot", &a.plot, Some("png")), ("--out", &a.out, None)])?;
    let target = a.ckpt.target()?;
    if a.threads > 1024 {
        bail!("--threads {}: give 0 (all cores), 1 (this thread) or up to 1024", a.threads);
    }
    let Ok(seed) = u32::try_from(a.seed) else {
        bail!("--seed {}: the Minority Game's XSadd takes a 32-bit seed, 0..={}", a.seed, u32::MAX);
    };
    let groups = a.groups.unwrap_or(a.n.min(1024));
    if groups > a.n {
        bail!("--groups {groups} is more than --n {}: every group needs an agent; give 1..={}", a.n, a.n);
    }
    if trial_end(a.first, a.trials).is_err() {
        bail!(
            "--first {} + --trials {} passes the last trial number {}; lower --first or --trials",
            a.first,
            a.trials,
            u64::MAX
        );
    }
    let params = validate(a.n, a.m, a.s, a.p, groups)?;
    if let Some(rank) = crate::ranks::join(a.device)? {
        return run_ranks(&a, &params, seed, rank);
    }
    let gpu = common::pick(a.device)?;
    let Some(game) = game_bytes(&params) else {
        bail!("--n {}: the game's memory passes 2^64 bytes; lower --n", a.n);
    };
    // Host: one game (CPU) or its results (GPU), the sums, the jump table.
    let per_step = common::mul(&[a.p as u64, 32]);
    // A checkpoint of a game in progress is a second copy of it on the host.
    let copy = if target.is_some() || a.ckpt.resume.is_some() { Some(game) } else { Some(0) };
    let host = if gpu.is_some() {
        common::add(&[per_step, Some(1 << 20), copy])
    } else {
        common::add(&[Some(game), per_step, Some(1 << 20), copy])
    };
    common::check_run_memory(gpu.as_ref(), host, Some(game), "--n (or --s, --m)")?;

    let mut state = match &a.ckpt.resume {
        Some(file) => {
            let state = RunState::load(file, &params, seed, a.first, a.trials, &[])?;
            println!(
                "resuming from {} at trial {} of {} (game step {} of {})",
                file.display(),
                state.done,
                a.trials,
                state.steps_done(),
                a.trials.saturating_mul(a.p as u64)
            );
            state
        }
        None => RunState::start(&params, seed, a.first, a.trials)?,
    };
    let stop = match &target {
        Some(_) => Some(resume::stop_on_signals()?),
        None => None,
    };
    let schedule = Schedule { checkpoint: target.as_deref(), every: a.ckpt.every(), extra: &[], stop: stop.as_deref() };
    let t0 = std::time::Instant::now();
    let bar = Progress::new(a.trials, "trials");
    bar.set(state.done);
    let progress = |s: &RunState| bar.set(s.done);
    let (ended, place) = match &gpu {
        None => {
            let shown = if a.threads == 0 { rayon::current_num_threads() as u64 } else { a.threads };
            bar.message(format!("CPU, {shown} threads"));
            let engine = Engine::Cpu { parallel: a.threads != 1 };
            let ended = if a.threads > 1 {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads as usize).build()?;
                pool.install(|| run_resumable(engine, &mut state, &schedule, progress))?
            } else {
                run_resumable(engine, &mut state, &schedule, progress)?
            };
            (ended, format!("CPU ({shown} threads)"))
        }
        Some(gpu) => {
            let mg = match a.block {
                Some(block) => Mg::with_block_size(gpu, block)?,
                None => Mg::new(gpu)?,
            };
            bar.message(format!("{} {:?}", gpu.name(), a.model));
            let engine = match a.model {
                Model::Standalone => Engine::GpuStandalone(&mg),
                Model::Step => Engine::GpuStep(&mg),
                Model::GridSync => Engine::GpuGridSync(&mg, None),
            };
            let ended = run_resumable(engine, &mut state, &schedule, progress)?;
            let block = match (a.block, a.model) {
                (Some(b), _) => b.to_string(),
                (None, Model::Standalone) => "auto".into(),
                (None, _) => mg.block_size().to_string(),
            };
            (ended, format!("{} ({:?}, block {block})", gpu.name(), a.model))
        }
    };
    bar.finish();
    if let Ended::Stopped { step } = ended {
        return Err(resume::interrupted("game steps", step, a.trials.saturating_mul(a.p as u64), target.as_deref()));
    }
    let device = crate::sidecar::device_name(gpu.as_ref());
    report(&a, seed, &state.sums, &place, t0.elapsed().as_secs_f64(), &device)
}

/// The split model over the ranks of a launched run: every trial played by all ranks, each
/// over its share of the groups (`lockstep::mg::dist`); rank 0 reports and writes as a plain
/// run does, plus the summary line with the bits of every trial's outcome.
fn run_ranks(a: &Args, params: &lockstep::mg::MgParams, seed: u32, rank: lockstep::dist::Rank) -> Result<()> {
    if a.ckpt.checkpoint.is_some() || a.ckpt.resume.is_some() {
        bail!("--checkpoint/--resume: a run over ranks is not checkpointed; run without them (or on one rank)");
    }
    if a.model == Model::GridSync {
        bail!(
            "--model grid-sync: ranks play the step model split over the ranks (one all-reduce per step); use --model step"
        );
    }
    let backend = crate::ranks::backend(&rank);
    let (outcomes, secs) = crate::ranks::timed(&rank, || {
        (a.first..a.first + a.trials)
            .map(|trial| lockstep::mg::dist::play(rank.comm(), backend, params, seed, trial).map_err(Into::into))
            .collect::<Result<Vec<_>>>()
    })?;
    let mut sum = vec![0u64; a.p as usize];
    for o in &outcomes {
        sum.iter_mut().zip(o.winners(a.n)).for_each(|(s, w)| *s += w);
    }
    let bits = crate::ranks::sha256(
        outcomes.iter().flat_map(|o| std::iter::once(o.h0 as u64).chain(o.ones.iter().copied()).map(u64::to_le_bytes)),
    );
    let what = format!("n = {}, p = {}, groups = {}, trials = {}", a.n, a.p, params.groups, a.trials);
    crate::ranks::summary(&rank, "mg", &what, &bits, secs);
    if rank.comm().rank() == 0 {
        let place = format!("{} ranks on {} (split model)", rank.comm().size(), crate::ranks::place(&rank));
        let device = format!("{} ranks; {}", rank.comm().size(), crate::ranks::place(&rank));
        report(a, seed, &sum, &place, secs, &device)?;
    }
    Ok(rank.finish()?)
}

/// What a finished run prints and writes (`--out`, `--plot`): the winners summed over trials.
fn report(a: &Args, seed: u32, sum: &[u64], place: &str, secs: f64, device: &str) -> Result<()> {
    let groups = a.groups.unwrap_or(a.n.min(1024));
    let ratio = winner_ratio(sum, a.n, a.trials);
    let mean = ratio.iter().sum::<f64>() / ratio.len() as f64;
    let checksum = sum.iter().fold(0u64, |h, &v| h.rotate_left(7) ^ v);
    println!(
        "{place}: n = {}, m = {}, s = {}, p = {}, groups = {groups}, trials {}..{}, seed {seed}: mean winner ratio \
         {mean:.5}, winners checksum {checksum:#018x}, {secs:.2} s ({:.3e} agent-steps/s incl. set-up)",
        a.n,
        a.m,
        a.s,
        a.p,
        a.first,
        a.first + a.trials,
        (a.n as f64) * (a.p as f64) * (a.trials as f64) / secs
    );
    let show: Vec<String> = ratio.iter().take(16).map(|r| format!("{r:.4}")).collect();
    println!(
        "winner ratio, steps 0..{} of {}: {}{}",
        show.len(),
        ratio.len(),
        show.join(" "),
        if a.out.is_none() && ratio.len() > show.len() { " … (--out FILE writes every step)" } else { "" }
    );
    if let Some(path) = &a.out {
        let text = || -> std::io::Result<Vec<u8>> {
            let mut f = Vec::new();
            writeln!(
                f,
                "# lockstep mg: n = {}, m = {}, s = {}, p = {}, groups = {groups}, trials {}..{}, seed {seed}",
                a.n,
                a.m,
                a.s,
                a.p,
                a.first,
                a.first + a.trials
            )?;
            writeln!(f, "# winners checksum {checksum:#018x}")?;
            writeln!(f, "step,winners_summed,winner_ratio")?;
            for (t, (s, r)) in sum.iter().zip(&ratio).enumerate() {
                writeln!(f, "{t},{s},{r:.17e}")?;
            }
            Ok(f)
        };
        let bytes = text().map_err(|e| anyhow::anyhow!("--out {}: {e}", path.display()))?;
        // Through FILE.partial, then the sidecar FILE.json (crates/cli/src/output.rs, sidecar.rs).
        crate::output::write_atomic(path, &bytes).map_err(|e| anyhow::anyhow!("--out {}: {e:#}", path.display()))?;
        crate::sidecar::write(path, "mg", a, Some(a.seed), device)?;
        println!("series written to {} ({} steps)", path.display(), ratio.len());
    }
    if let Some(path) = &a.plot {
        let points = ratio.iter().enumerate().map(|(t, &r)| (t as f64, r)).collect();
        line_chart(
            path,
            &format!("Minority Game: n = {}, m = {}, s = {}, {} trials", a.n, a.m, a.s, a.trials),
            "step",
            "winner ratio (winners / n), mean over trials",
            &[Series { name: place.to_string(), points }],
            Scale::default(),
        )?;
        println!("plot written to {}", path.display());
    }
    Ok(())
}
