//! Harada & Murata's reproducible Minority Game: XSadd streams placed by GF(2) jump-ahead, one
//! per group of agents, so a game has the same bits on one CPU thread, many, and the GPU
//! (standalone: one game per block; distributed: the agents of one game over the grid). The
//! reproducibility contract is in the docs of `lockstep_shared::mg`.

mod cpu;
pub mod dist;
#[cfg(feature = "gpu")]
mod gpu;
mod problem;
mod resume;
mod state;

pub use crate::checkpoint::Schedule;
pub use cpu::{CpuGame, mean_winner_ratio, play};
#[cfg(feature = "gpu")]
pub use gpu::{
    DEFAULT_BLOCK, Distributed, Game, MAX_TRACE_BYTES, Mg, StandaloneRun, bytes_per_agent, game_bytes, trace_bytes,
};
pub use lockstep_shared::mg::MgParams;
pub use problem::{
    JumpTable, MAX_P, Outcome, Setup, Trace, draws_of_group, setup, setup_share, setups, standalone_block, trial_end,
    validate, winner_ratio,
};
pub use resume::{Ended, Engine, run_resumable};
pub use state::{FAMILY, GameState, RunState, identity, normalize_s2, pack_s2, unpack_s2};

use crate::{Backend, Error, Result};

/// The winner ratio (winners / n) per step, averaged over trials `first..first + trials`, on
/// `backend` (the GPU's standalone model: one game per block). Winner counts are summed as
/// integers, so the result has the same bits on every backend. Errors: no trials, a trial
/// range past `u64::MAX`.
pub fn mean_winners(backend: Backend<'_>, params: &MgParams, seed: u32, first: u64, trials: u64) -> Result<Vec<f64>> {
    if trials == 0 || first.checked_add(trials).is_none() {
        return Err(Error::InvalidInput {
            what: "trials",
            why: format!("first = {first}, trials = {trials}: need 1 or more trials ending at most at 2^64 - 1"),
        });
    }
    match backend {
        Backend::CpuSeq => {
            let mut sum = vec![0u64; params.p as usize];
            for trial in first..first + trials {
                let (outcome, _) = play(params, seed, trial, None, false)?;
                sum.iter_mut().zip(outcome.winners(params.n)).for_each(|(s, w)| *s += w);
            }
            Ok(winner_ratio(&sum, params.n, trials))
        }
        Backend::Cpu => mean_winner_ratio(params, seed, first, trials),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => {
            let mut sum = vec![0u64; params.p as usize];
            for (outcome, _) in Mg::new(gpu)?.play_standalone(params, seed, first, trials, None, false)? {
                sum.iter_mut().zip(outcome.winners(params.n)).for_each(|(s, w)| *s += w);
            }
            Ok(winner_ratio(&sum, params.n, trials))
        }
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}
