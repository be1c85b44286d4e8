//! A run of Minority Game trials that checkpoints and resumes ([`run_resumable`]): winner counts
//! summed over finished trials (integers, so any split of the work gives the same bits) and the
//! game in progress, stopped between two passes.
//!
//! Models that stop between passes — the CPU twins and the GPU's kernel-per-step model —
//! checkpoint mid-game. The GPU's standalone (one game per block) and grid-sync (one persistent
//! kernel per game) models run whole games, so they checkpoint between trials (standalone:
//! trials in batches that end at the checkpoints); a game stopped mid-way is finished by the
//! kernel-per-step model before they take over.

use super::cpu::CpuGame;
#[cfg(feature = "gpu")]
use super::gpu::{Distributed, Mg};
use super::state::RunState;
use crate::checkpoint::Schedule;
use crate::error::{Error, Result};

/// Which model plays.
#[derive(Clone, Copy)]
pub enum Engine<'a> {
    /// The CPU twin: each game's groups on rayon's current pool (`parallel`) or on this thread.
    Cpu {
        /// Groups in parallel.
        parallel: bool,
    },
    /// The GPU's kernel-per-step model (stops between passes).
    #[cfg(feature = "gpu")]
    GpuStep(&'a Mg<'a>),
    /// The GPU's grid-sync model (`blocks`: see [`Distributed::GridSync`]); whole games.
    #[cfg(feature = "gpu")]
    GpuGridSync(&'a Mg<'a>, Option<u32>),
    /// The GPU's standalone model; whole games, in batches of trials.
    #[cfg(feature = "gpu")]
    GpuStandalone(&'a Mg<'a>),
    #[doc(hidden)]
    _Lifetime(std::marker::PhantomData<&'a ()>),
}

/// How a [`run_resumable`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Every trial is played; the sums are complete.
    Finished,
    /// Stopped by the flag: the state (at `step` game steps) is in the checkpoint, if one was given.
    Stopped {
        /// Game steps done over the run.
        step: u64,
    },
}

struct Saver<'s, 'a> {
    schedule: &'s Schedule<'a>,
    /// The next step a checkpoint is due at.
    next: u64,
    /// The run's last step (no checkpoint is due there).
    total: u64,
}

impl Saver<'_, '_> {
    fn due(&self, step: u64) -> bool {
        self.schedule.checkpoint.is_some() && self.schedule.every > 0 && step >= self.next && step < self.total
    }

    fn save(&mut self, state: &RunState) -> Result<()> {
        if let Some(path) = self.schedule.checkpoint {
            state.save(path, self.schedule.extra)?;
        }
        self.next = next_due(state.steps_done(), self.schedule.every);
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.schedule.stopped()
    }
}

/// The first multiple of `every` after `step` (`u64::MAX` for `every` 0: never).
fn next_due(step: u64, every: u64) -> u64 {
    step.checked_div(every).map_or(u64::MAX, |k| (k + 1).saturating_mul(every))
}

