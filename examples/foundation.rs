//! Foundation kernels on 10⁶ elements — `y ← a·x + y` (f32) and `exp(x)·sin(x) + log(x)` (f64,
//! pure-Rust libm) — have the same bits on every backend.
//! Run: `cargo run --release --example foundation`.

use lockstep::{Backend, Error, foundation};

mod common;
use common::{compare, gpu};

/// `axpy`'s result then `exp_sin_log`'s, as bits.
fn kernels(backend: Backend<'_>, x32: &[f32], x64: &[f64]) -> Result<Vec<u64>, Error> {
    let mut y: Vec<f32> = x32.iter().map(|v| 1.0 - v).collect();
    foundation::axpy(backend, 2.5f32, x32, &mut y)?;
    let f = foundation::exp_sin_log(backend, x64)?;
    Ok(y.iter().map(|v| u64::from(v.to_bits())).chain(f.iter().map(|v| v.to_bits())).collect())
}

fn main() -> Result<(), Error> {
    let gpu = gpu()?;
    let x64: Vec<f64> = (1..=1_000_000).map(|i| i as f64 * 1e-5).collect();
    let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
    let want = kernels(Backend::CpuSeq, &x32, &x64)?;
    let mut same = true;
    for backend in [Some(Backend::Cpu), gpu.as_ref().map(Backend::Gpu)].into_iter().flatten() {
        same &= compare(backend.name(), &want, &kernels(backend, &x32, &x64)?);
    }
    if !same {
        eprintln!("error: the backends disagree");
        std::process::exit(1);
    }
    Ok(())
}
