//! An n-body run's resumable state ([`Checkpoint`]) and its checkpoint file (family `nbody`,
//! in the container of [`crate::checkpoint`]).
//!
//! RK4 carries only positions and velocities from one step to the next, so `k` steps, a
//! checkpoint, and the remaining steps give the bits of an uninterrupted run — on any backend,
//! and across backends in exact mode (the GPU's exact kernels equal the CPU twin).
//!
//! Header parameters: `precision`, `n`, `g`, `eps`, `dt` (each value and its bits), `mode`, then
//! the caller's own. Sections: `pos` and `vel` (`4n` values of the precision each), `steps`
//! (`u64`: the step of each recorded frame), `energy` (`f64` per frame, or none), `frames`
//! (`x y z vx vy vz` per body per frame in the precision, or none).

use super::problem::{Mode, NbodyFloat, Params, System, validate};
use crate::checkpoint::{Header, Reader, Section, write};
use crate::error::{Error, Result};
use std::path::Path;

/// The family name in checkpoint headers.
pub const FAMILY: &str = "nbody";

/// What a run has recorded so far, one entry per frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recording<T> {
    /// The step of each frame.
    pub steps: Vec<u64>,
    /// The total energy of each frame (f64), or empty when not computed.
    pub energy: Vec<f64>,
    /// `x y z vx vy vz` per body per frame, or empty when frames are not kept.
    pub frames: Vec<T>,
}

impl<T: NbodyFloat> Recording<T> {
    /// Appends frame `step` of `s` (its energy with `energy = Some((g, eps))`, its bodies when
    /// `keep`).
    pub fn record(&mut self, step: u64, s: &System<T>, energy: Option<(f64, f64)>, keep: bool) {
        self.steps.push(step);
        if let Some((g, eps)) = energy {
            self.energy.push(super::cpu::energy(s, g, eps));
        }
        if keep {
            for i in 0..s.len() {
                self.frames.extend_from_slice(&s.pos[4 * i..4 * i + 3]);
                self.frames.extend_from_slice(&s.vel[4 * i..4 * i + 3]);
            }
        }
    }
}

/// An n-body run stopped between two steps: what resuming it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint<T> {
    /// The run's parameters.
    pub params: Params<T>,
    /// Exact or fast (fast-mode bits differ from exact ones; a checkpoint keeps its mode).
    pub mode: Mode,
    /// Steps done.
    pub step: u64,
    /// The bodies after `step` steps.
    pub system: System<T>,
    /// The frames recorded so far.
    pub recording: Recording<T>,
}

fn real<T: NbodyFloat>(v: T) -> String {
    let bits = v.to_f64().to_bits();
    format!("{v:?} ({} bits 0x{bits:016x} as f64)", T::NAME)
}

/// The header parameters that identify a run: precision, body count, `g`, `ε`, `dt` (values and
/// bits), mode; then `extra` (the caller's own, e.g. a command line's total step count).
pub fn identity<T: NbodyFloat>(
    p: &Params<T>,
    mode: Mode,
    n: usize,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut v = vec![
        ("precision".to_string(), T::NAME.to_string()),
        ("n".into(), n.to_string()),
        ("g".into(), real(p.g)),
        ("eps".into(), real(p.eps)),
        ("dt".into(), real(p.dt)),
        ("mode".into(), format!("{mode:?}").to_lowercase()),
    ];
    v.extend(extra.iter().cloned());
    v
}

impl<T: NbodyFloat> Checkpoint<T> {
    /// A run at step 0 from `system` (validated), nothing recorded yet.
    pub fn start(params: Params<T>, mode: Mode, system: System<T>) -> Result<Checkpoint<T>> {
        validate(&params, &system)?;
        Ok(Checkpoint { params, mode, step: 0, system, recording: Recording::default() })
    }

    /// Writes the checkpoint to `path` atomically, with the caller's identifying parameters
    /// `extra` in its header (see [`identity`]).
    pub fn save(&self, path: &Path, extra: &[(String, String)]) -> Result<()> {
        let params = identity(&self.params, self.mode, self.system.len(), extra);
        let header = Header::new(FAMILY, self.step, params);
        let r = &self.recording;
        write(
            path,
            &header,
            &[
                Section::new("pos", &self.system.pos[..]),
                Section::new("vel", &self.system.vel[..]),
                Section::new("steps", &r.steps[..]),
                Section::new("energy", &r.energy[..]),
                Section::new("frames", &r.frames[..]),
            ],
        )
    }

    /// Reads a checkpoint of a run of `params`, `mode`, `n` bodies and the caller's `extra`
    /// parameters from `path`. Refused with [`Error::Checkpoint`] when the file is not whole
    /// (truncated, corrupt: checksums), of another format version or family, or written for
    /// another run (any parameter differs: the error names it).
    pub fn load(
        path: &Path,
        params: &Params<T>,
        mode: Mode,
        n: usize,
        extra: &[(String, String)],
    ) -> Result<Checkpoint<T>> {
        let mut r = Reader::open(path, FAMILY)?;
        r.expect(&identity(params, mode, n, extra))?;
        let step = r.header().step;
        let values = 4 * n as u64;
        let pos = r.values::<T>("pos", values)?;
        let vel = r.values::<T>("vel", values)?;
        let frames_max = step.saturating_add(2);
        let steps = r.values::<u64>("steps", frames_max)?;
        let energy = r.values::<f64>("energy", steps.len() as u64)?;
        let frames = r.values::<T>("frames", (steps.len() as u64).saturating_mul(6 * n as u64))?;
        r.finish()?;
        let corrupt =
            |why: String| Error::Checkpoint { path: path.display().to_string(), why: format!("corrupt: {why}") };
        if pos.len() as u64 != values || vel.len() as u64 != values {
            return Err(corrupt(format!("{} position and {} velocity values for {n} bodies", pos.len(), vel.len())));
        }
        if !(energy.is_empty() || energy.len() == steps.len())
            || !(frames.is_empty() || frames.len() == steps.len() * 6 * n)
            || steps.windows(2).any(|w| w[0] >= w[1])
            || steps.last().is_some_and(|&s| s > step)
        {
            return Err(corrupt("the recorded frames do not fit its step count".into()));
        }
        let system = System { pos, vel };
        validate(params, &system).map_err(|e| corrupt(format!("its bodies are refused ({e})")))?;
        Ok(Checkpoint { params: *params, mode, step, system, recording: Recording { steps, energy, frames } })
    }
}
