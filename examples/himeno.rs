//! The Himeno benchmark's Jacobi sweep (size S, 129 × 65 × 65, 3 sweeps, f32): the pressure
//! field and gosa have the same bits on every backend.
//! Run: `cargo run --release --example himeno`.

use lockstep::himeno::{self, HimenoProblem};
use lockstep::{Backend, Error};

mod common;
use common::{compare, gpu};

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
