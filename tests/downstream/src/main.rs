//! lockstep used from outside its workspace: 1000 Brownian bridge paths (64 steps, Philox) on the
//! threaded CPU twin and, when a GPU is present, on it, each compared bit for bit with the
//! sequential CPU twin. Exits non-zero on a mismatch.

use lockstep::bridge::{self, BridgeSpec, Output, Plan, Source};
use lockstep::{Backend, Error, Gpu};
use std::process::ExitCode;

/// The bits of 1000 paths of `plan` on `backend`.
fn paths(backend: Backend<'_>, plan: &Plan) -> Result<Vec<u64>, Error> {
    let x = bridge::generate::<f64>(backend, plan, Source::Philox { seed: 7 }, 1000, Output::Paths)?;
    Ok(x.iter().map(|v| v.to_bits()).collect())
}

fn run() -> Result<bool, Error> {
    let gpu = match Gpu::new() {
        Ok(gpu) => Some(gpu),
        Err(e @ (Error::NoDriver { .. } | Error::NoDevice { .. })) => {
            println!("downstream: no GPU ({e}): CPU only");
            None
        }
        Err(e) => return Err(e),
    };
    let plan = Plan::new(&BridgeSpec::standard(64))?;
    let want = paths(Backend::CpuSeq, &plan)?;
    let mut same = true;
    for backend in [Some(Backend::Cpu), gpu.as_ref().map(Backend::Gpu)].into_iter().flatten() {
        if paths(backend, &plan)? == want {
            println!("downstream: {} vs cpu-seq: bits equal ({} values)", backend.name(), want.len());
        } else {
            println!("downstream: {} vs cpu-seq: BITS DIFFER", backend.name());
            same = false;
        }
    }
    Ok(same)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("downstream: error: {e}");
            ExitCode::FAILURE
        }
    }
}
