//! The reproducible Minority Game (n = 1001 agents, memory 5, 2 strategies, 200 steps, 8 random
//! streams, 16 trials): the mean winner ratio per step has the same bits on every backend.
//! Run: `cargo run --release --example mg`.

use lockstep::mg::{self, MgParams};
use lockstep::{Backend, Error};

mod common;
use common::{compare, gpu};

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
