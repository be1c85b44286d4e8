//! The integer matrix product `C = A·A` of the seed's model matrix (n = 256, wrapping `i32`)
//! has the same bits on every backend. Run: `cargo run --release --example matmul`.

use lockstep::matmul::{self, model_matrix};
use lockstep::{Backend, Error};

mod common;
use common::{compare, gpu};

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
