//! The Minority Game split over ranks (the paper's kernel-sync model across GPUs): rank `r`
//! holds a contiguous share of the groups ([`crate::dist::split_even`]), plays every pass over
//! its agents and the ranks sum each step's side-1 count before the next pass (one wrapping
//! `u64` all-reduce per step: on the device in stream order when the ranks are GPUs joined by
//! NCCL, else through the host). Votes are integers, so the outcome — the initial history and
//! every step's count — has the bits of the one-rank game on any number of ranks, and every
//! rank returns it.
//!
//! A share is stored as a game of its own (`Mg::prepare_share` on the GPU, [`CpuGame::share`]); its
//! generators are the whole game's for those groups (jumped to directly), so nothing of the
//! random-number contract in `lockstep_shared::mg` changes.

use super::cpu::CpuGame;
#[cfg(feature = "gpu")]
use super::gpu::Mg;
use super::problem::{Outcome, validate};
use crate::Backend;
use crate::dist::{Communicator, split_even};
use crate::error::{Error, Result};
use lockstep_shared::mg::MgParams;

/// Trial `trial` of `seed` played by every rank of `comm` on `backend`, each over its share of
/// the groups; every rank returns the whole game's outcome. Errors: what [`validate`] refuses;
/// fewer groups than ranks (each rank needs one); a collective that fails (a rank left).
pub fn play(
    comm: &dyn Communicator,
    backend: Backend<'_>,
    params: &MgParams,
    seed: u32,
    trial: u64,
) -> Result<Outcome> {
    let params = validate(params.n, params.m, params.s, params.p, params.groups)?;
    let size = comm.size();
    if params.groups < size as u64 {
        return Err(Error::InvalidInput {
            what: "group count",
            why: format!(
                "{} groups over {size} ranks: each rank needs at least one group (use groups ≥ ranks)",
                params.groups
            ),
        });
    }
    let share = split_even(params.groups, size, comm.rank()).range;
    match backend {
        Backend::CpuSeq | Backend::Cpu => {
            let mut game = CpuGame::share(&params, seed, trial, matches!(backend, Backend::Cpu), share)?;
            while !game.is_over() {
                let mut votes = [game.pass_local()];
                comm.all_reduce_u64(&mut votes)?;
                game.commit(votes[0]);
            }
            Ok(game.outcome())
        }
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => play_gpu(comm, gpu, &params, seed, trial, share),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}

#[cfg(feature = "gpu")]
fn play_gpu(
    comm: &dyn Communicator,
    gpu: &crate::Gpu,
    params: &MgParams,
    seed: u32,
    trial: u64,
    share: std::ops::Range<u64>,
) -> Result<Outcome> {
    use crate::error::cuda;
    use cust::memory::CopyDestination;
    let mg = Mg::new(gpu)?;
    let mut game = mg.prepare_share(params, seed, trial, share)?;
    mg.begin_on_device(&mut game)?;
    for k in 0..=params.p {
        mg.passes_on_device(&mut game, k + 1)?;
        if k == params.p {
            break;
        }
        let at = game.ones().as_device_ptr().as_raw() + 8 * k as u64;
        match comm.device() {
            // SAFETY: `at` is element k < p of the game's `p`-long vote buffer, alive while
            // `game` is (until after the final synchronisation in `outcome`).
            Some(dev) => unsafe { dev.all_reduce_u64(gpu, at, 1)? },
            None => {
                let slot = game.ones().index(k as usize);
                let mut v = [0u64];
                gpu.synchronize()?;
                slot.copy_to(&mut v[..]).map_err(cuda("cuMemcpyDtoH"))?;
                comm.all_reduce_u64(&mut v)?;
                let mut slot = game.ones().index(k as usize);
                slot.copy_from(&v[..]).map_err(cuda("cuMemcpyHtoD"))?;
            }
        }
    }
    mg.outcome(&game)
}