/// Plays `state`'s remaining trials (and first its game in progress) with `engine`, adding each
/// finished game's winners to `state.sums`; checkpoints as `schedule` says; calls
/// `progress(state)` after each pass or batch. Errors: what the models refuse, a checkpoint
/// that cannot be written.
pub fn run_resumable(
    engine: Engine<'_>,
    state: &mut RunState,
    schedule: &Schedule<'_>,
    mut progress: impl FnMut(&RunState),
) -> Result<Ended> {
    let every = schedule.every;
    let total = state.trials.saturating_mul(state.params.p as u64);
    let mut saver = Saver { schedule, next: 0, total };
    saver.next = next_due(state.steps_done(), every);
    let params = state.params;
    while !state.is_finished() {
        if saver.stopped() {
            saver.save(state)?;
            return Ok(Ended::Stopped { step: state.steps_done() });
        }
        match engine {
            Engine::Cpu { parallel } => {
                let mut game = match &state.game {
                    Some(g) => CpuGame::resume(g, parallel)?,
                    None => CpuGame::new(&params, state.seed, state.first + state.done, parallel)?,
                };
                while !game.is_over() {
                    if saver.stopped() {
                        state.game = Some(game.state());
                        saver.save(state)?;
                        return Ok(Ended::Stopped { step: state.steps_done() });
                    }
                    game.pass();
                    let step = state.done * params.p as u64 + game.next_pass().min(params.p) as u64;
                    if saver.due(step) && !game.is_over() {
                        state.game = Some(game.state());
                        saver.save(state)?;
                    }
                    if game.next_pass() % 64 == 0 {
                        progress(state);
                    }
                }
                state.finish_trial(&game.outcome().winners(params.n));
            }
            #[cfg(feature = "gpu")]
            Engine::GpuStep(mg) => {
                if let Some(stopped) = gpu_step_game(mg, state, &mut saver)? {
                    return Ok(stopped);
                }
            }
            #[cfg(feature = "gpu")]
            Engine::GpuGridSync(mg, blocks) => {
                if state.game.is_some() {
                    if let Some(stopped) = gpu_step_game(mg, state, &mut saver)? {
                        return Ok(stopped);
                    }
                } else {
                    let trial = state.first + state.done;
                    let (outcome, _) = mg.play(&params, state.seed, trial, Distributed::GridSync { blocks }, false)?;
                    state.finish_trial(&outcome.winners(params.n));
                }
            }
            #[cfg(feature = "gpu")]
            Engine::GpuStandalone(mg) => {
                if state.game.is_some() {
                    if let Some(stopped) = gpu_step_game(mg, state, &mut saver)? {
                        return Ok(stopped);
                    }
                } else {
                    let left = state.trials - state.done;
                    let batch = if saver.next == u64::MAX || schedule.checkpoint.is_none() {
                        left
                    } else {
                        (saver.next.saturating_sub(state.steps_done())).div_ceil(params.p as u64).clamp(1, left)
                    };
                    let first = state.first + state.done;
                    for (outcome, _) in mg.play_standalone(&params, state.seed, first, batch, None, false)? {
                        state.finish_trial(&outcome.winners(params.n));
                    }
                }
            }
            Engine::_Lifetime(_) => {
                return Err(Error::InvalidInput { what: "Minority Game engine", why: "not a model".into() });
            }
        }
        progress(state);
        if saver.due(state.steps_done()) && !state.is_finished() {
            saver.save(state)?;
        }
    }
    Ok(Ended::Finished)
}

/// Plays the game in progress (or the next trial's) on the kernel-per-step model, checkpointing
/// mid-game as `saver` says; `Some(Ended::Stopped)` when stopped.
#[cfg(feature = "gpu")]
fn gpu_step_game(mg: &Mg<'_>, state: &mut RunState, saver: &mut Saver<'_, '_>) -> Result<Option<Ended>> {
    let params = state.params;
    let mut game = match &state.game {
        Some(g) => mg.prepare_from(g)?,
        None => {
            let mut game = mg.prepare(&params, state.seed, state.first + state.done, false)?;
            mg.begin_on_device(&mut game)?;
            game
        }
    };
    let end = params.p + 1;
    while game.next_pass() < end {
        if saver.stopped() {
            state.game = Some(mg.export_state(&game)?);
            saver.save(state)?;
            return Ok(Some(Ended::Stopped { step: state.steps_done() }));
        }
        // Up to the next checkpoint (or 64 passes, so the stop flag is seen often).
        let base = state.done * params.p as u64;
        let to_ckpt = saver.next.saturating_sub(base).min(end as u64) as u32;
        let upto = (game.next_pass() + 64).min(end).min(to_ckpt.max(game.next_pass() + 1));
        mg.passes_on_device(&mut game, upto)?;
        let step = base + game.next_pass().min(params.p) as u64;
        if saver.due(step) && game.next_pass() < end {
            state.game = Some(mg.export_state(&game)?);
            saver.save(state)?;
        }
    }
    let outcome = mg.outcome(&game)?;
    state.finish_trial(&outcome.winners(params.n));
    Ok(None)
}
