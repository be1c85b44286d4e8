//! Minority Game (issue #6): a few small standalone games (one per GPU block) and one larger
//! distributed game in the persistent grid-sync kernel; the outcomes (every step's votes) equal
//! the CPU twin's.

use super::Table;
use lockstep::Gpu;
use lockstep::mg::MgParams;
use lockstep::mg::{Distributed, Mg};
use lockstep::mg::{Outcome, play};
use rayon::prelude::*;

const SEED: u32 = 2026;
/// The paper's Fig. 1 game (n, m, s as there) with fewer steps; 128 groups.
const SMALL: MgParams = MgParams::new(10_001, 5, 2, 256, 128);
const TRIALS: u64 = 4;
/// One distributed game: 100,001 agents in 1024 groups.
const LARGE: MgParams = MgParams::new(100_001, 5, 2, 256, 1024);

/// Trial `trial` on the CPU (`threads` as [`play`]: `None` one thread, `Some(0)` rayon).
fn cpu_game(params: &MgParams, trial: u64, threads: Option<usize>) -> lockstep::Result<Outcome> {
    play(params, SEED, trial, threads, false).map(|(o, _)| o)
}

/// Winners (minority size) over every step of `games`, as a fraction of all agent-steps.
fn winner_ratio(params: &MgParams, games: &[Outcome]) -> f64 {
    let winners: u64 = games.iter().flat_map(|o| o.winners(params.n)).sum();
    winners as f64 / (params.n * params.p as u64 * games.len() as u64) as f64
}

pub(super) fn run(t: &mut Table, gpu: Option<&Gpu>) -> anyhow::Result<()> {
    let mg = gpu.map(Mg::new).transpose()?;
    let describe = |p: &MgParams| format!("n = {}, m = {}, s = {}, p = {}, {} groups", p.n, p.m, p.s, p.p, p.groups);

    t.check(
        "mg_standalone_s2",
        || (0..TRIALS).map(|tr| cpu_game(&SMALL, tr, None)).collect(),
        || (0..TRIALS).into_par_iter().map(|tr| cpu_game(&SMALL, tr, None)).collect(),
        mg.as_ref(),
        |mg| {
            let games = mg.play_standalone(&SMALL, SEED, 0, TRIALS, None, false)?;
            Ok(games.into_iter().map(|(o, _)| o).collect())
        },
        |games: &Vec<Outcome>| {
            format!("{TRIALS} games, {}: winner ratio {:.4}", describe(&SMALL), winner_ratio(&SMALL, games))
        },
    )?;
    t.check(
        "mg_grid_sync_s2",
        || cpu_game(&LARGE, 0, None),
        || cpu_game(&LARGE, 0, Some(0)),
        mg.as_ref(),
        |mg| mg.play(&LARGE, SEED, 0, Distributed::GridSync { blocks: None }, false).map(|(o, _)| o),
        |game| {
            format!(
                "1 game, {}: winner ratio {:.4}",
                describe(&LARGE),
                winner_ratio(&LARGE, std::slice::from_ref(game))
            )
        },
    )
}
