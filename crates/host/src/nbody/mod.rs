//! All-pairs N-body with RK4: [`Params`] and a [`System`] of bodies, integrated on any
//! [`Backend`]. Exact mode equals the CPU twin bit for bit (no contraction, correctly rounded
//! `sqrt` and `/`, the pair sum split over `2^split_shift(N)` lanes in a fixed order —
//! [`split_shift`], `lockstep_shared::nbody::accel_split`); fast mode (FMA, `rsqrt.approx`) runs on the
//! GPU only and is checked against the exact result within a stated tolerance.

mod checkpoint;
mod cpu;
pub mod dist;
#[cfg(feature = "gpu")]
mod gpu;
mod problem;
mod resume;

pub use crate::checkpoint::Schedule;
pub use checkpoint::{Checkpoint, FAMILY, Recording, identity};
pub use cpu::{energy, init, momentum, run_par, run_seq, run_seq_split, step_par, step_seq};
#[cfg(feature = "gpu")]
pub use gpu::{DEFAULT_BLOCK, DeviceSystem, GRAPH_STEPS, Nbody, RecordedSteps, auto_block, device_bytes, ensure_fits};
pub use lockstep_shared::nbody::{MAX_SPLIT_SHIFT, split_shift};
pub use problem::{MAX_BODIES, Method, Mode, NbodyFloat, Params, System, validate, validate_params};
pub use resume::{Ended, Segments, run_resumable};

use crate::{Backend, Error, Result};

/// `steps` RK4 steps of `s` on `backend` (the GPU's shared-memory kernel). Errors: what
/// [`validate`] refuses; [`Mode::Fast`] on a CPU backend (the CPU twin is exact only).
pub fn run<T: NbodyFloat>(
    backend: Backend<'_>,
    mode: Mode,
    p: &Params<T>,
    s: &mut System<T>,
    steps: u64,
) -> Result<()> {
    if mode == Mode::Fast && !matches!(backend, Backend::Gpu(_)) {
        return Err(Error::InvalidInput { what: "mode", why: "fast mode runs on the GPU only; use exact".into() });
    }
    match backend {
        Backend::CpuSeq => run_seq(p, s, steps),
        Backend::Cpu => run_par(p, s, steps),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => Nbody::new(gpu)?.run(Method::Shared, mode, p, s, steps),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}
