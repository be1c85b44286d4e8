//! `lockstep nbody`: integrate an N-body system with RK4 on the GPU (or the CPU twin), show
//! progress, report energy and momentum drift, optionally write the trajectory (`.npy`) and a
//! plot of the relative energy error.

use crate::plot::{Scale, Series, line_chart};
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use lockstep::nbody::{Method, Mode, Nbody, NbodyFloat, Params, System};
use lockstep::nbody::{self as cpu, energy, init, momentum};
use lockstep::{Error, Gpu};
use std::path::{Path, PathBuf};

/// Options of `lockstep nbody`.
#[derive(clap::Args)]
pub struct Args {
    /// Number of bodies (ignored with a CSV file).
    #[arg(long, default_value_t = 1024)]
    n: usize,
    /// RK4 steps.
    #[arg(long, default_value_t = 100)]
    steps: u64,
    /// Time step.
    #[arg(long, default_value_t = 0.01)]
    dt: f64,
    /// Gravitational constant.
    #[arg(long, default_value_t = 1.0)]
    g: f64,
    /// Plummer softening length (0 = none; coincident bodies then give NaN).
    #[arg(long, default_value_t = 0.01)]
    eps: f64,
    /// f32 or f64.
    #[arg(long, default_value = "f32", value_parser = ["f32", "f64"])]
    precision: String,
    /// exact (bit-identical to the CPU) or fast (FMA + rsqrt.approx).
    #[arg(long, default_value = "exact", value_parser = ["exact", "fast"])]
    mode: String,
    /// global or shared (shared-memory tiles).
    #[arg(long, default_value = "shared", value_parser = ["global", "shared"])]
    kernel: String,
    /// Threads per block = bodies per tile (multiple of 32, at most 1024).
    #[arg(long, default_value_t = 256)]
    block: u32,
    /// ball (uniform sphere at rest, the seed's start), plummer, or a CSV file
    /// (x,y,z,vx,vy,vz,m per line).
    #[arg(long, default_value = "ball")]
    init: String,
    /// Seed of the generated initial conditions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Record energy / a trajectory frame every this many steps (default: steps/100).
    #[arg(long)]
    every: Option<u64>,
    /// Run the CPU reference (rayon) instead of the GPU.
    #[arg(long)]
    cpu: bool,
    /// Also run the CPU reference and check the GPU result bit for bit (exact mode).
    #[arg(long)]
    check: bool,
    /// Write the trajectory as .npy, shape (frames, n, 6): x y z vx vy vz per body.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Plot the relative energy error over time (PNG).
    #[arg(long)]
    plot: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    let sys = match args.init.as_str() {
        "ball" => init::ball(args.n, 1.0, 1.0, args.seed),
        "plummer" => init::plummer(args.n, args.seed),
        file => {
            let text = std::fs::read_to_string(file).with_context(|| format!("reading initial conditions {file}"))?;
            init::from_csv(&text)?
        }
    };
    if args.precision == "f32" { go::<f32>(&args, sys.convert()) } else { go::<f64>(&args, sys) }
}

struct Record {
    t: Vec<f64>,
    energy: Vec<f64>,
    frames: Vec<f64>,
}

