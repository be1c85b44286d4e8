//! N-body RK4 and the integer matrix product (issue #5): the exact shared-tiled f32 kernel
//! (bit-identical to the CPU) on a ball of bodies, and the shared-memory i64 matrix product of
//! the seed's model matrix, checked against its closed form too.

use super::{Same, Table};
use lockstep::Gpu;
use lockstep::matmul as mcpu;
use lockstep::matmul::model_c;
use lockstep::matmul::{MatKernel, Matmul};
use lockstep::nbody::{self as cpu, init};
use lockstep::nbody::{Method, Mode, Nbody, Params, System};

const BODIES: usize = 1024;
const STEPS: u64 = 10;
const EDGE: usize = 256;

impl<T: Same> Same for System<T> {
    fn same(&self, other: &Self) -> bool {
        self.pos.same(&other.pos) && self.vel.same(&other.vel)
    }
}

pub(super) fn run(t: &mut Table, gpu: Option<&Gpu>) -> anyhow::Result<()> {
    let s0: System<f32> = init::ball(BODIES, 1.0, 1.0, 42).convert();
    let p = Params { g: 1.0f32, eps: 0.01, dt: 1e-3 };
    // `s0` advanced by STEPS steps of `run`.
    let evolve = |run: &dyn Fn(&mut System<f32>) -> lockstep::Result<()>| {
        let mut s = s0.clone();
        run(&mut s).map(|()| s)
    };
    let nb = gpu.map(Nbody::new).transpose()?;
    t.check(
        "nbody_shared_f32",
        || evolve(&|s| cpu::run_seq(&p, s, STEPS)),
        || evolve(&|s| cpu::run_par(&p, s, STEPS)),
        nb.as_ref(),
        |nb| evolve(&|s| nb.run(Method::Shared, Mode::Exact, &p, s, STEPS)),
        |s| {
            let (e0, e) = (cpu::energy(&s0, 1.0, 0.01), cpu::energy(s, 1.0, 0.01));
            format!("{BODIES} bodies, {STEPS} RK4 steps: energy {e:.6}, relative drift {:.1e}", (e - e0) / e0.abs())
        },
    )?;

    let a: Vec<i64> = mcpu::model_matrix(EDGE);
    let m = gpu.map(Matmul::new).transpose()?;
    t.check(
        "matmul_shared_i64",
        || Ok(mcpu::multiply_seq(EDGE, &a, &a)),
        || Ok(mcpu::multiply_par(EDGE, &a, &a)),
        m.as_ref(),
        |m| m.multiply(MatKernel::Shared { tile: 16 }, EDGE, &a, &a),
        |c| {
            let n = EDGE as u64;
            let wrong = (0..EDGE * EDGE).filter(|&e| c[e] as i128 != model_c(n, e as u64 / n, e as u64 % n)).count();
            let verdict = if wrong == 0 { "all equal the closed form".to_string() } else { format!("{wrong} WRONG") };
            format!("{EDGE}x{EDGE} model matrix squared: {verdict}")
        },
    )
}
