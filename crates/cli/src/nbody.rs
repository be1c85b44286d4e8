//! `lockstep nbody`: integrate an N-body system with RK4 on the GPU (or the CPU twin), show
//! progress, report energy and momentum drift, optionally write the trajectory (`.npy`) and a
//! plot of the relative energy error.

use crate::common::{self, Device, PrecisionArg, Progress};
use crate::plot::{Scale, Series, line_chart};
use crate::resume::{self, CheckpointArgs};
use anyhow::{Context, Result, bail};
use lockstep::Gpu;
use lockstep::nbody::{self as cpu, energy, init, momentum};
use lockstep::nbody::{
    Checkpoint, Ended, MAX_BODIES, Method, Mode, Nbody, NbodyFloat, Params, Schedule, Segments, System,
};
use std::path::{Path, PathBuf};

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModeArg {
    /// Bit-identical to the CPU twin.
    Exact,
    /// FMA and rsqrt.approx (GPU only).
    Fast,
}

/// `--kernel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelArg {
    /// Every body read from global memory.
    Global,
    /// Shared-memory tiles.
    Shared,
}

/// `--init`: a generator or a CSV file.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Init {
    /// Uniform ball at rest (the seed's start).
    Ball,
    /// Plummer sphere.
    Plummer,
    /// x,y,z,vx,vy,vz,m per line.
    File(PathBuf),
}

fn parse_init(s: &str) -> std::result::Result<Init, String> {
    match s {
        "ball" => Ok(Init::Ball),
        "plummer" => Ok(Init::Plummer),
        _ if Path::new(s).is_file() => Ok(Init::File(PathBuf::from(s))),
        _ => Err(format!("`{s}` is neither ball, plummer nor an existing CSV file (x,y,z,vx,vy,vz,m per line)")),
    }
}

/// Options of `lockstep nbody`.
#[derive(clap::Args, serde::Serialize)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// Number of bodies (ignored with a CSV file).
    #[arg(long, default_value = "1024", value_parser = common::count)]
    n: usize,
    /// RK4 steps (≥ 1).
    #[arg(long, default_value = "100", value_parser = common::u64_pos)]
    steps: u64,
    /// Time step (> 0).
    #[arg(long, default_value = "0.01", value_parser = common::positive)]
    dt: f64,
    /// Gravitational constant (≥ 0).
    #[arg(long, default_value = "1", value_parser = common::nonneg)]
    g: f64,
    /// Plummer softening length (≥ 0; 0 = none, coincident bodies then give NaN).
    #[arg(long, default_value = "0.01", value_parser = common::nonneg)]
    eps: f64,
    /// Precision.
    #[arg(long, value_enum, default_value = "f32")]
    precision: PrecisionArg,
    /// exact (bit-identical to the CPU) or fast (FMA + rsqrt.approx; GPU only).
    #[arg(long, value_enum, default_value = "exact")]
    mode: ModeArg,
    /// global or shared (shared-memory tiles).
    #[arg(long, value_enum, default_value = "shared")]
    kernel: KernelArg,
    /// Threads per block = bodies per tile (multiple of 32, at most 1024).
    #[arg(long, default_value = "256", value_parser = common::u32_pos)]
    block: u32,
    /// ball (uniform sphere at rest, the seed's start), plummer, or a CSV file
    /// (x,y,z,vx,vy,vz,m per line).
    #[arg(long, default_value = "ball", value_parser = parse_init)]
    init: Init,
    /// Seed of the generated initial conditions.
    #[arg(long, default_value = "1", value_parser = common::u64_any)]
    seed: u64,
    /// Record energy / a trajectory frame every this many steps (default: steps/100).
    #[arg(long, value_parser = common::u64_pos)]
    every: Option<u64>,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    device: Device,
    /// Also run the CPU twin and check the GPU result bit for bit (exact mode).
    #[arg(long)]
    check: bool,
    /// Write the trajectory as .npy, shape (frames, n, 6): x y z vx vy vz per body.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Plot the relative energy error over time (PNG).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// The --init CSV file's first line is a header (skipped). Without it a first line is taken
    /// as a header only when it holds no number at all.
    #[arg(long)]
    header: bool,
    #[command(flatten)]
    #[serde(skip)] // how a run is checkpointed is not part of its result (the sidecar's parameters)
    ckpt: CheckpointArgs,
}

