//! Brownian bridge paths (10 000 paths × 64 steps, f32, Philox normals) have the same bits on
//! every backend. Run: `cargo run --release --example bridge`.

use lockstep::bridge::{self, BridgeSpec, Output, Plan, Source};
use lockstep::{Backend, Error, Gpu};

/// The bit patterns of 10 000 paths of `plan` computed on `backend`.
fn paths(backend: Backend<'_>, plan: &Plan) -> Result<Vec<u32>, Error> {
    let x = bridge::generate::<f32>(backend, plan, Source::Philox { seed: 2024 }, 10_000, Output::Paths)?;
    Ok(x.iter().map(|v| v.to_bits()).collect())
}

fn main() -> Result<(), Error> {
    let gpu = gpu()?;
    let plan = Plan::new(&BridgeSpec::standard(64))?;
    let want = paths(Backend::CpuSeq, &plan)?;
    let mut same = true;
    for backend in [Some(Backend::Cpu), gpu.as_ref().map(Backend::Gpu)].into_iter().flatten() {
        same &= compare(backend.name(), &want, &paths(backend, &plan)?);
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
