//! The reproducible Minority Game (n = 1001 agents, memory 5, 2 strategies, 200 steps, 8 random
//! streams, 16 trials): the mean winner ratio per step has the same bits on every backend.
//! Run: `cargo run --release --example mg`.

use lockstep::mg::{self, MgParams};
use lockstep::{Backend, Error, Gpu};

/// The winner ratio per step over trials 0..16, as bits.
fn winners(backend: Backend<'_>, params: &MgParams) -> Result<Vec<u64>, Error> {
    Ok(mg::mean_winners(backend, params, 12_345, 0, 16)?.iter().map(|v| v.to_bits()).collect())
}

fn main() -> Result<(), Error> {
    let gpu = gpu()?;
    let params = mg::validate(1001, 5, 2, 200, 8)?;
    let want = winners(Backend::CpuSeq, &params)?;
    let mean = want.iter().map(|&b| f64::from_bits(b)).sum::<f64>() / want.len() as f64;
    println!("mean winner ratio over {} steps: {mean:.4}", want.len());
    let mut same = true;
    for backend in [Some(Backend::Cpu), gpu.as_ref().map(Backend::Gpu)].into_iter().flatten() {
        same &= compare(backend.name(), &want, &winners(backend, &params)?);
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