pub fn run(args: Args) -> Result<()> {
    common::check_outputs(&[("--out", &args.out, Some("npy")), ("--plot", &args.plot, Some("png"))])?;
    args.ckpt.target()?;
    let prec = args.precision;
    for (flag, v) in [("--dt", args.dt), ("--g", args.g), ("--eps", args.eps)] {
        common::check_in(prec, flag, v)?;
    }
    if args.mode == ModeArg::Fast && args.device == Device::Cpu {
        bail!("--mode fast needs the GPU (the CPU twin is the exact kernel); use --mode exact with --device cpu");
    }
    let n = match &args.init {
        Init::File(f) => std::fs::metadata(f).map(|m| (m.len() / 14).max(1) as usize).unwrap_or(1),
        _ => args.n,
    };
    if n > MAX_BODIES {
        bail!("--n {n}: at most {MAX_BODIES} bodies are supported; lower --n");
    }
    let rank = crate::ranks::join(args.device)?;
    if let Some(rank) = &rank {
        if args.mode == ModeArg::Fast {
            bail!("--mode fast: a run over ranks is exact (its bits are the one-rank run's); use --mode exact");
        }
        if args.ckpt.checkpoint.is_some() || args.ckpt.resume.is_some() {
            bail!("--checkpoint/--resume: a run over ranks is not checkpointed; run without them (or on one rank)");
        }
        if args.check && rank.comm().rank() == 0 {
            println!("--check: rank 0 compares the result with the CPU twin after the run");
        }
    }
    let gpu = if rank.is_some() { None } else { common::pick(args.device)? };
    if args.mode == ModeArg::Fast && gpu.is_none() {
        bail!("--mode fast needs a GPU and none was found; use --mode exact for the CPU twin");
    }
    let size = prec.bytes();
    let n64 = n as u64;
    let every = args.every.unwrap_or(args.steps.div_ceil(100)).max(1);
    // Checked: `--steps 2^64 - 1 --every 1` has more frames than a u64 counts.
    let frames = (args.steps / every).checked_add(2);
    let traj = if args.out.is_some() { frames.and_then(|f| common::mul(&[f, n64, 48])) } else { Some(0) };
    // f64 initial conditions and their conversion, RK4 state and stages, the --check copy.
    let host = common::add(&[common::mul(&[n64, 128]), common::mul(&[n64, 44, size]), traj]);
    let device = Some(lockstep::nbody::device_bytes::<u8>(n).saturating_mul(size));
    common::check_run_memory(gpu.as_ref(), host, device, "--n (or --steps/--every with --out)")?;
    let sys = match &args.init {
        Init::Ball => init::ball(args.n, 1.0, 1.0, args.seed),
        Init::Plummer => init::plummer(args.n, args.seed),
        Init::File(file) => {
            let text = std::fs::read_to_string(file).with_context(|| format!("--init {}", file.display()))?;
            let header = if args.header { init::Header::Yes } else { init::Header::Auto };
            let sys = init::from_csv_with(&text, header).with_context(|| format!("--init {}", file.display()))?;
            for (i, v) in sys.pos.iter().chain(&sys.vel).enumerate() {
                if !prec.holds(*v) {
                    bail!(
                        "--init {}: body {} has {v:e}, not finite in {}; every value must be below {:e} in magnitude",
                        file.display(),
                        (i % sys.pos.len()) / 4 + 1,
                        prec.name(),
                        prec.max()
                    );
                }
            }
            sys
        }
    };
    match prec {
        PrecisionArg::F32 => go::<f32>(&args, sys.convert(), gpu, rank),
        PrecisionArg::F64 => go::<f64>(&args, sys, gpu, rank),
    }
}