fn go<T: NbodyFloat>(args: &Args, mut sys: System<T>) -> Result<()> {
    let p = Params { g: T::from_f64(args.g), eps: T::from_f64(args.eps), dt: T::from_f64(args.dt) };
    lockstep::nbody::validate(&p, &sys)?;
    let n = sys.len();
    let every = args.every.unwrap_or(args.steps.div_ceil(100)).max(1);
    let method = if args.kernel == "global" { Method::Global } else { Method::Shared };
    let mode = if args.mode == "fast" { Mode::Fast } else { Mode::Exact };
    let want_energy = args.plot.is_some() || n <= 20_000;
    let mut rec = Record { t: Vec::new(), energy: Vec::new(), frames: Vec::new() };
    let initial = sys.clone();
    let e0 = energy(&sys, args.g, args.eps);
    let p0 = momentum(&sys);
    let mut observe = |step: u64, s: &System<T>| {
        rec.t.push(step as f64 * args.dt);
        if want_energy {
            rec.energy.push(energy(s, args.g, args.eps));
        }
        if args.out.is_some() {
            for i in 0..s.len() {
                rec.frames.extend(s.pos[4 * i..4 * i + 3].iter().chain(&s.vel[4 * i..4 * i + 3]).map(|v| v.to_f64()));
            }
        }
    };
    observe(0, &sys);
    let bar = ProgressBar::new(args.steps);
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} steps ({eta} left) {msg}")?);
    let gpu = if args.cpu { None } else { gpu_or_none()? };
    let started = std::time::Instant::now();
    let device = match &gpu {
        Some(gpu) => {
            let nb = Nbody::with_block_size(gpu, args.block)?;
            bar.set_message(format!("{} {:?} {:?} {}", gpu.name(), method, mode, T::NAME));
            nb.run_observed(method, mode, &p, &mut sys, args.steps, every, |step, s| {
                observe(step, s);
                bar.set_position(step);
                Ok(())
            })?;
            format!("GPU {} ({:?} kernel, {:?} mode, block {})", gpu.name(), method, mode, args.block)
        }
        None => {
            if mode == Mode::Fast {
                bail!("--mode fast needs a GPU (the CPU reference is the exact twin)");
            }
            bar.set_message(format!("CPU reference, {} threads, {}", rayon::current_num_threads(), T::NAME));
            for step in 1..=args.steps {
                cpu::step_par(&p, &mut sys);
                if step % every == 0 || step == args.steps {
                    observe(step, &sys);
                    bar.set_position(step);
                }
            }
            format!("CPU reference ({} threads)", rayon::current_num_threads())
        }
    };
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    let e1 = energy(&sys, args.g, args.eps);
    let p1 = momentum(&sys);
    println!("{n} bodies, {} steps of dt = {} in {} on {device}: {secs:.3} s", args.steps, args.dt, T::NAME);
    println!("energy {e0:.12e} -> {e1:.12e} (relative change {:.3e})", ((e1 - e0) / e0).abs());
    println!("momentum {p0:?} -> {p1:?}");
    let bad = sys.pos.iter().chain(&sys.vel).filter(|v| !v.finite()).count();
    if bad > 0 {
        println!("warning: {bad} non-finite values (with --eps 0, coincident bodies give NaN by design)");
    }
    if args.check {
        if mode == Mode::Fast || gpu.is_none() {
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
        write_npy(path, &rec.frames, &[frames, n, 6], T::NAME)?;
        println!("trajectory: {} ({frames} frames × {n} bodies × 6, {})", path.display(), T::NAME);
    }
    if let Some(path) = &args.plot {
        let pts: Vec<(f64, f64)> =
            rec.t.iter().zip(&rec.energy).skip(1).map(|(&t, &e)| (t, ((e - e0) / e0).abs())).collect();
        let title =
            format!("RK4 relative energy error, N = {n}, dt = {}, {} {:?} {:?}", args.dt, T::NAME, method, mode);
        let series = [Series { name: device.clone(), points: pts }];
        line_chart(path, &title, "t", "|E(t) - E(0)| / |E(0)|", &series, Scale { log_x: false, log_y: true })?;
        println!("energy plot: {}", path.display());
    }
    Ok(())
}

/// The GPU, or `None` (with a notice) when there is none.
fn gpu_or_none() -> Result<Option<Gpu>> {
    match Gpu::new() {
        Ok(g) => Ok(Some(g)),
        Err(Error::NoDevice { reason } | Error::NoDriver { reason }) => {
            println!("no GPU ({reason}); running the CPU reference");
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Writes `data` (f64 values, stored as `<f4` or `<f8`) as a NumPy `.npy` v1.0 file.
pub fn write_npy(path: &Path, data: &[f64], shape: &[usize], precision: &str) -> Result<()> {
    let bytes = npy_bytes(data, shape, precision)?;
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// The bytes of a `.npy` v1.0 file: magic, header length, a Python-dict header padded with
/// spaces to a multiple of 64 bytes (ending in `\n`), little-endian data in C order.
pub fn npy_bytes(data: &[f64], shape: &[usize], precision: &str) -> Result<Vec<u8>> {
    if shape.iter().product::<usize>() != data.len() {
        bail!("npy: shape {shape:?} does not hold {} values", data.len());
    }
    let descr = match precision {
        "f32" => "<f4",
        "f64" => "<f8",
        other => bail!("npy: unsupported precision {other}"),
    };
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_txt = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_txt}, }}");
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len() * 8);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(u16::try_from(header.len())?).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for &v in data {
        if descr == "<f4" {
            out.extend_from_slice(&(v as f32).to_le_bytes());
        } else {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_describes_the_array() {
        let b = npy_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1, 1, 6], "f32").unwrap();
        assert_eq!(&b[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        let header = std::str::from_utf8(&b[10..10 + hlen]).unwrap();
        assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 6), }"), "{header}");
        assert!(header.ends_with('\n'));
        assert_eq!(b.len(), 10 + hlen + 6 * 4);
        assert_eq!(f32::from_le_bytes(b[10 + hlen + 4..10 + hlen + 8].try_into().unwrap()), 2.0);
        assert!(npy_bytes(&[1.0], &[2], "f64").is_err());
        let one = npy_bytes(&[1.0], &[1], "f64").unwrap();
        assert!(std::str::from_utf8(&one[10..70]).unwrap().contains("'shape': (1,)"));
    }
}
