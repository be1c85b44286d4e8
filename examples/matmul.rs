//! The integer matrix product `C = A·A` of the seed's model matrix (n = 256, wrapping `i32`)
//! has the same bits on every backend. Run: `cargo run --release --example matmul`.

use lockstep::matmul::{self, model_matrix};
use lockstep::{Backend, Error, Gpu};

fn main() -> Result<(), Error> {
    let gpu = gpu()?;
    let n = 256;
    let a: Vec<i32> = model_matrix(n);
    let want = matmul::multiply(Backend::CpuSeq, n, &a, &a)?;
    println!("C[0][0] = {}, C[n-1][n-1] = {}", want[0], want[n * n - 1]);
    let mut same = true;
    for backend in [Some(Backend::Cpu), gpu.as_ref().map(Backend::Gpu)].into_iter().flatten() {
        same &= compare(backend.name(), &want, &matmul::multiply(backend, n, &a, &a)?);
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