/// The header parameters a resumed run must match besides the physics: what decides the frames
/// and the energies it records.
fn identity(args: &Args, every: u64, energy: bool) -> Vec<(String, String)> {
    let init = match &args.init {
        Init::Ball => format!("ball (seed {})", args.seed),
        Init::Plummer => format!("plummer (seed {})", args.seed),
        Init::File(f) => format!("file {}", f.display()),
    };
    let mut v = vec![
        ("steps".to_string(), args.steps.to_string()),
        ("every".into(), every.to_string()),
        ("init".into(), init),
        ("frames".into(), args.out.is_some().to_string()),
        ("energy".into(), energy.to_string()),
    ];
    if args.mode == ModeArg::Fast {
        // Fast-mode bits depend on the kernel and its tile.
        v.push(("kernel".into(), format!("{:?} block {}", args.kernel, args.block)));
    }
    v
}

/// One run on `gpu`, the CPU twin, or (`rank`) as one rank of a launched run: bodies split over
/// the ranks (`lockstep::nbody::dist`), rank 0 reporting and writing.
fn go<T: NbodyFloat + crate::npy::Element>(
    args: &Args,
    sys: System<T>,
    gpu: Option<Gpu>,
    rank: Option<lockstep::dist::Rank>,
) -> Result<()> {
    let p = Params { g: T::from_f64(args.g), eps: T::from_f64(args.eps), dt: T::from_f64(args.dt) };
    lockstep::nbody::validate(&p, &sys)?;
    let n = sys.len();
    let every = args.every.unwrap_or(args.steps.div_ceil(100)).max(1);
    let method = if args.kernel == KernelArg::Global { Method::Global } else { Method::Shared };
    let mode = if args.mode == ModeArg::Fast { Mode::Fast } else { Mode::Exact };
    let want_energy = args.plot.is_some() || n <= 20_000;
    let initial = sys.clone();
    // The energy is O(N²) on the CPU: reported for up to 10^5 bodies (or with --plot).
    let report_energy = want_energy || n <= 100_000;
    let e0 = if report_energy { energy(&sys, args.g, args.eps) } else { f64::NAN };
    let p0 = momentum(&sys);
    let extra = identity(args, every, want_energy);
    let target = args.ckpt.target()?;
    let mut state = match &args.ckpt.resume {
        Some(file) => {
            let state = Checkpoint::<T>::load(file, &p, mode, n, &extra)?;
            println!("resuming from {} at step {} of {}", file.display(), state.step, args.steps);
            state
        }
        None => Checkpoint::start(p, mode, sys)?,
    };
    let stop = match &target {
        Some(_) => Some(resume::stop_on_signals()?),
        None => None,
    };
    let seg = Segments {
        until: args.steps,
        every,
        energy: want_energy.then_some((args.g, args.eps)),
        frames: args.out.is_some(),
        schedule: Schedule {
            checkpoint: target.as_deref(),
            every: args.ckpt.every(),
            extra: &extra,
            stop: stop.as_deref(),
        },
    };
    let bar = Progress::new(args.steps, "steps");
    bar.set(state.step);
    let started = std::time::Instant::now();
    let (ended, device) = match (&gpu, &rank) {
        (_, Some(rank)) => {
            let (comm, backend) = (rank.comm(), crate::ranks::backend(rank));
            let ended = lockstep::nbody::run_resumable(
                &mut state,
                &seg,
                |s, k| lockstep::nbody::dist::run(comm, backend, method, &p, s, k),
                |step| {
                    if comm.rank() == 0 {
                        bar.set(step)
                    }
                },
            )?;
            let place = crate::ranks::place(rank);
            (ended, format!("{} ranks on {place} ({:?} kernel, exact, {})", comm.size(), method, rank.transport()))
        }
        (Some(gpu), None) => {
            let nb = Nbody::with_block_size(gpu, args.block)?;
            bar.message(format!("{} {:?} {:?} {}", gpu.name(), method, mode, T::NAME));
            let ended = lockstep::nbody::run_resumable(
                &mut state,
                &seg,
                |s, k| nb.run(method, mode, &p, s, k),
                |step| bar.set(step),
            )?;
            (ended, format!("GPU {} ({:?} kernel, {:?} mode, block {})", gpu.name(), method, mode, args.block))
        }
        (None, None) => {
            bar.message(format!("CPU reference, {} threads, {}", rayon::current_num_threads(), T::NAME));
            let ended = lockstep::nbody::run_resumable(
                &mut state,
                &seg,
                |s, k| cpu::run(lockstep::Backend::Cpu, Mode::Exact, &p, s, k),
                |step| bar.set(step),
            )?;
            (ended, format!("CPU reference ({} threads)", rayon::current_num_threads()))
        }
    };
    bar.finish();
    match ended {
        Ended::Finished => {}
        Ended::Stopped { step } => return Err(resume::interrupted("steps", step, args.steps, target.as_deref())),
        Ended::NonFinite { step, count } => bail!(
            "{count} of {} values are not finite after step {step} of {}; stopped there, nothing written (with --eps 0 \
             coincident bodies give NaN by design: give --eps > 0; otherwise lower --dt)",
            2 * state.system.pos.len(),
            args.steps
        ),
    }
    let sys = state.system;
    let rec = state.recording;
    let secs = started.elapsed().as_secs_f64();
    if let Some(rank) = &rank {
        let bits = crate::ranks::sha256(sys.pos.iter().chain(&sys.vel).map(|v| v.to_f64().to_le_bytes()));
        let what = format!("N = {n}, steps = {}, {}", args.steps, T::NAME);
        crate::ranks::summary(rank, "nbody", &what, &bits, secs);
        if rank.comm().rank() != 0 {
            return Ok(rank.comm().finish()?);
        }
    }
    let e1 = if report_energy { energy(&sys, args.g, args.eps) } else { f64::NAN };
    let p1 = momentum(&sys);
    println!("{n} bodies, {} steps of dt = {} in {} on {device}: {secs:.3} s", args.steps, args.dt, T::NAME);
    if report_energy {
        println!("energy {e0:.12e} -> {e1:.12e} (relative change {:.3e})", ((e1 - e0) / e0).abs());
    } else {
        println!("energy not computed ({n} bodies: O(N²) on the CPU; --plot computes it)");
    }
    println!("momentum {p0:?} -> {p1:?}");
    if args.check {
        if mode == Mode::Fast || (gpu.is_none() && rank.is_none()) {
            println!("--check compares the exact GPU kernels with the CPU; nothing to check here");
        } else {
            let mut want = initial;
            let t = std::time::Instant::now();
            cpu::run_par(&p, &mut want, args.steps)?;
            let same = sys.pos.iter().zip(&want.pos).chain(sys.vel.iter().zip(&want.vel)).all(|(a, b)| {
                a.to_f64().to_bits() == b.to_f64().to_bits() || (a.to_f64().is_nan() && b.to_f64().is_nan())
            });
            println!(
                "CPU reference ({:.3} s): {}",
                t.elapsed().as_secs_f64(),
                if same { "bit-identical" } else { "DIFFERS" }
            );
            if !same {
                bail!("GPU and CPU results differ");
            }
        }
    }
    if let Some(path) = &args.out {
        let frames = rec.frames.len() / (6 * n);
        crate::npy::write(path, &[frames, n, 6], rec.frames.iter().copied())?;
        let place = match &rank {
            Some(r) => format!("{} ranks; {}", r.comm().size(), crate::ranks::place(r)),
            None => crate::sidecar::device_name(gpu.as_ref()),
        };
        crate::sidecar::write(path, "nbody", args, Some(args.seed), &place)?;
        println!("trajectory: {} ({frames} frames × {n} bodies × 6, {})", path.display(), T::NAME);
    }
    if let Some(path) = &args.plot {
        let pts: Vec<(f64, f64)> = rec
            .steps
            .iter()
            .zip(&rec.energy)
            .skip(1)
            .map(|(&k, &e)| (k as f64 * args.dt, ((e - e0) / e0).abs()))
            .collect();
        let title =
            format!("RK4 relative energy error, N = {n}, dt = {}, {} {:?} {:?}", args.dt, T::NAME, method, mode);
        let series = [Series { name: device.clone(), points: pts }];
        line_chart(path, &title, "t", "|E(t) - E(0)| / |E(0)|", &series, Scale { log_x: false, log_y: true })?;
        println!("energy plot: {}", path.display());
    }
    if let Some(rank) = rank {
        rank.finish()?;
    }
    Ok(())
}
