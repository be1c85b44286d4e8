//! All-pairs N-body with RK4 (a 1024-body Plummer sphere, f32, 10 steps): exact mode has the
//! same bits on every backend; the GPU's fast mode (FMA, approximate rsqrt) is shown next to
//! it but not compared bit for bit. Run: `cargo run --release --example nbody`.

use lockstep::nbody::{self, Mode, Params, System};
use lockstep::{Backend, Error};

mod common;
use common::{compare, gpu};

/// Positions and velocities after 10 steps from `start` on `backend`.
fn integrate(backend: Backend<'_>, mode: Mode, p: &Params<f32>, start: &System<f32>) -> Result<System<f32>, Error> {
    let mut s = start.clone();
    nbody::run(backend, mode, p, &mut s, 10)?;
    Ok(s)
}

/// The state's bits: positions and masses, then velocities.
fn bits(s: &System<f32>) -> Vec<u32> {
    s.pos.iter().chain(&s.vel).map(|v| v.to_bits()).collect()
}

fn main() -> Result<(), Error> {
    let gpu = gpu()?;
    let start = nbody::init::plummer(1024, 7).convert::<f32>();
    let p = Params { g: 1.0, eps: 0.01, dt: 1e-3 };
    let exact = integrate(Backend::CpuSeq, Mode::Exact, &p, &start)?;
    let want = bits(&exact);
    let mut same = true;
    for backend in [Some(Backend::Cpu), gpu.as_ref().map(Backend::Gpu)].into_iter().flatten() {
        same &= compare(backend.name(), &want, &bits(&integrate(backend, Mode::Exact, &p, &start)?));
    }
    if let Some(gpu) = &gpu {
        let fast = integrate(Backend::Gpu(gpu), Mode::Fast, &p, &start)?;
        let pairs = || fast.pos.iter().chain(&fast.vel).zip(exact.pos.iter().chain(&exact.vel));
        let differ = pairs().filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        let dev = pairs().map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        println!("gpu fast mode (not compared bit for bit): {differ} values differ from exact, max |Δ| = {dev:e}");
    }
    if !same {
        eprintln!("error: the backends disagree");
        std::process::exit(1);
    }
    Ok(())
}
