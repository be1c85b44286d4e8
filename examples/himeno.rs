//! The Himeno benchmark's Jacobi sweep (size S, 129 × 65 × 65, 3 sweeps, f32): the pressure
//! field and gosa have the same bits on every backend.
//! Run: `cargo run --release --example himeno`.

use lockstep::himeno::{self, HimenoProblem};
use lockstep::{Backend, Error, Gpu};

/// The pressure after 3 sweeps, then the last sweep's gosa, as bits.
fn sweep(backend: Backend<'_>, problem: &HimenoProblem) -> Result<Vec<u32>, Error> {
    let (p, gosa) = himeno::run(backend, problem, 3)?;
    Ok(p.iter().chain([&gosa]).map(|v| v.to_bits()).collect())
}

fn main() -> Result<(), Error> {
    let gpu = gpu()?;
    let problem = HimenoProblem::by_name("S")?;
    let want = sweep(Backend::CpuSeq, &problem)?;
    println!("gosa after 3 sweeps: {:e}", f32::from_bits(want[want.len() - 1]));
    let mut same = true;
    for backend in [Some(Backend::Cpu), gpu.as_ref().map(Backend::Gpu)].into_iter().flatten() {
        same &= compare(backend.name(), &want, &sweep(backend, &problem)?);
    }
    if !same {
        eprintln!("error: the backends disagree");
        std::process::exit(1);
    }
    Ok(())
}

/// The GPU, or `None` (and why) on a machine without a driver or device.
fn gpu() -> Result<Option<Gpu>, Error> {
    match Gpu::new() {
        Ok(gpu) => {
            println!("gpu: {}", gpu.name());
            Ok(Some(gpu))
        }
        Err(e @ (Error::NoDriver { .. } | Error::NoDevice { .. })) => {
            println!("no GPU ({e}): CPU only");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Prints whether `got` (from backend `who`) has the bits of `want` (from `cpu-seq`).
fn compare<T: PartialEq + std::fmt::Debug>(who: &str, want: &[T], got: &[T]) -> bool {
    let first = want.iter().zip(got).position(|(a, b)| a != b);
    match first {
        None if want.len() == got.len() => println!("cpu-seq vs {who}: bits equal ({} values)", want.len()),
        None => println!("cpu-seq vs {who}: MISMATCH: {} values vs {}", want.len(), got.len()),
        Some(i) => println!("cpu-seq vs {who}: MISMATCH at value {i}: {:?} vs {:?}", want[i], got[i]),
    }
    first.is_none() && want.len() == got.len()
}
