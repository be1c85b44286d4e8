//! A long n-body run in segments: frames recorded every `every` steps, a checkpoint written every
//! `schedule.every` steps and when the caller's stop flag is raised, non-finite state caught
//! at the first segment boundary after it appears (step 1 included), resumable from any of its
//! checkpoints with the bits of an uninterrupted run.

use super::checkpoint::Checkpoint;
use super::problem::{NbodyFloat, System};
use crate::checkpoint::Schedule;
use crate::error::{Error, Result};
use std::time::{Duration, Instant};

/// How [`run_resumable`] records and checkpoints.
#[derive(Clone, Copy, Debug)]
pub struct Segments<'a> {
    /// The run's last step.
    pub until: u64,
    /// A frame every this many steps (≥ 1), and at `until`.
    pub every: u64,
    /// Record each frame's energy with these `(g, ε)` (f64).
    pub energy: Option<(f64, f64)>,
    /// Keep each frame's bodies.
    pub frames: bool,
    /// Checkpoints (steps counted from step 0) and the stop flag, checked between segments
    /// (about every 0.1 s).
    pub schedule: Schedule<'a>,
}

/// How a [`run_resumable`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// At `until`.
    Finished,
    /// The stop flag was raised: the state (at `step`) is in the checkpoint, if one was given.
    Stopped {
        /// Steps done.
        step: u64,
    },
    /// `count` positions and velocities were not finite after `step` (nothing was recorded or
    /// checkpointed for that step).
    NonFinite {
        /// The step after which they were found.
        step: u64,
        /// How many values.
        count: usize,
    },
}

fn non_finite<T: NbodyFloat>(s: &System<T>) -> usize {
    s.pos.iter().chain(&s.vel).filter(|v| !v.finite()).count()
}

fn next_multiple(step: u64, every: u64) -> u64 {
    (step / every).saturating_add(1).saturating_mul(every)
}

/// Advances `state` to `seg.until` with `advance(system, k)` (k RK4 steps on some backend, e.g.
/// `|s, k| nbody::run(backend, mode, &params, s, k)`), recording a frame at step 0 when nothing
/// is recorded yet and then every `seg.every` steps and at the end, writing checkpoints as `seg`
/// says, calling `progress(step)` after each segment. Segments grow while they take less than
/// 100 ms (the stop flag is seen about every 0.1–0.2 s); the first is one step, so a state that
/// is not finite after step 1 is reported there. Errors: what `advance` or a checkpoint write
/// returns; `every` of 0.
pub fn run_resumable<T: NbodyFloat>(
    state: &mut Checkpoint<T>,
    seg: &Segments<'_>,
    mut advance: impl FnMut(&mut System<T>, u64) -> Result<()>,
    mut progress: impl FnMut(u64),
) -> Result<Ended> {
    if seg.every == 0 {
        return Err(Error::InvalidInput { what: "frame interval", why: "every = 0: give 1 or more steps".into() });
    }
    if state.step > seg.until {
        return Err(Error::InvalidInput {
            what: "step count",
            why: format!("the run is at step {} already, past its last step {}", state.step, seg.until),
        });
    }
    let schedule = &seg.schedule;
    let save = |state: &Checkpoint<T>| -> Result<()> {
        match schedule.checkpoint {
            Some(path) => state.save(path, schedule.extra),
            None => Ok(()),
        }
    };
    if state.recording.steps.is_empty() {
        state.recording.record(state.step, &state.system, seg.energy, seg.frames);
    }
    let mut chunk = 1u64;
    while state.step < seg.until {
        if schedule.stopped() {
            save(state)?;
            return Ok(Ended::Stopped { step: state.step });
        }
        let mut next = next_multiple(state.step, seg.every).min(seg.until);
        if schedule.checkpoint.is_some() && schedule.every > 0 {
            next = next.min(next_multiple(state.step, schedule.every));
        }
        let count = chunk.min(next - state.step);
        let t = Instant::now();
        advance(&mut state.system, count)?;
        let bad = non_finite(&state.system);
        if bad > 0 {
            return Ok(Ended::NonFinite { step: state.step + count, count: bad });
        }
        state.step += count;
        if t.elapsed() < Duration::from_millis(100) {
            chunk = chunk.saturating_mul(2);
        }
        if state.step.is_multiple_of(seg.every) || state.step == seg.until {
            state.recording.record(state.step, &state.system, seg.energy, seg.frames);
        }
        progress(state.step);
        if schedule.every > 0 && state.step.is_multiple_of(schedule.every) && state.step < seg.until {
            save(state)?;
        }
    }
    Ok(Ended::Finished)
}
