//! What every example shares: finding the GPU, and comparing a backend's bits with the
//! single-threaded CPU twin's.

use lockstep::{Error, Gpu};

/// The GPU, or `None` (and why) on a machine without a driver or device.
pub fn gpu() -> Result<Option<Gpu>, Error> {
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
pub fn compare<T: PartialEq + std::fmt::Debug>(who: &str, want: &[T], got: &[T]) -> bool {
    let first = want.iter().zip(got).position(|(a, b)| a != b);
    match first {
        None if want.len() == got.len() => println!("cpu-seq vs {who}: bits equal ({} values)", want.len()),
        None => println!("cpu-seq vs {who}: MISMATCH: {} values vs {}", want.len(), got.len()),
        Some(i) => println!("cpu-seq vs {who}: MISMATCH at value {i}: {:?} vs {:?}", want[i], got[i]),
    }
    first.is_none() && want.len() == got.len()
}
