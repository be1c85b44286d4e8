//! Brownian bridge paths (10 000 paths × 64 steps, f32, Philox normals) have the same bits on
//! every backend. Run: `cargo run --release --example bridge`.

use lockstep::bridge::{self, BridgeSpec, Output, Plan, Source};
use lockstep::{Backend, Error};

mod common;
use common::{compare, gpu};

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
